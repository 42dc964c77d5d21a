"""Landing a run's changes in silver: classify them, then commit them, visible to readers at once.

The changes of keys silver holds go through a MERGE, the others are appended (:func:`commit_changes`):
a MERGE that also inserts is an outer join Spark must shuffle, one that only matches is an inner
join it can broadcast. A run with both commits them on a staging branch and publishes the branch in
one fast-forward of main (icetide_glue.staging), so readers still see the run whole or not at all.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from icetide_glue.columns import ACTION, CHANGE_TS, MATCHED, REMEMBER, REMEMBERED
from icetide_glue.commit import commit_with_properties
from icetide_glue.errors import IcetideJobError
from icetide_glue.session import session_settings
from icetide_glue.silver import SilverTable
from icetide_glue.sql import (
    MEMORY_COLUMNS,
    ChangeAction,
    classify_changes_sql,
    expired_memory_condition,
    memory_merge_sql,
    merge_sql,
    prune_memory_sql,
)
from icetide_glue.staging import staged_commit

CHANGES_VIEW = "icetide_changes"
CHANGES_TO_MERGE_VIEW = "icetide_changes_to_merge"
CHANGES_TO_REMEMBER_VIEW = "icetide_changes_to_remember"
_MICROS_PER_DAY = 86_400_000_000
# Changes up to this size (as Spark measures the cached, compressed rows) are broadcast into the
# MERGE's scan of silver, which is then never shuffled. The driver collects them and every
# executor holds them as a hash table (several times this size); 160,000 changes of a narrow table
# measured 10 MB. Larger changes are joined by shuffle.
MERGE_BROADCAST_BYTES = 64 * 1024 * 1024
BROADCAST_THRESHOLD = "spark.sql.autoBroadcastJoinThreshold"


@dataclass(frozen=True)
class ChangeCounts:
    """How many of a run's deduplicated changes the run's commit inserts, updates, deletes or leaves."""

    inserted: int = 0
    updated: int = 0
    deleted: int = 0
    unchanged: int = 0

    @property
    def changing(self) -> int:
        return self.inserted + self.updated + self.deleted


@dataclass(frozen=True)
class CommitPlan:
    """How many changing changes meet a silver row (MERGE) and how many do not (append); their
    sum is :attr:`ChangeCounts.changing` (a soft delete of a key silver lacks is appended)."""

    to_merge: int = 0
    to_append: int = 0


@dataclass(frozen=True)
class ClassifiedChanges:
    """Changes labelled with their action, computed once and kept (they are counted, remembered,
    then merged), with the key ranges silver was read in (:mod:`icetide_glue.key_ranges`)."""

    frame: DataFrame
    counts: ChangeCounts
    plan: CommitPlan = CommitPlan()
    key_ranges: Sequence[tuple[int, int]] = ()
    # How many changes the tombstone table must remember, and the batch's newest change time in
    # epoch microseconds (None: no change), found in the same pass as the counts.
    to_remember: int = 0
    newest_change_micros: int | None = None
    # Of ``to_remember``, the changes of keys the tombstone table already holds (merged there).
    remembered_before: int = 0

    def to_apply(self) -> DataFrame:
        return self.frame.where(F.col(ACTION) != ChangeAction.UNCHANGED.value)

    def to_merge(self) -> DataFrame:
        """The changing changes of keys silver holds."""
        return self.to_apply().where(F.col(MATCHED))

    def to_append(self) -> DataFrame:
        """The changing changes of keys silver lacks: inserts (and soft deletes with values)."""
        return self.to_apply().where(~F.col(MATCHED))

    def release(self) -> None:
        """Drop the run's temporary views (a session may run many jobs). The checkpointed labels
        cannot be unpersisted: Spark frees their blocks once the frame is garbage-collected."""
        for view in (CHANGES_VIEW, CHANGES_TO_MERGE_VIEW, CHANGES_TO_REMEMBER_VIEW):
            self.frame.sparkSession.catalog.dropTempView(view)


def classify_changes(
    spark: SparkSession,
    table: SilverTable,
    latest: DataFrame,
    keys: Sequence[str],
    value_columns: Sequence[str] = (),
    memory: SilverTable | None = None,
    soft_delete: bool = False,
    key_ranges: Sequence[tuple[int, int]] = (),
    broadcast_changes: bool = False,
) -> ClassifiedChanges:
    """Label each change (one per key, aligned to silver) with what the run's commit will do to it.

    ``value_columns`` are the source columns compared with silver to tell a real update from a
    re-read of an unchanged row; ``memory`` is the tombstone table the order guard consults;
    ``key_ranges`` and ``broadcast_changes`` limit silver's read to the batch's keys
    (:func:`icetide_glue.sql.rows_of_batch`).

    The result is checkpointed (computed once, its lineage cut), not merely cached: a cache is
    dropped and recomputed when a table it read changes, and the run writes the tombstone table
    before the MERGE reads these labels, which would repeat the classification's read of silver.
    """
    latest.createOrReplaceTempView(CHANGES_VIEW)
    statement = classify_changes_sql(
        table.sql_name,
        CHANGES_VIEW,
        keys,
        value_columns,
        memory_table=memory.sql_name if memory is not None else None,
        soft_delete=soft_delete,
        key_ranges=key_ranges,
        broadcast_changes=broadcast_changes,
    )
    frame = spark.sql(statement).localCheckpoint(eager=True)
    rows = (
        frame.groupBy(ACTION, MATCHED)
        .agg(
            F.count(F.lit(1)).alias("count"),
            F.count_if(F.col(REMEMBER)).alias("remember"),
            F.count_if(F.col(REMEMBER) & F.col(REMEMBERED)).alias("remembered_before"),
            F.max(F.unix_micros(F.col(CHANGE_TS))).alias("newest"),
        )
        .collect()
    )

    def count(action: ChangeAction) -> int:
        return sum(int(row["count"]) for row in rows if row[ACTION] == action.value)

    def changing(matched: bool) -> int:
        return sum(
            int(row["count"])
            for row in rows
            if row[MATCHED] == matched and row[ACTION] != ChangeAction.UNCHANGED.value
        )

    newest = [int(row["newest"]) for row in rows if row["newest"] is not None]
    return ClassifiedChanges(
        frame=frame,
        counts=ChangeCounts(
            inserted=count(ChangeAction.INSERT),
            updated=count(ChangeAction.UPDATE),
            deleted=count(ChangeAction.DELETE),
            unchanged=count(ChangeAction.UNCHANGED),
        ),
        plan=CommitPlan(to_merge=changing(True), to_append=changing(False)),
        key_ranges=key_ranges,
        to_remember=sum(int(row["remember"]) for row in rows),
        remembered_before=sum(int(row["remembered_before"]) for row in rows),
        newest_change_micros=max(newest) if newest else None,
    )


def remember_changes(
    spark: SparkSession, memory: SilverTable, classified: ClassifiedChanges, keys: Sequence[str]
) -> bool:
    """Write the run's deletes and skipped updates to the tombstone table, BEFORE the silver commit;
    False when there was nothing to remember (and so no commit).

    Entries of keys the table already holds are moved forward by a MERGE that only matches; the
    others (most runs: every one) are appended. If the silver commit then fails, the entries are
    harmless: a delete equal to its tombstone still removes the row on the retry, and a skipped
    update only recorded what silver already holds.
    """
    if classified.to_remember == 0:
        return False
    remembered = classified.frame.where(F.col(REMEMBER))
    entries = [*keys, *MEMORY_COLUMNS]
    if classified.remembered_before:
        remembered.where(F.col(REMEMBERED)).select(*entries).createOrReplaceTempView(CHANGES_TO_REMEMBER_VIEW)
        spark.sql(memory_merge_sql(memory.sql_name, CHANGES_TO_REMEMBER_VIEW, keys))
    if classified.remembered_before < classified.to_remember:
        # One file per run: the labels keep the classification's partitions, one file each.
        remembered.where(~F.col(REMEMBERED)).select(*entries).coalesce(1).writeTo(memory.sql_name).append()
    return True


def forget_expired_changes(
    spark: SparkSession, memory: SilverTable, newest_change_micros: int, retention_days: int
) -> None:
    """Delete the tombstone entries older than ``retention_days`` before the batch's newest change
    time, AFTER the silver commit (a commit of its own, only when there is something to delete;
    the job asks only in runs that remembered something, as the table only grows then).

    Not before: a retry after a failed silver commit classifies the batch again and must see
    every entry the first classification saw, or a change it found too old would land.
    """
    prune_before = newest_change_micros - retention_days * _MICROS_PER_DAY
    if spark.table(memory.sql_name).where(expired_memory_condition(prune_before)).take(1):
        spark.sql(prune_memory_sql(memory.sql_name, prune_before))


def commit_changes(
    spark: SparkSession,
    table: SilverTable,
    classified: ClassifiedChanges,
    keys: Sequence[str],
    columns: Sequence[str],
    snapshot_properties: Mapping[str, str],
    soft_delete: bool = False,
    base_snapshot_id: int | None = None,
) -> None:
    """Commit the changes that change something, as ONE new state of main that carries
    ``snapshot_properties``: a MERGE of the changes of keys silver holds, an append of the
    others, or both staged on a branch made at ``base_snapshot_id`` (main's snapshot read before
    the classification) and published together (icetide_glue.staging)."""
    plan = classified.plan
    if plan.to_merge + plan.to_append != classified.counts.changing:
        raise IcetideJobError(
            f"{table}: {classified.counts.changing} changing change(s), but {plan.to_merge} to merge "
            f"and {plan.to_append} to append"
        )
    inserts = classified.to_append().select(*columns)
    if plan.to_merge and plan.to_append:
        if base_snapshot_id is None:
            raise IcetideJobError(
                f"{table}: rows appeared in a table that had no snapshot when the run read it"
            )
        staged_commit(
            spark,
            table,
            base_snapshot_id,
            lambda target: merge_changes(spark, target, classified, keys, columns, {}, soft_delete),
            lambda target: append_changes(target, inserts, snapshot_properties),
        )
    elif plan.to_merge:
        merge_changes(spark, table.sql_name, classified, keys, columns, snapshot_properties, soft_delete)
    elif plan.to_append:
        append_changes(table.sql_name, inserts, snapshot_properties)


def merge_changes(
    spark: SparkSession,
    target: str,
    classified: ClassifiedChanges,
    keys: Sequence[str],
    columns: Sequence[str],
    snapshot_properties: Mapping[str, str],
    soft_delete: bool = False,
) -> None:
    """One MERGE of the changing changes of keys silver holds into ``target`` (a table's or a
    branch's SQL name), committed with ``snapshot_properties``.

    The changes are cached and counted first: Spark then plans the MERGE knowing their true size
    and broadcasts them into silver's scan when they are under ``MERGE_BROADCAST_BYTES`` (a
    checkpoint carries the classification's estimated size, a product of its inputs' sizes, far
    above any threshold; and a hint does not reach a MERGE's join).
    Unchanged changes are left out of the MERGE's source; the order guard in its conditions
    still protects newer silver rows on its own.
    """
    changes = classified.to_merge().cache()
    try:
        changes.count()
        changes.createOrReplaceTempView(CHANGES_TO_MERGE_VIEW)
        statement = merge_sql(
            target,
            CHANGES_TO_MERGE_VIEW,
            keys,
            columns,
            soft_delete=soft_delete,
            key_ranges=classified.key_ranges,
        )
        with session_settings(spark, {BROADCAST_THRESHOLD: str(MERGE_BROADCAST_BYTES)}):
            commit_with_properties(spark, snapshot_properties, lambda: spark.sql(statement))
    finally:
        changes.unpersist()


def append_changes(target: str, aligned: DataFrame, snapshot_properties: Mapping[str, str]) -> None:
    """Append rows already aligned to silver's columns into ``target`` (a table's or a branch's
    SQL name), committed with ``snapshot_properties``."""
    writer = aligned.writeTo(target)
    for key, value in snapshot_properties.items():
        writer = writer.option(f"snapshot-property.{key}", value)
    writer.append()
