"""The silver table in the Spark catalog: its layout, creation, schema evolution and run history.

Layout (see docs/glue-job.md for the benchmarks behind it): Iceberg format v2, merge-on-read for
updates, deletes and merges (a merge writes delete files and the changed rows, never rewrites whole
data files), and a sort order on the primary key with modest file and row-group sizes. Written in
key order, each data file and each Parquet row group covers a narrow band of keys, and Iceberg
skips those whose bounds miss the batch's key ranges (key_ranges.py): a batch of recent keys, what
a timestamp-driven delta mostly holds, reads the few newest files instead of the whole table.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from pyspark.sql import SparkSession
from pyspark.sql.types import StructType

from icetide_glue.arguments import DeleteMode, LoadMode
from icetide_glue.changes.schema_evolution import SchemaPlan, plan_schema_changes
from icetide_glue.columns import (
    APPEND_METADATA,
    HARD_DELETE_METADATA,
    PHASE_FIELD,
    SOFT_DELETE_METADATA,
    TOMBSTONE_COLUMNS,
    VALUES_HASH,
)
from icetide_glue.iceberg_tables import branch_snapshot_id, data_files_may_hold, iceberg_table, jvm
from icetide_glue.table_sql import (
    MAIN_BRANCH,
    RUN_ID_PROPERTY,
    RUN_STATS_PROPERTY,
    add_columns_sql,
    alter_column_type_sql,
    create_namespace_sql,
    create_table_sql,
    qualified_name,
    set_properties_sql,
    write_ordered_by_sql,
)

_MB = 1024 * 1024
MERGE_TABLE_PROPERTIES = {
    "format-version": "2",
    "write.delete.mode": "merge-on-read",
    "write.update.mode": "merge-on-read",
    "write.merge.mode": "merge-on-read",
    # Files of 64 MB and row groups of 8 MB: a band of recent keys is a few row groups to read,
    # while a full scan still reads large sequential blocks (Iceberg's defaults: 512 MB, 128 MB).
    "write.target-file-size-bytes": str(64 * _MB),
    "write.parquet.row-group-size-bytes": str(8 * _MB),
}
# A table storing the values hash keeps only its null counts (no bounds of random numbers in the
# manifests), whatever its width: the job fills the hash of rows stored without one only when a
# data file's null counts say it may hold one (has_rows_without_values_hash), and Iceberg keeps no
# metrics at all for a column past the first 100 unless told to.
VALUES_HASH_METRICS = {f"write.metadata.metrics.column.{VALUES_HASH}": "counts"}
APPEND_TABLE_PROPERTIES = {"format-version": "2"}
# The tombstone table beside each merge table: `<table>__icetide_tombstones` in the same database.
TOMBSTONE_TABLE_SUFFIX = "__icetide_tombstones"


@dataclass(frozen=True)
class SilverTable:
    """A silver table: ``database.name`` in a Spark catalog."""

    catalog: str
    database: str
    name: str

    @property
    def sql_name(self) -> str:
        return qualified_name(self.catalog, self.database, self.name)

    def __str__(self) -> str:
        return f"{self.database}.{self.name}"


@dataclass(frozen=True)
class CommittedRun:
    """A snapshot committed by an earlier attempt of this run, and the statistics it recorded."""

    snapshot_id: int
    run_stats: dict[str, Any]

    @classmethod
    def from_summary(cls, snapshot_id: int, run_stats: str | None) -> CommittedRun:
        """From the snapshot id and the run statistics' JSON text as the summary holds them."""
        return cls(snapshot_id=snapshot_id, run_stats=json.loads(run_stats) if run_stats else {})


def table_exists(spark: SparkSession, table: SilverTable) -> bool:
    return spark.catalog.tableExists(table.sql_name)


def silver_schema(spark: SparkSession, table: SilverTable) -> StructType:
    return spark.table(table.sql_name).schema


def create_silver_table(
    spark: SparkSession,
    table: SilverTable,
    source: StructType,
    keys: Sequence[str],
    load_mode: LoadMode,
    delete_mode: DeleteMode = DeleteMode.HARD,
) -> list[str]:
    """Create the table from a batch's source columns plus icetide's metadata columns.

    Returns the manifest's ``schemaChanges`` lines. Source types go through the same mapping as
    later additions (smallint stored as int, nothing without a type).
    """
    columns = plan_schema_changes(StructType([]), source).additions
    definitions = [(c.name, c.data_type.simpleString()) for c in columns]
    definitions += [(f.name, f.dataType.simpleString()) for f in _metadata(load_mode, delete_mode).fields]
    merging = load_mode is LoadMode.MERGE
    properties = MERGE_TABLE_PROPERTIES if merging else APPEND_TABLE_PROPERTIES
    if _stores_values_hash(load_mode, delete_mode):
        properties = {**properties, **VALUES_HASH_METRICS}
    spark.sql(create_namespace_sql(table.catalog, table.database))
    spark.sql(create_table_sql(table.sql_name, definitions, properties))
    if merging:
        spark.sql(write_ordered_by_sql(table.sql_name, keys))
    return [f"created table {table} with {len(columns)} source column(s)"]


def _stores_values_hash(load_mode: LoadMode, delete_mode: DeleteMode) -> bool:
    return VALUES_HASH in _metadata(load_mode, delete_mode).fieldNames()


def _metadata(load_mode: LoadMode, delete_mode: DeleteMode = DeleteMode.HARD) -> StructType:
    if load_mode is LoadMode.APPEND:
        return APPEND_METADATA
    return SOFT_DELETE_METADATA if delete_mode is DeleteMode.SOFT else HARD_DELETE_METADATA


def add_missing_metadata_columns(
    spark: SparkSession, table: SilverTable, load_mode: LoadMode, delete_mode: DeleteMode = DeleteMode.HARD
) -> list[str]:
    """Add the metadata columns this version stores and the table's creator did not (one ALTER),
    and the values hash's metrics property where the table stores the hash without one.

    A table created by an earlier icetide keeps working: its rows read the new columns as null.
    The property is a commit of its own after the column (Iceberg refuses one naming a column the
    table lacks), so it is checked on every run: a run that stopped in between is mended by the
    next. Returns the manifest's ``schemaChanges`` lines.
    """
    missing, without_metrics = missing_metadata(
        silver_schema(spark, table),
        lambda: iceberg_table(spark, table.sql_name, refreshed=True),
        load_mode,
        delete_mode,
    )
    if missing:
        spark.sql(add_columns_sql(table.sql_name, missing))
    # A mode set by the table's owner (say "full") is kept: every mode but "none" counts nulls.
    if missing or without_metrics:
        properties = iceberg_table(spark, table.sql_name, refreshed=True).properties()
        if _stores_values_hash(load_mode, delete_mode) and any(
            properties.get(key) is None for key in VALUES_HASH_METRICS
        ):
            spark.sql(set_properties_sql(table.sql_name, VALUES_HASH_METRICS))
    return [f"added metadata column(s) {', '.join(name for name, _ in missing)}"] if missing else []


def missing_metadata(
    schema: StructType,
    iceberg: Callable[[], Any],
    load_mode: LoadMode,
    delete_mode: DeleteMode = DeleteMode.HARD,
) -> tuple[list[tuple[str, str]], bool]:
    """The metadata columns (name, type) this version stores and a table lacks (``schema``, its
    Spark schema), and whether it stores the values hash without its metrics property
    (:func:`add_missing_metadata_columns` mends both). ``iceberg`` gives the table's refreshed
    Iceberg table, asked only where the hash is stored (a refresh is a read of its metadata)."""
    present = {name.lower() for name in schema.fieldNames()}
    missing = [
        (f.name, f.dataType.simpleString())
        for f in _metadata(load_mode, delete_mode).fields
        if f.name.lower() not in present
    ]
    without_metrics = False
    if _stores_values_hash(load_mode, delete_mode):
        properties = iceberg().properties()
        without_metrics = any(properties.get(key) is None for key in VALUES_HASH_METRICS)
    return missing, without_metrics


def evolve_silver_table(spark: SparkSession, table: SilverTable, plan: SchemaPlan) -> list[str]:
    """Apply a checked plan: widen first, then add (both are metadata-only commits in Iceberg)."""
    for widening in plan.widenings:
        spark.sql(alter_column_type_sql(table.sql_name, widening.name, widening.to_type.simpleString()))
    if plan.additions:
        spark.sql(
            add_columns_sql(table.sql_name, [(a.name, a.data_type.simpleString()) for a in plan.additions])
        )
    return plan.describe()


def main_snapshot_id(spark: SparkSession, table: SilverTable) -> int | None:
    """Main's current snapshot id (None: no snapshot yet), from the table's refreshed metadata
    (Iceberg's Java API): a query of its ``refs`` table would be a Spark job every run."""
    return branch_snapshot_id(iceberg_table(spark, table.sql_name, refreshed=True), MAIN_BRANCH)


def has_rows_without_values_hash(spark: SparkSession, table: SilverTable, snapshot_id: int | None) -> bool:
    """Whether a data file of ``snapshot_id`` may hold a row without a stored values hash (one
    written before the table stored it): :func:`icetide_glue.iceberg_tables.data_files_may_hold`
    with ``hash IS NULL`` (a file written before the column existed has no metrics for it: it
    reads the column as null), no Spark job. When it says yes, the job fills those hashes before
    it classifies (:func:`icetide_glue.merge.apply.fill_values_hashes`). A needless yes only costs
    the fill's scan of those files; a wrong no would cost a needless rewrite, not a change (a null
    stored hash never equals a batch's hash: the row would count as updated and get its hash).
    """
    if snapshot_id is None:
        return False
    is_null = jvm(spark).org.apache.iceberg.expressions.Expressions.isNull(VALUES_HASH)
    return data_files_may_hold(spark, table.sql_name, is_null, snapshot_id)


def find_committed_run(spark: SparkSession, table: SilverTable, run_id: str) -> CommittedRun | None:
    """The snapshot this run id committed, if an earlier attempt got that far: the newest of main's
    ancestors whose summary names the run. A snapshot rolled back is no ancestor: its run must be
    loaded again. A snapshot expired is gone: the run ledger remembers it (icetide_glue.commit.run_ledger).

    A walk up main's parents in the table's metadata (Iceberg's Java API), not a query of its
    ``snapshots`` and ``history`` tables: that is a Spark job of its own, and every run asks twice
    (before it loads, and after its commit for its snapshot). The table is refreshed first: the
    catalog may hold it as it was before another process (a first attempt, maintenance) committed.
    """
    iceberg = iceberg_table(spark, table.sql_name, refreshed=True)
    snapshot = iceberg.currentSnapshot()
    while snapshot is not None:
        summary = snapshot.summary()
        if summary.get(RUN_ID_PROPERTY) == run_id:
            return CommittedRun.from_summary(int(snapshot.snapshotId()), summary.get(RUN_STATS_PROPERTY))
        parent = snapshot.parentId()
        snapshot = None if parent is None else iceberg.snapshot(parent)
    return None


def tombstone_table(table: SilverTable) -> SilverTable:
    """The table's order memory: deleted keys and skipped updates with their change times."""
    return SilverTable(table.catalog, table.database, table.name + TOMBSTONE_TABLE_SUFFIX)


def ensure_tombstone_table(
    spark: SparkSession, table: SilverTable, silver: StructType, keys: Sequence[str]
) -> SilverTable:
    """Create the tombstone table on first need: silver's key columns (same types), then
    ``_icetide_change_ts``, ``_icetide_change_seq``, ``_icetide_op`` (D, or U for a skipped update),
    ``_icetide_run_id`` and ``_icetide_change_phase``. Unpartitioned: it holds only recent deletes.

    A tombstone table created before a memory column existed gets it (its entries read it as
    null: ordered by time alone, as when they were written)."""
    tombstones = tombstone_table(table)
    metadata = {f.name: f.dataType.simpleString() for f in [*APPEND_METADATA.fields, PHASE_FIELD]}
    if table_exists(spark, tombstones):
        present = {name.lower() for name in silver_schema(spark, tombstones).fieldNames()}
        missing = [(c, metadata[c]) for c in TOMBSTONE_COLUMNS if c.lower() not in present]
        if missing:
            spark.sql(add_columns_sql(tombstones.sql_name, missing))
        return tombstones
    types = {f.name.lower(): f.dataType.simpleString() for f in silver.fields}
    definitions = [(k, types[k.lower()]) for k in keys] + [(c, metadata[c]) for c in TOMBSTONE_COLUMNS]
    spark.sql(create_table_sql(tombstones.sql_name, definitions, APPEND_TABLE_PROPERTIES))
    return tombstones
