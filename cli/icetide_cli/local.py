"""`icetide local ...`: icetide on this machine, with moto for AWS and the DMS stand-in for DMS.

`demo` runs three cycles and maintenance on a sample SQLite shop and checks silver against the
source; `run` runs one hourly cycle of your tables against your database, keeping state in a
workspace directory; `status` shows that state; `maintain` runs each table's maintenance through
the maintenance state machine.
docs/local.md says what is local and what is the real code.
"""

from __future__ import annotations

import argparse
import json
import sys
from decimal import Decimal
from typing import Any

from icetide_cli.main import add_command_group

# Everything else (moto, Spark, the DMS stand-in, even the workspace) is imported by the command that
# runs: `icetide --help` lists this group without loading any of it.

EXIT_OK = 0
EXIT_FAILED = 1
EXIT_USAGE = 2


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add the `local` group and its commands."""
    commands = add_command_group(
        subparsers,
        "local",
        help="run icetide on this machine (moto + DMS stand-in + Spark/Iceberg)",
        description="icetide on this machine: the real handlers, state machine and Glue job; moto for AWS.",
    )

    demo = commands.add_parser(
        "demo",
        help="three cycles on a sample SQLite shop and maintenance, then check silver against the source",
        description=(
            "Create a workspace and a sample SQLite source (customers, orders, payments), run a first "
            "cycle (full load), change the source (inserts, updates and deletes, some at the watermark "
            "boundary), run a second cycle (delta; payments' changes captured), change the payments "
            "again and run a third cycle, print what each run did, check that every silver table, read "
            "with pyiceberg, equals its source table, then maintain every table and check again. Exit "
            "code 0: all runs succeeded and silver matches the source; 1: otherwise."
        ),
    )
    demo.add_argument(
        "--workspace", metavar="DIR", help="a new or empty directory to keep (default: a temporary one)"
    )
    _add_quiet(demo)
    demo.set_defaults(handler=demo_command)

    run = commands.add_parser(
        "run",
        help="one hourly cycle of your tables against your database",
        description=(
            "Run one hourly cycle: StartWorkflow starts a run per active table of FILE, and each run "
            "goes through the real state machine (DMS stand-in, Spark job, watermark commit). "
            "Watermarks and run statistics persist in DIR/state between runs; silver tables are "
            "Iceberg tables under DIR/warehouse. Exit code 0: every active table succeeded; 1: some "
            "table failed or was invalid (each is named with its cause); 2: bad arguments."
        ),
    )
    run.add_argument("--workspace", required=True, metavar="DIR", help="state and warehouse directory")
    run.add_argument(
        "--source",
        required=True,
        metavar="URL",
        help="SQLAlchemy URL of the source database, e.g. sqlite:///shop.db or "
        "postgresql+psycopg://user:password@host:5432/db",
    )
    run.add_argument(
        "--tables",
        required=True,
        metavar="FILE",
        help="control items: a JSON list (plain or DynamoDB typed JSON), as for `icetide tables validate`",
    )
    run.add_argument(
        "--timeout",
        type=float,
        default=1800.0,
        metavar="SECONDS",
        help="give up waiting for a table's run after this long (default 1800)",
    )
    _add_quiet(run)
    run.set_defaults(handler=run_command)

    status = commands.add_parser(
        "status",
        help="each table's watermark and last run in a workspace",
        description="Show per table the watermark, last run id, status and time, and the rows it changed.",
    )
    status.add_argument("--workspace", required=True, metavar="DIR", help="a workspace used by `local run`")
    status.add_argument("--json", action="store_true", help="print JSON instead of a table")
    status.set_defaults(handler=status_command)

    maintain = commands.add_parser(
        "maintain",
        help="maintain the silver tables of a workspace (compaction, snapshot expiry, orphans)",
        description=(
            "Run each table's maintenance as in AWS: the maintenance state machine takes the table's "
            "lock (the one merge runs take), runs the maintenance job (compaction, delete-file rewrite, "
            "snapshot expiry, orphan removal; the tombstone table too) on local Spark, records "
            "lastMaintenance on the control item and releases the lock. Without --table, StartMaintenance "
            "starts every active table whose item leaves maintenance on. Prints per table data files, "
            "delete files, bytes and snapshots before -> after, or why it was refused. Exit code 0: every "
            "table maintained or refused; 1: some table failed (each is named with its cause); 2: bad "
            "arguments."
        ),
    )
    maintain.add_argument("--workspace", required=True, metavar="DIR", help="a workspace used by `local run`")
    maintain.add_argument(
        "--table",
        default="",
        metavar="NAME",
        help="maintain only this table (its targetTableName)",
    )
    maintain.add_argument("--json", action="store_true", help="print one JSON object per table per line")
    _add_quiet(maintain)
    maintain.set_defaults(handler=maintain_command)


def _add_quiet(command: argparse.ArgumentParser) -> None:
    command.add_argument(
        "--quiet",
        action="store_true",
        help="show no progress on standard error (each table's current state, Spark stages on long loads)",
    )


def demo_command(args: argparse.Namespace) -> int:
    """`icetide local demo`."""
    from icetide_local.demo import run_demo  # Spark and pyiceberg load only when a command needs them
    from icetide_local.local_stack import StartWorkflowFailed
    from icetide_local.progress import command_progress
    from icetide_local.workspace import WorkspaceError

    try:
        with command_progress(sys.stderr, quiet=args.quiet) as progress:
            matched = run_demo(args.workspace, out=sys.stdout, progress=progress)
    except (WorkspaceError, StartWorkflowFailed) as exc:
        print(f"icetide local demo: {exc}", file=sys.stderr)
        return EXIT_FAILED
    return EXIT_OK if matched else EXIT_FAILED


def run_command(args: argparse.Namespace) -> int:
    """`icetide local run`."""
    from icetide_cli.control_items import UnreadableItems, read_items_file
    from icetide_local.cycle_report import render_cycle
    from icetide_local.local_stack import StartWorkflowFailed
    from icetide_local.standins.dms.data_mover import SourceUrlInvalid, source_endpoint_settings
    from icetide_local.workspace import Workspace, WorkspaceError

    try:
        source_endpoint_settings(args.source)
        items = read_items_file(args.tables)
    except SourceUrlInvalid as exc:
        print(f"icetide local run: --source: {exc}", file=sys.stderr)
        return EXIT_USAGE
    except UnreadableItems as exc:
        print(f"icetide local run: {exc}", file=sys.stderr)
        return EXIT_USAGE
    if not items:
        print(f"icetide local run: {args.tables} holds no control item", file=sys.stderr)
        return EXIT_USAGE
    from icetide_local.progress import command_progress
    from icetide_local.workspace_cycle import run_workspace_cycle

    try:
        workspace = Workspace.open(args.workspace)
        with command_progress(sys.stderr, quiet=args.quiet) as progress:
            report = run_workspace_cycle(
                workspace, args.source, items, progress=progress, timeout_seconds=args.timeout
            )
    except (WorkspaceError, StartWorkflowFailed, TimeoutError) as exc:
        print(f"icetide local run: {exc}", file=sys.stderr)
        return EXIT_FAILED
    for line in render_cycle(report):
        print(line)
    print(f"handler log: {workspace.handler_log_file}")
    return EXIT_OK if report.succeeded else EXIT_FAILED


def status_command(args: argparse.Namespace) -> int:
    """`icetide local status`."""
    from icetide.control.codec import from_typed_json
    from icetide_local.cycle_report import format_rows
    from icetide_local.workspace import Workspace, WorkspaceError

    try:
        items = [from_typed_json(item) for item in Workspace.existing(args.workspace).load_control_items()]
    except WorkspaceError as exc:
        print(f"icetide local status: {exc}", file=sys.stderr)
        return EXIT_USAGE
    statuses = [table_status(item) for item in items]
    if args.json:
        print(json.dumps(statuses, indent=2))
    elif not statuses:
        print("no table has run in this workspace yet")
    else:
        header = ("table", "status", "watermark", "last run", "time", "inserted", "updated", "deleted")
        fields = (*RUN_FIELDS, *COUNT_FIELDS)
        rows = [header, *(tuple(_cell(status[name]) for name in fields) for status in statuses)]
        for line in format_rows(rows):
            print(line.removeprefix("  "))
        for failed in (status for status in statuses if status["lastRunStatus"] == "FAILED"):
            name, state, error = failed["targetTableName"], failed["lastFailedState"], failed["lastRunError"]
            print(f"{name} failed in {state}: {error}")
    return EXIT_OK


RUN_FIELDS = ("targetTableName", "lastRunStatus", "watermark", "lastRunId", "lastRunTime")
COUNT_FIELDS = ("rowsInserted", "rowsUpdated", "rowsDeleted")  # icetide_local.cycle_report.STAT_NAMES[1:]


def table_status(item: dict[str, Any]) -> dict[str, Any]:
    """One table's status: its run state, with the last successful run's row counts.

    `lastRunStats` belongs to the last *successful* run (a failure records its cause, not counts).
    """
    stats = item.get("lastRunStats") or {}
    status = {name: item.get(name) for name in RUN_FIELDS}
    status.update({name: stats.get(name) for name in COUNT_FIELDS})
    if item.get("lastRunStatus") == "FAILED":
        status["lastFailedState"] = item.get("lastFailedState")
        status["lastRunError"] = item.get("lastRunError")
    return {name: _json_value(value) for name, value in status.items()}


def _json_value(value: Any) -> Any:
    # DynamoDB numbers come back as Decimal; JSON wants plain numbers.
    if isinstance(value, Decimal):
        return int(value) if value == value.to_integral_value() else float(value)
    if isinstance(value, dict):
        return {key: _json_value(inner) for key, inner in value.items()}
    if isinstance(value, list):
        return [_json_value(inner) for inner in value]
    return value


def _cell(value: Any) -> str:
    return "-" if value is None else str(value)


def maintain_command(args: argparse.Namespace) -> int:
    """`icetide local maintain`: each table through the maintenance state machine, as in AWS."""
    # Spark loads only when needed
    from icetide_local.local_stack import StartWorkflowFailed
    from icetide_local.progress import command_progress
    from icetide_local.workspace import Workspace, WorkspaceError
    from icetide_local.workspace_maintenance import maintain_workspace, render_maintenance

    try:
        workspace = Workspace.existing(args.workspace)
        with command_progress(sys.stderr, quiet=args.quiet) as progress:
            done = maintain_workspace(workspace, table=args.table or None, progress=progress)
    except WorkspaceError as exc:
        print(f"icetide local maintain: {exc}", file=sys.stderr)
        return EXIT_USAGE
    except (StartWorkflowFailed, TimeoutError) as exc:
        print(f"icetide local maintain: {exc}", file=sys.stderr)
        return EXIT_FAILED
    if args.json:
        for run in done.runs:
            print(json.dumps(_maintenance_json(run)), flush=True)
    else:
        for line in render_maintenance(done):
            print(line, flush=True)
    return EXIT_OK if done.succeeded else EXIT_FAILED


def _maintenance_json(run: Any) -> dict[str, Any]:
    return {
        "targetTableName": run.target_table_name,
        "runId": run.run_id,
        "status": run.status,
        "refused": run.refused,
        "lastMaintenance": _json_value(run.last_maintenance),
    }
