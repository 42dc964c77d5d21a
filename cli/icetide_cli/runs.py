"""`icetide runs TABLE`: a table's recent runs, newest first, each with why it did not succeed.

In a stack the runs are the executions of the table-run state machine whose name belongs to the
table: a run id is ``<table>-<slot>`` (``icetide.dms.identifiers.run_id``), a verify or reload run's
``<table>-<marker>-<time>``, and a table name holds no hyphen, so the name's part before the first
hyphen is the table (a name cut short for length is matched through ``run_id``). In a workspace,
moto forgets executions with its process; the runs are those recorded in ``state/runs.jsonl``
(``Workspace.record_runs``), and the last run the control item records when the history lacks it.

A run's cause is the one ``icetide_local.cycle_report.TableRun.failure`` gives a local cycle's run:
the failed state and error the run recorded on the control item, else the execution's own error.
"""

from __future__ import annotations

import argparse
import json
import re
from collections.abc import Iterator, Mapping
from datetime import UTC, datetime
from typing import Any

from icetide.dms.identifiers import SLOT_FORMAT, run_id
from icetide_cli.operator_control import control_items_of, unknown_table
from icetide_cli.operator_output import EXIT_OK, OperatorError, UnknownTable, print_json, print_rows, run_verb
from icetide_cli.operator_target import StackTarget, Target, WorkspaceTarget
from icetide_cli.stack_executions import readable_cause, refusal_of
from icetide_local.cycle_report import TableRun
from icetide_local.workspace import Workspace, WorkspaceError, run_record

STATE_MACHINE_OUTPUT = "TableRunStateMachineArn"
HEADER = ("run", "status", "started", "stopped", "cause")
_SLOT_SUFFIX = re.compile(r"-([0-9]{8}T[0-9]{4}Z)$")


def runs(args: argparse.Namespace) -> int:
    """Handler of `icetide runs TABLE`."""
    return run_verb("runs", args, lambda target: _runs(target, args))


def _runs(target: Target, args: argparse.Namespace) -> int:
    control = control_items_of(target)
    try:
        item: dict[str, Any] | None = control.item(args.table)
    except UnknownTable:
        item = None  # a table taken out of the control table still has its executions
    if isinstance(target, StackTarget):
        found = stack_runs(target, args.table, item or {}, args.limit)
    else:
        found = workspace_runs(target, args.table, item or {}, args.limit)
    if item is None and not found:
        names = [str(one["targetTableName"]) for one in control.items()]
        raise unknown_table(args.table, control.where, names)
    if args.json:
        print_json(found)
    elif not found:
        print(f"{args.table} has not run yet")
    else:
        print_rows(HEADER, [tuple(record[name] for name in RECORD_FIELDS) for record in found])
    return EXIT_OK


# A run refused at the lock (another run or maintenance holds the table) ends SUCCEEDED with a
# `refused` output; listed under its own status, with the refusal as its cause.
REFUSED = "REFUSED"
# How many of the machine's newest executions `runs` reads at most (10 ListExecutions pages).
SCANNED_EXECUTIONS = 10_000
RECORD_FIELDS = ("runId", "status", "startDate", "stopDate", "failure")


def belongs_to(execution_name: str, target_table_name: str) -> bool:
    """Whether an execution of the table-run state machine is a run of ``target_table_name``."""
    if execution_name.partition("-")[0] == target_table_name:
        return True
    slot = _SLOT_SUFFIX.search(execution_name)
    if slot is None:
        return False
    moment = datetime.strptime(slot.group(1), SLOT_FORMAT).replace(tzinfo=UTC)
    return run_id(target_table_name, moment) == execution_name


def stack_runs(target: StackTarget, table: str, item: Mapping[str, Any], limit: int) -> list[dict[str, Any]]:
    """The table's newest ``limit`` executions, newest first, as run records (with their cause)."""
    stepfunctions = target.client("stepfunctions")
    found = []
    for execution in _executions(stepfunctions, target.output(STATE_MACHINE_OUTPUT)):
        if not belongs_to(execution["name"], table):
            continue
        status, error, cause = execution["status"], None, None
        if status != "RUNNING":
            described = stepfunctions.describe_execution(executionArn=execution["executionArn"])
            output = _json_object(described.get("output"))
            if refusal_of(output) is not None:
                status, error, cause = REFUSED, output.get("error"), readable_cause(output.get("cause"))
            elif status != "SUCCEEDED":
                error, cause = described.get("error"), readable_cause(described.get("cause"))
        run = TableRun(
            target_table_name=table,
            run_id=execution["name"],
            status=status,
            started=execution["startDate"],
            stopped=execution.get("stopDate"),
            error=error,
            cause=cause,
            item_before={},
            item_after=item,
        )
        found.append(run_record(run))
        if len(found) == limit:
            break
    return found


def _json_object(text: str | None) -> dict[str, Any]:
    try:
        value = json.loads(text) if text else None
    except json.JSONDecodeError:
        return {}
    return value if isinstance(value, dict) else {}


def _executions(stepfunctions: Any, state_machine_arn: str) -> Iterator[dict[str, Any]]:
    """The machine's newest executions, newest first (ListExecutions' own order, kept page to page).

    At most SCANNED_EXECUTIONS: every table's runs share the machine (24 a day each, kept 90 days),
    so a table that rarely runs, or a misspelt one, must not page through all of them.
    """
    try:
        pages = stepfunctions.get_paginator("list_executions").paginate(
            stateMachineArn=state_machine_arn,
            PaginationConfig={"MaxItems": SCANNED_EXECUTIONS, "PageSize": 1000},
        )
        for page in pages:
            yield from sorted(page["executions"], key=lambda execution: execution["startDate"], reverse=True)
    except stepfunctions.exceptions.StateMachineDoesNotExist as missing:
        raise OperatorError(
            f"the stack's {STATE_MACHINE_OUTPUT} {state_machine_arn} does not exist"
        ) from missing


def workspace_runs(
    target: WorkspaceTarget, table: str, item: Mapping[str, Any], limit: int
) -> list[dict[str, Any]]:
    """The table's recorded runs, newest first; the control item's last run first if unrecorded."""
    try:
        history = Workspace.existing(target.workspace).load_runs()
    except WorkspaceError as problem:
        raise OperatorError(str(problem)) from None
    recorded = [record for record in reversed(history) if record["targetTableName"] == table]
    last = item.get("lastRunId")
    if last and all(record["runId"] != last for record in recorded):
        recorded.insert(0, item_run_record(table, item))
    return recorded[:limit]


def item_run_record(table: str, item: Mapping[str, Any]) -> dict[str, Any]:
    """The last run as the control item tells it: no start time kept, ``lastRunTime`` as its end
    (while it runs, the time it took the lock)."""
    status = item.get("lastRunStatus")
    failure = None
    if status == "FAILED":
        failure = f"{item.get('lastFailedState')}: {item.get('lastRunError')}"
    return {
        "targetTableName": table,
        "runId": item.get("lastRunId"),
        "status": status,
        "startDate": item.get("lastRunTime") if status == "RUNNING" else None,
        "stopDate": None if status == "RUNNING" else item.get("lastRunTime"),
        "failure": failure,
    }
