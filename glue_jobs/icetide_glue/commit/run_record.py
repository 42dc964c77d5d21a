"""What a run's commit records, for either merge path (icetide_glue.job's Spark path and
icetide_glue.driver.merge): the run id and statistics in the snapshot summary, the committed
snapshot found again by its run id."""

from __future__ import annotations

import json

from pyspark.sql import SparkSession

from icetide_contracts.run_manifest import RunManifest
from icetide_glue.errors import IcetideJobError
from icetide_glue.silver import SilverTable, find_committed_run
from icetide_glue.table_sql import MERGE_PATH_PROPERTY, RUN_ID_PROPERTY, RUN_STATS_PROPERTY


def snapshot_properties(manifest: RunManifest, merge_path: str | None = None) -> dict[str, str]:
    """The run's snapshot summary: its id and statistics, and which merge plan committed it
    (icetide_glue.merge.plan.MergePlan's value)."""
    properties = {RUN_ID_PROPERTY: manifest.run_id, RUN_STATS_PROPERTY: json.dumps(manifest.run_stats())}
    if merge_path is not None:
        properties[MERGE_PATH_PROPERTY] = merge_path
    return properties


def committed_snapshot_id(spark: SparkSession, table: SilverTable, run_id: str) -> int:
    committed = find_committed_run(spark, table, run_id)
    if committed is None:
        raise IcetideJobError(f"{table}: the commit of run {run_id} is not among the table's snapshots")
    return committed.snapshot_id
