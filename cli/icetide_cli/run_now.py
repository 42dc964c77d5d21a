"""`icetide run [TABLE...]`: start this schedule slot's runs now, the manual invoke.

In a stack, every active table is started by invoking the StartWorkflow function with ``{}``, exactly
the manual invoke its output ``StartWorkflowFunctionName`` is for, so every rule of the schedule
(validation, conflicts, locks, continuous tasks) stays in the handler. StartWorkflow takes no list of
tables, so named tables are started here with the handler's own parts: the items triaged by
``icetide.run.scheduling.triage``, the run id of the slot (``run_id``, with the stack's
``ScheduleSlotMinutes``), the execution input (``execution_input``) and ``start_runs`` with
``start_execution_once`` (``icetide.adapters`` pointed at the stack). One difference, on purpose: a
named table whose live lock another run holds is never started (its run would only fail at the lock),
and it is reported with the holder.

In a workspace, one local cycle runs (``icetide_local.workspace_cycle``, as `icetide local run`), of
the tables file's tables or the named ones, and each run is recorded for `icetide runs`. The source
URL is an argument every time: it may hold a password, and nothing of it is stored.
"""

from __future__ import annotations

import argparse
import functools
import json
import sys
from collections.abc import Mapping, Sequence
from typing import Any

from icetide.adapters.stepfunctions import start_execution_once
from icetide.clock import utc_now
from icetide.control.codec import from_typed_json, is_typed_json
from icetide.dms.identifiers import SLOT_FORMAT, run_id, schedule_slot
from icetide.run.locking import live_lock_holder
from icetide.run.scheduling import ScheduleSummary, execution_input, triage
from icetide.run.starts import PlannedRun, start_runs
from icetide.settings import Settings
from icetide_cli.operator_control import control_items_of, unknown_table
from icetide_cli.operator_output import (
    EXIT_FAILED,
    EXIT_OK,
    OperatorError,
    UsageProblem,
    print_json,
    run_verb,
)
from icetide_cli.operator_target import StackTarget, Target, WorkspaceTarget

START_WORKFLOW_OUTPUT = "StartWorkflowFunctionName"
STATE_MACHINE_OUTPUT = "TableRunStateMachineArn"
SLOT_PARAMETER = "ScheduleSlotMinutes"
STALE_PARAMETER = "LockStaleAfterSeconds"
WORKSPACE_ONLY = ("source", "tables_file", "quiet")


def run_now(args: argparse.Namespace) -> int:
    """Handler of `icetide run [TABLE...]`."""
    return run_verb("run", args, lambda target: _run(target, args), create_workspace=True)


def _run(target: Target, args: argparse.Namespace) -> int:
    if isinstance(target, WorkspaceTarget):
        return run_workspace(target, args)
    given = [f"--{name.removesuffix('_file')}" for name in WORKSPACE_ONLY if getattr(args, name)]
    if given:
        raise UsageProblem(f"{' and '.join(given)} apply to --workspace only (a stack reads its own source)")
    summary = start_tables(target, args.tables) if args.tables else invoke_start_workflow(target)
    if args.json:
        print_json(summary)
    else:
        for line in summary_lines(summary):
            print(line)
    return EXIT_OK if all_started(summary, named=bool(args.tables)) else EXIT_FAILED


def invoke_start_workflow(target: StackTarget) -> dict[str, Any]:
    """Invoke StartWorkflow with ``{}`` (now's slot, every active table); its output."""
    function = target.output(START_WORKFLOW_OUTPUT)
    response = target.client("lambda").invoke(
        FunctionName=function, InvocationType="RequestResponse", Payload=b"{}"
    )
    payload = json.loads(response["Payload"].read() or b"{}")
    if response.get("FunctionError"):
        raise OperatorError(
            f"{function} failed: {payload.get('errorType')}: {payload.get('errorMessage')} "
            "(runs it started before failing are running; `icetide status` shows them)"
        )
    result: dict[str, Any] = payload
    return result


def _stack_setting(target: StackTarget, parameter: str, field: str) -> int:
    """A stack parameter the Lambdas read (as the environment variable ``field``), else its default."""
    value = target.parameter(parameter)
    default = Settings.model_fields[field].default
    return int(value) if value else int(default)


def start_tables(target: StackTarget, names: Sequence[str]) -> dict[str, Any]:
    """Start this slot's run of each named table as StartWorkflow would; StartWorkflow's output shape."""
    items = control_items_of(target).items()
    known = [str(item["targetTableName"]) for item in items]
    for name in names:
        if name not in known:
            raise unknown_table(name, f"stack {target.stack_name}", known)
    wanted = set(names)
    triaged = triage(items)  # conflicts are judged against every item, as StartWorkflow does
    now = utc_now()
    slot_start = schedule_slot(now, _stack_setting(target, SLOT_PARAMETER, "schedule_slot_minutes"))
    stale_after = _stack_setting(target, STALE_PARAMETER, "lock_stale_after_seconds")
    planned = []
    for item in (one for one in triaged.runnable if one.target_table_name in wanted):
        run = run_id(item.target_table_name, slot_start)
        holder = live_lock_holder(item, now, stale_after)
        planned.append(
            PlannedRun(
                item.target_table_name,
                run,
                execution_input(item.target_table_name, run, now),
                locked_by=holder,
            )
        )
    summary = ScheduleSummary(slot_start=slot_start)
    start = functools.partial(start_execution_once, target.output(STATE_MACHINE_OUTPUT))
    with target.adapters_use_this_stack():
        start_runs(planned, start, summary)
    return {
        "slot": slot_start.strftime(SLOT_FORMAT),
        "started": summary.started,
        "alreadyStarted": summary.already_started,
        "locked": summary.locked,
        "inactive": [name for name in triaged.inactive if name in wanted],
        "invalid": [entry for entry in triaged.invalid if entry["targetTableName"] in wanted],
        "failed": summary.failed,
    }


def all_started(summary: Mapping[str, Any], *, named: bool) -> bool:
    """True when nothing went wrong: no invalid item, no failed start, and, for named tables, every
    one started (a named table already started this slot, locked or inactive was not)."""
    if summary.get("invalid") or summary.get("failed"):
        return False
    return not named or not (
        summary.get("alreadyStarted") or summary.get("locked") or summary.get("inactive")
    )


def summary_lines(summary: Mapping[str, Any]) -> list[str]:
    """StartWorkflow's output (or the same shape for named tables) as lines."""
    lines = [f"slot {summary.get('slot')}"]
    lines += [f"  started {run}" for run in summary.get("started", [])]
    lines += [
        f"  already started {run} (a slot's run id is used once; the next slot starts the next run)"
        for run in summary.get("alreadyStarted", [])
    ]
    lines += [
        f"  not started {table}: locked by run {holder}"
        for table, holder in summary.get("locked", {}).items()
    ]
    lines += [f"  not started {table}: inactive (activeflag N)" for table in summary.get("inactive", [])]
    lines += [
        f"  not started {entry['targetTableName']}: invalid control item: {'; '.join(entry['errors'])}"
        for entry in summary.get("invalid", [])
    ]
    lines += [f"  FAILED to start {run}: {reason}" for run, reason in summary.get("failed", {}).items()]
    lines += [f"  retired {table}: {step}" for table, step in summary.get("retired", {}).items()]
    return lines


def run_workspace(target: WorkspaceTarget, args: argparse.Namespace) -> int:
    """One local cycle of the tables file's tables (or the named ones), recorded in the workspace."""
    if not args.source or not args.tables_file:
        raise UsageProblem("--workspace needs --source URL and --tables FILE (as `icetide local run`)")
    from icetide_cli.control_items import UnreadableItems, read_items_file

    # The local stack (moto, Spark, the DMS stand-in): the local extra. main() names it when missing.
    from icetide_local.cycle_report import render_cycle
    from icetide_local.local_stack import StartWorkflowFailed
    from icetide_local.progress import command_progress
    from icetide_local.standins.dms.data_mover import SourceUrlInvalid, source_endpoint_settings
    from icetide_local.workspace import Workspace, WorkspaceError, run_record
    from icetide_local.workspace_cycle import run_workspace_cycle

    try:
        source_endpoint_settings(args.source)
        items = read_items_file(args.tables_file)
    except SourceUrlInvalid as invalid:
        raise UsageProblem(f"--source: {invalid}") from None
    except UnreadableItems as unreadable:
        raise UsageProblem(str(unreadable)) from None
    items = chosen_items(items, args.tables, args.tables_file)
    try:
        workspace = Workspace.open(target.workspace)
        with command_progress(sys.stderr, quiet=args.quiet) as progress:  # as `icetide local run` shows it
            report = run_workspace_cycle(
                workspace, args.source, items, progress=progress, timeout_seconds=args.timeout
            )
    except (WorkspaceError, StartWorkflowFailed, TimeoutError) as failed:
        raise OperatorError(str(failed)) from None
    if args.json:
        print_json(
            {
                "slot": report.slot,
                "runs": [run_record(run) | {"stats": dict(run.stats)} for run in report.runs],
                "inactive": list(report.inactive),
                "invalid": list(report.invalid),
                "notLoaded": list(report.not_loaded),
            }
        )
    else:
        for line in render_cycle(report):
            print(line)
    return EXIT_OK if report.succeeded else EXIT_FAILED


def chosen_items(items: list[Any], names: Sequence[str], tables_file: str) -> list[Any]:
    """The tables file's items of the named tables (all of them when none is named)."""
    if not names:
        return items

    def name_of(raw: Any) -> Any:
        plain = from_typed_json(raw) if is_typed_json(raw) else raw
        return plain.get("targetTableName") if isinstance(plain, Mapping) else None

    listed = [name for name in map(name_of, items) if isinstance(name, str)]
    for name in names:
        if name not in listed:
            raise unknown_table(name, tables_file, listed)
    return [raw for raw in items if name_of(raw) in names]
