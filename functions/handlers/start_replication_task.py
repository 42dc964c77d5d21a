"""StartReplicationTask: start the run's full-load task once it is ready.

Input: ``{"targetTableName", "runId", "task"}``. Output: ``{"replicationTaskArn", "status"}``.
Raises DmsResourceNotReady (retried) while DMS is still creating the task. A task that was
started already (a retried invocation) is left alone and its status reported.
"""

from __future__ import annotations

from typing import Any

from aws_lambda_powertools.utilities.typing import LambdaContext

from icetide.adapters import dms
from icetide.dms import replication_status
from icetide.observability import logger, observed
from icetide.run.handler_inputs import TaskInput, parse_input


@observed()
def handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    run = parse_input(TaskInput, event)
    task_arn = run.task.replication_task_arn

    task = dms.describe_task_by_arn(task_arn)
    if replication_status.must_start(task, task_arn):
        task = dms.start_task(task_arn)
    else:
        logger.info("replication task was started before", extra={"dmsStatus": (task or {}).get("Status")})
    return {"replicationTaskArn": task_arn, "status": (task or {}).get("Status")}
