"""A small merge run on the driver alone: the same answers and the same commit as the Spark path,
without a Spark job.

Why: a run of Spark jobs costs what a job costs, whatever the batch. A batch of recent changes
(the newest keys, plus new ones) touches a few of silver's files, and on a 20M-row table the Spark
path costs a large part of what a full reload costs; the same reads and writes done in the
driver's process cost a fraction of that (docs/benchmarks/merge-cost.md). So a run whose
batch and planned read of silver are small is merged here: pyarrow reads the batch
(icetide_glue.driver.batch) and the planned rows of silver and of the tombstone table
(icetide_glue.driver.silver), the changes are labelled by the classification's own decision table
(icetide_glue.driver.labels), and the rows they leave and the positions they remove are written
and committed as the Spark path commits them (icetide_glue.driver.commit). Reads and writes that
do not wait for each other run in two threads (icetide_glue.beside): the tombstone table's read
beside silver's, silver's data file beside the delete files and the tombstones.

Which runs: a merge with hard deletes into an existing, unpartitioned format-v2 table, no
reconcile, whose batch needs no schema change and has the table's very column types, at most
``max_changes`` rows, and whose planned read of silver is at most :data:`MAX_PLANNED_BYTES`; and
a first load of as many rows, which creates silver as the Spark path does (after the batch's
checks, from the batch's columns) and, finding no row to replace, only appends: a small table's
first run costs no Spark job either. Every other run, and any run this path finds it cannot read
exactly as Spark would (:class:`~icetide_glue.driver.arrow_types.NotEligible`, raised before
anything is written), takes the Spark path; so does every batch a check refuses, which the Spark
path names. The rows it writes store the values hash exactly when the Spark path's would
(icetide_glue.merge.apply.values_hash_types), computed here to the Spark path's very number
(icetide_glue.driver.values_hash), so the Spark path's next classification compares them by their
stored hash; and where silver stores it, this path compares the stored hash too, as the Spark path
does, reading one column of silver's rows instead of every compared one (a row stored without it
leaves the run to the Spark path, which fills it first). The snapshot summary says which path
committed (``icetide.merge-path``).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from functools import partial
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql.types import DoubleType, FloatType, LongType, StructField, StructType

from icetide_contracts.run_manifest import RunManifest
from icetide_glue.arguments import JobArguments
from icetide_glue.beside import beside
from icetide_glue.changes.normalize import check_dms_column_types, find_column, is_whole_number_type
from icetide_glue.changes.row_count import check_bronze_rows
from icetide_glue.changes.schema_evolution import plan_schema_changes
from icetide_glue.columns import (
    CHANGE_PHASE,
    CHANGE_SEQ,
    CHANGE_TS,
    DMS_OP_COLUMN,
    FILE_RANK,
    OP,
    ROW_INDEX,
    RUN_ID,
    TOMBSTONE_COLUMNS,
    VALUES_HASH,
    is_metadata_column,
)
from icetide_glue.commit.run_record import (
    committed_snapshot_id,
    snapshot_properties,
)
from icetide_glue.decision import ORDER_COLUMNS, ChangeAction
from icetide_glue.driver.arrow_types import NotEligible, arrow_type
from icetide_glue.driver.batch import read_batch
from icetide_glue.driver.bronze import arrow_bronze_rows, listed_bronze_files, merged_bronze_schema
from icetide_glue.driver.commit import (
    append_data_file,
    commit_row_delta,
    write_data_file,
    write_position_deletes,
)
from icetide_glue.driver.files import file_size
from icetide_glue.driver.labels import Labels, label_changes
from icetide_glue.driver.silver import PlannedDataFile, empty_rows, iceberg_arrow_schema, read_rows_of_keys
from icetide_glue.driver.values_hash import hashable_kind, values_hash
from icetide_glue.errors import BronzeSchemaError, IcetideJobError, InvalidJobArguments
from icetide_glue.iceberg_tables import branch_snapshot_id, every_spec_unpartitioned, iceberg_table, jvm
from icetide_glue.merge.apply import forget_expired_changes_after_commit, values_hash_types
from icetide_glue.merge.plan import MergePlan
from icetide_glue.merge.position_deletes import POSITION_DELETES_FORMAT, files_to_replace
from icetide_glue.merge.sql import compared_columns, tombstone_merge_sql
from icetide_glue.silver import (
    SilverTable,
    create_silver_table,
    ensure_tombstone_table,
    missing_metadata,
    silver_schema,
    table_exists,
)
from icetide_glue.table_sql import MAIN_BRANCH

logger = logging.getLogger(__name__)

# Nor more than this many bytes of bronze files.
MAX_BRONZE_BYTES = 256 * 1024 * 1024
# The planned read of silver past which the Spark path reads it (on many workers, on Glue).
MAX_PLANNED_BYTES = 512 * 1024 * 1024
_TOMBSTONE_VIEW = "icetide_driver_new_tombstones"


@dataclass(frozen=True)
class _Run:
    """A run this path merges: its labelled changes and what their commit needs."""

    labels: Labels
    manifest: RunManifest
    silver: StructType
    iceberg: Any  # silver's refreshed Iceberg table (_Target)
    silver_keys: list[str]
    tombstones: SilverTable
    tombstone_schema: StructType  # the tombstone table's Spark schema
    tombstone_iceberg: Any  # and its refreshed Iceberg table
    tombstone_keys: list[str]
    base_snapshot_id: int | None  # None: silver had no snapshot (nothing to remove)
    planned: list[PlannedDataFile]


# A run's bronze files and their merged schema (without Spark's file-rank and row-index columns).
BronzeFiles = tuple[list[str], StructType]


def folder_bronze(uri: str) -> BronzeFiles:
    """The files and schema of a run's bronze folder, found without Spark (icetide_glue.driver.bronze)."""
    files = listed_bronze_files(uri)
    return files, merged_bronze_schema(files)


def spark_bronze(bronze: DataFrame) -> BronzeFiles:
    """The files and schema of a bronze read Spark has made (a bronze file selection's)."""
    schema = StructType([f for f in bronze.schema.fields if f.name not in (FILE_RANK, ROW_INDEX)])
    return list(bronze.inputFiles()), schema


def merge_on_driver(
    spark: SparkSession,
    args: JobArguments,
    table: SilverTable,
    bronze: Callable[[], BronzeFiles],
    forced: bool = False,
) -> RunManifest | None:
    """Merge the run here and return its manifest, or None (nothing written to silver) when the
    run takes the Spark path. ``bronze`` finds the run's bronze files and their merged schema
    (:func:`folder_bronze`, :func:`spark_bronze`), once the run's other conditions hold.
    ``forced`` (``--merge_plan driver``): no limit on the changes, and a run this path cannot
    merge fails, naming why, instead of going to Spark."""
    try:
        run = _label(spark, args, table, bronze, None if forced else args.driver_merge_max_changes)
    except NotEligible as reason:
        if forced:
            raise InvalidJobArguments(f"--merge_plan driver cannot merge this run: {reason}") from None
        logger.info("%s: merged by Spark, not on the driver: %s", table, reason)
        return None
    logger.info("%s: %d change(s) merged on the driver", table, len(run.labels.changes))
    return _commit(spark, args, table, run)


def _require(condition: bool, reason: str) -> None:
    if not condition:
        raise NotEligible(reason)


@dataclass(frozen=True)
class _Target:
    """Silver as a run that qualifies found it: its Spark schema and one refreshed handle of its
    Iceberg table, used for every read and the commit of the run (each load of a table is a
    dozen calls to the JVM, and a refresh a read of its metadata)."""

    schema: StructType
    iceberg: Any


@dataclass(frozen=True)
class _Source:
    """The batch's columns as the Spark path would name them: the source columns (without DMS's),
    the keys and the watermark column spelled as in them."""

    schema: StructType
    keys: list[str]
    watermark: str | None


def _source(args: JobArguments, bronze_schema: StructType) -> _Source:
    """As icetide_glue.changes.normalize.normalize_changes and the job's column checks find them; a batch
    that either of them refuses is not merged here (the Spark path names what is wrong)."""
    names = bronze_schema.fieldNames()
    ts_name = find_column(names, args.timestamp_column)
    _require(ts_name is not None, "no DMS timestamp column")
    assert ts_name is not None  # (for the type checker)
    op_name = find_column(names, DMS_OP_COLUMN)
    seq_name = find_column(names, args.change_sequence_column)
    try:
        check_dms_column_types(bronze_schema, ts_name, op_name, seq_name)
    except BronzeSchemaError:
        raise NotEligible("a DMS column of a type DMS never writes") from None
    dms = {ts_name, op_name, seq_name}
    source = StructType([field for field in bronze_schema.fields if field.name not in dms])
    keys = [find_column(source.fieldNames(), key) for key in args.primary_keys]
    _require(bool(keys) and all(key is not None for key in keys), "a key column is not in the files")
    watermark = None
    if args.watermark_column:
        watermark = find_column(source.fieldNames(), args.watermark_column)
        _require(watermark is not None, "the watermark column is not in the files")
    return _Source(source, [key for key in keys if key is not None], watermark)


def _check_run(
    spark: SparkSession, args: JobArguments, table: SilverTable, source: StructType, keys: Sequence[str]
) -> _Target:
    """The conditions known before a file is read (module docstring)."""
    silver = silver_schema(spark, table)
    try:
        schema_plan = plan_schema_changes(silver, source)
    except IcetideJobError:  # a change silver cannot follow: the Spark path refuses it by name
        raise NotEligible("the batch's schema does not follow silver's") from None
    _require(not schema_plan.additions and not schema_plan.widenings, "the batch changes silver's schema")
    iceberg = iceberg_table(spark, table.sql_name, refreshed=True)
    missing, without_metrics = missing_metadata(silver, lambda: iceberg, args.load_mode, args.delete_mode)
    _require(not missing and not without_metrics, "silver lacks a metadata column or property")
    for field in silver.fields:
        arrow_type(field.dataType)
    for field in source.fields:
        name = find_column(silver.fieldNames(), field.name)
        _require(name is not None and silver[name].dataType == field.dataType, f"column {field.name}'s type")
    _check_keys(source, keys)
    _require(int(iceberg.operations().current().formatVersion()) == POSITION_DELETES_FORMAT, "not format v2")
    _require(every_spec_unpartitioned(iceberg), "a partitioned table")
    return _Target(silver, iceberg)


def _check_keys(source: StructType, keys: Sequence[str]) -> None:
    """The keys this path finds rows by: the first a whole number, none floating-point."""
    key_types = [source[key].dataType for key in keys]
    _require(is_whole_number_type(key_types[0]), "the first key is not a whole number")
    _require(not any(isinstance(t, FloatType | DoubleType) for t in key_types), "a floating-point key")


def _check_new_table(source: StructType, keys: Sequence[str]) -> None:
    """What :func:`_check_run` would find of the table a first load creates from ``source``, found
    before it is created: a run that would then go to Spark leaves no table behind it. The table
    stores each column as the batch holds it (no smallint stored as int), in a type this path
    reads, and the values hash of every compared column it hashes at all."""
    try:
        additions = plan_schema_changes(StructType([]), source).additions
    except IcetideJobError:  # a column no table can hold: the Spark path refuses it by name
        raise NotEligible("a column silver cannot hold") from None
    created = {column.name: column.data_type for column in additions}
    for field in source.fields:
        _require(created.get(field.name) == field.dataType, f"column {field.name}'s type")
        arrow_type(field.dataType)
    _check_keys(source, keys)
    # A hard-delete table stores the values hash (icetide_glue.silver), so it is created with one.
    created_schema = StructType([*source.fields, StructField(VALUES_HASH, LongType())])
    _check_values_hash(values_hash_types(created_schema, source.fieldNames(), keys, soft_delete=False))


def _check_values_hash(value_types: Mapping[str, str] | None) -> None:
    """The values hash of every compared column this path hashes (None: no hash compared)."""
    if value_types is not None:
        _require(all(hashable_kind(kind) for kind in value_types.values()), "a compared column's hash")


def _align(latest: pa.Table, silver: StructType) -> pa.Table:
    """The latest changes as silver's source columns (names and Arrow types; a column the batch
    lacks is null) and the metadata columns the labels and the commit read."""
    columns: dict[str, Any] = {}
    for field in silver.fields:
        if is_metadata_column(field.name):
            continue
        name = find_column(latest.column_names, field.name)
        wanted = arrow_type(field.dataType)
        columns[field.name] = pc.cast(latest.column(name), wanted) if name else pa.nulls(len(latest), wanted)
    for name in (CHANGE_TS, CHANGE_SEQ, CHANGE_PHASE, RUN_ID, OP):
        columns[name] = latest.column(name)
    return pa.table(columns)


def _tombstone_keys(tombstone_schema: StructType, keys: Sequence[str]) -> list[str]:
    return [find_column(tombstone_schema.fieldNames(), key) or key for key in keys]


def _label(
    spark: SparkSession,
    args: JobArguments,
    table: SilverTable,
    bronze: Callable[[], BronzeFiles],
    limit: int | None,
) -> _Run:
    """Everything up to the labels, and nothing written but a missing tombstone table; at most
    ``limit`` changes (None: any number)."""
    files, bronze_schema = bronze()
    source = _source(args, bronze_schema)
    keys, watermark = source.keys, source.watermark
    # None: a first load, whose table is checked as it would be created, and created below.
    target = _check_run(spark, args, table, source.schema, keys) if table_exists(spark, table) else None
    if target is None:
        _check_new_table(source.schema, keys)
    try:
        bronze_bytes = sum(file_size(path) for path in files)
    except (OSError, TypeError, pa.ArrowException):  # a file gone since the listing: Spark names it
        raise NotEligible("a bronze file's size is unknown") from None
    _require(bronze_bytes <= MAX_BRONZE_BYTES, "the bronze files are too large")
    batch = read_batch(
        files, bronze_schema, keys, watermark, args.timestamp_column, args.change_sequence_column, args.run_id
    )
    _require(limit is None or batch.summary.rows_read <= limit, f"more than {limit} changes")
    # Before anything is written, as on the Spark path: a lost or added bronze file must not land.
    check_bronze_rows(args, lambda: arrow_bronze_rows(files))
    schema_changes: list[str] = []
    if target is None:
        # A first load creates silver only now, every check passed: as the Spark path, after them.
        schema_changes = create_silver_table(spark, table, source.schema, keys, args.load_mode)
        target = _check_run(spark, args, table, source.schema, keys)
    silver, iceberg = target.schema, target.iceberg
    silver_keys = [find_column(silver.fieldNames(), key) or key for key in keys]
    latest = _align(batch.latest, silver)
    tombstones = ensure_tombstone_table(spark, table, silver, keys)
    # None: silver has no row yet (a first load), so none is read and the run only appends.
    base_snapshot_id = branch_snapshot_id(iceberg, MAIN_BRANCH)
    value_columns = [n for n in silver.fieldNames() if not is_metadata_column(n)]
    value_types = values_hash_types(silver, value_columns, keys, soft_delete=False)
    _check_values_hash(value_types)
    # As on the Spark path (icetide_glue.merge.sql): where silver stores the values hash, the
    # labels compare it, and silver's compared columns are not read at all.
    compared = compared_columns(value_columns, keys) if value_types is None else [VALUES_HASH]
    ranges = batch.summary.key_ranges or []
    wanted = pc.unique(latest.column(silver_keys[0]).combine_chunks())
    read = StructType([silver[name] for name in [*silver_keys, *ORDER_COLUMNS, *compared]])
    key_fields = [latest.schema.field(key) for key in silver_keys]
    read_tombstones = partial(_read_tombstones, spark, tombstones, keys, key_fields, ranges, wanted)
    hash_changes = partial(_values_hashes, spark, latest, value_types)
    # The tombstone table is planned and read, and every change's values hash computed, while
    # silver's rows are read (icetide_glue.beside): which changes the run writes is known only
    # from the labels, and hashing them all costs less than hashing the written ones after.
    with (
        beside(hash_changes, "the changes' values hashes") as hashed,
        beside(read_tombstones, "the tombstone table's read", decisions=(NotEligible,)) as wrote_tombstones,
    ):
        silver_columns = iceberg_arrow_schema(spark, iceberg, read)
        planned: list[PlannedDataFile] = []
        silver_rows = empty_rows(silver_columns)
        if base_snapshot_id is not None:
            planned, silver_rows = read_rows_of_keys(
                spark,
                iceberg,
                table.sql_name,
                silver_columns,
                silver_keys[0],
                ranges,
                wanted,
                base_snapshot_id,
                MAX_PLANNED_BYTES,
            )
        tombstone_schema = wrote_tombstones.result()
        values_hashes = hashed.result()
        if values_hashes is not None:
            # A row stored before the table stored the hash: the Spark path fills it first.
            _require(
                silver_rows.column(VALUES_HASH).null_count == 0, "a silver row stored without its values hash"
            )
            latest = latest.append_column(VALUES_HASH, values_hashes)
        labels = label_changes(latest, silver_rows, tombstone_schema.rows, silver_keys, compared)
    summary = batch.summary
    manifest = RunManifest(
        run_id=args.run_id,
        target_table=str(table),
        rows_read=summary.rows_read,
        watermark_column=args.watermark_column,
        new_watermark=summary.new_watermark,
        schema_changes=schema_changes,
        rows_inserted=labels.count(ChangeAction.INSERT),
        rows_updated=labels.count(ChangeAction.UPDATE),
        rows_deleted=labels.count(ChangeAction.DELETE),
        rows_unchanged=labels.count(ChangeAction.UNCHANGED),
        newest_change_time=summary.newest_change_time,
    )
    return _Run(
        labels,
        manifest,
        silver,
        iceberg,
        silver_keys,
        tombstones,
        tombstone_schema.schema,
        tombstone_schema.iceberg,
        tombstone_schema.keys,
        base_snapshot_id,
        planned,
    )


def _values_hashes(
    spark: SparkSession, changes: pa.Table, value_types: dict[str, str] | None
) -> pa.Array | None:
    """The values hash of each of ``changes`` (aligned to silver) when silver stores one."""
    return None if value_types is None else values_hash(changes, list(value_types.items()), jvm(spark))


@dataclass(frozen=True)
class _Tombstones:
    """The tombstone table as a run reads it: its schema, its refreshed Iceberg table, its key
    columns and its entries of the batch's keys (keys typed as the batch's)."""

    schema: StructType
    iceberg: Any
    keys: list[str]
    rows: pa.Table


def _read_tombstones(
    spark: SparkSession,
    tombstones: SilverTable,
    keys: Sequence[str],
    key_fields: Sequence[pa.Field],
    ranges: Sequence[tuple[int, int]],
    wanted: pa.Array,
) -> _Tombstones:
    """The tombstone table's entries of ``wanted`` keys (change time, sequence, phase, op), its keys
    cast to ``key_fields`` (the batch's), as the labels join them."""
    tombstone_schema = silver_schema(spark, tombstones)
    tombstone_keys = _tombstone_keys(tombstone_schema, keys)
    tombstone_read = StructType([tombstone_schema[name] for name in [*tombstone_keys, *ORDER_COLUMNS, OP]])
    tombstone_iceberg = iceberg_table(spark, tombstones.sql_name, refreshed=True)
    _, rows = read_rows_of_keys(
        spark,
        tombstone_iceberg,
        tombstones.sql_name,
        iceberg_arrow_schema(spark, tombstone_iceberg, tombstone_read),
        tombstone_keys[0],
        ranges,
        wanted,
        None,
        MAX_PLANNED_BYTES,
    )
    _require(rows.column(CHANGE_TS).null_count == 0, "a tombstone entry without a change time")
    rows = pa.table(
        {
            **{
                f.name: pc.cast(rows.column(k), f.type)
                for f, k in zip(key_fields, tombstone_keys, strict=True)
            },
            **{name: rows.column(name) for name in (*ORDER_COLUMNS, OP)},
        }
    )
    return _Tombstones(tombstone_schema, tombstone_iceberg, tombstone_keys, rows)


def _with_times(rows: pa.Table) -> pa.Table:
    """The change time as Iceberg's timestamptz (it is microseconds since the epoch here)."""
    index = rows.column_names.index(CHANGE_TS)
    return rows.set_column(index, CHANGE_TS, pc.cast(rows.column(CHANGE_TS), pa.timestamp("us", tz="UTC")))


def _write_tombstones(spark: SparkSession, run: _Run) -> bool:
    """The tombstone table's writes, before silver's commit (icetide_glue.merge.apply.write_tombstones:
    entries of keys it holds moved forward by its MERGE, the others appended); False when there
    is nothing to remember."""
    labels = run.labels
    if not labels.keep_tombstone.any():
        return False
    entries = _with_times(
        labels.changes.filter(pa.array(labels.keep_tombstone)).select([*run.silver_keys, *TOMBSTONE_COLUMNS])
    )
    entries = entries.rename_columns([*run.tombstone_keys, *TOMBSTONE_COLUMNS])
    held = labels.has_tombstone[labels.keep_tombstone]
    tombstone_schema = run.tombstone_schema
    if held.any():
        columns = StructType([tombstone_schema[name] for name in entries.column_names])
        moved = spark.createDataFrame(entries.filter(pa.array(held)).to_pylist(), columns)
        moved.createOrReplaceTempView(_TOMBSTONE_VIEW)
        try:
            spark.sql(tombstone_merge_sql(run.tombstones.sql_name, _TOMBSTONE_VIEW, run.tombstone_keys))
        finally:
            spark.catalog.dropTempView(_TOMBSTONE_VIEW)
    if not held.all():
        # After the MERGE above the handle is behind: refreshed, so the append builds on it.
        iceberg = run.tombstone_iceberg
        if held.any():
            iceberg.refresh()
        schema = iceberg_arrow_schema(
            spark, iceberg, StructType([tombstone_schema[name] for name in entries.column_names])
        )
        append_data_file(
            spark, iceberg, write_data_file(spark, iceberg, entries.filter(pa.array(~held)), schema), {}
        )
    return True


def _data_files(
    spark: SparkSession, iceberg: Any, keys: list[str], rows: pa.Table, schema: pa.Schema
) -> list[Any]:
    """``rows`` in ``keys``' order, written as one data file of silver (none without rows), not
    committed."""
    if not len(rows):
        return []
    return [write_data_file(spark, iceberg, rows.sort_by([(key, "ascending") for key in keys]), schema)]


def _positions(run: _Run) -> dict[str, np.ndarray]:
    """The positions of the silver rows the run removes, by data file."""
    labels = run.labels
    removes = labels.removes
    found: dict[str, np.ndarray] = {}
    for index in np.unique(labels.file_index[removes]):
        found[run.planned[int(index)].path] = labels.position[removes & (labels.file_index == index)]
    return found


def _commit(spark: SparkSession, args: JobArguments, table: SilverTable, run: _Run) -> RunManifest:
    """The run's writes and ONE commit of silver (as icetide_glue.merge.apply.commit_changes: the
    tombstones first, then the removal and the appended rows in one ``RowDelta``, or an append)."""
    labels, manifest = run.labels, run.manifest
    times = labels.changes.column(CHANGE_TS)
    newest = pc.max(times).as_py() if len(times) else None
    changing = manifest.rows_inserted + manifest.rows_updated + manifest.rows_deleted
    wrote_tombstones = False
    if changing:
        iceberg = run.iceberg
        properties = snapshot_properties(manifest, MergePlan.DRIVER)
        writes = pa.array(labels.writes)
        rows = _with_times(labels.changes.filter(writes))
        schema = iceberg_arrow_schema(spark, iceberg, run.silver)
        keys = run.silver_keys
        # Silver's data file is sorted and written while the delete files and the tombstones are
        # (icetide_glue.beside); the commit waits for it.
        with beside(partial(_data_files, spark, iceberg, keys, rows, schema), "silver's data file") as added:
            positions = _positions(run)
            if positions:
                assert run.base_snapshot_id is not None  # the removed rows were read at it
                live = [
                    d
                    for f in run.planned
                    if f.path in positions
                    for d in f.delete_files
                    if d.data_file == f.path
                ]
                replaced = files_to_replace(live)
                written = write_position_deletes(iceberg, positions, replaced)
                wrote_tombstones = _write_tombstones(spark, run)
                expected = int(labels.removes.sum()) + sum(old.record_count for old in replaced)
                commit_row_delta(
                    spark,
                    iceberg,
                    written,
                    replaced,
                    expected,
                    sorted(positions),
                    run.base_snapshot_id,
                    properties,
                    added.result(),
                )
            else:
                wrote_tombstones = _write_tombstones(spark, run)
                append_data_file(spark, iceberg, added.result()[0], properties)
        manifest = replace(manifest, snapshot_id=committed_snapshot_id(spark, table, manifest.run_id))
    else:
        wrote_tombstones = _write_tombstones(spark, run)
    if wrote_tombstones and newest is not None:
        forget_expired_changes_after_commit(spark, run.tombstones, int(newest), args.tombstone_retention_days)
    return manifest
