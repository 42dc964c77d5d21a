"""SelectBronzeFiles: the files a continuous run merges, written as the run's bronze file selection.

Input: ``{"targetTableName", "runId", "plan"}``. Output: ``{"fileCount", "totalBytes", "firstFile",
"lastFile", "bronzeFilesUri"}``. Lists the table's task folder (``plan.bronzeUri``) after the
committed file checkpoint (``plan.fileCheckpoint``), takes the files in DMS's order up to
``plan.maxFilesPerRun`` files and ``plan.maxBytesPerRun`` bytes, and writes them to
``plan.bronzeFilesUri`` (docs/contracts.md, "Bronze file selection"), which the Glue job reads and the
commit takes its new checkpoint from. A selection without files is written too: the run then
commits without a Glue job. Nothing here moves the checkpoint. A selection whose oldest file has
lived more than half of CONTINUOUS_BRONZE_RETENTION_DAYS is logged as a warning and counted
(metric ContinuousFilesNearExpiry): the lifecycle rule would delete such files unmerged. Raises
BronzeFolderInvalid (a file DMS would not write there), or its BronzeFileNotFromDms (a file outside
the table's ``<schema>/<table>/`` folder, or a CDC file named later than S3 received it).
"""

from __future__ import annotations

import json
from typing import Any

from aws_lambda_powertools.utilities.typing import LambdaContext

from icetide.adapters import s3
from icetide.clock import utc_now
from icetide.observability import MetricUnit, logger, metrics, observed
from icetide.run.bronze_selection import ListedFile, at_risk, listing_start, select_files
from icetide.run.handler_inputs import InvalidHandlerInput, PlanInput, parse_input
from icetide.settings import load_settings
from icetide_contracts.bronze_files import BronzeFiles


@observed()
def handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    settings = load_settings()
    run = parse_input(PlanInput, event)
    plan = run.plan
    if not plan.continuous or plan.max_files_per_run is None or plan.max_bytes_per_run is None:
        raise InvalidHandlerInput("SelectBronzeFiles: the plan is not a continuous cdc run's")

    listed = (
        ListedFile(key, size, written)
        for key, size, written in s3.list_objects(
            plan.bronze_uri, start_after=listing_start(plan.file_checkpoint)
        )
    )
    taken = select_files(
        listed,
        table_folder=f"{plan.source_schema}/{plan.source_table}/",
        after=plan.file_checkpoint,
        max_files=plan.max_files_per_run,
        max_bytes=plan.max_bytes_per_run,
    )
    selection = BronzeFiles(
        run_id=plan.run_id,
        bronze_uri=plan.bronze_uri,
        files=[file.key for file in taken],
        total_bytes=sum(file.size for file in taken),
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
    }
