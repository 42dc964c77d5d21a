"""CleanUpExecution: clean up after a table run that ended outside the state machine's own paths.

Invoked by the EventBridge rule on the table-run state machine's execution status (ABORTED,
TIMED_OUT, FAILED; template.yaml), with the "Step Functions Execution Status Change" event
(``events/clean_up_execution.json``). What it does is decided by ``icetide.run.abandoned.cleanup_plan``:

- deletes the run's DMS resources, found by this stack's tag and the run's tag (the run may have
  died before recording what it created): tasks (stopped first), target endpoints, the instance the
  run created. A reused instance carries no run tag, a continuous table's task and endpoint carry
  the long-lived mark: neither is ever deleted;
- records the failure (``lastRunError`` "execution ABORTED: ...", ``lastFailedState`` the state the
  execution was in) only where the control item is still this run's;
- releases the lock if this run holds it.

Output: ``{"targetTableName", "runId", "status", "reason", "deleted", "alreadyGone", "kept",
"failureRecorded", "lockReleased"}``. A second delivery of the same event finds nothing left to do
and succeeds. Raises DmsResourceBusy, after recording and unlocking, while DMS cannot delete
something yet: Lambda's asynchronous retries try again, and the hourly sweep catches what is left.
Any other error is counted as ``CleanupFailures`` (CleanupFailedAlarm) before it is raised.
"""

from __future__ import annotations

from typing import Any

from aws_lambda_powertools.utilities.typing import LambdaContext

from icetide.adapters import stepfunctions
from icetide.adapters.control_table import ControlTable
from icetide.clock import stored_time, utc_now
from icetide.dms.cleanup import CleanupReport
from icetide.dms.tagged import runs_resources
from icetide.errors import DmsResourceBusy
from icetide.observability import MetricUnit, logger, metrics, observed
from icetide.run.abandoned import ExecutionStatusChange, abandoned_message, cleanup_plan, table_in_input
from icetide.run.handler_inputs import InvalidHandlerInput, parse_input
from icetide.run.tagged_cleanup import delete_resources, stack_resources
from icetide.settings import load_settings


def _target_table_name(change: ExecutionStatusChange) -> str:
    """The run's table: from the event's input, else from the execution's whole input."""
    table = change.target_table_name()
    if table is not None:
        return table
    described = stepfunctions.describe_execution(change.detail.execution_arn)
    table = table_in_input(described.get("input") if described else None)
    if table is None:
        raise InvalidHandlerInput(
            f"execution {change.detail.execution_arn} has no targetTableName in its input "
            f"({'it does not exist' if described is None else 'input: ' + str(described.get('input'))[:200]})"
        )
    return table


@observed(correlation_id_path="detail.name")
def handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    try:
        return _clean_up(event)
    except DmsResourceBusy:
        raise  # DMS is still stopping a task: Lambda retries, and that is no failure of the cleanup
    except Exception:
        # Counted for CleanupFailedAlarm: Lambda's Errors would also count the busy retries above,
        # which every abort of a run whose task is running goes through.
        metrics.add_metric(name="CleanupFailures", unit=MetricUnit.Count, value=1)
        raise


def _clean_up(event: dict[str, Any]) -> dict[str, Any]:
    settings = load_settings()
    change = parse_input(ExecutionStatusChange, event)
    machine = settings.require("state_machine_arn")
    if change.detail.state_machine_arn != machine:
        raise InvalidHandlerInput(
            f"the event is about {change.detail.state_machine_arn}, not this stack's table-run "
            f"state machine {machine}: the rule's pattern should not have matched it"
        )
    run_id, status = change.run_id, change.status
    if not change.needs_cleanup:
        logger.info("execution status needs no cleanup", extra={"status": status})
        return {"runId": run_id, "status": status, "reason": f"an execution {status} needs no cleanup"}

    table_name = _target_table_name(change)
    table = ControlTable(settings.control_table_name)
    plan = cleanup_plan(status, run_id, table.get_item(table_name))
    logger.info("cleaning up after the run", extra={"status": status, "reason": plan.reason})

    report = CleanupReport()
    stack = settings.require("stack_name")
    delete_resources(runs_resources(stack_resources(stack), stack, run_id), report)
    recorded = False
    if plan.record_failure:
        failed_state = stepfunctions.last_entered_state(change.detail.execution_arn)
        recorded = table.record_failure(
            table_name,
            run_id,
            failed_state=failed_state or f"(execution {status})",
            error=abandoned_message(status, change.detail.error, change.detail.cause),
            now=stored_time(utc_now()),
        ).written
    released = table.release_lock(table_name, run_id).written if plan.release_lock else False
    if recorded or released or report.deleted:
        # A delivery that changed something: a run ended outside its paths and left work behind.
        metrics.add_metric(name="AbandonedRunCleanups", unit=MetricUnit.Count, value=1)
    logger.info(
        "run cleaned up",
        extra={"deleted": report.deleted, "busy": report.busy, "recorded": recorded, "released": released},
    )
    result = {"targetTableName": table_name, "runId": run_id, "status": status, "reason": plan.reason}
    # Raises DmsResourceBusy when DMS refused something: recorded and unlocked all the same.
    return result | report.finish() | {"failureRecorded": recorded, "lockReleased": released}
