"""ReadTaskStatistics: how many rows DMS unloaded, per table and in total.

Input: ``{"targetTableName", "runId", "task"}``. Output: ``{"fullLoadRows", "tablesLoaded",
"tablesErrored", "tables": [{"schema", "table", "fullLoadRows", "state"}]}``; ``fullLoadRows`` is
null when per-table statistics are not available (moto does not implement them).
"""

from __future__ import annotations

from typing import Any

from aws_lambda_powertools.utilities.typing import LambdaContext

from icetide import replication_status
from icetide.adapters import dms
from icetide.handler_inputs import TaskInput, parse_input
from icetide.observability import MetricUnit, logger, metrics, observed


@observed()
def handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    run = parse_input(TaskInput, event)
    task_arn = run.task.replication_task_arn

    task = replication_status.existing_task(dms.describe_task_by_arn(task_arn), task_arn)
    tables = dms.table_statistics(task_arn)
    if tables is None:
        logger.warning("DMS table statistics are not available; fullLoadRows is left empty")
    statistics = replication_status.statistics(task, tables)
    if statistics["fullLoadRows"] is not None:
        metrics.add_metric(name="FullLoadRows", unit=MetricUnit.Count, value=statistics["fullLoadRows"])
    return statistics
