"""StartReplicationTask: start the run's tasks once they are ready.

Input: ``{"targetTableName", "runId", "plan", "task"}``. Output: ``{"replicationTaskArn", "status",
"cdcStopPosition"}``.
A cdc task starts at the plan's ``cdcStartPosition`` (the checkpoint the previous run committed); a
full-load-and-cdc task at the ``CdcStartPosition`` it was created with, if any (a task reading a
replication slot: icetide.dms.start_position), else where its full load starts. A windowed cdc run's
task stops by itself at a ``server_time:`` CDC_STOP_AFTER_SECONDS after this start
(icetide.dms.stop_position), reported as ``cdcStopPosition``. A reconcile
run's key extraction (``task.keyTaskArn``) is started too. Raises DmsResourceNotReady (retried)
while DMS is still creating a task. A task that was started already (a retried invocation) is
left alone and its status reported.
"""

from __future__ import annotations

from typing import Any

from aws_lambda_powertools.utilities.typing import LambdaContext

from icetide.adapters import dms
from icetide.clock import utc_now
from icetide.dms import replication_status
from icetide.dms.start_position import start_start_position
from icetide.dms.stop_position import stop_position
from icetide.observability import logger, observed
from icetide.run.handler_inputs import StartTaskInput, parse_input
from icetide.settings import load_settings
from icetide_contracts.run_plan import CaptureMode


def _start_once(
    task_arn: str,
    *,
    migration_type: str = "full-load",
    planned_start: str | None = None,
    cdc_stop_position: str | None = None,
) -> tuple[dict[str, Any] | None, bool]:
    """The task, and whether this call started it (False: it was started before)."""
    task = dms.describe_task_by_arn(task_arn)
    if replication_status.must_start(task, task_arn):
        started = dms.start_task(
            task_arn,
            cdc_start_position=start_start_position(migration_type, planned_start, task),
            cdc_stop_position=cdc_stop_position,
        )
        return started, True
    logger.info(
        "replication task was started before",
        extra={"task": task_arn, "dmsStatus": (task or {}).get("Status")},
    )
    return task, False


@observed()
def handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    settings = load_settings()
    run = parse_input(StartTaskInput, event)
    plan = run.plan
    task_arn = run.task.replication_task_arn

    # Set now, not when the plan was fixed: a stop position already past might stop the task at once.
    windowed = plan.capture_mode == CaptureMode.CDC and not plan.continuous
    stop = stop_position(utc_now(), settings.cdc_stop_after_seconds) if windowed else None
    task, started_now = _start_once(
        task_arn,
        migration_type=plan.migration_type,
        planned_start=plan.cdc_start_position,
        cdc_stop_position=stop,
    )
    if run.task.key_task_arn:
        _start_once(run.task.key_task_arn)
    return {
        "replicationTaskArn": task_arn,
        "status": (task or {}).get("Status"),
        # When it was started before (a retried invocation): the one DMS describes, if any.
        "cdcStopPosition": stop if started_now else (task or {}).get("CdcStopPosition"),
    }
