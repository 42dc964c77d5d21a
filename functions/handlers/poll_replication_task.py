"""PollReplicationTask: one look at the run's task, as running, succeeded or failed.

Input: ``{"targetTableName", "runId", "task"}``. Output: ``{"status", "dmsStatus", "stopReason",
"tablesErrored", "lastFailureMessage"}``. Exactly one DescribeReplicationTasks per call: the
state machine owns the waiting (Wait state, bounded loop), so a slow task never holds a Lambda.
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

    progress = replication_status.progress(dms.describe_task_by_arn(task_arn), task_arn)
    if progress["status"] == replication_status.TaskProgress.FAILED:
        logger.error("replication task failed", extra=progress)
    return progress
