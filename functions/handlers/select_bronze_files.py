"""SelectBronzeFiles: the files a continuous run merges, written as the run's bronze file selection.

Input: ``{"targetTableName", "runId", "plan", "task"}`` (``task``: ensure_continuous_task's output).
Output: ``{"fileCount", "totalBytes", "firstFile", "lastFile", "bronzeFilesUri", "changeRows",
"maxChangeRows"}``. Lists the table's task folder (``plan.bronzeUri``) after the committed file
checkpoint (``plan.fileCheckpoint``), takes the files in DMS's order up to ``plan.maxFilesPerRun`` files
and ``plan.maxBytesPerRun`` bytes, and writes them to ``plan.bronzeFilesUri`` (docs/contracts.md,
"Bronze file selection"), which the Glue job reads and the commit takes its new checkpoint from. A
selection without files is written too: the run then commits without a Glue job. Nothing here moves the
checkpoint. A selection whose oldest file has lived more than half of CONTINUOUS_BRONZE_RETENTION_DAYS
is logged as a warning and counted (metric ContinuousFilesNearExpiry): the lifecycle rule would delete
such files unmerged. The selected CDC files' rows (from their parquet footers) are counted against what
the task counted (icetide.run.change_count): the task's statistics are read after the listing, the
selection carries the table's change count once its files are merged (the commit stores it), and
``maxChangeRows`` (the rows the run may merge, "" when that is not known) is the Glue job's
``--max_change_rows``. Raises BronzeFolderInvalid (a file DMS would not write there), or its
BronzeFileNotFromDms (a file outside the table's ``<schema>/<table>/`` folder, or a CDC file named later
than S3 received it), or BronzeChangesNotCounted (more CDC rows than DMS counted).
"""

from __future__ import annotations

import json
from typing import Any

from aws_lambda_powertools.utilities.typing import LambdaContext

from icetide.adapters import dms, s3
from icetide.clock import utc_now
from icetide.observability import MetricUnit, logger, metrics, observed
from icetide.run import change_count
from icetide.run.bronze_selection import ListedFile, at_risk, listing_start, select_files, takes_every_file
from icetide.run.handler_inputs import InvalidHandlerInput, SelectionInput, parse_input
from icetide.run.parquet_footer import TAIL, NotAParquetFile, footer_rows, metadata_length
from icetide.settings import load_settings
from icetide_contracts.bronze_files import CDC_PHASE, BronzeFiles, dms_file_order
from icetide_contracts.change_count import ChangeCount, ClosedStart
from icetide_contracts.run_plan import RunPlan

# Bytes read from a file's end at first: the whole footer of a DMS CDC file, most of the time.
_FOOTER_READ = 64 * 1024


def _file_rows(uri: str, size: int) -> int:
    """The rows of the parquet file at ``uri`` (``size`` bytes), from its footer."""
    end = s3.read_end(uri, min(size, _FOOTER_READ))
    try:
        length = metadata_length(end)
        if length + TAIL > len(end):
            end = s3.read_end(uri, length + TAIL)
        return footer_rows(end[-TAIL - length : -TAIL])
    except NotAParquetFile as error:
        raise change_count.BronzeChangesNotCounted(
            f"{uri} is not a parquet file DMS wrote ({error}): its rows cannot be counted; nothing was "
            "merged, the file checkpoint and watermark stay"
        ) from None


def _counted(plan: RunPlan, task_arn: str, closed: ClosedStart | None) -> ChangeCount:
    """The table's change count with the task's counters read now (after the listing), between two
    describes of the task that say under which start they count."""
    before = dms.describe_task_by_arn(task_arn)
    changes = change_count.table_changes(
        dms.table_statistics(task_arn), plan.source_schema, plan.source_table
    )
    after = dms.describe_task_by_arn(task_arn)
    return change_count.count_before_run(
        plan.change_count,
        change_count.reading(before, changes, after),
        closed=closed,
    )


@observed()
def handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    settings = load_settings()
    run = parse_input(SelectionInput, event)
    plan = run.plan
    if not plan.continuous or plan.max_files_per_run is None or plan.max_bytes_per_run is None:
        raise InvalidHandlerInput("SelectBronzeFiles: the plan is not a continuous cdc run's")

    listed = [
        ListedFile(key, size, written)
        for key, size, written in s3.list_objects(
            plan.bronze_uri, start_after=listing_start(plan.file_checkpoint)
        )
    ]
    taken = select_files(
        listed,
        table_folder=f"{plan.source_schema}/{plan.source_table}/",
        after=plan.file_checkpoint,
        max_files=plan.max_files_per_run,
        max_bytes=plan.max_bytes_per_run,
    )
    file_rows = [
        (file.key, _file_rows(plan.bronze_uri + file.key, file.size))
        for file in taken
        if dms_file_order(file.key)[0] == CDC_PHASE
    ]
    rows = sum(count for _, count in file_rows)
    # This run's resume, else the latest one recorded (its run may have failed before committing).
    counted = _counted(plan, run.task.replication_task_arn, run.task.closed_start or plan.closed_start)
    change_count.refuse_uncounted(plan.target_table_name, counted, rows, file_rows)
    allowed = change_count.allowance(counted)
    if allowed is None:
        logger.warning(
            "the task's counts before its latest start are not known: this run's CDC rows are not "
            "checked against DMS's counters",
            extra={"taskStart": counted.task_start, "changeRows": rows},
        )
        metrics.add_metric(name="ChangeRowsUnchecked", unit=MetricUnit.Count, value=rows)
    selection = BronzeFiles(
        run_id=plan.run_id,
        bronze_uri=plan.bronze_uri,
        files=[file.key for file in taken],
        total_bytes=sum(file.size for file in taken),
        change_rows=rows,
        change_count=change_count.count_after_run(
            plan.change_count, counted, rows, drained=takes_every_file(listed, plan.file_checkpoint, taken)
        ),
    )
    s3.write_text(plan.bronze_files_uri, json.dumps(selection.to_json(), indent=1))

    logger.info(
        "bronze files selected",
        extra={"after": plan.file_checkpoint, "files": len(taken), "bytes": selection.total_bytes},
    )
    metrics.add_metric(name="BronzeFilesSelected", unit=MetricUnit.Count, value=len(taken))
    behind = at_risk(taken, utc_now(), settings.continuous_bronze_retention_days)
    if behind is not None:
        logger.warning(
            "continuous table far behind: its oldest unmerged file nears the lifecycle expiry",
            extra={"ageHours": round(behind.total_seconds() / 3600, 1)},
        )
        metrics.add_metric(name="ContinuousFilesNearExpiry", unit=MetricUnit.Count, value=1)
    return {
        "fileCount": len(taken),
        "totalBytes": selection.total_bytes,
        "firstFile": selection.files[0] if taken else None,
        "lastFile": selection.last_file,
        "bronzeFilesUri": plan.bronze_files_uri,
        "changeRows": rows,
        # A run of no CDC row is never refused; its job may read none (not a negative number).
        "maxChangeRows": "" if allowed is None else str(max(allowed, 0)),
    }
