"""ReadTaskStatistics: how many rows DMS wrote, per table and in total, and where CDC got to.

Input: ``{"targetTableName", "runId", "task"}``. Output: ``{"fullLoadRows", "changeRows",
"expectedRows", "recoveryCheckpoint", "tablesLoaded", "tablesErrored", "tables": [{"schema",
"table", "fullLoadRows", "changeRows", "state"}], "reconcileExpectedRows", "reconcileStartedAt"}``;
``expectedRows`` is full-load plus change rows as the Glue job's ``--expected_rows`` text, and the
two reconcile values are the job's ``--reconcile_*`` texts ("" unless the run reconciles).
Statistics DMS cannot give fail the state (and so the run): the job must not commit rows nobody
counted.
"""

from __future__ import annotations

from typing import Any

from aws_lambda_powertools.utilities.typing import LambdaContext

from icetide.adapters import dms
from icetide.dms import replication_status
from icetide.observability import MetricUnit, metrics, observed
from icetide.run.handler_inputs import TaskInput, parse_input


def _described(task_arn: str) -> dict[str, Any]:
    return dict(replication_status.existing_task(dms.describe_task_by_arn(task_arn), task_arn))


@observed()
def handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    run = parse_input(TaskInput, event)
    task_arn = run.task.replication_task_arn

    key_extraction = None
    if run.task.key_task_arn:
        key_arn = run.task.key_task_arn
        key_extraction = (_described(key_arn), dms.table_statistics(key_arn))
    statistics = replication_status.statistics(
        _described(task_arn), dms.table_statistics(task_arn), key_extraction
    )
    metrics.add_metric(name="FullLoadRows", unit=MetricUnit.Count, value=statistics["fullLoadRows"])
    metrics.add_metric(name="ChangeRows", unit=MetricUnit.Count, value=statistics["changeRows"])
    return statistics
