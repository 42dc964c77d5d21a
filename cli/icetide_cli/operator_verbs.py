"""The operator verbs `status`, `runs`, `run`, `reset` and `unlock`: top-level, on a workspace or a stack.

Each verb takes the same target options (icetide_cli.operator_target: `--workspace DIR` or
`--stack NAME` with `--region`/`--profile`, and `--json`) and ends with the same exit codes
(icetide_cli.operator_output): 0 done, 1 refused or failed, 2 bad arguments (an unknown table, a
value of the wrong kind, a workspace or stack that does not exist).

Only argparse is imported here, so `icetide --help` stays fast: each handler imports its verb's
module (and with it boto3, or the local stack) when it runs.
"""

from __future__ import annotations

import argparse

from icetide_cli.operator_target import add_target_arguments

EXIT_CODES = "Exit code 0: done; 1: refused or failed; 2: bad arguments (unknown table, no such target)."
DEFAULT_RUNS_SHOWN = 10


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add the operator verbs as top-level commands."""
    status = subparsers.add_parser(
        "status",
        help="every table: state, watermark or checkpoint, lag, last run and its counts, lock",
        description=(
            "Show every table of the control table (or only the TABLEs named): its state (ok, failed, "
            "running, maintaining, locked, interrupted, new, inactive, invalid), its position (the "
            "watermark of a delta table, the committed checkpoint of a cdc table), its lag, its last run "
            "(id, status, time) with the rows the last successful run inserted, updated and deleted, and "
            "who holds its lock since when. The lag is how far silver is behind now: now minus the later "
            "of the timestamp watermark and the last successful commit, which failed runs leave alone "
            "(a continuous cdc table: its timestamp watermark only); '-' when neither is known. A failed "
            f"table's cause follows the table. {EXIT_CODES}"
        ),
    )
    status.add_argument("tables", nargs="*", metavar="TABLE", help="only these tables (targetTableName)")
    add_target_arguments(status)
    status.set_defaults(handler=status_command)

    runs = subparsers.add_parser(
        "runs",
        help="a table's recent runs, newest first, with the failure cause",
        description=(
            "List TABLE's recent runs, newest first: run id, status, start and stop time, and for a "
            "run that did not succeed its cause (the failed state and error the run recorded on the "
            "control item, else the execution's error and cause). With --stack these are the "
            "executions of the stack's table-run state machine (Step Functions keeps closed ones for "
            "90 days); with --workspace the runs `icetide run --workspace` recorded in "
            f"DIR/state/runs.jsonl, and the last run the control item records. {EXIT_CODES}"
        ),
    )
    runs.add_argument("table", metavar="TABLE", help="the table's targetTableName")
    runs.add_argument(
        "--limit",
        type=_positive,
        default=DEFAULT_RUNS_SHOWN,
        metavar="N",
        help=f"show at most N runs (default {DEFAULT_RUNS_SHOWN})",
    )
    add_target_arguments(runs)
    runs.set_defaults(handler=runs_command)

    run = subparsers.add_parser(
        "run",
        help="start this schedule slot's runs now (every active table, or the TABLEs named)",
        description=(
            "Start runs now, as the hourly schedule would. With --stack and no TABLE this invokes the "
            "stack's StartWorkflow function (the manual invoke: every active, valid table); with "
            "TABLEs it starts those tables' executions the way StartWorkflow does (same run id, "
            "<table>-<slot>, and input). A run id is used once: a table whose run of this slot exists "
            "already is reported, not started again; a table whose lock a live run holds is not "
            "started. It does not wait for the runs: follow them with `icetide status` and `icetide "
            "runs TABLE`. With --workspace it runs one local cycle (as `icetide local run`, which "
            "needs the local extra) with --source and --tables, of all the tables file's tables or "
            "the TABLEs named, waits for it and records each run for `icetide runs`. Exit code 0: "
            "started (stack) or every run succeeded (workspace); 1: a start or a run failed, or a "
            "table was not started; 2: bad arguments."
        ),
    )
    run.add_argument(
        "tables", nargs="*", metavar="TABLE", help="only these tables (default: every active one)"
    )
    add_target_arguments(run)
    run.add_argument(
        "--source",
        metavar="URL",
        help="with --workspace: SQLAlchemy URL of the source database (never stored in the workspace)",
    )
    run.add_argument(
        "--tables",
        dest="tables_file",
        metavar="FILE",
        help="with --workspace: the control items (as for `icetide local run`)",
    )
    run.add_argument(
        "--timeout",
        type=float,
        default=1800.0,
        metavar="SECONDS",
        help="with --workspace: give up waiting for a table's run after this long (default 1800)",
    )
    run.add_argument(
        "--quiet",
        action="store_true",
        help="with --workspace: show no progress on standard error",
    )
    run.set_defaults(handler=run_command)

    reset = subparsers.add_parser(
        "reset",
        help="move a table's watermark to VALUE (a backfill); refused while the table is locked",
        description=(
            "Set TABLE's watermark to VALUE, so that its next run reads the rows from VALUE on (minus "
            "the item's lookback): a backfill, or a skip forward. VALUE must be of the watermark's "
            "kind: a number for a number watermark, a timestamp (YYYY-MM-DD HH:MM:SS[.ffffff] or "
            "ISO-8601; no zone means UTC) for a timestamp one. Only a delta table whose filter "
            "operator is gte or between has a watermark that bounds its runs; a cdc table reads from "
            "its checkpoint (use reload). The write is conditional: it is refused while a run holds "
            "the table's lock (the holder and since when are shown), and when the watermark changed "
            f"since it was read. Silver is not changed. {EXIT_CODES}"
        ),
    )
    reset.add_argument("table", metavar="TABLE", help="the table's targetTableName")
    reset.add_argument("--to", required=True, metavar="VALUE", help="the new watermark")
    add_target_arguments(reset)
    reset.set_defaults(handler=reset_command)

    # `reload TABLE` and `verify TABLE` register from their own modules (icetide_cli.reload, .verify).

    unlock = subparsers.add_parser(
        "unlock",
        help="remove a table's lock that a run which is gone left behind",
        description=(
            "Remove TABLE's lock, showing the run that held it and since when. Only that lock is "
            "removed (a conditional write on the holder shown): if another run took it meanwhile, "
            "nothing changes. With --stack the lock is refused while the holder's execution is still "
            "RUNNING (stop it instead: its cleanup releases the lock); a workspace's lock is "
            "refused while an icetide process uses the workspace. A table that is not locked is "
            f"reported as such (exit code 0). {EXIT_CODES}"
        ),
    )
    unlock.add_argument("table", metavar="TABLE", help="the table's targetTableName")
    add_target_arguments(unlock)
    unlock.set_defaults(handler=unlock_command)


def _positive(text: str) -> int:
    try:
        number = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None
    if number < 1:
        raise argparse.ArgumentTypeError(f"{number} is not 1 or more")
    return number


def status_command(args: argparse.Namespace) -> int:
    from icetide_cli.status import status

    return status(args)


def runs_command(args: argparse.Namespace) -> int:
    from icetide_cli.runs import runs

    return runs(args)


def run_command(args: argparse.Namespace) -> int:
    from icetide_cli.run_now import run_now

    return run_now(args)


def reset_command(args: argparse.Namespace) -> int:
    from icetide_cli.reset import reset

    return reset(args)


def unlock_command(args: argparse.Namespace) -> int:
    from icetide_cli.unlock import unlock

    return unlock(args)
