"""`icetide unlock TABLE`: remove the lock a run that is gone left on its table.

A run releases its lock itself, on success and on failure; an aborted or timed-out execution's
cleanup does too. A lock stays only when that cleanup could not run; the next run takes a lock over
once it is stale (``LockStaleAfterSeconds``), and this removes it now. The removal is conditional on
the holder this command showed (``ControlTable.release_lock``'s condition), so a lock another run
took meanwhile stays. In a stack, a holder whose execution is still RUNNING keeps its lock: removing
it would let a second run merge into the same table at the same time.
"""

from __future__ import annotations

import argparse

from icetide.adapters.stepfunctions import execution_arn
from icetide.dms.identifiers import is_maintenance_run_id
from icetide_cli.operator_control import Expect, control_items_of
from icetide_cli.operator_output import EXIT_OK, Refused, UsageProblem, print_json, run_verb
from icetide_cli.operator_target import StackTarget, Target

TABLE_RUN_MACHINE_OUTPUT = "TableRunStateMachineArn"
MAINTENANCE_MACHINE_OUTPUT = "MaintenanceStateMachineArn"


def unlock(args: argparse.Namespace) -> int:
    """Handler of `icetide unlock TABLE`."""
    return run_verb("unlock", args, lambda target: _unlock(target, args))


def _unlock(target: Target, args: argparse.Namespace) -> int:
    control = control_items_of(target)
    item = control.item(args.table)
    holder, since = item.get("lockHolder") or None, item.get("lockTime")
    if holder is None:
        result = {"targetTableName": args.table, "unlocked": False, "lockHolder": None, "lockTime": None}
        message = f"{args.table} is not locked: nothing to do"
    else:
        if isinstance(target, StackTarget):
            refuse_while_running(target, args.table, str(holder))
        write = control.update(
            args.table, Expect(lock_holder=str(holder)), set_values={}, remove=("lockHolder", "lockTime")
        )
        if not write.written:
            if write.item is None:
                raise UsageProblem(f"{args.table} has no control item any more")
            now = write.item.get("lockHolder")
            state = f"is now held by run {now} since {write.item.get('lockTime')}" if now else "was released"
            raise Refused(f"{args.table}'s lock changed since it was read (it {state}): nothing was removed")
        result = {"targetTableName": args.table, "unlocked": True, "lockHolder": holder, "lockTime": since}
        message = f"{args.table}: removed the lock of run {holder}, held since {since}"
    if args.json:
        print_json(result)
    else:
        print(message)
    return EXIT_OK


def refuse_while_running(target: StackTarget, table: str, holder: str) -> None:
    """Refused when the holder's execution (a table run, or a maintenance run) is still RUNNING."""
    output = MAINTENANCE_MACHINE_OUTPUT if is_maintenance_run_id(holder) else TABLE_RUN_MACHINE_OUTPUT
    arn = execution_arn(target.output(output), holder)
    stepfunctions = target.client("stepfunctions")
    try:
        status = stepfunctions.describe_execution(executionArn=arn)["status"]
    except stepfunctions.exceptions.ExecutionDoesNotExist:
        return
    if status == "RUNNING":
        raise Refused(
            f"{table} is locked by run {holder}, whose execution is still RUNNING: its lock stays. "
            f"Stop it if it is stuck (aws stepfunctions stop-execution --execution-arn {arn}); its "
            "cleanup releases the lock"
        )
