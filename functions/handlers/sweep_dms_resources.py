"""SweepDmsResources: delete the DMS resources of this stack's runs that are no longer running.

Invoked hourly by an EventBridge schedule (``events/sweep_dms_resources.json``; a manual invoke may
pass ``{}``). Lists every task, endpoint and instance carrying this stack's tag, looks up the
execution of each one's run (the run id is the execution name), and deletes those whose run's
execution does not exist or ended more than ``icetide.dms.sweep.SWEEP_GRACE`` ago: tasks (stopped
first), then endpoints, then instances. A continuous table's long-lived task and endpoint, and
anything no run created (a reused instance, the stack's source endpoint), are kept.

Output: ``{"deleted", "alreadyGone", "busy", "kept": [{"arn", "reason"}]}``. What DMS cannot
delete yet (a task still stopping) is left to the next sweep, not raised. Each resource deleted is
a run whose own cleanup failed: the ``DmsLeftoversDeleted`` metric counts them for an alarm.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from aws_lambda_powertools.utilities.typing import LambdaContext

from icetide.adapters import stepfunctions
from icetide.clock import utc_now
from icetide.dms.cleanup import CleanupReport
from icetide.dms.sweep import RunExecution, keep_reason
from icetide.observability import MetricUnit, logger, metrics, observed
from icetide.run.handler_inputs import ScheduleEvent, parse_input
from icetide.run.tagged_cleanup import delete_resources, stack_resources
from icetide.settings import load_settings


def _run_execution(state_machine_arn: str, run_id: str) -> RunExecution | None:
    described = stepfunctions.describe_execution(stepfunctions.execution_arn(state_machine_arn, run_id))
    if described is None:
        return None
    stopped: datetime | None = described.get("stopDate")
    return RunExecution(status=str(described["status"]), stopped_at=stopped)


@observed(correlation_id_path=None)
def handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    settings = load_settings()
    parse_input(ScheduleEvent, event)  # only the shape matters: the sweep runs on the current time
    stack = settings.require("stack_name")
    machine = settings.require("state_machine_arn")
    now = utc_now()

    executions: dict[str, RunExecution | None] = {}
    leftovers, kept = [], []
    for resource in stack_resources(stack):
        run_id = resource.run_id
        if run_id is not None and run_id not in executions:
            executions[run_id] = _run_execution(machine, run_id)
        reason = keep_reason(resource, stack, executions.get(run_id) if run_id else None, now)
        if reason is None:
            leftovers.append(resource)
        else:
            kept.append({"arn": resource.arn, "reason": reason})

    report = CleanupReport()
    delete_resources(leftovers, report)
    metrics.add_metric(name="DmsLeftoversDeleted", unit=MetricUnit.Count, value=len(report.deleted))
    metrics.add_metric(name="DmsLeftoversBusy", unit=MetricUnit.Count, value=len(report.busy))
    logger.info(
        "DMS resources swept",
        extra={"deleted": report.deleted, "busy": report.busy, "kept": len(kept)},
    )
    return {
        "deleted": report.deleted,
        "alreadyGone": report.already_gone,
        "busy": report.busy,
        "kept": kept,
    }
