"""The DMS stand-in's data movement: what a replication task does, done locally.

AWS DMS cannot run on a laptop, so this replicator honours a task's inputs and writes what DMS
writes, for the Glue job downstream to read without knowing the difference:

- the task's ``MigrationType``: ``full-load``, ``full-load-and-cdc`` (change capture starts before
  the load reads, then the changes committed since are written as CDC files) and ``cdc`` (the changes
  after ``CdcStartPosition``, an earlier task's ``RecoveryCheckpoint``); both CDC kinds stop at
  ``CdcStopPosition`` and report the checkpoint they read up to (see :mod:`.cdc` for where changes
  come from);
- the task's table mapping JSON: selection rules with ``include``/``exclude`` and ``source`` filters
  (conditions within a filter ORed, filters ANDed, ``between``/``notbetween`` bounds inclusive; CDC
  rows are filtered too), and exactly two kinds of transformation rule: ``add-column`` of
  ``$AR_H_CHANGE_SEQ`` and ``include-column`` (only the included columns are written);
- the target endpoint's ``S3Settings``: LOAD files named ``LOAD00000001.parquet``, counting in
  hexadecimal, under ``<BucketFolder>/<schema>/<table>/``; an ``Op`` column (``I``) first when
  ``IncludeOpForFullLoad``; the ``TimestampColumnName`` column as a ``yyyy-MM-dd HH:mm:ss.SSSSSS``
  string holding the transfer time, on the replication instance's clock (:data:`INSTANCE_CLOCK_SKEW`
  ahead of, or behind, the source's clock that stamps commit times); then the source columns with
  source-faithful types, then
  ``AR_H_CHANGE_SEQ`` (null in LOAD files) when the mapping adds it. CDC files sit beside them, named
  by the time of writing (``yyyyMMdd-HHmmssSSS.parquet``, strictly increasing, also after the
  ``cdc_files_after`` of an earlier run of the task), with ``Op`` (I/U/D) first and the source
  commit time in the timestamp column; one file per table per task run, or more when a table has
  more than ``max_rows_per_file`` changes (``CdcMaxBatchInterval`` and ``CdcMinFileSize`` are
  accepted but do not change this); a table without changes gets none;
- table statistics like ``describe_table_statistics``: ``FullLoadRows`` and, as ``Inserts``/
  ``Updates``/``Deletes``, every change of the table in the window, also those a filter keeps out
  of the CDC files (:class:`ChangeCounting`); a table that cannot be read is reported as "Table error" and
  the others still load; an unreachable source fails the whole run.
"""

from __future__ import annotations

import datetime as dt
import json
import os
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from enum import StrEnum
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
from sqlalchemy.engine import URL, Engine
from sqlalchemy.exc import SQLAlchemyError

from icetide_local.standins.dms import cdc
from icetide_local.standins.dms.s3_target import ObjectSink, S3ObjectSink, S3TargetSettings
from icetide_local.standins.dms.source import (
    FILTER_OPERATORS,
    NULL_OPERATORS,
    RANGE_OPERATORS,
    FilterCondition,
    SourceFilter,
    SourceTableError,
    open_source,
    reflect_table,
)

TABLE_COMPLETED = "Table completed"
TABLE_ERROR = "Table error"

OP_COLUMN = "Op"
FULL_LOAD_OP = "I"
CHANGE_SEQUENCE_COLUMN = "AR_H_CHANGE_SEQ"

FULL_LOAD = "full-load"
FULL_LOAD_AND_CDC = "full-load-and-cdc"
CDC = "cdc"
MIGRATION_TYPES = (FULL_LOAD, FULL_LOAD_AND_CDC, CDC)
DMS_TIMESTAMP_FORMAT = "%Y-%m-%d %H:%M:%S.%f"  # DMS's yyyy-MM-dd HH:mm:ss.SSSSSS

DEFAULT_MAX_ROWS_PER_FILE = 100_000
DEFAULT_BATCH_ROWS = 10_000

# DMS stamps a full-load row with when it transferred the row, on the replication instance's
# clock, and a CDC row with its commit time, on the source's (AWS DMS API reference,
# S3Settings.TimestampColumnName). The stand-in's own clock is the source's (SQLite's triggers
# stamp commits with it); the instance's runs this far ahead of it (negative: behind). Set it
# with ICETIDE_DMS_INSTANCE_CLOCK_SKEW_SECONDS (read when the stand-in is imported), or in a test.
INSTANCE_CLOCK_SKEW_VARIABLE = "ICETIDE_DMS_INSTANCE_CLOCK_SKEW_SECONDS"


def _skew_from_environment() -> dt.timedelta:
    text = os.environ.get(INSTANCE_CLOCK_SKEW_VARIABLE, "").strip()
    try:
        return dt.timedelta(seconds=float(text or 0))
    except ValueError:
        raise ValueError(
            f"{INSTANCE_CLOCK_SKEW_VARIABLE}={text!r} is not a number of seconds (e.g. 30 or -2.5)"
        ) from None


INSTANCE_CLOCK_SKEW = _skew_from_environment()
# Called with the table's schema and name between a full load's transfers (see _load_table), so
# that a test can commit changes at the source DURING a full-load-and-cdc task's full load, as
# happens to DMS; None: nothing is.
FullLoadHook = Callable[[str, str], None]
DURING_FULL_LOAD: FullLoadHook | None = None

_NEGATIVE_OPERATORS = frozenset({"noteq", "notbetween", "notnull"})
_IGNORED_RULE_TYPES = frozenset({"table-settings"})  # parallel-load and LOB tuning: same rows, same columns
_CHANGE_SEQUENCE_EXPRESSION = "$AR_H_CHANGE_SEQ"


class TableMappingError(ValueError):
    """The table mapping is one DMS would reject, or uses a feature the stand-in does not honour."""


class CdcStartPositionMissing(ValueError):
    """A ``cdc`` task was started without ``CdcStartPosition``."""


@dataclass(frozen=True)
class TableSelection:
    """One table a task loads, with the source filters of its selection rule."""

    schema: str
    table: str
    filters: tuple[SourceFilter, ...] = ()
    include_columns: tuple[str, ...] = ()
    """Only these columns are written (``include-column`` rules); every column when empty."""
    change_sequence: bool = False
    """The mapping adds ``AR_H_CHANGE_SEQ`` to this table's rows."""


@dataclass(frozen=True)
class TableStatistics:
    """What DMS reports for one table after a task run (``describe_table_statistics``' fields).

    ``error_message`` is what DMS would put in the task's ``LastFailureMessage``; ``files`` are the
    URIs of the LOAD and then the CDC files written; ``inserts``, ``updates``, ``deletes`` count the
    table's changes as :class:`ChangeCounting` says.
    """

    schema: str
    table: str
    full_load_rows: int
    state: str
    error_message: str | None = None
    files: tuple[str, ...] = ()
    started_at: dt.datetime | None = None
    finished_at: dt.datetime | None = None
    inserts: int = 0
    updates: int = 0
    deletes: int = 0


@dataclass(frozen=True)
class ReplicationResult:
    """The outcome of one task run: one statistics entry per selected table, in rule order, and for
    CDC tasks the checkpoint the next task starts from (``RecoveryCheckpoint``)."""

    tables: tuple[TableStatistics, ...]
    recovery_checkpoint: str | None = None
    last_cdc_file: str | None = None
    """The name of the newest CDC file this run wrote; None if it wrote none."""

    @property
    def full_load_rows(self) -> int:
        return sum(table.full_load_rows for table in self.tables)

    @property
    def tables_loaded(self) -> int:
        return sum(table.state == TABLE_COMPLETED for table in self.tables)

    @property
    def tables_errored(self) -> int:
        return sum(table.state == TABLE_ERROR for table in self.tables)

    @property
    def files(self) -> tuple[str, ...]:
        return tuple(uri for table in self.tables for uri in table.files)


def full_load_file_name(sequence: int) -> str:
    """DMS's name for a table's ``sequence``-th full-load file: 1 -> LOAD00000001, 10 -> LOAD0000000A."""
    return f"LOAD{sequence:08X}.parquet"


def cdc_file_name(moment: dt.datetime) -> str:
    """DMS's name for a CDC file written at ``moment`` (UTC): ``yyyyMMdd-HHmmssSSS.parquet``."""
    moment = moment.astimezone(dt.UTC) if moment.tzinfo else moment
    return f"{moment:%Y%m%d-%H%M%S}{moment.microsecond // 1000:03d}.parquet"


def cdc_file_time(name: str) -> dt.datetime:
    """The time (UTC) in the name of a CDC file written by :func:`cdc_file_name`."""
    try:
        moment = dt.datetime.strptime(name[:18], "%Y%m%d-%H%M%S%f")
    except ValueError:
        raise ValueError(f"{name!r} is not a DMS CDC file name (yyyyMMdd-HHmmssSSS.parquet)") from None
    return moment.replace(tzinfo=dt.UTC)


def _utc_now() -> dt.datetime:
    return dt.datetime.now(dt.UTC)


def run_full_load(
    table_mapping: str | Mapping[str, Any],
    s3_settings: Mapping[str, Any],
    source: str | URL | Engine,
    sink: ObjectSink | None = None,
    *,
    max_rows_per_file: int = DEFAULT_MAX_ROWS_PER_FILE,
    batch_rows: int = DEFAULT_BATCH_ROWS,
    map_boolean_as_boolean: bool = True,
    clock: Callable[[], dt.datetime] = _utc_now,
) -> ReplicationResult:
    """Load every table the mapping selects from ``source`` and write DMS's full-load files.

    ``sink`` defaults to the S3 bucket named in ``s3_settings`` (through boto3). ``clock`` gives the
    transfer time written to the timestamp column; tests pass a fixed one.

    Raises :class:`TableMappingError` or ``UnsupportedTargetSettings`` before reading anything, and
    ``SourceUnreachable`` when the source cannot be connected to. A table that cannot be read is
    reported in the result as "Table error" instead.
    """
    return run_replication(
        table_mapping,
        s3_settings,
        source,
        sink,
        max_rows_per_file=max_rows_per_file,
        batch_rows=batch_rows,
        map_boolean_as_boolean=map_boolean_as_boolean,
        clock=clock,
    )


def run_replication(
    table_mapping: str | Mapping[str, Any],
    s3_settings: Mapping[str, Any],
    source: str | URL | Engine,
    sink: ObjectSink | None = None,
    *,
    migration_type: str = FULL_LOAD,
    cdc_start_position: str | None = None,
    cdc_stop_position: str | None = None,
    slot_name: str | None = None,
    cdc_files_after: str | None = None,
    max_rows_per_file: int = DEFAULT_MAX_ROWS_PER_FILE,
    batch_rows: int = DEFAULT_BATCH_ROWS,
    map_boolean_as_boolean: bool = True,
    clock: Callable[[], dt.datetime] = _utc_now,
) -> ReplicationResult:
    """Run one replication task of ``migration_type`` against ``source`` (see the module docstring).

    ``cdc_start_position`` is the checkpoint a ``cdc`` task starts after (a ``full-load-and-cdc``
    task's too, when it has one: its capture starts there, not at the load); ``cdc_stop_position``
    (``server_time:YYYY-MM-DDThh:mm:ss``, UTC) is the last commit time a CDC task reads, all that is
    committed when None. ``slot_name`` names a PostgreSQL source's replication slot
    (:data:`cdc.DEFAULT_SLOT_NAME` when None). ``cdc_files_after`` is the newest CDC file name the
    task wrote in an earlier run: this run's CDC files sort after it even if the clock says otherwise.
    Besides :func:`run_full_load`'s errors, raises
    :class:`CdcStartPositionMissing`, ``cdc.CheckpointUnreadable`` and ``cdc.ChangeCaptureError``.
    """
    if migration_type not in MIGRATION_TYPES:
        raise ValueError(f"MigrationType {migration_type!r} is not one of {', '.join(MIGRATION_TYPES)}")
    if max_rows_per_file < 1 or batch_rows < 1:
        raise ValueError(
            f"max_rows_per_file and batch_rows must be positive, got {max_rows_per_file} and {batch_rows}"
        )
    selections = parse_table_mapping(table_mapping)
    settings = S3TargetSettings.from_dms(s3_settings)
    stop = cdc.parse_stop_position(cdc_stop_position)
    files_after = cdc_file_time(cdc_files_after) if cdc_files_after else None
    if migration_type == CDC and not cdc_start_position:
        raise CdcStartPositionMissing(
            "a cdc task needs CdcStartPosition (the RecoveryCheckpoint of an earlier task of the table)"
        )
    sink = sink or S3ObjectSink.for_target(settings)
    skew = INSTANCE_CLOCK_SKEW
    writer = _FullLoadWriter(settings, sink, max_rows_per_file, lambda: clock() + skew)
    engine, created = open_source(source)
    try:
        tables = [(selection.schema, selection.table) for selection in selections]
        capture: cdc.ChangeCapture | None = None
        start = 0
        if migration_type == CDC:
            capture = cdc.change_capture(engine, slot_name)
            start = cdc.parse_checkpoint(str(cdc_start_position), capture.kind)
            capture.resume(start, tables)
        elif migration_type == FULL_LOAD_AND_CDC:
            # Capture starts before the load reads, so that nothing committed meanwhile is lost: at
            # the task's CdcStartPosition when it has one (a slot's start point: the slot must exist).
            capture = cdc.change_capture(engine, slot_name)
            if cdc_start_position:
                start = cdc.parse_checkpoint(cdc_start_position, capture.kind)
                capture.resume(start, tables)
            else:
                start = capture.prepare(tables)
        loads: list[TableStatistics | None] = [
            None
            if migration_type == CDC
            else _load_table(engine, s, writer, batch_rows, map_boolean_as_boolean, DURING_FULL_LOAD)
            for s in selections
        ]
        if capture is None:
            return ReplicationResult(tuple(load for load in loads if load is not None))
        window = capture.read(start, stop, tables)
        change_writer = _ChangeWriter(settings, sink, max_rows_per_file, clock, files_after)
        return ReplicationResult(
            tuple(
                _capture_table(
                    engine,
                    selection,
                    window.of(selection.schema, selection.table),
                    change_writer,
                    load,
                    batch_rows,
                    map_boolean_as_boolean,
                )
                for selection, load in zip(selections, loads, strict=True)
            ),
            recovery_checkpoint=cdc.format_checkpoint(capture.kind, window.end),
            last_cdc_file=change_writer.last_file,
        )
    finally:
        if created:
            engine.dispose()


def _load_table(
    engine: Engine,
    selection: TableSelection,
    writer: _FullLoadWriter,
    batch_rows: int,
    map_boolean_as_boolean: bool,
    during_load: FullLoadHook | None = None,
) -> TableStatistics:
    """One table's full load. With ``during_load``, the table is read in one statement first, as a
    source's single SELECT sees it (a snapshot at its start), and ``during_load`` is called before
    each batch is transferred: changes it commits are captured by CDC with their commit times, and
    the rows read before them are stamped after them."""
    started_at = writer.clock()
    files: list[str] = []
    rows = 0
    state, error_message = TABLE_COMPLETED, None
    try:
        with engine.connect() as connection:
            source_table = reflect_table(
                connection, selection.schema, selection.table, map_boolean_as_boolean=map_boolean_as_boolean
            )
            writer.check_columns(selection, source_table.arrow_schema)
            batches = source_table.batches(
                connection, selection.filters, batch_rows, columns=selection.include_columns
            )
            if during_load is not None:
                read = list(batches)
                connection.rollback()  # the read's snapshot ends: the source takes commits again
                batches = _after_each(read, lambda: during_load(selection.schema, selection.table))
            for uri, file_rows in writer.write_table(selection, batches):
                files.append(uri)
                rows += file_rows
    except (SourceTableError, SQLAlchemyError, pa.ArrowException) as error:
        # Files written before the error stay, as DMS leaves them; the task is then reported failed.
        state, error_message = TABLE_ERROR, _table_error_message(selection, error)
    return TableStatistics(
        schema=selection.schema,
        table=selection.table,
        full_load_rows=rows,
        state=state,
        error_message=error_message,
        files=tuple(files),
        started_at=started_at,
        finished_at=writer.clock(),
    )


def _after_each(batches: Sequence[pa.RecordBatch], hook: Callable[[], None]) -> Iterator[pa.RecordBatch]:
    for batch in batches:
        hook()
        yield batch


def _capture_table(
    engine: Engine,
    selection: TableSelection,
    changes: Sequence[cdc.Change],
    writer: _ChangeWriter,
    load: TableStatistics | None,
    batch_rows: int,
    map_boolean_as_boolean: bool,
) -> TableStatistics:
    """Write one table's changes of the window as CDC files, after its full load (``load``) if any."""
    if load is not None and load.state == TABLE_ERROR:
        return load
    started_at = load.started_at if load is not None else writer.clock()
    files = list(load.files) if load is not None else []
    counts = dict.fromkeys("IUD", 0)
    state, error_message = TABLE_COMPLETED, None
    try:
        with engine.connect() as connection:
            source_table = reflect_table(
                connection, selection.schema, selection.table, map_boolean_as_boolean=map_boolean_as_boolean
            )
            writer.check_columns(selection, source_table.arrow_schema)
            if changes:
                batches = cdc.change_batches(
                    connection,
                    source_table,
                    changes,
                    selection.filters,
                    batch_rows,
                    selection.include_columns,
                )
                for uri, ops in writer.write_table(selection, batches):
                    files.append(uri)
                    for op in ops:
                        counts[op] += 1
    except (SourceTableError, SQLAlchemyError, pa.ArrowException) as error:
        state, error_message = TABLE_ERROR, _table_error_message(selection, error)
    inserts, updates, deletes = _reported_changes(changes, counts)
    return TableStatistics(
        schema=selection.schema,
        table=selection.table,
        full_load_rows=load.full_load_rows if load is not None else 0,
        state=state,
        error_message=error_message,
        files=tuple(files),
        started_at=started_at,
        finished_at=writer.clock(),
        inserts=inserts,
        updates=updates,
        deletes=deletes,
    )


class ChangeCounting(StrEnum):
    """What the stand-in's ``Inserts``/``Updates``/``Deletes`` count.

    DMS documents them as the insert, update and delete "actions performed on a table" (API
    reference, TableStatistics), not as the rows it wrote: a change a source filter keeps out of the
    CDC files may still be one. CAPTURED, the default, counts every change of the table in the
    window, filtered out or not (the reading least kind to a check that takes them for rows);
    WRITTEN counts the rows of the CDC files only.
    """

    CAPTURED = "captured"
    WRITTEN = "written"


CHANGE_COUNTING = ChangeCounting.CAPTURED


def _reported_changes(captured: Sequence[cdc.Change], written: Mapping[str, int]) -> tuple[int, int, int]:
    """The table's inserts, updates and deletes as :data:`CHANGE_COUNTING` says."""
    counts = written
    if CHANGE_COUNTING is ChangeCounting.CAPTURED:
        counts = {op: sum(change.op == op for change in captured) for op in "IUD"}
    return counts["I"], counts["U"], counts["D"]


def _table_error_message(selection: TableSelection, error: Exception) -> str:
    if isinstance(error, SourceTableError):
        return str(error)
    # SQLAlchemy appends the statement and a help link: keep the driver's first line.
    lines = str(getattr(error, "orig", None) or error).strip().splitlines()
    reason = lines[0] if lines else type(error).__name__
    return f"loading {selection.schema}.{selection.table} failed: {reason}"


@dataclass
class _FullLoadWriter:
    """Turns a table's record batches into DMS's numbered parquet files, ``max_rows`` rows each."""

    settings: S3TargetSettings
    sink: ObjectSink
    max_rows: int
    clock: Callable[[], dt.datetime]
    _dms_fields: list[pa.Field] = field(init=False)

    def __post_init__(self) -> None:
        names = [OP_COLUMN] if self.settings.include_op_for_full_load else []
        if self.settings.timestamp_column_name:
            names.append(self.settings.timestamp_column_name)
        self._dms_fields = [pa.field(name, pa.string(), nullable=False) for name in names]

    def check_columns(self, selection: TableSelection, source_schema: pa.Schema) -> None:
        """A source column named like a column DMS adds would make the file ambiguous: refuse the table."""
        _check_dms_column_names(selection, source_schema, self.settings)

    def write_table(
        self, selection: TableSelection, batches: Iterator[pa.RecordBatch]
    ) -> Iterator[tuple[str, int]]:
        """Write the batches as LOAD files; yield each file's URI and row count as it is written.

        Nothing is written for a table without rows, so its folder never appears.
        """
        laid_out = (self._with_dms_columns(batch, selection) for batch in batches)
        for sequence, file_batches in enumerate(_files_of(laid_out, self.max_rows), start=1):
            yield self._write_file(selection, sequence, file_batches), sum(b.num_rows for b in file_batches)

    def _with_dms_columns(self, batch: pa.RecordBatch, selection: TableSelection) -> pa.RecordBatch:
        """Prefix ``Op`` and the timestamp column (the transfer time is taken as the batch is read);
        a null ``AR_H_CHANGE_SEQ`` last when the mapping adds it."""
        transfer_time = self.clock()
        if transfer_time.tzinfo is not None:
            transfer_time = transfer_time.astimezone(dt.UTC)
        constants = []
        if self.settings.include_op_for_full_load:
            constants.append(FULL_LOAD_OP)
        if self.settings.timestamp_column_name:
            constants.append(transfer_time.strftime(DMS_TIMESTAMP_FORMAT))
        arrays = [pa.repeat(pa.scalar(value, pa.string()), batch.num_rows) for value in constants]
        fields = [*self._dms_fields, *batch.schema]
        arrays += batch.columns
        if selection.change_sequence:
            fields.append(pa.field(CHANGE_SEQUENCE_COLUMN, pa.string()))
            arrays.append(pa.nulls(batch.num_rows, pa.string()))
        return pa.RecordBatch.from_arrays(arrays, schema=pa.schema(fields))

    def _write_file(self, selection: TableSelection, sequence: int, batches: Sequence[pa.RecordBatch]) -> str:
        key = self.settings.object_key(selection.schema, selection.table, full_load_file_name(sequence))
        with self.sink.open(key) as stream:
            pq.write_table(
                pa.Table.from_batches(batches),
                stream,
                version=self.settings.parquet_version,
                compression=self.settings.compression,
            )
        return self.sink.uri(key)


def _files_of(batches: Iterator[pa.RecordBatch], max_rows: int) -> Iterator[list[pa.RecordBatch]]:
    """The batches regrouped into files of ``max_rows`` rows each (the last one may hold fewer)."""
    pending: list[pa.RecordBatch] = []
    pending_rows = 0
    for batch in batches:
        while batch.num_rows:
            take = min(max_rows - pending_rows, batch.num_rows)
            pending.append(batch.slice(0, take))
            pending_rows += take
            batch = batch.slice(take)
            if pending_rows == max_rows:
                yield pending
                pending, pending_rows = [], 0
    if pending_rows:
        yield pending


def _check_dms_column_names(
    selection: TableSelection, source_schema: pa.Schema, settings: S3TargetSettings
) -> None:
    added = [OP_COLUMN, settings.timestamp_column_name or ""]
    if selection.change_sequence:
        added.append(CHANGE_SEQUENCE_COLUMN)
    for name in added:
        if name and name in source_schema.names:
            raise SourceTableError(
                f"{selection.schema}.{selection.table} has a column {name!r}, which is also the name of a "
                "column DMS adds (Op, TimestampColumnName or AR_H_CHANGE_SEQ): rename one of them"
            )


@dataclass
class _ChangeWriter:
    """Turns a table's changes into DMS's CDC files, named by the time of writing, ``max_rows`` rows each.

    File names are strictly increasing over the whole task run, and after ``after`` (the time of the
    task's newest CDC file from an earlier run): a name that would not sort after the previous one is
    moved a millisecond past it.
    """

    settings: S3TargetSettings
    sink: ObjectSink
    max_rows: int
    clock: Callable[[], dt.datetime]
    after: dt.datetime | None = None
    _last_written: dt.datetime | None = field(default=None, init=False)
    last_file: str | None = field(default=None, init=False)
    """The name of the newest file written."""

    def __post_init__(self) -> None:
        self._last_written = self.after

    def check_columns(self, selection: TableSelection, source_schema: pa.Schema) -> None:
        _check_dms_column_names(selection, source_schema, self.settings)

    def write_table(
        self, selection: TableSelection, batches: Iterator[pa.RecordBatch]
    ) -> Iterator[tuple[str, list[str]]]:
        """Write the changes as CDC files; yield each file's URI and its rows' ``Op`` values."""
        laid_out = (self._dms_layout(batch, selection) for batch in batches)
        for file_batches in _files_of(laid_out, self.max_rows):
            yield self._write_file(selection, file_batches)

    def _dms_layout(self, batch: pa.RecordBatch, selection: TableSelection) -> pa.RecordBatch:
        """``Op``, the commit time (when configured), the source columns, ``AR_H_CHANGE_SEQ`` (when added)."""
        op, commit_time, sequence = batch.column(0), batch.column(1), batch.column(2)
        fields = [pa.field(OP_COLUMN, pa.string(), nullable=False)]
        arrays = [op]
        if self.settings.timestamp_column_name:
            fields.append(pa.field(self.settings.timestamp_column_name, pa.string(), nullable=False))
            arrays.append(commit_time)
        fields += list(batch.schema)[3:]
        arrays += batch.columns[3:]
        if selection.change_sequence:
            fields.append(pa.field(CHANGE_SEQUENCE_COLUMN, pa.string()))
            arrays.append(sequence)
        return pa.RecordBatch.from_arrays(arrays, schema=pa.schema(fields))

    def _file_time(self) -> dt.datetime:
        moment = self.clock()
        moment = moment.astimezone(dt.UTC) if moment.tzinfo else moment.replace(tzinfo=dt.UTC)
        moment = moment.replace(microsecond=moment.microsecond // 1000 * 1000)
        if self._last_written is not None and moment <= self._last_written:
            moment = self._last_written + dt.timedelta(milliseconds=1)
        self._last_written = moment
        return moment

    def _write_file(
        self, selection: TableSelection, batches: Sequence[pa.RecordBatch]
    ) -> tuple[str, list[str]]:
        self.last_file = cdc_file_name(self._file_time())
        key = self.settings.object_key(selection.schema, selection.table, self.last_file)
        table = pa.Table.from_batches(batches)
        with self.sink.open(key) as stream:
            pq.write_table(
                table, stream, version=self.settings.parquet_version, compression=self.settings.compression
            )
        return self.sink.uri(key), [str(op) for op in table.column(OP_COLUMN).to_pylist()]


def parse_table_mapping(table_mapping: str | Mapping[str, Any]) -> list[TableSelection]:
    """The tables a DMS table mapping selects, in rule order, with their source filters and the
    columns their transformation rules include or add.

    Rejects, as DMS does at task creation, what DMS would reject; and rejects what the stand-in does
    not honour (wildcards, transformation rules other than ``add-column`` of ``$AR_H_CHANGE_SEQ`` and
    ``include-column``) rather than writing files DMS would not write.
    """
    document = _decode(table_mapping)
    rules = document.get("rules")
    if not isinstance(rules, list) or not rules:
        raise TableMappingError("table mapping needs a non-empty 'rules' list")
    included: dict[tuple[str, str], TableSelection] = {}
    excluded: set[tuple[str, str]] = set()
    transformations: list[tuple[str, Mapping[str, Any]]] = []
    for position, rule in enumerate(rules, start=1):
        if not isinstance(rule, Mapping):
            raise TableMappingError(f"rule {position} is not an object")
        name = f"rule {rule.get('rule-name', position)!s}"
        rule_type = rule.get("rule-type")
        if rule_type in _IGNORED_RULE_TYPES:
            continue
        if rule_type == "transformation":
            transformations.append((name, rule))
            continue
        if rule_type != "selection":
            raise TableMappingError(f"{name}: rule-type {rule_type!r} is not supported by the DMS stand-in")
        schema, table = _object_locator(rule, name)
        action = rule.get("rule-action")
        if action == "exclude":
            excluded.add((schema, table))
        elif action in ("include", "explicit"):
            if (schema, table) in included:
                raise TableMappingError(f"{name}: {schema}.{table} is selected by more than one rule")
            entries = _list(rule.get("filters", []), f"{name} filters")
            filters = tuple(_source_filter(entry, name) for entry in entries)
            included[(schema, table)] = TableSelection(schema, table, filters)
        else:
            raise TableMappingError(
                f"{name}: rule-action {action!r} is not one of include, exclude, explicit"
            )
    selections = {key: selection for key, selection in included.items() if key not in excluded}
    if not selections:
        raise TableMappingError("table mapping selects no table")
    for name, rule in transformations:
        key, change = _transformation(rule, name)
        if key not in selections:
            raise TableMappingError(f"{name}: {key[0]}.{key[1]} is not a table the mapping selects")
        selection = selections[key]
        if change is None:
            selections[key] = replace(selection, change_sequence=True)
        elif change in selection.include_columns:
            raise TableMappingError(f"{name}: column {change!r} is included by more than one rule")
        else:
            selections[key] = replace(selection, include_columns=(*selection.include_columns, change))
    return list(selections.values())


def _transformation(rule: Mapping[str, Any], name: str) -> tuple[tuple[str, str], str | None]:
    """The table a transformation rule applies to, and the column it includes (None: it adds
    ``AR_H_CHANGE_SEQ``); any other transformation is refused, naming the rule."""
    action = rule.get("rule-action")
    target = rule.get("rule-target")
    key = _object_locator(rule, name)
    if action == "add-column" and target == "column":
        if (
            rule.get("value") != CHANGE_SEQUENCE_COLUMN
            or rule.get("expression") != _CHANGE_SEQUENCE_EXPRESSION
        ):
            raise TableMappingError(
                f"{name}: add-column of {rule.get('value')!r} = {rule.get('expression')!r} is not supported "
                f"by the DMS stand-in (it adds only {CHANGE_SEQUENCE_COLUMN} = {_CHANGE_SEQUENCE_EXPRESSION})"
            )
        data_type = rule.get("data-type", {"type": "string"})
        if not isinstance(data_type, Mapping) or data_type.get("type") != "string":
            raise TableMappingError(
                f"{name}: {CHANGE_SEQUENCE_COLUMN} must be added as a string, got {data_type!r}"
            )
        return key, None
    if action == "include-column" and target == "column":
        column = rule["object-locator"].get("column-name")
        if not isinstance(column, str) or not column or "%" in column:
            raise TableMappingError(f"{name}: include-column needs an exact object-locator column-name")
        return key, column
    raise TableMappingError(
        f"{name}: transformation rule-action {action!r} on rule-target {target!r} is not supported by the "
        f"DMS stand-in (it honours add-column of {_CHANGE_SEQUENCE_EXPRESSION} and include-column)"
    )


def _decode(table_mapping: str | Mapping[str, Any]) -> Mapping[str, Any]:
    if isinstance(table_mapping, Mapping):
        return table_mapping
    try:
        document = json.loads(table_mapping)
    except json.JSONDecodeError as error:
        raise TableMappingError(f"table mapping is not valid JSON: {error}") from None
    if not isinstance(document, Mapping):
        raise TableMappingError("table mapping must be a JSON object with a 'rules' list")
    return document


def _list(value: Any, what: str) -> list[Any]:
    if not isinstance(value, list):
        raise TableMappingError(f"{what} must be a list, got {value!r}")
    return value


def _object_locator(rule: Mapping[str, Any], name: str) -> tuple[str, str]:
    locator = rule.get("object-locator")
    if not isinstance(locator, Mapping):
        raise TableMappingError(f"{name}: object-locator is missing")
    names = []
    for key in ("schema-name", "table-name"):
        value = locator.get(key)
        if not isinstance(value, str) or not value:
            raise TableMappingError(f"{name}: object-locator {key} must be a non-empty string")
        if "%" in value:
            raise TableMappingError(
                f"{name}: {key} {value!r} has a wildcard; the DMS stand-in needs exact names"
            )
        names.append(value)
    return names[0], names[1]


def _source_filter(entry: Any, name: str) -> SourceFilter:
    if not isinstance(entry, Mapping):
        raise TableMappingError(f"{name}: a filter is not an object")
    if entry.get("filter-type") != "source":
        raise TableMappingError(f"{name}: filter-type {entry.get('filter-type')!r} is not 'source'")
    column = entry.get("column-name")
    if not isinstance(column, str) or not column:
        raise TableMappingError(f"{name}: a filter's column-name must be a non-empty string")
    entries = _list(entry.get("filter-conditions"), f"{name} filter-conditions on {column}")
    conditions = tuple(_condition(c, f"{name} column {column}") for c in entries)
    if not conditions:
        raise TableMappingError(f"{name}: the filter on {column} has no filter-conditions")
    if len(conditions) > 1 and any(c.operator in _NEGATIVE_OPERATORS for c in conditions):
        raise TableMappingError(
            f"{name}: the filter on {column} combines a negative operator (noteq, notbetween, notnull) with "
            "other conditions; DMS allows a negative operator only alone in its filter"
        )
    return SourceFilter(column, conditions)


def _condition(entry: Any, where: str) -> FilterCondition:
    if not isinstance(entry, Mapping):
        raise TableMappingError(f"{where}: a filter condition is not an object")
    operator = entry.get("filter-operator")
    if operator not in FILTER_OPERATORS:
        raise TableMappingError(
            f"{where}: filter-operator {operator!r} is not one of {sorted(FILTER_OPERATORS)}"
        )
    if operator in NULL_OPERATORS:
        return FilterCondition(operator)
    if operator in RANGE_OPERATORS:
        return FilterCondition(
            operator,
            start_value=_value(entry, "start-value", operator, where),
            end_value=_value(entry, "end-value", operator, where),
        )
    return FilterCondition(operator, value=_value(entry, "value", operator, where))


def _value(entry: Mapping[str, Any], key: str, operator: str, where: str) -> str:
    """DMS carries filter values as strings; plain JSON numbers are accepted and turned into strings."""
    value = entry.get(key)
    if isinstance(value, str):
        return value
    if isinstance(value, int | float) and not isinstance(value, bool):
        return str(value)
    raise TableMappingError(f"{where}: operator {operator} needs '{key}' (a string), got {value!r}")
