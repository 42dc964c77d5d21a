"""Maintenance of one silver table (and its tombstone table): Iceberg's own Spark procedures.

Hourly merge-on-read merges leave many small data files, position-delete files and snapshots;
reads slow down with each. One maintenance pass, in this order:
1. measure (live data and delete files, their bytes, snapshots kept);
2. ``rewrite_data_files``: sort when the table has a sort order (silver's key order), else
   bin-pack; a data file with at least ``delete_file_threshold`` delete files is rewritten
   without its deleted rows, small files are compacted to the table's target size;
3. ``rewrite_position_delete_files``: the delete files left (and those of rewritten data files,
   which no longer apply) are compacted or dropped;
4. ``expire_snapshots`` older than the retention, keeping at least ``min_snapshots``: the files
   only they referenced (the rewritten small files) are deleted;
5. ``remove_orphan_files`` older than ``orphan_age`` (at least one day: a younger file may belong
   to a commit in flight);
6. the same for ``<table>__icetide_tombstones`` when it exists; measure again.

It must never run while a merge of the same table runs (the lock is the caller's); Iceberg's
optimistic commits would keep the table correct, but one of the two would fail and retry.

Exactly-once reruns: a committed run is found by its run id in the snapshot summaries
(:func:`icetide_glue.silver.find_committed_run`); once expiry removes that snapshot, a rerun of
the run id is no longer recognised as committed and runs again. It still changes nothing as long as
its changes are not newer than silver's rows and the tombstones still hold its deletes (the order
guard and the tombstone retention), but its manifest then reports them as unchanged rather than
``alreadyCommitted`` with the original counts.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

from pyspark.sql import SparkSession

from icetide_glue.errors import InvalidJobArguments
from icetide_glue.maintenance_sql import (
    RewriteStrategy,
    expire_snapshots_sql,
    file_counts_sql,
    remove_orphan_files_sql,
    rewrite_data_files_sql,
    rewrite_position_delete_files_sql,
    snapshot_count_sql,
)
from icetide_glue.silver import SilverTable, table_exists, tombstone_table

logger = logging.getLogger(__name__)

DEFAULT_SNAPSHOT_RETENTION = timedelta(days=7)
# A day of hourly merges: a rerun or a time-travel read of the last day always finds its snapshot.
DEFAULT_MIN_SNAPSHOTS = 24
DEFAULT_ORPHAN_AGE = timedelta(days=3)
# Iceberg refuses shorter ones too: a file younger than this may be a commit still being written.
MIN_ORPHAN_AGE = timedelta(days=1)
# Iceberg's own default: a group of fewer small files is not worth a rewrite.
DEFAULT_MIN_INPUT_FILES = 5
# Any data file with a delete file is rewritten: every read pays for each delete file it applies.
DEFAULT_DELETE_FILE_THRESHOLD = 1

_DATA, _POSITION_DELETES, _EQUALITY_DELETES = 0, 1, 2


class UnsafeOrphanAge(InvalidJobArguments):
    """Orphan removal was asked for files younger than a day: it could delete a file an in-flight
    commit is about to reference, corrupting the table."""


@dataclass(frozen=True)
class MaintenancePolicy:
    """How much history to keep and when a rewrite is worth it.

    ``target_file_size_bytes`` None: the table's own ``write.target-file-size-bytes``.
    """

    snapshot_retention: timedelta = DEFAULT_SNAPSHOT_RETENTION
    min_snapshots: int = DEFAULT_MIN_SNAPSHOTS
    orphan_age: timedelta = DEFAULT_ORPHAN_AGE
    min_input_files: int = DEFAULT_MIN_INPUT_FILES
    delete_file_threshold: int = DEFAULT_DELETE_FILE_THRESHOLD
    target_file_size_bytes: int | None = None

    def __post_init__(self) -> None:
        if self.orphan_age < MIN_ORPHAN_AGE:
            raise UnsafeOrphanAge(
                f"orphan age {self.orphan_age} is shorter than {MIN_ORPHAN_AGE}: a younger file may "
                "belong to a commit still in flight, and removing it would corrupt the table"
            )
        if self.snapshot_retention < timedelta(0):
            raise InvalidJobArguments(
                f"snapshot retention must not be negative, got {self.snapshot_retention}"
            )
        for name in ("min_snapshots", "min_input_files", "delete_file_threshold"):
            if getattr(self, name) < 1:
                raise InvalidJobArguments(f"maintenance {name} must be at least 1, got {getattr(self, name)}")
        if self.target_file_size_bytes is not None and self.target_file_size_bytes < 1:
            raise InvalidJobArguments(f"target file size must be positive, got {self.target_file_size_bytes}")

    def rewrite_options(self) -> dict[str, str]:
        options = {
            "min-input-files": str(self.min_input_files),
            "delete-file-threshold": str(self.delete_file_threshold),
        }
        if self.target_file_size_bytes is not None:
            options["target-file-size-bytes"] = str(self.target_file_size_bytes)
        return options

    def delete_rewrite_options(self) -> dict[str, str]:
        return {"min-input-files": str(self.min_input_files)}


@dataclass(frozen=True)
class TableFiles:
    """A table's live files (current snapshot) and the snapshots its metadata keeps."""

    data_files: int
    delete_files: int
    position_delete_files: int
    total_bytes: int
    snapshots: int

    def to_json(self) -> dict[str, int]:
        return {
            "dataFiles": self.data_files,
            "deleteFiles": self.delete_files,
            "positionDeleteFiles": self.position_delete_files,
            "totalBytes": self.total_bytes,
            "snapshots": self.snapshots,
        }


@dataclass(frozen=True)
class TableMaintenance:
    """What one pass did to one table."""

    table: str
    strategy: str
    before: TableFiles
    after: TableFiles
    data_files_rewritten: int = 0
    data_files_added: int = 0
    delete_files_rewritten: int = 0
    snapshots_expired: int = 0
    files_deleted_by_expiry: int = 0
    orphan_files_removed: int = 0

    def to_json(self) -> dict[str, Any]:
        return {
            "table": self.table,
            "strategy": self.strategy,
            "before": self.before.to_json(),
            "after": self.after.to_json(),
            "dataFilesRewritten": self.data_files_rewritten,
            "dataFilesAdded": self.data_files_added,
            "deleteFilesRewritten": self.delete_files_rewritten,
            "snapshotsExpired": self.snapshots_expired,
            "filesDeletedByExpiry": self.files_deleted_by_expiry,
            "orphanFilesRemoved": self.orphan_files_removed,
        }


@dataclass(frozen=True)
class MaintenanceReport:
    """One maintenance pass of a silver table and, when it has one, its tombstone table."""

    silver: TableMaintenance
    tombstones: TableMaintenance | None
    policy: MaintenancePolicy = field(default_factory=MaintenancePolicy)

    def to_json(self) -> dict[str, Any]:
        policy = {
            (_camel(key) + "Seconds", value.total_seconds())
            if isinstance(value, timedelta)
            else (_camel(key), value)
            for key, value in asdict(self.policy).items()
        }
        return {
            **self.silver.to_json(),
            "tombstones": self.tombstones.to_json() if self.tombstones is not None else None,
            "policy": dict(policy),
        }


def _camel(name: str) -> str:
    first, *rest = name.split("_")
    return first + "".join(part.title() for part in rest)


def maintain_table(
    spark: SparkSession,
    table: SilverTable,
    policy: MaintenancePolicy | None = None,
    now: datetime | None = None,
) -> MaintenanceReport:
    """One maintenance pass of ``table`` and its tombstone table (if any); see the module text."""
    policy = policy or MaintenancePolicy()
    now = now or datetime.now(UTC)
    silver = _maintain_one(spark, table, policy, now)
    memory = tombstone_table(table)
    tombstones = _maintain_one(spark, memory, policy, now) if table_exists(spark, memory) else None
    return MaintenanceReport(silver=silver, tombstones=tombstones, policy=policy)


def _maintain_one(
    spark: SparkSession, table: SilverTable, policy: MaintenancePolicy, now: datetime
) -> TableMaintenance:
    before = measure_table(spark, table)
    properties = table_properties(spark, table)
    # Iceberg's Spark table lists its sort order as this property when it has one.
    strategy = RewriteStrategy.SORT if properties.get("sort-order") else RewriteStrategy.BINPACK
    rewrite = _one_row(
        spark,
        rewrite_data_files_sql(table.catalog, table.database, table.name, strategy, policy.rewrite_options()),
    )
    deletes = _one_row(
        spark,
        rewrite_position_delete_files_sql(
            table.catalog, table.database, table.name, policy.delete_rewrite_options()
        ),
    )
    snapshots_before_expiry = snapshot_count(spark, table)
    expired = _one_row(
        spark,
        expire_snapshots_sql(
            table.catalog, table.database, table.name, now - policy.snapshot_retention, policy.min_snapshots
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


def measure_table(spark: SparkSession, table: SilverTable) -> TableFiles:
    """Live files and bytes of the current snapshot, and the snapshots kept (metadata only)."""
    counts: dict[int, tuple[int, int]] = {
        int(row["content"]): (int(row["files"]), int(row["bytes"]))
        for row in spark.sql(file_counts_sql(table.sql_name)).collect()
    }
    data, position, equality = (counts.get(c, (0, 0)) for c in (_DATA, _POSITION_DELETES, _EQUALITY_DELETES))
    return TableFiles(
        data_files=data[0],
        delete_files=position[0] + equality[0],
        position_delete_files=position[0],
        total_bytes=data[1] + position[1] + equality[1],
        snapshots=snapshot_count(spark, table),
    )


def snapshot_count(spark: SparkSession, table: SilverTable) -> int:
    row = spark.sql(snapshot_count_sql(table.sql_name)).first()
    return int(row["snapshots"]) if row is not None else 0


def table_properties(spark: SparkSession, table: SilverTable) -> Mapping[str, str]:
    """The table's properties as Spark lists them (Iceberg adds ``sort-order`` when sorted)."""
    return {row["key"]: row["value"] for row in spark.sql(f"SHOW TBLPROPERTIES {table.sql_name}").collect()}


def _one_row(spark: SparkSession, sql: str) -> dict[str, Any]:
    row = spark.sql(sql).first()
    return row.asDict() if row is not None else {}
