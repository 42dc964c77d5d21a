"""`icetide reload TABLE`: reload a table in full, into one new state of its silver table.

The request is written on the control item (``reloadRequested``, icetide.run.reload), refused
while a run holds the table; the table's next run is then the reload: it reads every row its
filter selects from the ``startvalue`` (not the watermark), extracts the source's keys, and
replaces silver's rows in one new state of the table, so rows deleted at the source leave silver even for a
delta table. Unless ``--no-start``, that run starts at once: locally (``--workspace``, with
``--source`` and ``--tables``) one cycle of the table alone; in AWS (``--stack``) an execution of
the stack's state machine, waited for unless ``--no-wait``.

Exit codes (as the other operator verbs'): 0 the reload committed (or was requested, ``--no-start``,
or started, ``--no-wait``); 1 refused or failed: a run holds the table's lock, a run slipped in since
the item was read, the reload run was refused at the lock or failed (the request stays: the table's
next run reloads); 2 bad arguments, or a table that cannot be reloaded (unknown, append-only,
continuous cdc).
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from icetide_cli.operator_target import (
    StackTarget,
    TargetError,
    WorkspaceTarget,
    add_target_arguments,
    add_wait_arguments,
    target_from_args,
)

EXIT_RELOADED = 0
EXIT_FAILED = 1
EXIT_TROUBLE = 2


class ReloadUsageError(Exception):
    """An option that does not fit the target."""


class ReloadRefusedNow(Exception):
    """Another run holds (or just held) the table: nothing was requested, or the run was refused."""


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add the top-level `reload` command."""
    reload = subparsers.add_parser(
        "reload",
        help="reload a table in full (rows deleted at the source leave silver)",
        description=(
            "Request a full reload of TABLE (its targetTableName) and start it. The request is written "
            "on the control item (reloadRequested), refused while a run holds the table's lock. The "
            "table's next run reads every row its filter selects from the startvalue, not from the "
            "watermark (a windowed cdc table's task starts over with a full load), extracts the "
            "source's keys as a reconcile does, and replaces silver's rows in one new state of the "
            "table, in which rows the source no longer has are deleted (soft-deleted for deleteMode "
            "soft) and unchanged rows are not rewritten. The watermark and checkpoint are committed as "
            "by any run. A failed reload leaves the request open: the next run reloads. Tables without "
            "primaryKeys (append-only) and continuous cdc tables cannot be reloaded. Locally "
            "(--workspace, with --source and --tables) one cycle of the table alone runs; with --stack "
            "an execution of the stack's state machine. Exit code 0: reloaded (or requested, or "
            "started); 1: the reload run failed; 2: bad arguments, or the table cannot be reloaded now."
        ),
    )
    reload.add_argument("table", metavar="TABLE", help="the table's targetTableName")
    add_target_arguments(reload)
    reload.add_argument(
        "--source", metavar="URL", help="with --workspace: SQLAlchemy URL of the source database"
    )
    reload.add_argument(
        "--tables",
        metavar="FILE",
        help="with --workspace: the control items file `icetide local run` uses (TABLE's configuration)",
    )
    reload.add_argument(
        "--no-start",
        action="store_true",
        help="only request the reload: the table's next run (scheduled or by hand) is the reload",
    )
    add_wait_arguments(reload, "reload run", timeout_locally=True)
    reload.set_defaults(handler=reload_command)


def reload_command(args: argparse.Namespace) -> int:
    """`icetide reload TABLE`."""
    try:
        target = target_from_args(args)
        if isinstance(target, WorkspaceTarget):
            outcome = _reload_workspace(target, args)
        else:
            outcome = _reload_stack(target, args)
    except ReloadRefusedNow as refused:
        print(f"icetide reload: {refused}", file=sys.stderr)
        return EXIT_FAILED
    except (ReloadUsageError, TargetError) as error:
        print(f"icetide reload: {error}", file=sys.stderr)
        return EXIT_TROUBLE
    if args.json:
        print(json.dumps(outcome, indent=2))
    else:
        for line in _lines(outcome):
            print(line)
    return EXIT_FAILED if outcome.get("status") not in (None, "SUCCEEDED") else EXIT_RELOADED


def _reload_workspace(target: WorkspaceTarget, args: argparse.Namespace) -> dict[str, Any]:
    if args.no_wait:
        raise ReloadUsageError("--no-wait applies to --stack only: a local reload runs here and now")
    if not args.tables:
        raise ReloadUsageError("--workspace needs --tables FILE, the control items `icetide local run` uses")
    if not args.no_start and not args.source:
        raise ReloadUsageError("--workspace needs --source URL to run the reload (or --no-start)")
    # The workspace, the stack and Spark load only when a local reload runs.
    from icetide.clock import utc_now
    from icetide_cli.control_items import UnreadableItems, read_items_file
    from icetide_local.local_stack import StartWorkflowFailed
    from icetide_local.progress import command_progress
    from icetide_local.reload import ReloadRefused, configured_item, reload_workspace_table, request_reload
    from icetide_local.standins.dms.data_mover import SourceUrlInvalid, source_endpoint_settings
    from icetide_local.workspace import Workspace, WorkspaceError

    try:
        if args.source:
            source_endpoint_settings(args.source)
        configured = configured_item(read_items_file(args.tables), args.table)
        workspace = Workspace.existing(target.workspace)
        requested = request_reload(workspace, configured, utc_now())
    except (SourceUrlInvalid, UnreadableItems, ReloadRefused, WorkspaceError) as error:
        raise TargetError(str(error)) from None
    outcome: dict[str, Any] = {"targetTableName": args.table, "reloadRequested": requested}
    if args.no_start:
        return outcome
    try:
        with command_progress(sys.stderr, quiet=False) as progress:
            report = reload_workspace_table(
                workspace, args.source, configured, progress=progress, timeout_seconds=args.timeout
            )
    except (WorkspaceError, StartWorkflowFailed, TimeoutError) as error:
        raise TargetError(f"{error} (the reload stays requested: the table's next run reloads)") from None
    run = next((run for run in report.runs if run.target_table_name == args.table), None)
    if run is None:
        raise TargetError(
            f"{args.table} did not run (is it active? activeflag Y); the reload stays requested"
        )
    return {
        **outcome,
        "runId": run.run_id,
        "status": run.status,
        "failure": run.failure,
        "stats": _plain(dict(run.stats)),
    }


def _reload_stack(target: StackTarget, args: argparse.Namespace) -> dict[str, Any]:
    for option, given in (("--source", args.source), ("--tables", args.tables)):
        if given:
            raise ReloadUsageError(
                f"{option} applies to --workspace only: a stack's control item configures it"
            )
    from icetide.clock import stored_time, utc_now
    from icetide.run.reload import reload_refusal, reload_request, reload_run_id
    from icetide_cli import stack_executions

    item = stack_executions.parsed_control_item(target, args.table)
    refusal = reload_refusal(item)
    if refusal is not None:
        raise TargetError(refusal)
    now = utc_now()
    requested = stored_time(now)
    _request_in_stack(target, args.table, reload_request(item, requested))
    outcome: dict[str, Any] = {"targetTableName": args.table, "reloadRequested": requested}
    if args.no_start:
        return outcome
    run_id = reload_run_id(item.target_table_name, now)
    execution_arn = stack_executions.start_table_run(
        target, run_id, {"targetTableName": item.target_table_name}
    )
    outcome |= {"runId": run_id, "executionArn": execution_arn}
    if args.no_wait:
        return outcome
    finished = stack_executions.wait_for_run(target, f"reload run {run_id}", execution_arn, args)
    refusal = stack_executions.refusal_of(finished.output)
    if refusal is not None:
        raise ReloadRefusedNow(
            f"reload run {run_id} was refused: {refusal}; the reload stays requested: the table's next "
            "run reloads"
        )
    after = stack_executions.control_item(target, args.table) or {}
    failure = None if finished.status == "SUCCEEDED" else f"{finished.error}: {finished.cause}"
    stats = after.get("lastRunStats") if after.get("lastRunId") == run_id else None
    return {**outcome, "status": finished.status, "failure": failure, "stats": _plain(stats or {})}


def _request_in_stack(target: StackTarget, table: str, request: dict[str, str]) -> None:
    """Write ``reloadRequested`` in one conditional write: while no run holds the table's lock, and
    its last run is still the one the request names (no run slipped in since it was read)."""
    import botocore.exceptions

    from icetide_cli.operator_control import Expect, StackControlItems

    after_run = request.get("afterRun")
    try:
        write = StackControlItems(target).update(
            table,
            Expect(unlocked=True, last_run_id=(after_run,) if after_run else ()),
            set_values={"reloadRequested": request},
            remove=(),
        )
    except botocore.exceptions.ClientError as error:
        raise TargetError(f"cannot request the reload of {table}: {error}") from error
    if write.written:
        return
    current = write.item
    if not current:
        raise TargetError(f"stack {target.stack_name} has no control item for table {table!r}")
    if current.get("lockHolder"):
        raise ReloadRefusedNow(
            f"{table} is locked by run {current['lockHolder']} since {current.get('lockTime')}: nothing "
            "was requested; reload once it ends (or `icetide unlock` a lock whose run is gone)"
        )
    raise ReloadRefusedNow(
        f"{table}: run {current.get('lastRunId')} ran since the item was read; nothing was requested, "
        "try again"
    )


def _plain(value: Any) -> Any:
    """DynamoDB's Decimals as plain JSON numbers."""
    from icetide_cli.operator_output import json_ready

    return json_ready(value)


def _lines(outcome: dict[str, Any]) -> list[str]:
    table = outcome["targetTableName"]
    lines = [f"{table}: reload requested at {outcome['reloadRequested']}"]
    if "status" not in outcome:
        if "executionArn" in outcome:
            lines.append(f"  run {outcome['runId']} started: {outcome['executionArn']}")
        else:
            lines.append("  the table's next run is the reload")
        return lines
    lines.append(f"  run {outcome['runId']}: {outcome['status']}")
    if outcome.get("failure"):
        lines.append(f"  failed: {outcome['failure']} (the reload stays requested: the next run reloads)")
    stats = outcome.get("stats") or {}
    if stats:
        counts = ", ".join(
            f"{stats[name]} {label}"
            for name, label in (
                ("rowsRead", "read"),
                ("rowsInserted", "inserted"),
                ("rowsUpdated", "updated"),
                ("rowsDeleted", "deleted"),
                ("rowsUnchanged", "unchanged"),
            )
            if name in stats
        )
        lines.append(f"  rows: {counts}")
        if stats.get("snapshotId") is not None:
            lines.append(f"  silver snapshot {stats['snapshotId']}")
    return lines
