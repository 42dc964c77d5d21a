"""`icetide status`: every table's state, position, lag, last run and lock, from its control item.

Everything shown is on the control item, in the workspace as in the stack, so status is one read (a
scan) and never waits for a run. The lag is the one the stack's freshness alarm watches
(``icetide.run.freshness``); the last run's columns are `icetide local status`'s
(``icetide_cli.local.table_status``), with the state, position and lock added.
"""

from __future__ import annotations

import argparse
from collections.abc import Mapping
from datetime import datetime
from typing import Any

from icetide.clock import utc_now
from icetide.control.model import CaptureMode, ControlItem, RunStatus
from icetide.dms.identifiers import is_maintenance_run_id
from icetide.errors import InvalidControlItem
from icetide.run.freshness import item_lag_seconds
from icetide_cli.local import table_status
from icetide_cli.operator_control import control_items_of, unknown_table
from icetide_cli.operator_output import EXIT_OK, duration, print_json, print_rows, run_verb
from icetide_cli.operator_target import Target

HEADER = ("table", "state", "position", "lag", "last run", "at", "inserted", "updated", "deleted", "lock")


def status(args: argparse.Namespace) -> int:
    """Handler of `icetide status [TABLE...]`."""
    return run_verb("status", args, lambda target: _status(target, args))


def _status(target: Target, args: argparse.Namespace) -> int:
    control = control_items_of(target)
    items = control.items()
    if args.tables:
        names = {str(item["targetTableName"]) for item in items}
        for missing in (name for name in args.tables if name not in names):
            raise unknown_table(missing, control.where, sorted(names))
        items = [item for item in items if item["targetTableName"] in args.tables]
    now = utc_now()
    records = [table_record(item, now) for item in items]
    if args.json:
        print_json(records)
    elif not records:
        print(f"{control.where} has no control item yet")
    else:
        print_rows(HEADER, [_row(record) for record in records])
        for line in notes(records):
            print(line)
    return EXIT_OK


def table_record(raw: Mapping[str, Any], now: datetime) -> dict[str, Any]:
    """One table's status as JSON: `icetide local status`'s fields plus ``state``, ``captureMode``,
    the cdc checkpoints, ``lagSeconds``, the lock and, for an invalid item, its ``problems``."""
    record = table_status(dict(raw))
    try:
        item: ControlItem | None = ControlItem.parse(raw)
    except InvalidControlItem as invalid:
        item = None
        record["problems"] = invalid.errors
    lag = item_lag_seconds(item, now) if item is not None else None
    record.update(
        {
            "state": table_state(item),
            "captureMode": item.capture_mode.value if item is not None else raw.get("captureMode"),
            "continuous": item.is_continuous if item is not None else None,
            "cdcCheckpoint": raw.get("cdcCheckpoint"),
            "cdcFileCheckpoint": raw.get("cdcFileCheckpoint"),
            "lagSeconds": None if lag is None else int(lag),
            "lockHolder": raw.get("lockHolder") or None,
            "lockTime": raw.get("lockTime"),
        }
    )
    return record


def table_state(item: ControlItem | None) -> str:
    """One word for where a table is: invalid, running, maintaining, locked, inactive, new, ok,
    failed, or interrupted (its last run started, holds no lock and recorded no end: the run was
    stopped from outside, or its lock removed)."""
    if item is None:
        return "invalid"
    holder = item.lock_holder
    if holder:
        if is_maintenance_run_id(holder):
            return "maintaining"
        if holder == item.last_run_id and item.last_run_status is RunStatus.RUNNING:
            return "running"
        return "locked"
    if not item.is_active:
        return "inactive"
    return {
        None: "new",
        RunStatus.SUCCEEDED: "ok",
        RunStatus.FAILED: "failed",
        RunStatus.RUNNING: "interrupted",
    }[item.last_run_status]


def position(record: Mapping[str, Any]) -> str | None:
    """Where the next run starts: a delta table's watermark, a cdc table's committed checkpoint."""
    if record["captureMode"] == CaptureMode.CDC.value:
        if record["continuous"]:
            return None if record["cdcFileCheckpoint"] is None else f"file {record['cdcFileCheckpoint']}"
        return None if record["cdcCheckpoint"] is None else f"checkpoint {record['cdcCheckpoint']}"
    return None if record["watermark"] is None else f"watermark {record['watermark']}"


def _row(record: Mapping[str, Any]) -> tuple[Any, ...]:
    lock = f"{record['lockHolder']} since {record['lockTime']}" if record["lockHolder"] else None
    return (
        record["targetTableName"],
        record["state"],
        position(record),
        duration(record["lagSeconds"]),
        record["lastRunId"],
        record["lastRunTime"],
        record["rowsInserted"],
        record["rowsUpdated"],
        record["rowsDeleted"],
        lock,
    )


def notes(records: list[dict[str, Any]]) -> list[str]:
    """Below the table: why each failed table failed, and each invalid item's problems."""
    lines = []
    for record in records:
        name = record["targetTableName"]
        if record.get("problems"):
            lines.append(f"{name}: invalid control item: {'; '.join(record['problems'])}")
        elif record["lastRunStatus"] == RunStatus.FAILED.value:
            failed = f"{record['lastRunId']} failed in {record['lastFailedState']}"
            lines.append(f"{name}: {failed}: {record['lastRunError']}")
    return lines
