"""The DMS stand-in's data movement: what a full-load replication task does, done locally.

AWS DMS cannot run on a laptop, so this replicator honours a task's inputs and writes what DMS
writes, for the Glue job downstream to read without knowing the difference:

- the task's table mapping JSON (selection rules with ``include``/``exclude`` and ``source`` filters:
  conditions within a filter ORed, filters ANDed, ``between``/``notbetween`` bounds inclusive);
- the target endpoint's ``S3Settings``: parquet files named ``LOAD00000001.parquet``, counting in
  hexadecimal, under ``<BucketFolder>/<schema>/<table>/``; an ``Op`` column (``I``) first when
  ``IncludeOpForFullLoad``; the ``TimestampColumnName`` column as a ``yyyy-MM-dd HH:mm:ss.SSSSSS``
  string holding the transfer time; then the source columns with source-faithful types;
- table statistics like ``describe_table_statistics``: a table that cannot be read is reported as
  "Table error" and the others still load; an unreachable source fails the whole run.

Only full load is stood in for; change data capture is not.
"""

from __future__ import annotations

import datetime as dt
import json
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
from sqlalchemy.engine import URL, Engine
from sqlalchemy.exc import SQLAlchemyError

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
DMS_TIMESTAMP_FORMAT = "%Y-%m-%d %H:%M:%S.%f"  # DMS's yyyy-MM-dd HH:mm:ss.SSSSSS

DEFAULT_MAX_ROWS_PER_FILE = 100_000
DEFAULT_BATCH_ROWS = 10_000

_NEGATIVE_OPERATORS = frozenset({"noteq", "notbetween", "notnull"})
_IGNORED_RULE_TYPES = frozenset({"table-settings"})  # parallel-load and LOB tuning: same rows, same columns


class TableMappingError(ValueError):
    """The table mapping is one DMS would reject, or uses a feature the stand-in does not honour."""


@dataclass(frozen=True)
class TableSelection:
    """One table a task loads, with the source filters of its selection rule."""

    schema: str
    table: str
    filters: tuple[SourceFilter, ...] = ()


@dataclass(frozen=True)
class TableStatistics:
    """What DMS reports for one table after a full load (``describe_table_statistics``' fields).

    ``error_message`` is what DMS would put in the task's ``LastFailureMessage``; ``files`` are the
    URIs of the LOAD files written.
    """

    schema: str
    table: str
    full_load_rows: int
    state: str
    error_message: str | None = None
    files: tuple[str, ...] = ()
    started_at: dt.datetime | None = None
    finished_at: dt.datetime | None = None


@dataclass(frozen=True)
class FullLoadResult:
    """The outcome of one full load: one statistics entry per selected table, in rule order."""

    tables: tuple[TableStatistics, ...]

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
) -> FullLoadResult:
    """Load every table the mapping selects from ``source`` and write DMS's full-load files.

    ``sink`` defaults to the S3 bucket named in ``s3_settings`` (through boto3). ``clock`` gives the
    transfer time written to the timestamp column; tests pass a fixed one.

    Raises :class:`TableMappingError` or ``UnsupportedTargetSettings`` before reading anything, and
    ``SourceUnreachable`` when the source cannot be connected to. A table that cannot be read is
    reported in the result as "Table error" instead.
    """
    if max_rows_per_file < 1 or batch_rows < 1:
        raise ValueError(
            f"max_rows_per_file and batch_rows must be positive, got {max_rows_per_file} and {batch_rows}"
        )
    selections = parse_table_mapping(table_mapping)
    settings = S3TargetSettings.from_dms(s3_settings)
    writer = _FullLoadWriter(settings, sink or S3ObjectSink.for_target(settings), max_rows_per_file, clock)
    engine, created = open_source(source)
    try:
        return FullLoadResult(
            tuple(_load_table(engine, s, writer, batch_rows, map_boolean_as_boolean) for s in selections)
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
) -> TableStatistics:
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
            batches = source_table.batches(connection, selection.filters, batch_rows)
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
        for dms_field in self._dms_fields:
            if dms_field.name in source_schema.names:
                raise SourceTableError(
                    f"{selection.schema}.{selection.table} has a column {dms_field.name!r}, which is also "
                    "the name of a column DMS adds (Op or TimestampColumnName): rename one of them"
                )

    def write_table(
        self, selection: TableSelection, batches: Iterator[pa.RecordBatch]
    ) -> Iterator[tuple[str, int]]:
        """Write the batches as LOAD files; yield each file's URI and row count as it is written.

        Nothing is written for a table without rows, so its folder never appears.
        """
        pending: list[pa.RecordBatch] = []
        pending_rows = 0
        sequence = 0
        for batch in batches:
            batch = self._with_dms_columns(batch)
            while batch.num_rows:
                take = min(self.max_rows - pending_rows, batch.num_rows)
                pending.append(batch.slice(0, take))
                pending_rows += take
                batch = batch.slice(take)
                if pending_rows == self.max_rows:
                    sequence += 1
                    yield self._write_file(selection, sequence, pending), pending_rows
                    pending, pending_rows = [], 0
        if pending_rows:
            sequence += 1
            yield self._write_file(selection, sequence, pending), pending_rows

    def _with_dms_columns(self, batch: pa.RecordBatch) -> pa.RecordBatch:
        """Prefix ``Op`` and the timestamp column; the transfer time is taken as the batch is read."""
        transfer_time = self.clock()
        if transfer_time.tzinfo is not None:
            transfer_time = transfer_time.astimezone(dt.UTC)
        constants = []
        if self.settings.include_op_for_full_load:
            constants.append(FULL_LOAD_OP)
        if self.settings.timestamp_column_name:
            constants.append(transfer_time.strftime(DMS_TIMESTAMP_FORMAT))
        arrays = [pa.repeat(pa.scalar(value, pa.string()), batch.num_rows) for value in constants]
        schema = pa.schema([*self._dms_fields, *batch.schema])
        return pa.RecordBatch.from_arrays([*arrays, *batch.columns], schema=schema)

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


def parse_table_mapping(table_mapping: str | Mapping[str, Any]) -> list[TableSelection]:
    """The tables a DMS table mapping selects, in rule order, with their source filters.

    Rejects, as DMS does at task creation, what DMS would reject; and rejects what the stand-in does
    not honour (wildcards, transformation rules) rather than writing files DMS would not write.
    """
    document = _decode(table_mapping)
    rules = document.get("rules")
    if not isinstance(rules, list) or not rules:
        raise TableMappingError("table mapping needs a non-empty 'rules' list")
    included: dict[tuple[str, str], TableSelection] = {}
    excluded: set[tuple[str, str]] = set()
    for position, rule in enumerate(rules, start=1):
        if not isinstance(rule, Mapping):
            raise TableMappingError(f"rule {position} is not an object")
        name = f"rule {rule.get('rule-name', position)!s}"
        rule_type = rule.get("rule-type")
        if rule_type in _IGNORED_RULE_TYPES:
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
    selections = [selection for key, selection in included.items() if key not in excluded]
    if not selections:
        raise TableMappingError("table mapping selects no table")
    return selections


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
