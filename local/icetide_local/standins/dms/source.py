"""Reading one source table the way a DMS full load does: filtered, typed, in batches.

The DMS stand-in reads through SQLAlchemy Core so that the same code serves SQLite (the local default)
and PostgreSQL (a real DMS source). Filter values arrive as strings, exactly as in DMS's table mapping;
they are converted to the filter column's Python type and *bound* as parameters, never pasted into SQL,
and every identifier comes from reflection and is quoted by SQLAlchemy.

Column types follow what DMS writes to a parquet S3 target (see the AWS DMS pages "Source data types
for PostgreSQL" and "Target data types for S3 Parquet"): integers keep their width, ``NUMERIC(p,s)``
stays a decimal with that precision and scale (``NUMERIC`` without them becomes ``NUMERIC(28,6)``,
precision above 38 becomes a string), binary stays binary, ``timestamptz`` becomes a UTC timestamp,
and uuid, json, interval and other non-scalar types become their text form.

SQLite note: SQLite has no time type; a DATETIME (or TIMESTAMP, TIME) column holds whatever text its
writer chose: ``T`` or a space, with or without fractions, with an offset or ``Z``. DMS compares a
filter value with a typed column as a time, so on SQLite the stand-in compares both sides through a
function it registers on the connection (:data:`SQLITE_TIME_KEY`, :data:`SQLITE_TIME_OF_DAY_KEY`):
each side becomes microseconds of the UTC instant, parsed the way SQLAlchemy reads the column. A
text comparison would skip the row stamped exactly at the watermark (``'...12:00:00'`` sorts before
the bound ``'...12:00:00.000000'``) and the watermark would then move past it.
"""

from __future__ import annotations

import datetime as dt
import decimal
import functools
import operator
import uuid
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pyarrow as pa
import sqlalchemy as sa
from sqlalchemy.engine import URL, Connection, Engine, make_url
from sqlalchemy.exc import ArgumentError, NoSuchTableError, OperationalError, SQLAlchemyError

VALUE_OPERATORS = frozenset({"lte", "ste", "gte", "eq", "noteq"})
RANGE_OPERATORS = frozenset({"between", "notbetween"})
NULL_OPERATORS = frozenset({"null", "notnull"})
FILTER_OPERATORS = VALUE_OPERATORS | RANGE_OPERATORS | NULL_OPERATORS

DMS_MAX_DECIMAL_PRECISION = 38
"""Above this precision DMS writes a NUMERIC as a string."""

DMS_UNBOUNDED_NUMERIC = (28, 6)
"""DMS's (precision, scale) for a PostgreSQL NUMERIC declared without them."""

_WIDE_DECIMALS = decimal.Context(prec=2 * DMS_MAX_DECIMAL_PRECISION)  # quantize needs room for 38 digits
_BOOLEAN_WORDS = {"true": True, "t": True, "1": True, "yes": True, "y": True,
                  "false": False, "f": False, "0": False, "no": False, "n": False}  # fmt: skip


SQLITE_TIME_KEY = "icetide_time_key"
"""SQLite function ``(value, column name)``: a stored timestamp's text as :func:`timestamp_key`."""

SQLITE_TIME_OF_DAY_KEY = "icetide_time_of_day_key"
"""SQLite function ``(value, column name)``: a stored time of day's text as :func:`time_of_day_key`."""

_EPOCH = dt.datetime(1970, 1, 1, tzinfo=dt.UTC)
_MICROSECOND = dt.timedelta(microseconds=1)
_DAY_MICROSECONDS = 24 * 60 * 60 * 1_000_000

_COMPARISONS: dict[str, Callable[[Any, Any], Any]] = {
    "lte": operator.le,
    "ste": operator.le,  # DMS's alias of lte
    "gte": operator.ge,
    "eq": operator.eq,
    "noteq": operator.ne,
}


class SourceUnreachable(ConnectionError):
    """The source database cannot be reached at all; the message names it without its password."""


class SourceTableError(Exception):
    """One table cannot be loaded; DMS reports such a table as "Table error" and carries on."""


class SourceTableNotFound(SourceTableError):
    """A selected table does not exist at the source."""


class FilterColumnNotFound(SourceTableError):
    """A source filter names a column the table does not have."""


class FilterValueError(SourceTableError, ValueError):
    """A filter value cannot be converted to its column's type, or the column cannot be filtered."""


@dataclass(frozen=True)
class FilterCondition:
    """One DMS ``filter-conditions`` entry; values are strings, as DMS's table mapping carries them."""

    operator: str
    value: str | None = None
    start_value: str | None = None
    end_value: str | None = None


@dataclass(frozen=True)
class SourceFilter:
    """One DMS ``filters`` entry of type ``source``: its conditions are ORed."""

    column: str
    conditions: tuple[FilterCondition, ...]


def masked_url(url: str | URL) -> str:
    """The URL as it may appear in messages and logs: the password replaced by ``***``.

    Text SQLAlchemy cannot read as a URL (a typo in ``--source``) may still hold a password, in a
    place no parser can name: everything before its last ``@``, where a user and password would
    be, is replaced by ``***``.
    """
    try:
        return make_url(url).render_as_string(hide_password=True)
    except (ArgumentError, ValueError):  # ValueError: a port that is no number
        _, at, host = str(url).rpartition("@")
        return f"***@{host}" if at else str(url)


def open_source(source: str | URL | Engine) -> tuple[Engine, bool]:
    """Return an engine for the source and whether we created it (and so must dispose of it).

    A connection is tried at once so that an unreachable database fails the whole run with
    :class:`SourceUnreachable`, the way a DMS task fails its connection test, instead of erroring
    every table.
    """
    if isinstance(source, Engine):
        engine, created = source, False
    else:
        _check_sqlite_file(make_url(source))
        engine, created = sa.create_engine(source), True
    try:
        with engine.connect():
            pass
    except SQLAlchemyError as error:
        if created:
            engine.dispose()
        reason = _reason(error)
        if engine.url.password:
            reason = reason.replace(str(engine.url.password), "***")
        raise SourceUnreachable(f"cannot connect to the source {masked_url(engine.url)}: {reason}") from None
    return engine, created


def _check_sqlite_file(url: URL) -> None:
    """SQLite would silently create a missing database file: treat it as unreachable instead."""
    if url.get_backend_name() != "sqlite" or not url.database or url.database == ":memory:":
        return
    if url.database.startswith("file:") or url.query.get("uri"):
        return  # URI filenames carry their own mode= rules
    if not Path(url.database).is_file():
        raise SourceUnreachable(
            f"cannot connect to the source {masked_url(url)}: the SQLite database file {url.database!r} "
            "does not exist"
        )


def _reason(error: BaseException) -> str:
    """The driver's own message, first line only: SQLAlchemy appends SQL text and a help link."""
    original = getattr(error, "orig", None) or error
    text = str(original).strip() or type(original).__name__
    return text.splitlines()[0]


@dataclass(frozen=True)
class _ColumnPlan:
    """How one source column is selected and turned into an Arrow array."""

    name: str
    arrow_type: pa.DataType
    select: sa.ColumnElement[Any]
    convert: Callable[[Any], Any] | None = None


class SourceTable:
    """A reflected source table: its Arrow schema and a reader of filtered record batches.

    ``columns`` (where a method takes it) limits what is read to those source columns, in table
    order, as DMS's ``include-column`` transformation rules do; filters may still name any column.
    """

    def __init__(
        self,
        table: sa.Table,
        plans: Sequence[_ColumnPlan],
        dialect: str = "",
        *,
        map_boolean_as_boolean: bool = True,
    ) -> None:
        self.table = table
        self.dialect = dialect
        self.map_boolean_as_boolean = map_boolean_as_boolean
        self._plans = tuple(plans)
        self.arrow_schema = pa.schema([pa.field(plan.name, plan.arrow_type) for plan in self._plans])

    def plans(self, columns: Sequence[str] = ()) -> tuple[_ColumnPlan, ...]:
        """The plans of ``columns`` (every column when empty); a column the table lacks is a table error."""
        if not columns:
            return self._plans
        missing = [name for name in columns if name not in self.table.columns]
        if missing:
            raise SourceTableError(
                f"include-column names {', '.join(map(repr, missing))}, which "
                f"{self.table.schema}.{self.table.name} does not have"
            )
        return tuple(plan for plan in self._plans if plan.name in columns)

    def output_schema(self, columns: Sequence[str] = ()) -> pa.Schema:
        return pa.schema([pa.field(plan.name, plan.arrow_type) for plan in self.plans(columns)])

    def staged(self, stage: sa.Table) -> SourceTable:
        """The same column plans, reading the same-named columns of ``stage`` (a copy of this table)."""
        plans = [_plan_column(stage.columns[c.name], self.dialect, self.map_boolean_as_boolean)
                 for c in self.table.columns]  # fmt: skip
        return SourceTable(stage, plans, self.dialect, map_boolean_as_boolean=self.map_boolean_as_boolean)

    def select(self, filters: Sequence[SourceFilter], columns: Sequence[str] = ()) -> sa.Select[Any]:
        """The full-load query: the columns, filters ANDed, each filter's conditions ORed."""
        statement = sa.select(*(plan.select for plan in self.plans(columns)))
        for source_filter in filters:
            statement = statement.where(filter_clause(self.table, source_filter, self.dialect))
        return statement

    def batches(
        self,
        connection: Connection,
        filters: Sequence[SourceFilter],
        batch_rows: int,
        columns: Sequence[str] = (),
    ) -> Iterator[pa.RecordBatch]:
        """Stream the filtered rows as record batches of at most ``batch_rows`` rows.

        ``yield_per`` makes PostgreSQL use a server-side cursor, so a big table is never held in memory.
        A SQLite time column holding text that is no time raises :class:`FilterValueError` naming it.
        """
        return self.read(connection, self.select(filters, columns), batch_rows, columns=columns)

    def read(
        self,
        connection: Connection,
        statement: sa.Select[Any],
        batch_rows: int,
        *,
        leading: Sequence[pa.Field] = (),
        columns: Sequence[str] = (),
    ) -> Iterator[pa.RecordBatch]:
        """Run ``statement``, whose result is ``leading`` columns (taken as they come) and then the
        planned ``columns``, and stream it as record batches typed as a full load types them."""
        plans = self.plans(columns)
        schema = pa.schema([*leading, *(pa.field(plan.name, plan.arrow_type) for plan in plans)])
        time_keys = _SqliteTimeKeys.register(connection) if connection.dialect.name == "sqlite" else None
        try:
            # Per statement: Connection.execution_options would change every later statement too.
            result = connection.execute(statement, execution_options={"yield_per": batch_rows})
            for rows in result.partitions():
                columns_of_rows = list(zip(*rows, strict=True))
                arrays = [
                    pa.array(values, type=field.type)
                    for field, values in zip(leading, columns_of_rows, strict=False)
                ]
                arrays += [
                    pa.array(
                        [plan.convert(v) for v in values] if plan.convert else values, type=plan.arrow_type
                    )
                    for plan, values in zip(plans, columns_of_rows[len(leading) :], strict=True)
                ]
                yield pa.RecordBatch.from_arrays(arrays, schema=schema)
        except OperationalError:
            # sqlite3 reports a failing function only as "user-defined function raised exception".
            if time_keys is not None and time_keys.unreadable is not None:
                raise FilterValueError(time_keys.unreadable) from None
            raise


def reflect_table(
    connection: Connection, schema: str, name: str, *, map_boolean_as_boolean: bool = True
) -> SourceTable:
    """Reflect ``schema.name`` and plan its columns; a missing table raises :class:`SourceTableNotFound`.

    ``map_boolean_as_boolean`` mirrors DMS's ``PostgreSqlSettings.MapBooleanAsBoolean``: without it
    DMS writes booleans as the strings ``true``/``false``.
    """
    try:
        table = sa.Table(name, sa.MetaData(), schema=schema, autoload_with=connection)
    except NoSuchTableError:
        raise SourceTableNotFound(f"table {schema}.{name} does not exist at the source") from None
    except SQLAlchemyError as error:
        raise SourceTableError(f"cannot read the definition of {schema}.{name}: {_reason(error)}") from None
    dialect = connection.dialect.name
    return SourceTable(
        table,
        [_plan_column(c, dialect, map_boolean_as_boolean) for c in table.columns],
        dialect,
        map_boolean_as_boolean=map_boolean_as_boolean,
    )


def _plan_column(column: sa.Column[Any], dialect: str, map_boolean_as_boolean: bool) -> _ColumnPlan:
    """Choose the Arrow type DMS would write for a source column (first match wins)."""
    sql_type = column.type
    as_text = _ColumnPlan(column.name, pa.string(), sa.cast(column, sa.Text).label(column.name))
    # SQLite keeps every INTEGER and REAL in 8 bytes whatever the declared name says.
    if isinstance(sql_type, sa.Boolean):
        if map_boolean_as_boolean:
            return _ColumnPlan(column.name, pa.bool_(), column)
        return _ColumnPlan(column.name, pa.string(), column, _boolean_word)
    if isinstance(sql_type, sa.SmallInteger):
        return _ColumnPlan(column.name, pa.int16(), column)
    if isinstance(sql_type, sa.BigInteger):
        return _ColumnPlan(column.name, pa.int64(), column)
    if isinstance(sql_type, sa.Integer):
        return _ColumnPlan(column.name, pa.int64() if dialect == "sqlite" else pa.int32(), column)
    if isinstance(sql_type, sa.Float):
        single = isinstance(sql_type, sa.REAL) and dialect != "sqlite"
        return _ColumnPlan(column.name, pa.float32() if single else pa.float64(), column, _as_float)
    if isinstance(sql_type, sa.Numeric):
        return _plan_decimal(column, sql_type, as_text)
    if isinstance(sql_type, sa.DateTime):
        return _ColumnPlan(column.name, pa.timestamp("us", tz="UTC" if sql_type.timezone else None), column)
    if isinstance(sql_type, sa.Date):
        return _ColumnPlan(column.name, pa.date32(), column)
    if isinstance(sql_type, sa.Time) and not sql_type.timezone:
        return _ColumnPlan(column.name, pa.time64("us"), column)
    if isinstance(sql_type, (sa.LargeBinary, sa.BINARY, sa.VARBINARY)):
        return _ColumnPlan(column.name, pa.binary(), column, _as_bytes)
    if isinstance(sql_type, (sa.String, sa.Enum)):
        return _ColumnPlan(column.name, pa.string(), column)
    return as_text


def _plan_decimal(column: sa.Column[Any], sql_type: sa.Numeric[Any], as_text: _ColumnPlan) -> _ColumnPlan:
    precision, scale = sql_type.precision, sql_type.scale
    if precision is None:
        precision, scale = DMS_UNBOUNDED_NUMERIC
    if precision > DMS_MAX_DECIMAL_PRECISION:
        return as_text
    step = decimal.Decimal(1).scaleb(-(scale or 0))

    def to_scale(value: Any) -> decimal.Decimal | None:
        # DMS rounds values of an unbounded NUMERIC to its scale (0.611111104488373 -> 0.611111).
        if value is None:
            return None
        return decimal.Decimal(value).quantize(step, rounding=decimal.ROUND_HALF_UP, context=_WIDE_DECIMALS)

    return _ColumnPlan(column.name, pa.decimal128(precision, scale or 0), column, to_scale)


def _boolean_word(value: bool | None) -> str | None:
    return None if value is None else ("true" if value else "false")


def _as_float(value: Any) -> float | None:
    # Some drivers hand back Decimal for float columns; Arrow's float arrays want floats.
    return None if value is None else float(value)


def _as_bytes(value: Any) -> bytes | None:
    # psycopg returns bytea as memoryview.
    return None if value is None else bytes(value)


def filter_clause(table: sa.Table, source_filter: SourceFilter, dialect: str = "") -> sa.ColumnElement[bool]:
    """One DMS source filter as a SQL condition with bound values: its conditions ORed.

    ``dialect`` is the source's SQLAlchemy dialect name; on ``sqlite`` time columns are compared as
    times (see the module docstring), which needs the functions :meth:`SourceTable.batches` registers.
    """
    if source_filter.column not in table.columns:
        raise FilterColumnNotFound(
            f"filter column {source_filter.column!r} is not a column of {table.schema}.{table.name}"
        )
    column = table.columns[source_filter.column]
    return sa.or_(*(_condition_clause(column, condition, dialect) for condition in source_filter.conditions))


def _condition_clause(
    column: sa.Column[Any], condition: FilterCondition, dialect: str
) -> sa.ColumnElement[bool]:
    operator = condition.operator
    if operator == "null":
        return column.is_(None)
    if operator == "notnull":
        return column.is_not(None)
    compared, value_of = _comparison_terms(column, dialect)
    if operator in RANGE_OPERATORS:
        start = value_of(column, condition.start_value)
        end = value_of(column, condition.end_value)
        # Both bounds are inclusive; NOT BETWEEN keeps SQL's rule that a NULL matches neither.
        return (
            compared.between(start, end) if operator == "between" else sa.not_(compared.between(start, end))
        )
    if operator not in _COMPARISONS:
        raise FilterValueError(f"unknown filter operator {operator!r} on column {column.name!r}")
    return _COMPARISONS[operator](compared, value_of(column, condition.value))


def _comparison_terms(
    column: sa.Column[Any], dialect: str
) -> tuple[sa.ColumnElement[Any], Callable[[sa.Column[Any], str | None], Any]]:
    """What a comparison filter compares: the column with its converted filter value, except for a
    SQLite time column, whose stored text and the filter value are both turned into time keys."""
    kind = next((k for k in _SQLITE_TIME_KINDS if isinstance(column.type, k[0])), None)
    if dialect != "sqlite" or kind is None:
        return column, filter_value
    _, function_name, key = kind

    def value_key(filtered: sa.Column[Any], raw: str | None) -> int:
        return key(filter_value(filtered, raw))

    stored_key = getattr(sa.func, function_name)(column, sa.literal(column.name), type_=sa.BigInteger)
    return stored_key, value_key


def timestamp_key(moment: dt.datetime) -> int:
    """Microseconds from the epoch to ``moment``'s UTC instant; a moment without an offset is UTC.

    An integer, not a float: two stored times a microsecond apart must never compare equal.
    """
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=dt.UTC)
    return (moment - _EPOCH) // _MICROSECOND


def time_of_day_key(moment: dt.time) -> int:
    """Microseconds since midnight; a time with an offset counts at its UTC wall-clock time."""
    micros = ((moment.hour * 60 + moment.minute) * 60 + moment.second) * 1_000_000 + moment.microsecond
    offset = moment.utcoffset()
    if offset:
        micros = (micros - offset // _MICROSECOND) % _DAY_MICROSECONDS
    return micros


def _stored_timestamp_key(text: str) -> int:
    return timestamp_key(dt.datetime.fromisoformat(text))


def _stored_time_of_day_key(text: str) -> int:
    return time_of_day_key(dt.time.fromisoformat(text))


_SQLITE_TIME_KINDS: tuple[tuple[type[Any], str, Callable[[Any], int]], ...] = (
    (sa.DateTime, SQLITE_TIME_KEY, timestamp_key),
    (sa.Time, SQLITE_TIME_OF_DAY_KEY, time_of_day_key),
)
"""SQLite column kinds compared as times: the column type, its SQL function, the key of a filter value."""

_SQLITE_STORED_KEYS: dict[str, Callable[[str], int]] = {
    SQLITE_TIME_KEY: _stored_timestamp_key,
    SQLITE_TIME_OF_DAY_KEY: _stored_time_of_day_key,
}
"""How each SQLite function reads stored text: ``fromisoformat``, as SQLAlchemy reads the column, so
a row is compared as exactly the value that is then written to bronze."""


class _SqliteTimeKeys:
    """The time-key functions of one SQLite connection; remembers the first stored text that is no time."""

    def __init__(self) -> None:
        self.unreadable: str | None = None

    @classmethod
    def register(cls, connection: Connection) -> _SqliteTimeKeys:
        keys = cls()
        driver_connection = connection.connection.driver_connection
        for function_name, stored_key in _SQLITE_STORED_KEYS.items():
            driver_connection.create_function(  # type: ignore[union-attr]
                function_name, 2, functools.partial(keys._key, stored_key), deterministic=True
            )
        return keys

    def _key(self, stored_key: Callable[[str], int], stored: Any, column_name: str) -> int | None:
        if stored is None:
            return None
        try:
            if not isinstance(stored, str):
                raise TypeError(f"a {type(stored).__name__}, not text")
            return stored_key(stored)
        except (TypeError, ValueError) as error:
            # DMS would never hold such a value in a time column; leaving the row out of a gte run
            # would lose it silently, so the table fails instead.
            if self.unreadable is None:
                self.unreadable = (
                    f"column {column_name!r} holds {stored!r}, which is not a time ({error}); DMS compares "
                    "filter values with this column as times, so the row cannot be filtered"
                )
            raise


def filter_value(column: sa.Column[Any], raw: str | None) -> Any:
    """Convert a DMS filter value (a string) to the Python type of ``column`` before it is bound.

    Timestamps are compared in UTC: a value without an offset is taken as UTC for a ``timestamptz``
    column, and a value with an offset is converted to UTC for a column without a time zone.
    """
    sql_type = column.type
    if raw is None:
        raise FilterValueError(f"filter on column {column.name!r} has no value")
    convert = next((c for kind, c in _FILTER_CONVERSIONS if isinstance(sql_type, kind)), None)
    if convert is None:
        raise FilterValueError(
            f"column {column.name!r} of type {sql_type} cannot be filtered: DMS filters need a scalar, "
            "non-LOB column"
        )
    try:
        return convert(sql_type, raw)
    except ValueError as error:
        raise FilterValueError(
            f"filter value {raw!r} for column {column.name!r} is not a valid {sql_type}: {error}"
        ) from None


def _to_datetime(sql_type: Any, raw: str) -> dt.datetime:
    moment = dt.datetime.fromisoformat(raw.strip())
    aware = bool(sql_type.timezone)
    if moment.tzinfo is None:
        return moment.replace(tzinfo=dt.UTC) if aware else moment
    in_utc = moment.astimezone(dt.UTC)
    return in_utc if aware else in_utc.replace(tzinfo=None)


def _to_boolean(_: Any, raw: str) -> bool:
    word = raw.strip().lower()
    if word not in _BOOLEAN_WORDS:
        raise ValueError(f"expected one of {sorted(_BOOLEAN_WORDS)}")
    return _BOOLEAN_WORDS[word]


def _to_decimal(_: Any, raw: str) -> decimal.Decimal:
    try:
        number = decimal.Decimal(raw.strip())
    except decimal.InvalidOperation:
        raise ValueError("not a number") from None
    if not number.is_finite():
        raise ValueError("not a finite number")
    return number


def _to_integer(sql_type: Any, raw: str) -> int:
    number = _to_decimal(sql_type, raw)  # accepts "100" and "1e2", refuses "10.5"
    if number != number.to_integral_value():
        raise ValueError("not a whole number")
    return int(number)


_FILTER_CONVERSIONS: tuple[tuple[type[Any] | tuple[type[Any], ...], Callable[[Any, str], Any]], ...] = (
    ((sa.String, sa.Enum), lambda _, raw: raw),  # compared as written: spaces are part of a string value
    (sa.DateTime, _to_datetime),
    (sa.Date, lambda _, raw: dt.date.fromisoformat(raw.strip())),
    (sa.Time, lambda _, raw: dt.time.fromisoformat(raw.strip())),
    (sa.Boolean, _to_boolean),
    (sa.Integer, _to_integer),
    (sa.Float, lambda _, raw: float(raw.strip())),
    (sa.Numeric, _to_decimal),
    (sa.Uuid, lambda _, raw: uuid.UUID(raw.strip())),
)
"""Filterable column kinds and how a DMS filter string becomes a value of each; first match wins."""
