"""Landing a run's changes in silver: classify them, then one MERGE (or one append) in one commit."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.storagelevel import StorageLevel

from icetide_glue.columns import ACTION
from icetide_glue.commit import commit_with_properties
from icetide_glue.silver import SilverTable
from icetide_glue.sql import ChangeAction, classify_changes_sql, merge_sql

CHANGES_VIEW = "icetide_changes"
CHANGES_TO_APPLY_VIEW = "icetide_changes_to_apply"


@dataclass(frozen=True)
class ChangeCounts:
    """How many of a run's deduplicated changes the MERGE inserts, updates, deletes or leaves."""

    inserted: int = 0
    updated: int = 0
    deleted: int = 0
    unchanged: int = 0

    @property
    def changing(self) -> int:
        return self.inserted + self.updated + self.deleted


@dataclass(frozen=True)
class ClassifiedChanges:
    """Changes labelled with their action (cached: they are counted, then merged)."""

    frame: DataFrame
    counts: ChangeCounts

    def to_apply(self) -> DataFrame:
        return self.frame.where(F.col(ACTION) != ChangeAction.UNCHANGED.value)

    def release(self) -> None:
        """Free the cache and the run's temporary views (a session may run many jobs)."""
        self.frame.unpersist()
        for view in (CHANGES_VIEW, CHANGES_TO_APPLY_VIEW):
            self.frame.sparkSession.catalog.dropTempView(view)


def classify_changes(
    spark: SparkSession,
    table: SilverTable,
    latest: DataFrame,
    keys: Sequence[str],
    value_columns: Sequence[str] = (),
) -> ClassifiedChanges:
    """Label each change (one per key, aligned to silver) with what the MERGE will do to it.

    ``value_columns`` are the source columns compared with silver to tell a real update from a
    re-read of an unchanged row.
    """
    latest.createOrReplaceTempView(CHANGES_VIEW)
    statement = classify_changes_sql(table.sql_name, CHANGES_VIEW, keys, value_columns)
    frame = spark.sql(statement).persist(
        StorageLevel.MEMORY_AND_DISK
    )
    by_action = {row[ACTION]: int(row["count"]) for row in frame.groupBy(ACTION).count().collect()}
    counts = ChangeCounts(
        inserted=by_action.get(ChangeAction.INSERT.value, 0),
        updated=by_action.get(ChangeAction.UPDATE.value, 0),
        deleted=by_action.get(ChangeAction.DELETE.value, 0),
        unchanged=by_action.get(ChangeAction.UNCHANGED.value, 0),
    )
    return ClassifiedChanges(frame=frame, counts=counts)


def merge_changes(
    spark: SparkSession,
    table: SilverTable,
    classified: ClassifiedChanges,
    keys: Sequence[str],
    columns: Sequence[str],
    snapshot_properties: Mapping[str, str],
) -> None:
    """One MERGE of the changes that change something, committed with ``snapshot_properties``.

    Unchanged changes are left out of the MERGE's source; the order guard in its conditions
    still protects newer silver rows on its own.
    """
    classified.to_apply().createOrReplaceTempView(CHANGES_TO_APPLY_VIEW)
    statement = merge_sql(table.sql_name, CHANGES_TO_APPLY_VIEW, keys, columns)
    commit_with_properties(spark, snapshot_properties, lambda: spark.sql(statement))


def append_changes(table: SilverTable, aligned: DataFrame, snapshot_properties: Mapping[str, str]) -> None:
    """Append every row of the batch (key-less tables), committed with ``snapshot_properties``."""
    writer = aligned.writeTo(table.sql_name)
    for key, value in snapshot_properties.items():
        writer = writer.option(f"snapshot-property.{key}", value)
    writer.append()
