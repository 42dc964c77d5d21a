"""Maintenance of a workspace's tables: what `icetide local maintain` does.

As in AWS, each table's maintenance is one execution of the maintenance state machine (lock,
Glue job on local Spark, record on the control item, unlock), started by the StartMaintenance
Lambda for every table due, or directly for the one table asked for. moto forgets everything when
the process ends, so the workspace's control items are loaded first and saved back after, with
each table's ``lastMaintenance``.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from icetide.adapters.stepfunctions import execution_arn
from icetide.clock import utc_now
from icetide.control.model import LOCK_ATTRIBUTES
from icetide.dms.identifiers import maintenance_run_id, schedule_slot
from icetide_local.local_stack import DEFAULT_EXECUTION_TIMEOUT_SECONDS, LocalStack
from icetide_local.progress import SILENT, RunProgress
from icetide_local.stepfunctions import RunReport
from icetide_local.workspace import TypedItem, Workspace, WorkspaceError

# A daily slot, as deployed (MAINTENANCE_SLOT_MINUTES); only the run ids carry it locally.
SLOT_MINUTES = 1440
# Maintenance reads no source: the stack's DMS stand-in never starts a task here.
NO_SOURCE = "sqlite://"


@dataclass(frozen=True)
class TableMaintenanceRun:
    """One table's maintenance run: its execution's end and the ``lastMaintenance`` it left."""

    target_table_name: str
    run_id: str
    status: str
    output: Any
    error: str | None
    cause: str | None
    last_maintenance: Mapping[str, Any] | None

    @property
    def refused(self) -> str | None:
        """Why the run was refused (a succeeded execution that maintained nothing), else None."""
        if self.status == "SUCCEEDED" and isinstance(self.output, Mapping) and "refused" in self.output:
            return f"{self.output['refused']}: {self.output.get('cause')}"
        return None


@dataclass(frozen=True)
class WorkspaceMaintenance:
    """What one `local maintain` did: the runs, and the tables StartMaintenance did not start."""

    runs: tuple[TableMaintenanceRun, ...]
    not_started: Mapping[str, Any]

    @property
    def succeeded(self) -> bool:
        return all(run.status == "SUCCEEDED" for run in self.runs)


def _unlocked(item: TypedItem) -> TypedItem:
    # A lock saved in the workspace belongs to a process that is gone (see icetide_local.workspace).
    return {name: value for name, value in item.items() if name not in LOCK_ATTRIBUTES}


def maintain_workspace(
    workspace: Workspace,
    *,
    table: str | None = None,
    now: datetime | None = None,
    progress: RunProgress = SILENT,
    timeout_seconds: float = DEFAULT_EXECUTION_TIMEOUT_SECONDS,
) -> WorkspaceMaintenance:
    """Maintain every table due (or only ``table``, a targetTableName) through the maintenance state
    machine; WorkspaceError when ``table`` has no control item in the workspace."""
    moment = now or utc_now()
    with workspace.exclusive(), workspace.handler_log_file.open("a", encoding="utf-8") as handler_log:
        saved = workspace.load_control_items()
        names = {str(item["targetTableName"].get("S")) for item in saved}
        if table is not None and table not in names:
            known = ", ".join(sorted(names)) or "none"
            raise WorkspaceError(f"no table {table} in the workspace's control items (tables: {known})")
        progress.message("starting the local stack (moto, Step Functions, Spark on first use)")
        with LocalStack(
            source_url=NO_SOURCE, warehouse=workspace.warehouse, progress=progress, handler_log=handler_log
        ) as stack:
            stack.put_typed_items([_unlocked(item) for item in saved])
            try:
                if table is None:
                    summary = stack.start_maintenance_schedule(moment)
                    started = [*summary["started"], *summary["alreadyStarted"]]
                    not_started = {
                        key: summary[key]
                        for key in ("locked", "disabled", "inactive", "invalid", "failed")
                        if summary[key]
                    }
                else:
                    run_id = maintenance_run_id(table, schedule_slot(moment, SLOT_MINUTES))
                    stack.start_maintenance(table, run_id)
                    started, not_started = [run_id], {}
                finished = _finished(stack, started, timeout_seconds)
                items = stack.plain_items()
            finally:
                workspace.save_control_items(stack.typed_items())
    runs = tuple(
        TableMaintenanceRun(
            target_table_name=name,
            run_id=run_id,
            status=report.status,
            output=report.output,
            error=report.error,
            cause=report.cause,
            last_maintenance=(items.get(name) or {}).get("lastMaintenance"),
        )
        for name, run_id, report in finished
    )
    return WorkspaceMaintenance(runs=runs, not_started=not_started)


def _finished(
    stack: LocalStack, run_ids: list[str], timeout_seconds: float
) -> list[tuple[str, str, RunReport]]:
    """(table, run id, report) of each maintenance execution, once it has ended."""
    arns = [execution_arn(stack.maintenance_state_machine_arn, run_id) for run_id in run_ids]
    finished = []
    for run_id, report in zip(run_ids, stack.wait_watched(arns, timeout_seconds), strict=True):
        described = stack.client("stepfunctions").describe_execution(executionArn=report.execution_arn)
        finished.append((str(json.loads(described["input"])["targetTableName"]), run_id, report))
    return finished


def render_maintenance(done: WorkspaceMaintenance) -> list[str]:
    """Per table: files and snapshots before -> after, the refusal, or the failure; then what was not
    started and why."""
    lines = []
    for run in done.runs:
        last = run.last_maintenance or {}
        if run.refused:
            lines.append(f"{run.target_table_name}: not maintained, refused ({run.refused})")
        elif run.status != "SUCCEEDED":
            lines.append(f"{run.target_table_name}: maintenance {run.status}: {run.error}: {run.cause}")
        elif last.get("skipped"):
            lines.append(f"{run.target_table_name}: skipped: {last['skipped']}")
        else:
            for part in ("silver", "tombstones"):
                if part in last:
                    lines.append(f"{run.target_table_name} ({part}): {_before_after(last[part])}")
            lines.append(
                f"{run.target_table_name}: {last.get('snapshotsExpired')} snapshot(s) expired, "
                f"{last.get('dataFilesRewritten')} data file(s) rewritten, "
                f"{last.get('orphanFilesRemoved')} orphan file(s) removed"
            )
    for reason, tables in done.not_started.items():
        lines.append(f"not started ({reason}): {json.dumps(tables, default=str)}")
    return lines


def _before_after(files: dict[str, Any]) -> str:
    before, after = files["before"], files["after"]
    return ", ".join(
        f"{label} {before[key]} -> {after[key]}"
        for label, key in (
            ("data files", "dataFiles"),
            ("delete files", "deleteFiles"),
            ("bytes", "totalBytes"),
            ("snapshots", "snapshots"),
        )
    )
