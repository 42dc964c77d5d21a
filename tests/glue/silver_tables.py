"""The Glue tests' silver tables: one catalog on the session's warehouse, loaded by the real job."""

from __future__ import annotations

from datetime import datetime
from pathlib import Path
from typing import Any

from pyspark.sql import Row, SparkSession
from pyspark.sql import functions as F

from icetide_glue.arguments import (
    DEFAULT_MAX_DRIVER_CHANGES,
    DEFAULT_TOMBSTONE_RETENTION_DAYS,
    DeleteMode,
    JobArguments,
    LoadMode,
    MergePlanChoice,
)
from icetide_glue.iceberg_tables import iceberg_table
from icetide_glue.job import run_job

CATALOG = "local"
SILVER_DATABASE = "silver"


def silver_table(table: str) -> str:
    """The Spark name of a test's silver table."""
    return f"{CATALOG}.{SILVER_DATABASE}.{table}"


def snapshot_ids(spark: SparkSession, table: str) -> list[int]:
    """Every snapshot id of a test's table, oldest first."""
    rows = (
        spark.table(f"{silver_table(table)}.snapshots")
        .orderBy("committed_at")
        .select("snapshot_id")
        .collect()
    )
    return [row[0] for row in rows]


def tagged_snapshots(spark: SparkSession, table: str, run_id: str) -> list[Row]:
    """The snapshots of a test's table whose summary names ``run_id`` (``snapshot_id``,
    ``run_stats``: the summary's JSON text), by a query of Iceberg's snapshots table."""
    return (
        spark.table(f"{silver_table(table)}.snapshots")
        .where(F.col("summary")["icetide.run-id"] == run_id)
        .select("snapshot_id", F.col("summary")["icetide.run-stats"].alias("run_stats"))
        .collect()
    )


def load_into_silver(
    spark: SparkSession,
    table: str,
    run_id: str,
    bronze: Path,
    keys: tuple[str, ...] = ("id",),
    load_mode: LoadMode = LoadMode.MERGE,
    watermark_column: str | None = None,
    manifest_uri: str | None = None,
    delete_mode: DeleteMode = DeleteMode.HARD,
    tombstone_retention_days: int = DEFAULT_TOMBSTONE_RETENTION_DAYS,
    reconcile: Path | None = None,
    reconcile_expected_rows: int | None = None,
    reconcile_started_at: datetime | None = None,
    expected_rows: int | None = None,
    driver_merge_max_changes: int = DEFAULT_MAX_DRIVER_CHANGES,
    max_change_rows: int | None = None,
    merge_plan: MergePlanChoice | str = MergePlanChoice.AUTO,
) -> dict[str, Any]:
    """Run the job on a bronze folder into ``silver.<table>`` and return its manifest
    (``expected_rows``, ``max_change_rows``: DMS's counts, as the state machine passes them;
    ``merge_plan``: ``--merge_plan``, auto, driver or spark)."""
    arguments = JobArguments(
        target_table=f"{SILVER_DATABASE}.{table}",
        run_id=run_id,
        bronze_uri=str(bronze),
        primary_keys=keys,
        load_mode=load_mode,
        watermark_column=watermark_column,
        manifest_uri=manifest_uri,
        catalog=CATALOG,
        delete_mode=delete_mode,
        tombstone_retention_days=tombstone_retention_days,
        reconcile_uri=str(reconcile) if reconcile is not None else None,
        reconcile_expected_rows=reconcile_expected_rows,
        reconcile_started_at=reconcile_started_at,
        expected_rows=expected_rows,
        max_change_rows=max_change_rows,
        driver_merge_max_changes=driver_merge_max_changes,
        merge_plan=MergePlanChoice(merge_plan),
    )
    return run_job(spark, arguments)


def merge_path(spark: SparkSession, table: str, snapshot_id: int) -> str | None:
    """Which merge path committed ``snapshot_id`` (its summary's ``icetide.merge-path``)."""
    summary = iceberg_table(spark, silver_table(table), refreshed=True).snapshot(snapshot_id).summary()
    found = summary.get("icetide.merge-path")
    return None if found is None else str(found)
