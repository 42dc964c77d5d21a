"""ReadTaskStatistics: how many rows DMS unloaded, per table and in total.

Input: ``{"targetTableName", "runId", "task"}``. Output: ``{"fullLoadRows", "expectedRows",
"tablesLoaded", "tablesErrored", "tables": [{"schema", "table", "fullLoadRows", "state"}]}``;
``expectedRows`` is ``fullLoadRows`` as the Glue job's ``--expected_rows`` text. Statistics DMS
cannot give fail the state (and so the run): the job must not commit rows nobody counted.
"""

from __future__ import annotations

from typing import Any

from aws_lambda_powertools.utilities.typing import LambdaContext

from icetide.adapters import dms
from icetide.dms import replication_status
from icetide.observability import MetricUnit, metrics, observed
from icetide.run.handler_inputs import TaskInput, parse_input


@observed()
def handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    run = parse_input(TaskInput, event)
    task_arn = run.task.replication_task_arn

    task = replication_status.existing_task(dms.describe_task_by_arn(task_arn), task_arn)
    statistics = replication_status.statistics(task, dms.table_statistics(task_arn))
    metrics.add_metric(name="FullLoadRows", unit=MetricUnit.Count, value=statistics["fullLoadRows"])
    return statistics
