"""ReadTaskStatistics: how many rows DMS wrote, per table and in total, and where CDC got to.

Input: ``{"targetTableName", "runId", "task", "plan"}``. Output: ``{"fullLoadRows", "changeRows",
"expectedRows", "maxChangeRows", "bronzeFiles", "recoveryCheckpoint", "tablesLoaded",
"tablesErrored", "tables": [{"schema", "table", "fullLoadRows", "changeRows", "state"}],
"reconcileExpectedRows", "reconcileStartedAt"}``; ``expectedRows`` (full-load rows),
``maxChangeRows`` (the changes DMS counted) and ``bronzeFiles`` (the files the run's bronze folder
holds now that its task stopped, icetide.run.bronze_listing) are the Glue job's
``--expected_rows``, ``--max_change_rows`` and ``--expected_files`` texts, and the two reconcile
values its ``--reconcile_*`` texts ("" unless the run reconciles).
Statistics DMS cannot give fail the state (and so the run): the job must not commit rows nobody
counted.
"""

from __future__ import annotations

from typing import Any

from aws_lambda_powertools.utilities.typing import LambdaContext

from icetide.adapters import dms, s3
from icetide.dms import replication_status
from icetide.observability import MetricUnit, metrics, observed
from icetide.run.bronze_listing import bronze_file_count
from icetide.run.handler_inputs import StatisticsInput, parse_input


def _described(task_arn: str) -> dict[str, Any]:
    return dict(replication_status.existing_task(dms.describe_task_by_arn(task_arn), task_arn))


@observed()
def handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    run = parse_input(StatisticsInput, event)
    task_arn = run.task.replication_task_arn

    key_extraction = None
    if run.task.key_task_arn:
        key_arn = run.task.key_task_arn
        key_extraction = (_described(key_arn), dms.table_statistics(key_arn))
    statistics = replication_status.statistics(
        _described(task_arn), dms.table_statistics(task_arn), key_extraction
    )
    # Listed after the task stopped (the poll saw it so): every file it wrote is there, and a file
    # lost or added from now on changes the count the job compares.
    listed = (key for key, _, _ in s3.list_objects(run.plan.bronze_uri))
    statistics["bronzeFiles"] = str(bronze_file_count(listed))
    metrics.add_metric(name="FullLoadRows", unit=MetricUnit.Count, value=statistics["fullLoadRows"])
    metrics.add_metric(name="ChangeRows", unit=MetricUnit.Count, value=statistics["changeRows"])
    return statistics
