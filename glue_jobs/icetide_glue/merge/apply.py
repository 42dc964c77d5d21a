"""Landing a run's changes in silver: classify them, then commit them, visible to readers at once.

The classification reads silver once, where the batch's keys can be, and finds for each change of
a key silver holds the row it replaces (its data file and position). The commit
(:func:`commit_changes`) removes those rows by position (icetide_glue.merge.position_deletes) and appends
the rows the changes leave (updates, inserts, soft deletes): no MERGE, so no second read of silver.
A run with both commits them in one Iceberg commit (its appended rows written without a commit of
their own, icetide_glue.commit.unpublished_files), so readers see the run whole or not at all.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable, Mapping, Sequence
from contextlib import ExitStack
from dataclasses import dataclass
from functools import partial
from typing import Any

from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.readwriter import DataFrameWriterV2
from pyspark.sql.types import ArrayType, MapType, StructType

from icetide_glue.beside import beside
from icetide_glue.columns import (
    ACTION,
    CHANGE_TS,
    HAS_TOMBSTONE,
    KEEP_TOMBSTONE,
    MATCHED,
    SILVER_FILE,
    TAKE_IMAGE,
    TOMBSTONE_COLUMNS,
    VALUES_HASH,
    silver_value_column,
)
from icetide_glue.commit.unpublished_files import check_rows_written, write_unpublished_data_files
from icetide_glue.decision import ChangeAction
from icetide_glue.errors import IcetideJobError, one_line
from icetide_glue.iceberg_tables import data_files_may_hold, java_long, jvm
from icetide_glue.merge.planned_scan import rows_in_key_ranges
from icetide_glue.merge.position_deletes import remove_rows, require_position_deletes
from icetide_glue.merge.sql import (
    classify_changes_sql,
    compared_columns,
    fill_values_hash_sql,
    prune_tombstones_sql,
    rows_without_values_hash_sql,
    tombstone_merge_sql,
    values_hash_sql,
)
from icetide_glue.silver import SilverTable, has_rows_without_values_hash, main_snapshot_id
from icetide_glue.table_sql import quote_identifier

logger = logging.getLogger(__name__)

CHANGES_VIEW = "icetide_changes"
# The rows of silver and of its tombstone table a classification reads (planned by Iceberg).
SILVER_ROWS_VIEW = "icetide_silver_rows"
TOMBSTONE_ROWS_VIEW = "icetide_tombstone_rows"
# A commit that appends at most this many rows writes them in one task, sorted there in the table's
# order, without Spark's range distribution: one data file (per 64 MB, per partition of a legacy
# bucketed table) instead of one per range partition, and no sampling job or shuffle, which cost
# more than the write itself for the small appends of hourly runs (measured with narrow rows, not
# at the limit or for wide ones). A larger write keeps the range distribution, which
# sorts on every core.
ONE_TASK_WRITE_ROWS = 1_000_000
# Iceberg's Spark write option for the write's distribution (none: each task sorts what it has).
_DISTRIBUTION_MODE = "distribution-mode"
NEW_TOMBSTONES_VIEW = "icetide_new_tombstones"
_MICROS_PER_DAY = 86_400_000_000
# Names of the classification's tallies (:func:`_label_tallies`) beside the actions' and columns'.
_REMOVING, _UNPLACED, _NEWEST = "removing", "unplaced", "newest"
# The name the classification's tallies are observed under.
_LABEL_TALLIES = "icetide_label_tallies"


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
    """How many silver rows the commit removes (the changing changes of keys silver holds) and how
    many rows it appends (every changing change but a hard delete)."""

    to_remove: int = 0
    to_write: int = 0


@dataclass(frozen=True)
class ClassifiedChanges:
    """Changes labelled with their action, computed once and kept (they are counted, remembered,
    then committed)."""

    frame: DataFrame
    counts: ChangeCounts
    plan: CommitPlan = CommitPlan()
    # How many changes the tombstone table must remember, and the batch's newest change time in
    # epoch microseconds (None: no change), found in the same pass as the counts.
    to_tombstone: int = 0
    newest_change_micros: int | None = None
    # Of ``to_tombstone``, the changes of keys the tombstone table already holds (merged there).
    tombstones_before: int = 0
    # The columns compared with silver's, in order: with soft deletes the frame also carries
    # silver's value of each (``silver_value_column(i)``).
    compared: Sequence[str] = ()
    # The data files of the silver rows the commit removes, sorted (found with the counts).
    removed_data_files: Sequence[str] = ()

    def to_apply(self) -> DataFrame:
        return self.frame.where(F.col(ACTION) != ChangeAction.UNCHANGED.value)

    def to_remove(self) -> DataFrame:
        """The changing changes of keys silver holds: their silver rows go."""
        return self.frame.where(removes_silver_row())

    def to_write(self, soft_delete: bool) -> DataFrame:
        """The changing changes that leave a row: all but hard deletes."""
        if soft_delete:
            return self.to_apply()
        return self.to_apply().where(F.col(ACTION) != ChangeAction.DELETE.value)

    def release(self) -> None:
        """Drop the run's temporary views (a session may run many jobs). The checkpointed labels
        cannot be unpersisted: Spark frees their blocks once the frame is garbage-collected."""
        for view in (CHANGES_VIEW, NEW_TOMBSTONES_VIEW):
            self.frame.sparkSession.catalog.dropTempView(view)


def removes_silver_row() -> Column:
    """A labelled change whose key's silver row the commit removes: a changing change of a key
    silver holds (:meth:`ClassifiedChanges.to_remove`, and the data files the counts collect)."""
    return F.col(MATCHED) & (F.col(ACTION) != ChangeAction.UNCHANGED.value)


def values_hash_types(
    silver: StructType, value_columns: Sequence[str], keys: Sequence[str], soft_delete: bool
) -> dict[str, str] | None:
    """The compared columns' Spark type names when the classification compares hashes of them:
    silver stores the hash (a hard-delete table, icetide_glue.silver), there is a column to
    compare and none is a struct, array or map (whose text form is not one the hash's definition
    covers: a float or binary inside one). None: the values are compared, and the rows the run
    writes store no hash."""
    compared = compared_columns(value_columns, keys)
    if soft_delete or not compared or VALUES_HASH not in silver.fieldNames():
        return None
    types = {name: silver[name].dataType for name in compared}
    if any(isinstance(data_type, (StructType, ArrayType, MapType)) for data_type in types.values()):
        return None
    return {name: data_type.simpleString() for name, data_type in types.items()}


def with_values_hash(changes: DataFrame, value_types: Mapping[str, str]) -> DataFrame:
    """``changes`` with ``_icetide_values_hash``, the hash of their compared columns
    (``value_types``, :func:`values_hash_types`), as the classification compares and the commit
    stores it."""
    return changes.withColumn(VALUES_HASH, F.expr(values_hash_sql(list(value_types.items()))))


def fill_values_hashes(spark: SparkSession, table: SilverTable, value_types: Mapping[str, str]) -> bool:
    """Store the values hash of ``value_types``' columns in the rows of main's newest snapshot
    stored without one (written before the table stored it), in a commit of its own; True when
    there were any. The run notes the snapshot its commit builds on after this commit.

    Before a classification that compares stored hashes only: a row left without its hash would
    not be wrong, only rewritten as an update (a null never equals the batch's hash). Both merge
    paths store the hash with every row they write, so one fill serves every later run.

    Iceberg's metadata answers first, without a Spark job
    (:func:`icetide_glue.silver.has_rows_without_values_hash`); where it cannot rule such a row
    out, a query of the files it names does (:func:`icetide_glue.merge.sql.rows_without_values_hash_sql`).
    The metadata alone would say yes after a fill too: the fill writes merge-on-read, so the files
    it rewrote rows of stay live, without the hash's metrics, until maintenance compacts them; so
    would a table whose files keep no null counts (an owner's metrics mode).
    """
    if not has_rows_without_values_hash(spark, table, main_snapshot_id(spark, table)):
        return False
    if not spark.sql(rows_without_values_hash_sql(table.sql_name)).take(1):
        return False
    logger.info("%s: storing the values hash of rows stored without one (a commit of its own)", table)
    spark.sql(fill_values_hash_sql(table.sql_name, list(value_types.items())))
    logger.info("%s: values hashes stored, main is now snapshot %s", table, main_snapshot_id(spark, table))
    return True


def classify_changes(
    spark: SparkSession,
    table: SilverTable,
    latest: DataFrame,
    keys: Sequence[str],
    value_columns: Sequence[str] = (),
    tombstones: SilverTable | None = None,
    soft_delete: bool = False,
    key_ranges: Sequence[tuple[int, int]] = (),
    broadcast_changes: bool = False,
    value_types: Mapping[str, str] | None = None,
    snapshot_id: int | None = None,
) -> ClassifiedChanges:
    """Label each change (one per key, aligned to silver) with what the run's commit will do to it.

    ``value_columns`` are the source columns compared with silver to tell a real update from a
    re-read of an unchanged row; ``tombstones`` is the tombstone table the order guard consults;
    ``key_ranges`` (closed ranges of the first key: Iceberg plans the reads of silver and of the
    tombstone table with them, icetide_glue.merge.planned_scan) and ``broadcast_changes``
    (:func:`icetide_glue.merge.sql.rows_of_batch`) limit those reads to the batch's keys. With
    ``value_types`` (:func:`values_hash_types`) each change gets the hash of its values
    (``_icetide_values_hash``), which the classification compares with silver's stored hash (every
    row of silver stores one: :func:`fill_values_hashes`) and the commit stores with the row.
    Silver is read as of ``snapshot_id`` (main's, which the run's commit builds on; None: its
    newest).

    The result is checkpointed (computed once, its lineage cut), not merely cached: a cache is
    dropped and recomputed when a table it read changes, and the run writes the tombstone table
    while its commit's writes still read these labels, which would repeat the classification's
    reads with other results.
    """
    if value_types is not None:
        latest = with_values_hash(latest, value_types)
    latest.createOrReplaceTempView(CHANGES_VIEW)
    statement = classify_changes_sql(
        quote_identifier(SILVER_ROWS_VIEW),
        CHANGES_VIEW,
        keys,
        value_columns,
        tombstone_table=quote_identifier(TOMBSTONE_ROWS_VIEW) if tombstones is not None else None,
        soft_delete=soft_delete,
        broadcast_changes=broadcast_changes,
        compare_hashes=value_types is not None,
    )
    # The key ranges go to Iceberg's planning, not into the statement (icetide_glue.merge.planned_scan):
    # (view, table, row positions, snapshot).
    views: list[tuple[str, SilverTable, bool, int | None]] = [(SILVER_ROWS_VIEW, table, True, snapshot_id)]
    if tombstones is not None:
        views.append((TOMBSTONE_ROWS_VIEW, tombstones, False, None))
    with ExitStack() as staged:
        try:
            for view, read, positions, snapshot in views:
                planned = rows_in_key_ranges(
                    spark, read.sql_name, keys[0], key_ranges, row_positions=positions, snapshot_id=snapshot
                )
                staged.enter_context(planned).createOrReplaceTempView(view)
            # The counts ride on the checkpoint's own job (observed): a second job over its rows
            # would read every labelled row again, a cost that grows with silver.
            labelled = spark.sql(statement).observe(_LABEL_TALLIES, *_label_tallies())
            frame = labelled.localCheckpoint(eager=True)
        finally:
            for view, *_ in views:
                spark.catalog.dropTempView(view)
    tallies = observed_metrics(labelled, _LABEL_TALLIES)
    if tallies[_UNPLACED]:
        raise IcetideJobError(f"{table}: a silver row to remove was read without its data file")
    leaving_rows = [ChangeAction.INSERT, ChangeAction.UPDATE, *([ChangeAction.DELETE] if soft_delete else [])]

    def count(action: ChangeAction) -> int:
        return int(tallies[action.value])

    newest = tallies[_NEWEST]
    return ClassifiedChanges(
        frame=frame,
        counts=ChangeCounts(
            inserted=count(ChangeAction.INSERT),
            updated=count(ChangeAction.UPDATE),
            deleted=count(ChangeAction.DELETE),
            unchanged=count(ChangeAction.UNCHANGED),
        ),
        plan=CommitPlan(
            to_remove=int(tallies[_REMOVING]), to_write=sum(count(action) for action in leaving_rows)
        ),
        to_tombstone=int(tallies[KEEP_TOMBSTONE]),
        tombstones_before=int(tallies[HAS_TOMBSTONE]),
        newest_change_micros=int(newest) if newest is not None else None,
        compared=compared_columns(value_columns, keys),
        removed_data_files=sorted(set(json.loads(tallies[SILVER_FILE]))),
    )


def observed_metrics(frame: DataFrame, name: str) -> dict[str, Any]:
    """What ``frame`` observed under ``name`` (``DataFrame.observe``) in the action that just ran
    on it, read from that action's own query execution. PySpark's ``Observation`` would wait for
    them, with no timeout, on a listener event Spark delivers from another thread: an event lost
    would hang the run until Glue's timeout."""
    found = frame._jdf.queryExecution().observedMetrics().get(name)
    if found.isEmpty():  # not input's fault: Spark did not do what it does
        raise RuntimeError(f"Spark kept no observed metrics {name!r} of the action that just ran")
    return dict(json.loads(found.get().json()))


def _label_tallies() -> list[Column]:
    """What a run needs to know of its labelled changes, as global aggregates that ride on the
    classification's job (observed, :func:`observed_metrics`; only numbers and one JSON
    string): the changes per action, the silver rows the commit removes (matched
    changes other than unchanged ones) and their data files (the removal writes one delete file
    each), rows to remove read without a data file (none, or the run stops), the changes the
    tombstone table remembers and how many of those it held already, and the newest change time."""
    removes = removes_silver_row()
    action = F.col(ACTION)
    return [
        *[F.count_if(action == kind.value).alias(kind.value) for kind in ChangeAction],
        F.count_if(removes).alias(_REMOVING),
        F.to_json(F.collect_set(F.when(removes, F.col(SILVER_FILE)))).alias(SILVER_FILE),
        F.count_if(removes & F.col(SILVER_FILE).isNull()).alias(_UNPLACED),
        F.count_if(F.col(KEEP_TOMBSTONE)).alias(KEEP_TOMBSTONE),
        F.count_if(F.col(KEEP_TOMBSTONE) & F.col(HAS_TOMBSTONE)).alias(HAS_TOMBSTONE),
        F.max(F.unix_micros(F.col(CHANGE_TS))).alias(_NEWEST),
    ]


def write_tombstones(
    spark: SparkSession, tombstones: SilverTable, classified: ClassifiedChanges, keys: Sequence[str]
) -> bool:
    """Write the run's deletes and skipped updates to the tombstone table, BEFORE the silver commit;
    False when there was nothing to remember (and so no commit).

    Entries of keys the table already holds are moved forward by a MERGE that only matches; the
    others (most runs: every one) are appended. If the silver commit then fails, the entries are
    harmless: a delete equal to its tombstone still removes the row on the retry, and a skipped
    update only recorded what silver already holds.
    """
    if classified.to_tombstone == 0:
        return False
    new_tombstones = classified.frame.where(F.col(KEEP_TOMBSTONE))
    entries = [*keys, *TOMBSTONE_COLUMNS]
    if classified.tombstones_before:
        new_tombstones.where(F.col(HAS_TOMBSTONE)).select(*entries).createOrReplaceTempView(
            NEW_TOMBSTONES_VIEW
        )
        spark.sql(tombstone_merge_sql(tombstones.sql_name, NEW_TOMBSTONES_VIEW, keys))
    if classified.tombstones_before < classified.to_tombstone:
        # One file per run: the labels keep the classification's partitions, one file each.
        new_tombstones.where(~F.col(HAS_TOMBSTONE)).select(*entries).coalesce(1).writeTo(
            tombstones.sql_name
        ).append()
    return True


def forget_expired_changes(
    spark: SparkSession, tombstones: SilverTable, newest_change_micros: int, retention_days: int
) -> None:
    """Delete the tombstone entries older than ``retention_days`` before the batch's newest change
    time, AFTER the silver commit (a commit of its own, only when there is something to delete;
    the job asks only in runs that remembered something, as the table only grows then).

    Not before: a retry after a failed silver commit classifies the batch again and must see
    every entry the first classification saw, or a change it found too old would land.

    The tombstone table's data manifests answer (each data file's lowest change time, on the
    driver, no Spark query): most runs have nothing to forget, and a query would pay Spark's
    analysis and Iceberg's planning every run even where no file matches, several times what
    reading the manifests costs on the benchmark's tombstone tables.
    Their answer is exact here: the table is copy-on-write (no delete file hides a row)
    and a file's lowest change time is one of its rows'.
    """
    prune_before = newest_change_micros - retention_days * _MICROS_PER_DAY
    expired = jvm(spark).org.apache.iceberg.expressions.Expressions.lessThan(
        CHANGE_TS, java_long(spark, prune_before)
    )
    if data_files_may_hold(spark, tombstones.sql_name, expired):
        spark.sql(prune_tombstones_sql(tombstones.sql_name, prune_before))


def forget_expired_changes_after_commit(
    spark: SparkSession, tombstones: SilverTable, newest: int, days: int
) -> None:
    """Housekeeping after the run's commit: a failure only delays it to the next run."""
    try:
        forget_expired_changes(spark, tombstones, newest, days)
    except Exception as error:  # the run's commit stands; failing the run now would only mislead
        logger.warning("%s: old tombstones not pruned this run: %s", tombstones, one_line(error))


def commit_changes(
    spark: SparkSession,
    table: SilverTable,
    classified: ClassifiedChanges,
    columns: Sequence[str],
    snapshot_properties: Mapping[str, str],
    soft_delete: bool = False,
    base_snapshot_id: int | None = None,
    before_commit: Callable[[], object] | None = None,
) -> None:
    """Commit the changes that change something as ONE new state of main that carries
    ``snapshot_properties``: a removal of the silver rows they replace (by position, validated
    against ``base_snapshot_id``, main's snapshot read before the classification), an append of
    the rows they leave, or both in one Iceberg ``RowDelta``. ``before_commit`` is work that must
    be done before that commit, and whose failure must stop it (the job's: the tombstones' write).

    A removal's delete files are written on the run's thread; beside them, on a second thread
    (at a run's usual sizes each write is a single Spark task, and the machine has more than one
    core), the rows the changes leave are written without a commit of their own
    (icetide_glue.commit.unpublished_files), then ``before_commit`` runs. The removal's commit adds
    those rows' files once both sides are done. A failure on either side commits nothing to
    silver; the run fails once the second thread is done, so no write of it goes on after. As
    ``before_commit`` does not wait for the delete files, a run whose delete files fail may still
    have done it (a run whose commit fails always could: the job's tombstones are harmless then).
    """
    plan = classified.plan
    counts = classified.counts
    if (
        plan.to_remove > counts.changing
        or plan.to_write > counts.changing
        or (plan.to_remove + plan.to_write < counts.changing)
    ):
        raise IcetideJobError(
            f"{table}: {counts.changing} changing change(s), but {plan.to_remove} silver row(s) to "
            f"remove and {plan.to_write} to write"
        )
    rows = rows_to_write(classified, columns, soft_delete)
    if plan.to_remove:
        if base_snapshot_id is None:
            raise IcetideJobError(
                f"{table}: rows appeared in a table that had no snapshot when the run read it"
            )
        # Before any write: a table that cannot take position deletes is refused with nothing written.
        require_position_deletes(spark, table)
        with beside(
            partial(_beside_the_removal, spark, table.sql_name, rows, plan.to_write, before_commit),
            "the writes beside the removal",
        ) as added:
            remove_rows(
                spark,
                table,
                classified.to_remove(),
                classified.removed_data_files,
                plan.to_remove,
                base_snapshot_id,
                snapshot_properties,
                added_data_files=added.result,
            )
    elif plan.to_write:
        if before_commit is not None:
            before_commit()
        append_changes(table.sql_name, rows, snapshot_properties, row_count=plan.to_write)


def _beside_the_removal(
    spark: SparkSession,
    target: str,
    rows: DataFrame,
    row_count: int,
    before_commit: Callable[[], object] | None,
) -> list[Any]:
    """What a removal's commit waits for, on the second thread: the files of the ``row_count``
    rows it adds (none without rows), then ``before_commit``."""
    data_files = write_appended_rows(spark, target, rows, row_count) if row_count else []
    if before_commit is not None:
        before_commit()
    return data_files


def rows_to_write(classified: ClassifiedChanges, columns: Sequence[str], soft_delete: bool) -> DataFrame:
    """The rows the run's changing changes leave in silver, as silver's ``columns``: each change's
    own, except a soft delete that keeps silver's values (``_icetide_take_image`` false), which
    writes silver's values with the delete's change time, sequence, run id and deletion time."""
    rows = classified.to_write(soft_delete)
    if soft_delete and classified.compared:
        # A null take-image keeps silver's values, as the MERGE's ``AND take_image`` did.
        takes_image = F.coalesce(F.col(TAKE_IMAGE), F.lit(False))
        keeps_silver = (F.col(ACTION) == ChangeAction.DELETE.value) & F.col(MATCHED) & ~takes_image
        rows = rows.withColumns(
            {
                column: F.when(keeps_silver, F.col(silver_value_column(i))).otherwise(
                    F.col(quote_identifier(column))
                )
                for i, column in enumerate(classified.compared)
            }
        )
    return rows.select(*columns)


def append_changes(
    target: str, aligned: DataFrame, snapshot_properties: Mapping[str, str], row_count: int | None = None
) -> None:
    """Append rows already aligned to silver's columns into ``target`` (a table's SQL name),
    committed with ``snapshot_properties``. ``row_count``, when known, is how many
    there are: at most :data:`ONE_TASK_WRITE_ROWS` are written by one task."""
    writer = _append_writer(target, aligned, row_count)
    for key, value in snapshot_properties.items():
        writer = writer.option(f"snapshot-property.{key}", value)
    writer.append()


def write_appended_rows(spark: SparkSession, target: str, aligned: DataFrame, row_count: int) -> list[Any]:
    """Write ``row_count`` rows aligned to silver's columns as :func:`append_changes` writes them,
    without a commit; return the Iceberg ``DataFile`` objects, checked to hold exactly those rows."""
    data_files = write_unpublished_data_files(spark, target, _append_writer(target, aligned, row_count))
    check_rows_written(target, data_files, row_count)
    return data_files


def _append_writer(target: str, aligned: DataFrame, row_count: int | None) -> DataFrameWriterV2:
    one_task = row_count is not None and row_count <= ONE_TASK_WRITE_ROWS
    writer = (aligned.coalesce(1) if one_task else aligned).writeTo(target)
    if one_task:
        writer = writer.option(_DISTRIBUTION_MODE, "none")
    return writer
