"""The run ledger: committed run ids that outlive their snapshots.

Exactly-once reruns find a committed run by its run id in the snapshot summaries
(:func:`icetide_glue.silver.find_committed_run`). Maintenance expires old snapshots, and with them
that record: a rerun of such a run id would load its batch again, reporting other counts than the
first attempt and, once the tombstones of its deletes are pruned, re-inserting keys deleted since.
So before it expires anything, maintenance copies every committed run of the table's current
ancestry into ``<table>__icetide_runs`` (run id, snapshot id, commit time, run statistics), and the
lookup falls back to it when the run's snapshot is gone. A record whose snapshot was rolled back is
dropped at the next maintenance, before expiry can remove that snapshot: the run loads again.

Merges never write the ledger (a second commit per run would double a run's fixed cost); only
expiry makes it necessary, and only maintenance expires. Expiring snapshots by other means than
``icetide`` maintenance loses this record for the runs those snapshots carried.
"""

from __future__ import annotations

from pyspark.sql import SparkSession
from pyspark.sql.functions import col

from icetide_glue.silver import (
    APPEND_TABLE_PROPERTIES,
    CommittedRun,
    SilverTable,
    find_committed_run,
    table_exists,
)
from icetide_glue.table_sql import (
    LEDGER_COLUMNS,
    create_namespace_sql,
    create_table_sql,
    forget_snapshots_sql,
    record_committed_runs_sql,
    recorded_run_sql,
    rolled_back_snapshots_sql,
)

RUN_LEDGER_SUFFIX = "__icetide_runs"


def run_ledger(table: SilverTable) -> SilverTable:
    """The ledger beside ``table``: ``<table>__icetide_runs`` in the same database."""
    return SilverTable(table.catalog, table.database, table.name + RUN_LEDGER_SUFFIX)


def record_committed_runs(spark: SparkSession, table: SilverTable) -> int:
    """Copy the committed runs of ``table``'s current ancestors into its ledger (creating it on
    first use); returns how many were new. Must precede any snapshot expiry of ``table``."""
    ledger = run_ledger(table)
    if not table_exists(spark, ledger):
        spark.sql(create_namespace_sql(ledger.catalog, ledger.database))
        spark.sql(create_table_sql(ledger.sql_name, list(LEDGER_COLUMNS), APPEND_TABLE_PROPERTIES))
    _forget_rolled_back_runs(spark, table, ledger)
    before = spark.table(ledger.sql_name).count()
    spark.sql(record_committed_runs_sql(ledger.sql_name, table.sql_name))
    return int(spark.table(ledger.sql_name).count() - before)


def _forget_rolled_back_runs(spark: SparkSession, table: SilverTable, ledger: SilverTable) -> None:
    """Drop the records of runs whose snapshots are no ancestors any more (a rollback past them):
    those runs must load again, and once expiry removes their snapshots the lookup could no
    longer tell such a record from a committed run's."""
    rolled_back = [
        int(row["snapshot_id"]) for row in spark.sql(rolled_back_snapshots_sql(table.sql_name)).collect()
    ]
    if rolled_back and spark.table(ledger.sql_name).where(col("snapshot_id").isin(rolled_back)).take(1):
        spark.sql(forget_snapshots_sql(ledger.sql_name, rolled_back))


def find_recorded_run(spark: SparkSession, table: SilverTable, run_id: str) -> CommittedRun | None:
    """The run ``run_id`` committed, from the ledger, when its snapshot has expired (None when the
    ledger does not hold it, or holds it for a snapshot that is still there: a rolled-back one)."""
    ledger = run_ledger(table)
    if not table_exists(spark, ledger):
        return None
    row = spark.sql(recorded_run_sql(ledger.sql_name, table.sql_name, run_id)).first()
    if row is None:
        return None
    return CommittedRun.from_summary(int(row["snapshot_id"]), row["run_stats"])


def find_run(spark: SparkSession, table: SilverTable, run_id: str) -> CommittedRun | None:
    """The run ``run_id`` committed into ``table``: its snapshot, or once that expired its ledger
    record; None when no attempt of it committed (the run loads)."""
    return find_committed_run(spark, table, run_id) or find_recorded_run(spark, table, run_id)
