"""`icetide verify TABLE`: silver against the source, reporting without changing anything.

Locally (``--workspace DIR --source URL``) the workspace's silver table, read with pyiceberg, is
compared with the source table read through SQLAlchemy (icetide_local.verify): keys, and with
``--values`` the values too. In AWS (``--stack NAME``) the stack's StartVerifyRun function starts
a verify run of the deployed state machine (icetide.run.verify): a key-only DMS extraction, as the
reconcile makes, compared by the Glue job with silver's live keys; its report is read from S3 when
the run ends. The operator needs ``lambda:InvokeFunction`` on that function, not
``states:StartExecution`` (which starts any run). Both print the
same report (icetide_contracts.verify); ``--json`` prints it as JSON.

Exit codes, as diff's: 0 silver matches the source; 1 it differs; 2 bad arguments, or the table
could not be verified (no such table, source unreachable, the verify run failed or was refused).
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
from icetide_contracts.verify import DEFAULT_SHOWN, Difference, VerifyReport

EXIT_MATCHES = 0
EXIT_DIFFERS = 1
EXIT_TROUBLE = 2


class VerifyUsageError(Exception):
    """An option that does not fit the target (``--values`` in AWS, no ``--source`` locally)."""


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add the top-level `verify` command."""
    verify = subparsers.add_parser(
        "verify",
        help="compare a silver table with its source table (changes nothing)",
        description=(
            "Compare the silver table of TABLE (its targetTableName) with its source table and report "
            "the rows each side counts, the keys missing from silver and the keys extra in silver (the "
            "counts, and the first --show of each). Source rows are those the table's filter selects "
            "from its configured startvalue (not the watermark); silver rows are the live ones (a soft-"
            "deleted row is not). A table without primaryKeys (append-only) is compared by whole rows, "
            "each as often as the source holds it. Rows changed at the source since the table's last "
            "run show up as differences until the next run loads them. Locally (--workspace, with "
            "--source) the source is read through SQLAlchemy and silver with pyiceberg; --values also "
            "compares the values of the keys both sides hold. With --stack the stack's StartVerifyRun "
            "function starts a verify run of the deployed state machine (it needs lambda:InvokeFunction "
            "on that function, not states:StartExecution): the run takes the table's lock, extracts the "
            "source's key columns "
            "with DMS (as the reconcile does), lets the Glue job compare them with silver and write the "
            "report next to the run's manifest, deletes its DMS resources and releases the lock; it "
            "commits nothing (no watermark, checkpoint, statistics or silver change). A key-only "
            "extraction cannot compare values (no --values in AWS) nor a table without keys. Exit "
            "code 0: silver matches the source; 1: it differs; 2: bad arguments, or the table could "
            "not be verified."
        ),
    )
    verify.add_argument("table", metavar="TABLE", help="the table's targetTableName")
    add_target_arguments(verify)
    verify.add_argument(
        "--source",
        metavar="URL",
        help="with --workspace: SQLAlchemy URL of the source database (as for `icetide local run`)",
    )
    verify.add_argument(
        "--values",
        action="store_true",
        help="with --workspace: also compare the values of every source column, key by key",
    )
    verify.add_argument(
        "--show",
        type=_count,
        default=None,
        metavar="N",
        help="list at most N keys (or rows) of each difference (default 20); the counts are complete",
    )
    add_wait_arguments(verify, "verify run")
    verify.set_defaults(handler=verify_command)


def _count(text: str) -> int:
    if not text.isdigit():
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number")
    return int(text)


def verify_command(args: argparse.Namespace) -> int:
    """`icetide verify TABLE`."""
    report: VerifyReport | None
    try:
        target = target_from_args(args)
        if isinstance(target, WorkspaceTarget):
            report = _verify_workspace(target, args)
        else:
            report = _verify_stack(target, args)
    except (VerifyUsageError, TargetError) as error:
        print(f"icetide verify: {error}", file=sys.stderr)
        return EXIT_TROUBLE
    if report is None:  # --no-wait
        return EXIT_MATCHES
    if args.json:
        print(json.dumps(report.to_json(), indent=2))
    else:
        for line in render_report(args.table, report):
            print(line)
    return EXIT_MATCHES if report.matches else EXIT_DIFFERS


def _shown(args: argparse.Namespace) -> int:
    return DEFAULT_SHOWN if args.show is None else int(args.show)


def _verify_workspace(target: WorkspaceTarget, args: argparse.Namespace) -> VerifyReport:
    for option, given in (("--no-wait", args.no_wait),):
        if given:
            raise VerifyUsageError(f"{option} applies to --stack only: a local verify runs here and now")
    if not args.source:
        raise VerifyUsageError("--workspace needs --source URL, the database the workspace loads from")
    # pyiceberg, SQLAlchemy and the local stand-ins load only when a local verify runs.
    from icetide_local.standins.dms.data_mover import SourceUrlInvalid, source_endpoint_settings
    from icetide_local.verify import VerifyError, verify_workspace_table
    from icetide_local.workspace import Workspace, WorkspaceError

    try:
        source_endpoint_settings(args.source)
    except SourceUrlInvalid as error:
        raise VerifyUsageError(f"--source: {error}") from None
    try:
        workspace = Workspace.existing(target.workspace)
        return verify_workspace_table(
            workspace, args.table, args.source, values=args.values, shown=_shown(args)
        )
    except (WorkspaceError, VerifyError) as error:
        raise TargetError(str(error)) from None


def _verify_stack(target: StackTarget, args: argparse.Namespace) -> VerifyReport | None:
    if args.values:
        raise VerifyUsageError(
            "--values applies to --workspace only: a verify run in AWS extracts the source's key "
            "columns only, which cannot show values"
        )
    if args.source:
        raise VerifyUsageError(
            "--source applies to --workspace only: in AWS the stack's DMS endpoint is the source"
        )
    if args.show is not None:
        raise VerifyUsageError("--show applies to --workspace only: a verify run lists the first 20 of each")
    from icetide_cli import stack_executions
    from icetide_contracts.json_fields import ContractViolation

    item = stack_executions.parsed_control_item(target, args.table)
    if not item.primary_keys:
        raise TargetError(
            f"{args.table} has no primaryKeys: a verify run compares keys, and an append-only table has "
            "none (verify it locally, where whole rows are compared)"
        )
    # The stack's StartVerifyRun function names the run (icetide.run.verify): the operator needs the
    # right to invoke it, not the right to start any run of the machine.
    run_id, execution_arn = stack_executions.start_verify_run(target, item.target_table_name)
    if args.no_wait:
        print(json.dumps({"runId": run_id, "executionArn": execution_arn}) if args.json else execution_arn)
        return None
    finished = stack_executions.wait_for_run(target, f"verify run {run_id}", execution_arn, args)
    if finished.status != "SUCCEEDED":
        raise TargetError(f"verify run {run_id} {finished.status}: {finished.error}: {finished.cause}")
    refusal = stack_executions.refusal_of(finished.output)
    if refusal is not None:
        raise TargetError(f"verify run {run_id} was refused: {refusal}")
    report_uri = finished.output.get("verifyReportUri")
    if not isinstance(report_uri, str) or not report_uri:
        raise TargetError(
            f"verify run {run_id} succeeded without naming its report (output: {finished.output})"
        )
    try:
        return VerifyReport.from_text(stack_executions.read_s3_text(target, report_uri))
    except ContractViolation as violation:
        raise TargetError(f"{report_uri}: {violation}") from None


def render_report(table: str, report: VerifyReport) -> list[str]:
    """The report of ``table`` as lines for a person: the verdict, the counts, the first keys of
    each difference."""
    what = {"keys": "keys", "keys and values": "keys and values", "rows": "whole rows (no primary keys)"}
    verdict = "matches source" if report.matches else "DIFFERS from source"
    lines = [f"{table}: silver {verdict} (compared {what[report.compared]})"]
    if report.run_id:
        lines.append(f"  verify run     {report.run_id}")
    lines.append(
        f"  source rows    {report.source_rows}"
        + (f" (filter: {report.source_filter})" if report.source_filter else "")
    )
    lines.append(f"  silver rows    {report.silver_rows} ({report.silver_table}, live rows)")
    unit = "row" if report.compared == "rows" else "key"
    differences: tuple[tuple[str, Difference | None], ...] = (
        ("missing from silver", report.missing),
        ("extra in silver", report.extra),
        ("values differ", report.differing),
    )
    for label, difference in differences:
        if difference is None:
            continue
        lines.append(f"  {label}: {difference.count} {unit}{'' if difference.count == 1 else 's'}")
        lines += [f"    {_entry(entry)}" for entry in difference.first]
        if difference.count > len(difference.first):
            lines.append(f"    ... and {difference.count - len(difference.first)} more")
    if report.duplicate_keys_in_silver:
        lines.append(f"  keys held more than once in silver: {report.duplicate_keys_in_silver}")
    if report.columns_missing_from_silver:
        lines.append(f"  source columns silver lacks: {', '.join(report.columns_missing_from_silver)}")
    return lines


def _entry(entry: dict[str, Any]) -> str:
    return ", ".join(f"{name}={json.dumps(value)}" for name, value in entry.items())
