"""PollReplicationTask: one look at the run's tasks, as running, succeeded or failed.

Input: ``{"targetTableName", "runId", "task"}``. Output: ``{"status", "dmsStatus", "stopReason",
"tablesErrored", "lastFailureMessage"}`` of the task that decides (a failed one, else one still
running, else the run's own). One DescribeReplicationTasks per task per call: the state machine
owns the waiting (Wait state, bounded loop), so a slow task never holds a Lambda.
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

    progress = replication_status.run_progress(
        [(dms.describe_task_by_arn(arn), arn) for arn in run.task.task_arns]
    )
    if progress["status"] == replication_status.TaskProgress.FAILED:
        logger.error("replication task failed", extra=progress)
    return progress
