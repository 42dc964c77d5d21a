"""One hourly cycle in a workspace: what `icetide local run` (and the demo) does.

moto forgets everything when the process ends, so a cycle is bracketed by the workspace: the control
items of the tables file are merged with the run state the workspace saved (watermarks, statistics),
written to a fresh moto control table, run through StartWorkflow and the state machine, and the
control table is saved back. The silver tables stay in the workspace's warehouse between cycles.
So are the DMS stand-in's continuous tasks (``state/dms-tasks.json``): DMS keeps such a task running
between runs, with its checkpoint, and each cycle's first step is that task catching up.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from datetime import datetime, timedelta
from typing import Any

from icetide.clock import utc_now
from icetide.control.codec import from_typed_json, is_typed_json, to_typed_json
from icetide.dms.identifiers import schedule_slot
from icetide_local.continuous_bronze import restore_continuous_bronze, save_continuous_bronze
from icetide_local.cycle_report import CycleReport
from icetide_local.local_stack import DEFAULT_EXECUTION_TIMEOUT_SECONDS, LOCAL_ENVIRONMENT, LocalStack
from icetide_local.progress import SILENT, RunProgress
from icetide_local.workspace import (
    TypedItem,
    Workspace,
    WorkspaceError,
    keep_unconfigured,
    merge_run_state,
)

SLOT_MINUTES = int(LOCAL_ENVIRONMENT["SCHEDULE_SLOT_MINUTES"])
DMS_TASKS_FILE = "dms-tasks.json"


@dataclass(frozen=True)
class LoadableItems:
    """The tables file's items that can be written to the control table, and why the others cannot.

    Items DynamoDB can store are written even when invalid: StartWorkflow validates them and reports
    each invalid one, as it would in AWS. Only an item without a usable key cannot be written.
    """

    typed: list[TypedItem]
    rejected: list[str]


def loadable_items(raw_items: Sequence[Any]) -> LoadableItems:
    """Sort the tables file's items (plain or typed JSON) into writable typed items and rejections."""
    typed: list[TypedItem] = []
    rejected: list[str] = []
    seen: set[str] = set()
    for position, raw in enumerate(raw_items, start=1):
        try:
            plain = from_typed_json(raw) if is_typed_json(raw) else raw
            if not isinstance(plain, Mapping):
                raise ValueError(f"is a JSON {type(plain).__name__}, not an object")
            name = plain.get("targetTableName")
            if not isinstance(name, str) or not name.strip():
                raise ValueError("targetTableName: required (a non-empty string), the control table's key")
            if name in seen:
                raise ValueError(f"{name} is listed more than once in the tables file; the first one is used")
            item = to_typed_json(plain)
        except ValueError as problem:
            rejected.append(f"#{position}: invalid control item: {problem}")
            continue
        seen.add(name)
        typed.append(item)
    return LoadableItems(typed, rejected)


def next_slot(now: datetime, last_slot: datetime | None) -> datetime:
    """The schedule slot of this cycle: the one after now's, or after the last cycle's if that is later.

    Run ids are `<table>-<slot>`, and the Glue job treats a run id it has committed as done; two cycles
    in one slot would make the second a no-op, so each cycle takes a slot of its own: the next one a
    schedule would fire. What a cdc run reads does not depend on it: its task reads every change
    made before the cycle.
    """
    slot = schedule_slot(now, SLOT_MINUTES) + timedelta(minutes=SLOT_MINUTES)
    if last_slot is not None and slot <= last_slot:
        slot = last_slot + timedelta(minutes=SLOT_MINUTES)
    return slot


def run_workspace_cycle(
    workspace: Workspace,
    source_url: str,
    raw_items: Sequence[Any],
    *,
    now: datetime | None = None,
    progress: RunProgress = SILENT,
    timeout_seconds: float = DEFAULT_EXECUTION_TIMEOUT_SECONDS,
) -> CycleReport:
    """Run one cycle of the tables in `raw_items` against `source_url`, keeping state in `workspace`.

    The handlers' log lines are appended to the workspace's handler log, not mixed into the output.
    """
    loadable = loadable_items(raw_items)
    with workspace.exclusive(), workspace.handler_log_file.open("a", encoding="utf-8") as handler_log:
        saved = workspace.load_control_items()
        slot = next_slot(now or utc_now(), workspace.load_last_cycle())
        progress.message("starting the local stack (moto, DMS stand-in, Step Functions, Spark on first use)")
        with LocalStack(
            source_url=source_url, warehouse=workspace.warehouse, progress=progress, handler_log=handler_log
        ) as stack:
            stack.put_typed_items(merge_run_state(loadable.typed, saved))
            stack.dms.restore_continuous_tasks(_load_dms_tasks(workspace))
            restore_continuous_bronze(stack.client("s3"), stack.names.raw_bucket, workspace.continuous_bronze)
            try:
                report = stack.run_cycle(slot, timeout_seconds)
                workspace.record_runs(report.runs)  # what `icetide runs --workspace` lists
            finally:
                # Saved even when the cycle broke off: a run that committed keeps its watermark.
                workspace.save_control_items(keep_unconfigured(saved, stack.typed_items()))
                _save_dms_tasks(workspace, stack.dms.saved_continuous_tasks())
                save_continuous_bronze(
                    stack.client("s3"), stack.names.raw_bucket, workspace.continuous_bronze
                )
                workspace.save_last_cycle(slot)
    return replace(report, not_loaded=tuple(loadable.rejected))


def _load_dms_tasks(workspace: Workspace) -> list[dict[str, Any]]:
    """The continuous DMS tasks the last cycle left (none for a new workspace)."""
    path = workspace.state_dir / DMS_TASKS_FILE
    if not path.exists():
        return []
    try:
        tasks = json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as bad:
        raise WorkspaceError(f"{path} is not valid JSON: {bad}") from bad
    if not isinstance(tasks, list):
        raise WorkspaceError(f"{path} must hold a JSON list of saved DMS tasks")
    return tasks


def _save_dms_tasks(workspace: Workspace, tasks: list[dict[str, Any]]) -> None:
    path = workspace.state_dir / DMS_TASKS_FILE
    partial = path.with_suffix(".json.partial")  # write then rename, as the other state files
    partial.write_text(json.dumps(tasks, indent=2, sort_keys=True) + "\n", encoding="utf-8")
    partial.replace(path)
