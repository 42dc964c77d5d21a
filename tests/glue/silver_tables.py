"""The Glue tests' silver tables: one catalog on the session's warehouse, loaded by the real job."""

from __future__ import annotations

from dataclasses import dataclass
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
from icetide_glue.silver import SilverTable, ensure_tombstone_table, silver_schema, tombstone_table

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


@dataclass(frozen=True)
class LoadedTable:
    """A silver table one real run loaded, for the tests of a module that each start from that
    load: :meth:`restore` makes main the load's snapshot again, instead of a load of its own.

    Iceberg's rollback keeps the snapshots the earlier tests committed, off main: a run is found
    committed only among main's ancestors, so their run ids are free again. The load remembered
    nothing (its batch inserts only): its tombstone table holds no snapshot, so one a test's run
    wrote is created again by the job's own function, as the load created it. A test that changes
    what a rollback keeps (the format version, the partition spec) loads a table of its own."""

    spark: SparkSession
    table: str
    snapshot_id: int

    @classmethod
    def load(cls, spark: SparkSession, table: str, bronze: Path, merge_plan: str = "auto") -> LoadedTable:
        """``bronze`` loaded into ``table``, keyed by ``id``."""
        load_into_silver(spark, table, f"{table}-load", bronze, merge_plan=merge_plan)
        silver_at, tombstones_at = main_snapshots(spark, table)
        assert silver_at is not None and tombstones_at is None
        return cls(spark, table, silver_at)

    def restore(self) -> str:
        """Main back at the load's snapshot, an empty tombstone table; the table's name."""
        roll_back(self.spark, self.table, (self.snapshot_id, None))
        return self.table


def main_snapshots(spark: SparkSession, table: str) -> tuple[int | None, int | None]:
    """Main's snapshot of a test's table and of its tombstone table (None: no snapshot)."""
    tombstones = tombstone_table(SilverTable(CATALOG, SILVER_DATABASE, table))
    return _main_snapshot_id(spark, silver_table(table)), _main_snapshot_id(spark, tombstones.sql_name)


def roll_back(spark: SparkSession, table: str, snapshots: tuple[int | None, int | None]) -> None:
    """Main of a test's table and of its tombstone table (keyed by ``id``) back at ``snapshots``
    (:func:`main_snapshots`): Iceberg's rollback, or a tombstone table without a snapshot
    created again by the job's own function, empty as the job creates it."""
    silver = SilverTable(CATALOG, SILVER_DATABASE, table)
    tombstones = tombstone_table(silver)
    (silver_now, tombstones_now), (silver_then, tombstones_then) = main_snapshots(spark, table), snapshots
    if silver_now != silver_then:
        spark.sql(f"CALL {CATALOG}.system.rollback_to_snapshot('{silver}', {silver_then})")
    if tombstones_now != tombstones_then and tombstones_then is not None:
        spark.sql(f"CALL {CATALOG}.system.rollback_to_snapshot('{tombstones}', {tombstones_then})")
    elif tombstones_now != tombstones_then:
        spark.sql(f"DROP TABLE {tombstones.sql_name}")
        ensure_tombstone_table(spark, silver, silver_schema(spark, silver), ("id",))


def _main_snapshot_id(spark: SparkSession, sql_name: str) -> int | None:
    main = iceberg_table(spark, sql_name, refreshed=True).currentSnapshot()
    return None if main is None else int(main.snapshotId())
