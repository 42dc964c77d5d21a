"""Maintenance of one silver table (and its tombstone table): Iceberg's own Spark procedures.

Hourly merge-on-read merges leave many small data files, position-delete files and snapshots;
reads slow down with each. One maintenance pass, in this order:
0. copy the table's committed runs into its run ledger (see below);
1. measure (live data and delete files, their bytes, snapshots kept);
2. ``rewrite_data_files``: sort when the table has a sort order (silver's key order), else
   bin-pack; a data file with at least ``delete_file_threshold`` delete files is rewritten
   without its deleted rows, small files are compacted to the table's target size (a table too
   small to fill every read slot with a split: one file per slot, :func:`small_table_file_size`;
   range bounds from a large sample, so sorted files come out even, :func:`even_range_bounds`);
3. ``rewrite_position_delete_files``: the delete files left (and those of rewritten data files,
   which no longer apply) are compacted or dropped;
4. ``expire_snapshots`` older than the retention, keeping at least ``min_snapshots``: the files
   only they referenced (the rewritten small files) are deleted. Skipped when the table has no
   ref but main and Iceberg's own ``ExpireSnapshots``, applied without a commit, finds no snapshot
   to remove: the procedure's Spark action lists every file of the table's snapshots (Spark jobs
   over all its manifests) even then, and would change nothing;
5. ``remove_orphan_files`` older than ``orphan_age`` (at least one day: a younger file may belong
   to a commit in flight);
6. measure again; then, for ``<table>__icetide_tombstones`` when it exists, forget the entries
   older than the tombstone retention before silver's newest change (:func:`prune_expired_tombstones`)
   and steps 1-5; and steps
   1-5 for the run ledger.

It must never run while a merge of the same table runs (the lock is the caller's); Iceberg's
optimistic commits would keep the table correct, but one of the two would fail and retry.

Exactly-once reruns: a committed run is found by its run id in the snapshot summaries; before step 4
expires any, step 0 copies the committed runs into the table's run ledger
(:mod:`icetide_glue.commit.run_ledger`), where the lookup finds them once their snapshots are gone. The
ledger is maintained with the table (compacted, its own snapshots expired).

The policy and the report are contracts (:mod:`icetide_contracts.maintenance`): the Lambdas build
the one and read the other.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from contextlib import AbstractContextManager as ContextManager
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from typing import Any

from pyspark.sql import SparkSession

from icetide_contracts.maintenance import MaintenancePolicy, MaintenanceReport, TableFiles, TableMaintenance
from icetide_contracts.watermark_text import epoch_micros
from icetide_glue.arguments import DEFAULT_TOMBSTONE_RETENTION_DAYS
from icetide_glue.commit.run_ledger import record_committed_runs, run_ledger
from icetide_glue.iceberg_tables import iceberg_table
from icetide_glue.maintenance.sql import (
    RewriteStrategy,
    expire_snapshots_sql,
    file_counts_sql,
    remove_orphan_files_sql,
    rewrite_data_files_sql,
    rewrite_position_delete_files_sql,
    snapshot_count_sql,
)
from icetide_glue.merge.apply import forget_expired_changes
from icetide_glue.merge.sql import newest_change_sql
from icetide_glue.session import session_settings
from icetide_glue.silver import SilverTable, table_exists, tombstone_table
from icetide_glue.table_sql import MAIN_BRANCH

logger = logging.getLogger(__name__)

_DATA, _POSITION_DELETES, _EQUALITY_DELETES = 0, 1, 2


# Iceberg's Spark scan cuts files into splits at row-group boundaries, but never adapts its split
# size below 16 MiB (``TableScanUtil.MIN_SPLIT_SIZE``), whatever the read parallelism.
SPLIT_SIZE_FLOOR_BYTES = 16 * 1024 * 1024
# Iceberg's defaults for the two table properties read below.
_ICEBERG_TARGET_FILE_SIZE_BYTES = 512 * 1024 * 1024
_ICEBERG_ROW_GROUP_SIZE_BYTES = 128 * 1024 * 1024
# Rows sampled per output file to place a sorted rewrite's range bounds. Spark's default (100)
# leaves the files of a small table's rewrite visibly uneven, and the larger file is the slower
# read task; 10,000 cuts them evenly at no measurable cost to the rewrite.
RANGE_SAMPLE_PER_FILE = 10_000
_RANGE_SAMPLE_CONF = "spark.sql.execution.rangeExchange.sampleSizePerPartition"


def rewrite_options(policy: MaintenancePolicy, small_file_size: int | None = None) -> dict[str, str]:
    """``rewrite_data_files`` options of the policy; ``small_file_size`` (from
    :func:`small_table_file_size`) is the target size when the policy sets none."""
    options = {
        "min-input-files": str(policy.min_input_files),
        "delete-file-threshold": str(policy.delete_file_threshold),
    }
    target = policy.target_file_size_bytes or small_file_size
    if target is not None:
        options["target-file-size-bytes"] = str(target)
    return options


def small_table_file_size(
    live_bytes: int, input_bytes: int, read_slots: int, properties: Mapping[str, str]
) -> int | None:
    """The file size to rewrite a small table into, or None to keep the table's target size.

    Why: a scan's parallelism comes from its splits, and Iceberg never makes a split smaller than
    16 MiB. Compacting a table under 16 MiB per read slot into as few files as the target size
    allows leaves slots idle and the rest uneven: one 20 MB file of three 8 MB row groups reads as
    a 16 MB and a 4 MB split on two slots, 10-16 % slower than the same rows in two files (issue
    14's benchmark). So such a table is rewritten into one file per read slot, none smaller than
    one row group (a smaller file could not split finer anyway) nor larger than the table's target
    size. ``read_slots`` is the job's parallelism, a proxy for its readers'.

    ``live_bytes`` (:func:`live_data_bytes`) decides whether the table is small; the size is
    ``input_bytes`` (the data files' bytes, deleted rows included) per slot, because Iceberg plans
    the rewrite's file count from the input's bytes: 30 MB of input with a fifth of its rows
    deleted, at 12 MB (live bytes per slot), would plan 3 files for 2 slots, at 15 MB it plans 2.
    """
    slots = max(1, read_slots)
    if live_bytes <= 0 or live_bytes >= slots * SPLIT_SIZE_FLOOR_BYTES:
        return None
    table_target = _size_property(properties, "write.target-file-size-bytes", _ICEBERG_TARGET_FILE_SIZE_BYTES)
    row_group = _size_property(
        properties, "write.parquet.row-group-size-bytes", _ICEBERG_ROW_GROUP_SIZE_BYTES
    )
    per_slot = -(-max(live_bytes, input_bytes) // slots)
    size = min(table_target, max(row_group, per_slot))
    return size if size < table_target else None


def _size_property(properties: Mapping[str, str], name: str, default: int) -> int:
    value = properties.get(name, "")
    return int(value) if value.isdigit() and int(value) > 0 else default


def even_range_bounds(
    spark: SparkSession, sample_per_file: int = RANGE_SAMPLE_PER_FILE
) -> ContextManager[None]:
    """While it is open, Spark samples ``sample_per_file`` rows per output partition to cut a
    sorted write into ranges, so the files come out even (see :data:`RANGE_SAMPLE_PER_FILE`).
    The session's own value is put back after; a merge running meanwhile in the same session
    (local runs) samples more rows too, which changes nothing but its bounds."""
    return session_settings(spark, {_RANGE_SAMPLE_CONF: str(sample_per_file)})


def delete_rewrite_options(policy: MaintenancePolicy) -> dict[str, str]:
    """``rewrite_position_delete_files`` options of the policy."""
    # All of them: after the data rewrite, the delete files left apply to no live row (their data
    # files were rewritten without the deleted rows), and rewriting one drops its dangling
    # positions. A lone such file would otherwise stay below min-input-files, and every read would
    # still open it.
    return {"rewrite-all": "true"}


@dataclass(frozen=True)
class MaintenancePass:
    """One pass over a silver table and, when it has one, its tombstone table."""

    silver: TableMaintenance
    tombstones: TableMaintenance | None
    policy: MaintenancePolicy

    def report(self, run_id: str) -> MaintenanceReport:
        """The pass as run ``run_id``'s maintenance report."""
        return MaintenanceReport(
            run_id=run_id,
            table=self.silver.table,
            silver=self.silver,
            tombstones=self.tombstones,
            policy=self.policy,
        )


def maintain_table(
    spark: SparkSession,
    table: SilverTable,
    policy: MaintenancePolicy | None = None,
    now: datetime | None = None,
) -> MaintenancePass:
    """One maintenance pass of ``table``, its tombstone table (if any) and its run ledger; see the
    module text. ``now`` (aware) is when retention and orphan ages are counted from."""
    policy = policy or MaintenancePolicy()
    now = now or datetime.now(UTC)
    runs_recorded = record_committed_runs(spark, table)
    silver = replace(_maintain_one(spark, table, policy, now), runs_recorded=runs_recorded)
    tombstone_silver = tombstone_table(table)
    tombstones = None
    if table_exists(spark, tombstone_silver):
        pruned = prune_expired_tombstones(spark, table, tombstone_silver)
        tombstones = replace(_maintain_one(spark, tombstone_silver, policy, now), rows_pruned=pruned)
    ledger = _maintain_one(spark, run_ledger(table), policy, now)
    logger.info("%s: run ledger maintained: %s", table, ledger.after)
    return MaintenancePass(silver=silver, tombstones=tombstones, policy=policy)


def _maintain_one(
    spark: SparkSession, table: SilverTable, policy: MaintenancePolicy, now: datetime
) -> TableMaintenance:
    files = live_files(spark, table)
    before = table_files(files, snapshot_count(spark, table))
    properties = table_properties(spark, table)
    # Iceberg's Spark table lists its sort order as this property when it has one.
    strategy = RewriteStrategy.SORT if properties.get("sort-order") else RewriteStrategy.BINPACK
    small_file_size = small_table_file_size(
        live_data_bytes(files),
        files.get(_DATA, LiveFiles()).bytes,
        spark.sparkContext.defaultParallelism,
        properties,
    )
    with even_range_bounds(spark):
        rewrite = _one_row(
            spark,
            rewrite_data_files_sql(
                table.catalog, table.database, table.name, strategy, rewrite_options(policy, small_file_size)
            ),
        )
    deletes = _one_row(
        spark,
        rewrite_position_delete_files_sql(
            table.catalog, table.database, table.name, delete_rewrite_options(policy)
        ),
    )
    snapshots_before_expiry = snapshot_count(spark, table)
    expire_before = now - policy.snapshot_retention
    expired: dict[str, Any] = {}
    if expiry_changes_anything(iceberg_table(spark, table.sql_name), expire_before, policy.min_snapshots):
        expired = _one_row(
            spark,
            expire_snapshots_sql(
                table.catalog, table.database, table.name, expire_before, policy.min_snapshots
            ),
        )
    snapshots_after_expiry = snapshot_count(spark, table)
    orphans = spark.sql(
        remove_orphan_files_sql(table.catalog, table.database, table.name, now - policy.orphan_age)
    ).count()
    after = measure_table(spark, table)
    return TableMaintenance(
        table=str(table),
        strategy=strategy,
        before=before,
        after=after,
        data_files_rewritten=int(rewrite.get("rewritten_data_files_count") or 0),
        data_files_added=int(rewrite.get("added_data_files_count") or 0),
        delete_files_rewritten=int(deletes.get("rewritten_delete_files_count") or 0),
        snapshots_expired=snapshots_before_expiry - snapshots_after_expiry,
        files_deleted_by_expiry=sum(
            int(expired.get(name) or 0)
            for name in (
                "deleted_data_files_count",
                "deleted_position_delete_files_count",
                "deleted_equality_delete_files_count",
            )
        ),
        orphan_files_removed=orphans,
    )


def expiry_changes_anything(iceberg: Any, older_than: datetime, retain_last: int) -> bool:
    """Whether ``expire_snapshots`` with these arguments could change ``iceberg`` (an Iceberg
    ``Table``). A table with a branch or tag besides main: yes (the expiry also removes a ref
    past its own maximum age, which :meth:`apply` does not report). Otherwise, whether the
    procedure's own rule, Iceberg's ``ExpireSnapshots``, applied without a commit (table metadata
    only), removes a snapshot. ``older_than`` counts in whole milliseconds, rounded down, as the
    procedure converts its timestamp."""
    if set(iceberg.refs().keySet()) - {MAIN_BRANCH}:
        return True
    older_than_millis = epoch_micros(older_than) // 1000
    pending = iceberg.expireSnapshots().expireOlderThan(older_than_millis).retainLast(retain_last)
    return not pending.apply().isEmpty()


def prune_expired_tombstones(
    spark: SparkSession,
    table: SilverTable,
    tombstones: SilverTable,
    retention_days: int = DEFAULT_TOMBSTONE_RETENTION_DAYS,
) -> int:
    """Forget the tombstone entries older than the retention before the newest change silver holds;
    returns how many. A merge prunes too, but only in runs that remembered something, so a table
    whose deletes stopped would keep its last entries for ever. Measured from silver's newest
    change, not the wall clock: a change arriving later than the retention behind newer ones is
    outside what the order memory promises (docs/glue-job.md), whenever it comes."""
    row = spark.sql(newest_change_sql(table.sql_name)).first()
    if row is None or row["newest"] is None:
        return 0
    before = spark.table(tombstones.sql_name).count()
    forget_expired_changes(spark, tombstones, int(row["newest"]), retention_days)
    return int(before - spark.table(tombstones.sql_name).count())


@dataclass(frozen=True)
class LiveFiles:
    """The current snapshot's files of one content (data, position deletes, equality deletes)."""

    files: int = 0
    bytes: int = 0
    records: int = 0


def live_files(spark: SparkSession, table: SilverTable) -> dict[int, LiveFiles]:
    """The current snapshot's files by content (metadata only)."""
    return {
        int(row["content"]): LiveFiles(int(row["files"]), int(row["bytes"]), int(row["records"]))
        for row in spark.sql(file_counts_sql(table.sql_name)).collect()
    }


def measure_table(spark: SparkSession, table: SilverTable) -> TableFiles:
    """Live files and bytes of the current snapshot, and the snapshots kept (metadata only)."""
    return table_files(live_files(spark, table), snapshot_count(spark, table))


def table_files(files: Mapping[int, LiveFiles], snapshots: int) -> TableFiles:
    data, position, equality = (
        files.get(c, LiveFiles()) for c in (_DATA, _POSITION_DELETES, _EQUALITY_DELETES)
    )
    return TableFiles(
        data_files=data.files,
        delete_files=position.files + equality.files,
        position_delete_files=position.files,
        total_bytes=data.bytes + position.bytes + equality.bytes,
        snapshots=snapshots,
    )


def live_data_bytes(files: Mapping[int, LiveFiles]) -> int:
    """About what a rewrite of every data file writes: their bytes, less the share of their rows
    that delete files remove (each position delete removes one row; Spark writes no equality
    deletes, which are counted the same way)."""
    data = files.get(_DATA, LiveFiles())
    if data.records <= 0:
        return 0
    deleted = sum(
        files.get(content, LiveFiles()).records for content in (_POSITION_DELETES, _EQUALITY_DELETES)
    )
    return data.bytes * max(0, data.records - deleted) // data.records


def snapshot_count(spark: SparkSession, table: SilverTable) -> int:
    row = spark.sql(snapshot_count_sql(table.sql_name)).first()
    return int(row["snapshots"]) if row is not None else 0


def table_properties(spark: SparkSession, table: SilverTable) -> Mapping[str, str]:
    """The table's properties as Spark lists them (Iceberg adds ``sort-order`` when sorted)."""
    return {row["key"]: row["value"] for row in spark.sql(f"SHOW TBLPROPERTIES {table.sql_name}").collect()}


def _one_row(spark: SparkSession, sql: str) -> dict[str, Any]:
    row = spark.sql(sql).first()
    return row.asDict() if row is not None else {}
