"""A local workspace: the directory where `icetide local` keeps state between runs.

moto keeps AWS state in memory, so each `icetide local run` starts with an empty control table. The
workspace is what makes runs a series: the control table (watermarks, run statistics) is dumped to
`state/control-table.json` after a cycle and loaded before the next, and the silver tables live
under `warehouse/` as Iceberg tables (a Hadoop-style file-system catalog other engines can read).

Layout::

    DIR/state/control-table.json   control items in DynamoDB typed JSON, as `aws dynamodb scan` gives them
    DIR/state/last-cycle.json      the schedule slot of the last cycle (run ids stay unique)
    DIR/state/dms-tasks.json       the continuous tables' long-lived DMS tasks (the stand-in's)
    DIR/state/runs.jsonl           one line per table run recorded (`record_runs`), for `icetide runs`
    DIR/continuous-bronze/         the files those tasks wrote (S3 below <bronze>/_continuous/)
    DIR/warehouse/                 the Iceberg warehouse (silver tables)
    DIR/logs/handlers.log          the Lambda handlers' log lines (Powertools JSON)
    DIR/.lock                      held while a cycle runs, so two runs never share a workspace
"""

from __future__ import annotations

import fcntl
import json
import os
import tempfile
from collections.abc import Iterable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from icetide.clock import stored_time
from icetide.control.model import LOCK_ATTRIBUTES, RUN_STATE_ATTRIBUTES
from icetide_local.cycle_report import TableRun

TypedItem = dict[str, dict[str, Any]]

# RUN_STATE_ATTRIBUTES carry what earlier runs learnt, so they survive a new tables file. A lock
# (LOCK_ATTRIBUTES) left in the state file belongs to a process that is gone: within one process the
# stack runs every execution to its end before the state is saved.


class WorkspaceError(Exception):
    """The workspace directory or its state files cannot be used."""


class WorkspaceBusy(WorkspaceError):
    """Another `icetide local` process is running a cycle in the same workspace."""


@dataclass(frozen=True)
class Workspace:
    """Paths of one workspace and the reading and writing of its state."""

    root: Path

    @classmethod
    def open(cls, directory: str | os.PathLike[str] | None) -> Workspace:
        """Open (creating if needed) the workspace at `directory`, or a fresh temporary one."""
        root = Path(tempfile.mkdtemp(prefix="icetide-")) if directory is None else Path(directory)
        if root.exists() and not root.is_dir():
            raise WorkspaceError(f"workspace {root} exists and is not a directory")
        workspace = cls(root.resolve())
        for path in (workspace.state_dir, workspace.warehouse, workspace.handler_log_file.parent):
            path.mkdir(parents=True, exist_ok=True)
        return workspace

    @classmethod
    def existing(cls, directory: str | os.PathLike[str]) -> Workspace:
        """The workspace at `directory`, which an earlier run must have created."""
        workspace = cls(Path(directory).resolve())
        if not workspace.state_dir.is_dir():
            raise WorkspaceError(
                f"{workspace.root} is not an icetide workspace (no state/ directory): "
                "run `icetide local run --workspace DIR ...` first"
            )
        return workspace

    @property
    def is_new(self) -> bool:
        """True while no cycle has saved state or written silver tables here."""
        return not self.control_table_file.exists() and not any(self.warehouse.iterdir())

    @property
    def state_dir(self) -> Path:
        return self.root / "state"

    @property
    def warehouse(self) -> Path:
        return self.root / "warehouse"

    @property
    def continuous_bronze(self) -> Path:
        """Continuous tables' bronze files, kept between cycles as S3 keeps them in AWS."""
        return self.root / "continuous-bronze"

    @property
    def control_table_file(self) -> Path:
        return self.state_dir / "control-table.json"

    @property
    def last_cycle_file(self) -> Path:
        return self.state_dir / "last-cycle.json"

    @property
    def handler_log_file(self) -> Path:
        return self.root / "logs" / "handlers.log"

    @contextmanager
    def exclusive(self) -> Iterator[None]:
        """Hold the workspace for one cycle; fail at once if another process holds it."""
        with (self.root / ".lock").open("w") as lock_file:
            try:
                fcntl.flock(lock_file, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError as busy:
                raise WorkspaceBusy(f"another icetide process is running in workspace {self.root}") from busy
            try:
                yield
            finally:
                fcntl.flock(lock_file, fcntl.LOCK_UN)

    def load_control_items(self) -> list[TypedItem]:
        """The control items saved by the last cycle (typed JSON), or none for a new workspace."""
        items = self._read_json(self.control_table_file, default=[])
        if not isinstance(items, list) or not all(_is_typed_item(item) for item in items):
            raise WorkspaceError(
                f"{self.control_table_file} must hold a JSON list of DynamoDB typed items "
                '(e.g. [{"targetTableName": {"S": "orders"}}])'
            )
        return items

    def save_control_items(self, items: list[TypedItem]) -> None:
        """Replace the saved control items, sorted by table so the file diffs well between runs."""
        ordered = sorted(items, key=table_name)
        self._write_json(self.control_table_file, ordered)

    def load_last_cycle(self) -> datetime | None:
        """The schedule slot of the last cycle run in this workspace, if any."""
        saved = self._read_json(self.last_cycle_file, default=None)
        if saved is None:
            return None
        try:
            return datetime.fromisoformat(saved["slotTime"]).astimezone(UTC)
        except (TypeError, KeyError, ValueError) as bad:
            raise WorkspaceError(f"{self.last_cycle_file} has no valid slotTime: {bad}") from bad

    def save_last_cycle(self, slot_time: datetime) -> None:
        self._write_json(self.last_cycle_file, {"slotTime": slot_time.astimezone(UTC).isoformat()})

    @property
    def run_history_file(self) -> Path:
        return self.state_dir / "runs.jsonl"

    def record_runs(self, runs: Iterable[TableRun]) -> None:
        """Append one line per table run to the run history, unless it holds that run already.

        moto forgets its executions with the process; this is what `icetide runs --workspace` lists,
        as Step Functions' execution list in AWS. A run id already recorded is not
        recorded again.
        """
        known = {record.get("runId") for record in self.load_runs()}
        lines = [json.dumps(run_record(run), sort_keys=True) for run in runs if run.run_id not in known]
        if lines:
            with self.run_history_file.open("a", encoding="utf-8") as history:
                history.write("".join(f"{line}\n" for line in lines))  # one write: never half a line

    def load_runs(self) -> list[dict[str, Any]]:
        """The recorded runs, oldest first (none before the first recorded cycle)."""
        if not self.run_history_file.exists():
            return []
        records = []
        for number, line in enumerate(self.run_history_file.read_text(encoding="utf-8").splitlines(), 1):
            if not line.strip():
                continue
            try:
                record = json.loads(line)
            except json.JSONDecodeError as bad:
                raise WorkspaceError(
                    f"{self.run_history_file} line {number} is not valid JSON: {bad}"
                ) from bad
            if not isinstance(record, dict) or not isinstance(record.get("targetTableName"), str):
                raise WorkspaceError(f"{self.run_history_file} line {number} is not a run record")
            records.append(record)
        return records

    def _read_json(self, path: Path, default: Any) -> Any:
        if not path.exists():
            return default
        try:
            return json.loads(path.read_text(encoding="utf-8"))
        except json.JSONDecodeError as bad:
            raise WorkspaceError(f"{path} is not valid JSON: {bad}") from bad

    def _write_json(self, path: Path, value: Any) -> None:
        # Write then rename, so an interrupted run never leaves half a state file behind.
        partial = path.with_suffix(path.suffix + ".partial")
        partial.write_text(json.dumps(value, indent=2, sort_keys=True) + "\n", encoding="utf-8")
        partial.replace(path)


def _is_typed_item(item: Any) -> bool:
    return (
        isinstance(item, dict)
        and isinstance(item.get("targetTableName"), dict)
        and "S" in item["targetTableName"]
        and all(isinstance(value, dict) and len(value) == 1 for value in item.values())
    )


def run_record(run: TableRun) -> dict[str, Any]:
    """One line of the run history: the run, its status and times (UTC), and why it did not succeed."""
    return {
        "targetTableName": run.target_table_name,
        "runId": run.run_id,
        "status": run.status,
        "startDate": stored_time(run.started),
        "stopDate": stored_time(run.stopped) if run.stopped is not None else None,
        "failure": None if run.status == "RUNNING" else run.failure,  # a run going on has not failed
    }


def table_name(item: Mapping[str, Any]) -> str:
    """The key of a typed control item."""
    return str(item["targetTableName"]["S"])


def merge_run_state(configured: list[TypedItem], saved: list[TypedItem]) -> list[TypedItem]:
    """The control items for a cycle: configuration from the tables file, run state from the workspace.

    A table's attributes come from `configured` (the user may change a filter or key between runs),
    except the run state, which comes from the saved item of the same table, so the watermark of the
    last successful run is where the next one starts. Saved locks are dropped (see LOCK_ATTRIBUTES).
    """
    saved_by_table = {table_name(item): item for item in saved}
    merged = []
    for item in configured:
        config = {
            name: value
            for name, value in item.items()
            if name not in RUN_STATE_ATTRIBUTES and name not in LOCK_ATTRIBUTES
        }
        previous = saved_by_table.get(table_name(item), {})
        state = {name: previous[name] for name in RUN_STATE_ATTRIBUTES if name in previous}
        merged.append({**config, **state})
    return merged


def keep_unconfigured(saved: list[TypedItem], after_cycle: list[TypedItem]) -> list[TypedItem]:
    """The state to save: the items of this cycle, plus saved tables the tables file no longer lists.

    A table left out of one tables file keeps its watermark for a later run that lists it again.
    """
    ran = {table_name(item) for item in after_cycle}
    return [*after_cycle, *(item for item in saved if table_name(item) not in ran)]
