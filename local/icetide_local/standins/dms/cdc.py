"""Change data capture for the DMS stand-in: where a CDC task's changes come from, and its checkpoints.

DMS reads a source's transaction log; the stand-in does the same where the source has one to offer:

- **PostgreSQL**: a real logical replication slot with the built-in ``test_decoding`` plugin (the
  source endpoint's ``PostgreSQLSettings.SlotName``), created when a ``full-load-and-cdc`` task starts
  if it does not exist yet. Changes are read with ``pg_logical_slot_peek_changes``, so reading never
  consumes them; the slot is advanced only when a ``cdc`` task starts from a checkpoint, and then only
  to the oldest checkpoint any table captured through this slot last started from (kept in
  :data:`SLOT_POSITIONS_TABLE`): everything before it has been committed by the product, and a failed
  run's window can be read again.
- **SQLite** (the local default; DMS has no SQLite source): what DMS calls supplemental logging is
  the stand-in's own. A ``full-load-and-cdc`` task installs AFTER INSERT/UPDATE/DELETE triggers on
  each selected table that append every change to :data:`CHANGE_LOG_TABLE` in the same database, with
  the time of the change in UTC (SQLite's clock counts milliseconds) and the full row image: the new
  one for I and U, the one before deletion for D.

A **checkpoint** (``RecoveryCheckpoint``, handed back as the next task's ``CdcStartPosition``) is
``checkpoint:V1#icetide#sqlite#<last change-log seq read>`` or
``checkpoint:V1#icetide#postgres#<LSN of the last commit read>``. A **window** is every change after
the start checkpoint whose commit time is at or before the stop position, in commit order, ending at
the first later commit (so that the next window starts exactly where this one ended).

Each change gets ``AR_H_CHANGE_SEQ``: 35 digits whose text order is the change order (PostgreSQL:
20 digits of the commit LSN, 15 of the change's place in its transaction; SQLite: the log's seq).
Values are raw (SQLite's stored values, PostgreSQL's text output); :func:`change_batches` gives them
the types of a full load's rows by letting the source database itself convert them.
"""

from __future__ import annotations

import datetime as dt
import json
import re
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

import pyarrow as pa
import sqlalchemy as sa
from sqlalchemy.engine import Connection, Engine

from icetide_local.standins.dms.source import SourceFilter, SourceTable, SourceTableError, filter_clause

CHECKPOINT_PREFIX = "checkpoint:V1#icetide#"
CHANGE_LOG_TABLE = "icetide_dms_change_log"
SLOT_POSITIONS_TABLE = "icetide_dms_slot_positions"
DEFAULT_SLOT_NAME = "icetide_local"
TEST_DECODING = "test_decoding"
CHANGE_SEQUENCE_WIDTH = 35

STAGE_TABLE = "icetide_dms_cdc_stage"
_POSITION, _OP, _COMMIT_TIME, _SEQUENCE, _PARTIAL = (
    "icetide_cdc_position", "icetide_cdc_op", "icetide_cdc_commit_time", "icetide_cdc_change_seq",
    "icetide_cdc_partial",
)  # fmt: skip
_DMS_TIMESTAMP_FORMAT = "%Y-%m-%d %H:%M:%S.%f"
_STOP_POSITION = re.compile(r"(?:server_time|commit_time):(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d)")
_NATIVE_LSN = re.compile(r"[0-9A-Fa-f]{1,8}/[0-9A-Fa-f]{1,8}")
_SQLITE_COLUMNS_PER_OBJECT = 60  # json_object takes at most 127 arguments, two per column


class ChangeCaptureError(RuntimeError):
    """Changes cannot be captured or read from this source (no capture installed, unsupported source)."""


class CheckpointUnreadable(ValueError):
    """A ``CdcStartPosition`` the stand-in cannot start from; the message says why."""


class UnchangedToastValue:
    """test_decoding's ``unchanged-toast-datum``: an UPDATE left a large value out of the change."""

    def __repr__(self) -> str:
        return "unchanged-toast-datum"


UNCHANGED_TOAST = UnchangedToastValue()


@dataclass(frozen=True)
class Change:
    """One captured row change: ``values`` maps column names to raw source values."""

    schema: str
    table: str
    op: str
    commit_time: dt.datetime
    sequence: str
    values: Mapping[str, Any]


@dataclass(frozen=True)
class ChangeWindow:
    """The changes of the selected tables in one window, in commit order, and where reading ended."""

    changes: tuple[Change, ...]
    end: int

    def of(self, schema: str, table: str) -> list[Change]:
        return [change for change in self.changes if (change.schema, change.table) == (schema, table)]


class ChangeCapture(Protocol):
    """A source's change stream, as one replication task uses it."""

    kind: str

    def prepare(self, tables: Sequence[tuple[str, str]]) -> int:
        """Start capturing the tables' changes (idempotent); the position a full load starts at."""
        ...

    def resume(self, position: int, tables: Sequence[tuple[str, str]]) -> None:
        """Check that a ``cdc`` task can read from ``position`` on; release what is before it."""
        ...

    def read(self, start: int, stop: dt.datetime | None, tables: Sequence[tuple[str, str]]) -> ChangeWindow:
        """The committed changes after ``start`` up to ``stop`` (everything committed, when None)."""
        ...


def change_capture(engine: Engine, slot_name: str | None = None) -> ChangeCapture:
    """The change capture of the source ``engine`` connects to."""
    dialect = engine.dialect.name
    if dialect == "sqlite":
        return SqliteChangeLog(engine)
    if dialect == "postgresql":
        return PostgresSlot(engine, slot_name or DEFAULT_SLOT_NAME)
    raise ChangeCaptureError(
        f"the DMS stand-in captures changes from SQLite and PostgreSQL sources only, not {dialect}"
    )


def format_checkpoint(kind: str, position: int) -> str:
    """The ``RecoveryCheckpoint`` of a window that ended at ``position``."""
    if kind == "postgres":
        return f"{CHECKPOINT_PREFIX}postgres#{lsn_text(position)}"
    return f"{CHECKPOINT_PREFIX}{kind}#{position}"


def parse_checkpoint(text: str, kind: str) -> int:
    """The position of a ``CdcStartPosition`` written by :func:`format_checkpoint` for a ``kind`` source,
    or, on PostgreSQL, a native start point: an LSN such as ``4AF/B00000D0`` (DMS user guide,
    "Determining a CDC native start point")."""
    if kind == "postgres" and _NATIVE_LSN.fullmatch(text):
        return lsn_value(text)
    if not text.startswith(CHECKPOINT_PREFIX):
        raise CheckpointUnreadable(
            f"CdcStartPosition {text!r} is not a checkpoint of the DMS stand-in "
            f"(expected {CHECKPOINT_PREFIX}{kind}#..., the RecoveryCheckpoint of an earlier task)"
        )
    source_kind, _, position = text[len(CHECKPOINT_PREFIX) :].partition("#")
    if source_kind != kind:
        raise CheckpointUnreadable(
            f"CdcStartPosition {text!r} is a checkpoint of a {source_kind or 'unknown'} source; "
            f"this task reads a {kind} source"
        )
    try:
        return lsn_value(position) if kind == "postgres" else _non_negative(position)
    except ValueError:
        raise CheckpointUnreadable(
            f"CdcStartPosition {text!r} has an unreadable position {position!r}"
        ) from None


def _non_negative(text: str) -> int:
    if not text.isdigit():
        raise ValueError(text)
    return int(text)


def parse_stop_position(text: str | None) -> dt.datetime | None:
    """``server_time:YYYY-MM-DDThh:mm:ss`` (UTC) as an aware datetime; None when there is none."""
    if not text:
        return None
    matched = _STOP_POSITION.fullmatch(text.strip())
    if matched is None:
        raise ValueError(
            f"CdcStopPosition {text!r} is not server_time:YYYY-MM-DDThh:mm:ss (or commit_time:...)"
        )
    return dt.datetime.fromisoformat(matched.group(1)).replace(tzinfo=dt.UTC)


def lsn_value(text: str) -> int:
    """PostgreSQL's ``X/Y`` LSN text as a number."""
    high, slash, low = text.partition("/")
    if not slash or not high or not low:
        raise ValueError(f"{text!r} is not an LSN")
    return (int(high, 16) << 32) | int(low, 16)


def lsn_text(value: int) -> str:
    return f"{value >> 32:X}/{value & 0xFFFFFFFF:X}"


def change_sequence(major: int, minor: int = 0) -> str:
    """``AR_H_CHANGE_SEQ``: 35 digits, ordered as (major, minor)."""
    return f"{major:020d}{minor:015d}"


# -- SQLite: triggers and a change log ------------------------------------------------------------


def _quote(identifier: str) -> str:
    return '"' + identifier.replace('"', '""') + '"'


def _literal(text: str) -> str:
    return "'" + text.replace("'", "''") + "'"


class SqliteChangeLog:
    """The stand-in's supplemental logging on SQLite: triggers writing to :data:`CHANGE_LOG_TABLE`."""

    kind = "sqlite"

    def __init__(self, engine: Engine) -> None:
        self.engine = engine

    @staticmethod
    def _check_schemas(tables: Sequence[tuple[str, str]]) -> None:
        others = sorted({schema for schema, _ in tables if schema != "main"})
        if others:
            raise ChangeCaptureError(
                f"the DMS stand-in captures SQLite changes in schema main only, not {', '.join(others)}"
            )

    def prepare(self, tables: Sequence[tuple[str, str]]) -> int:
        self._check_schemas(tables)
        with self.engine.begin() as connection:
            connection.exec_driver_sql(
                f"CREATE TABLE IF NOT EXISTS main.{CHANGE_LOG_TABLE} ("
                "seq INTEGER PRIMARY KEY AUTOINCREMENT, schema_name TEXT NOT NULL, table_name TEXT NOT NULL, "
                "op TEXT NOT NULL, commit_time TEXT NOT NULL, row_json TEXT NOT NULL)"
            )
            for _, table in tables:
                columns = [
                    row[1] for row in connection.exec_driver_sql(f"PRAGMA main.table_info({_quote(table)})")
                ]
                if columns:  # a missing table is reported by the full load as a table error
                    for statement in _trigger_statements(table, columns):
                        connection.exec_driver_sql(statement)
            return self._last_seq(connection)

    @staticmethod
    def _last_seq(connection: Connection) -> int:
        return int(
            connection.exec_driver_sql(
                f"SELECT coalesce(max(seq), 0) FROM main.{CHANGE_LOG_TABLE}"  # noqa: S608 (a constant name)
            ).scalar_one()
        )

    def _has_log(self, connection: Connection) -> bool:
        return sa.inspect(connection).has_table(CHANGE_LOG_TABLE, schema="main")

    def resume(self, position: int, tables: Sequence[tuple[str, str]]) -> None:
        self._check_schemas(tables)
        with self.engine.connect() as connection:
            if not self._has_log(connection):
                raise ChangeCaptureError(
                    f"this SQLite source has no change log ({CHANGE_LOG_TABLE}): a full-load-and-cdc task "
                    "installs change capture before a cdc task can read changes"
                )
            last = self._last_seq(connection)
        if position > last:
            raise CheckpointUnreadable(
                f"CdcStartPosition is at change {position}, beyond the last change ({last}) of this "
                "source's change log: it is not a checkpoint of this source"
            )

    def read(self, start: int, stop: dt.datetime | None, tables: Sequence[tuple[str, str]]) -> ChangeWindow:
        wanted = set(tables)
        changes: list[Change] = []
        end = start
        with self.engine.connect() as connection:
            rows = connection.exec_driver_sql(
                "SELECT seq, schema_name, table_name, op, commit_time, row_json "  # noqa: S608 (a constant name)
                f"FROM main.{CHANGE_LOG_TABLE} WHERE seq > ? ORDER BY seq",
                (start,),
            )
            for seq, schema, table, op, commit_text, row_json in rows:
                commit_time = dt.datetime.fromisoformat(commit_text).replace(tzinfo=dt.UTC)
                if stop is not None and commit_time > stop:
                    break
                end = seq
                if (schema, table) in wanted:
                    values = {name: _sqlite_value(pair) for name, pair in json.loads(row_json).items()}
                    changes.append(Change(schema, table, op, commit_time, change_sequence(seq), values))
        return ChangeWindow(tuple(changes), end)


def _trigger_statements(table: str, columns: Sequence[str]) -> list[str]:
    statements = []
    for event, op, image in (("INSERT", "I", "NEW"), ("UPDATE", "U", "NEW"), ("DELETE", "D", "OLD")):
        name = _quote(f"icetide_dms_cdc_{table}_{event.lower()}")
        statements.append(f"DROP TRIGGER IF EXISTS main.{name}")
        statements.append(
            f"CREATE TRIGGER main.{name} AFTER {event} ON {_quote(table)} BEGIN "  # noqa: S608 (quoted)
            f"INSERT INTO {CHANGE_LOG_TABLE} (schema_name, table_name, op, commit_time, row_json) VALUES "
            f"('main', {_literal(table)}, '{op}', strftime('%Y-%m-%d %H:%M:%f', 'now') || '000', "
            f"{_sqlite_row_json(image, columns)}); END"
        )
    return statements


def _sqlite_row_json(image: str, columns: Sequence[str]) -> str:
    """A JSON object of ``[storage class, value]`` per column: exact, even for reals and blobs."""
    objects = []
    for first in range(0, len(columns), _SQLITE_COLUMNS_PER_OBJECT):
        pairs = []
        for column in columns[first : first + _SQLITE_COLUMNS_PER_OBJECT]:
            value = f"{image}.{_quote(column)}"
            encoded = (
                f"CASE typeof({value}) WHEN 'blob' THEN hex({value}) "
                f"WHEN 'real' THEN printf('%!.17g', {value}) ELSE {value} END"
            )
            pairs.append(f"{_literal(column)}, json_array(typeof({value}), {encoded})")
        objects.append(f"json_object({', '.join(pairs)})")
    merged = objects[0]
    for more in objects[1:]:
        merged = f"json_patch({merged}, {more})"
    return merged


def _sqlite_value(pair: list[Any]) -> Any:
    storage, value = pair
    if storage == "blob":
        return bytes.fromhex(value)
    if storage == "real":
        return float(value)
    return value


# -- PostgreSQL: a logical replication slot -----------------------------------------------------


class PostgresSlot:
    """A logical replication slot read with ``test_decoding`` (see the module docstring)."""

    kind = "postgres"

    def __init__(self, engine: Engine, slot_name: str) -> None:
        self.engine = engine
        self.slot_name = slot_name

    def _slot(self, connection: Connection) -> tuple[str, int] | None:
        row = connection.execute(
            sa.text(
                "SELECT plugin, confirmed_flush_lsn::text FROM pg_replication_slots "
                "WHERE slot_name = :slot AND database = current_database()"
            ),
            {"slot": self.slot_name},
        ).one_or_none()
        return None if row is None else (str(row[0]), lsn_value(row[1]))

    def prepare(self, tables: Sequence[tuple[str, str]]) -> int:
        with self.engine.connect() as connection:
            # A slot cannot be created in a transaction that has written anything.
            connection = connection.execution_options(isolation_level="AUTOCOMMIT")
            slot = self._slot(connection)
            if slot is None:
                connection.execute(
                    sa.text("SELECT pg_create_logical_replication_slot(:slot, :plugin)"),
                    {"slot": self.slot_name, "plugin": TEST_DECODING},
                )
            elif slot[0] != TEST_DECODING:
                raise ChangeCaptureError(
                    f"replication slot {self.slot_name!r} uses the {slot[0]} plugin; the DMS stand-in reads "
                    f"{TEST_DECODING} slots"
                )
            position = lsn_value(
                connection.execute(sa.text("SELECT pg_current_wal_lsn()::text")).scalar_one()
            )
            self._remember(connection, position, tables)
        return position

    def resume(self, position: int, tables: Sequence[tuple[str, str]]) -> None:
        with self.engine.connect() as connection:
            connection = connection.execution_options(isolation_level="AUTOCOMMIT")
            slot = self._slot(connection)
            if slot is None:
                raise ChangeCaptureError(
                    f"replication slot {self.slot_name!r} does not exist on the source: a cdc task reads "
                    "a slot that a full-load-and-cdc task (or, in AWS, the user) created"
                )
            current = lsn_value(connection.execute(sa.text("SELECT pg_current_wal_lsn()::text")).scalar_one())
            if position > current:
                raise CheckpointUnreadable(
                    f"CdcStartPosition {lsn_text(position)} is beyond the last change (the current WAL "
                    f"position {lsn_text(current)}) of this source: it is not a checkpoint of this source"
                )
            if position < slot[1]:
                raise CheckpointUnreadable(
                    f"CdcStartPosition {lsn_text(position)} is before replication slot {self.slot_name!r}'s "
                    f"confirmed position {lsn_text(slot[1])}: the changes since it are no longer retained"
                )
            oldest = self._remember(connection, position, tables)
            if oldest > slot[1]:
                connection.execute(
                    sa.text("SELECT pg_replication_slot_advance(:slot, CAST(:lsn AS pg_lsn))"),
                    {"slot": self.slot_name, "lsn": lsn_text(oldest)},
                )

    def _remember(self, connection: Connection, position: int, tables: Sequence[tuple[str, str]]) -> int:
        """Record where these tables' capture starts; the oldest start of any table of this slot."""
        connection.execute(
            sa.text(
                f"CREATE TABLE IF NOT EXISTS public.{SLOT_POSITIONS_TABLE} (slot_name text, "
                "schema_name text, table_name text, position pg_lsn NOT NULL, "
                "PRIMARY KEY (slot_name, schema_name, table_name))"
            )
        )
        for schema, table in tables:
            connection.execute(
                sa.text(
                    f"INSERT INTO public.{SLOT_POSITIONS_TABLE} "  # noqa: S608 (a constant name)
                    "VALUES (:slot, :schema, :table, CAST(:lsn AS pg_lsn)) "
                    "ON CONFLICT (slot_name, schema_name, table_name) "
                    "DO UPDATE SET position = excluded.position"
                ),
                {"slot": self.slot_name, "schema": schema, "table": table, "lsn": lsn_text(position)},
            )
        oldest = connection.execute(
            sa.text(
                f"SELECT min(position)::text FROM public.{SLOT_POSITIONS_TABLE} "  # noqa: S608 (a constant name)
                "WHERE slot_name = :slot"
            ),
            {"slot": self.slot_name},
        ).scalar_one()
        return lsn_value(oldest)

    def read(self, start: int, stop: dt.datetime | None, tables: Sequence[tuple[str, str]]) -> ChangeWindow:
        wanted = set(tables)
        changes: list[Change] = []
        end = start
        pending: list[tuple[str, str, str, dict[str, Any]]] = []
        with self.engine.connect() as connection:
            if self._slot(connection) is None:
                raise ChangeCaptureError(f"replication slot {self.slot_name!r} does not exist on the source")
            # test_decoding prints timestamptz values and commit times in the session's time zone.
            connection.execute(sa.text("SET LOCAL TimeZone = 'UTC'"))
            rows = connection.execute(
                sa.text(
                    "SELECT lsn::text, data FROM pg_logical_slot_peek_changes(:slot, NULL, NULL, "
                    "'include-xids', '1', 'include-timestamp', '1')"
                ),
                {"slot": self.slot_name},
                execution_options={"yield_per": 1000},
            )
            for lsn, data in rows:
                if data.startswith("BEGIN"):
                    pending = []
                elif data.startswith("COMMIT"):
                    commit_lsn = lsn_value(lsn)
                    if commit_lsn <= start:
                        continue
                    commit_time = _commit_time(data)
                    if stop is not None and commit_time > stop:
                        break
                    end = commit_lsn
                    for index, (schema, table, op, values) in enumerate(pending):
                        if (schema, table) in wanted:
                            sequence = change_sequence(commit_lsn, index)
                            changes.append(Change(schema, table, op, commit_time, sequence, values))
                elif data.startswith("table "):
                    parsed = parse_test_decoding(data)
                    if parsed is not None:
                        pending.append(parsed)
            connection.rollback()
        return ChangeWindow(tuple(changes), end)


def _commit_time(data: str) -> dt.datetime:
    """``COMMIT 731 (at 2026-11-24 07:05:05.506246+00)`` -> the commit time in UTC."""
    _, _, moment = data.partition("(at ")
    return dt.datetime.fromisoformat(moment.rstrip(")")).astimezone(dt.UTC)


_OPS = {"INSERT": "I", "UPDATE": "U", "DELETE": "D"}


def parse_test_decoding(data: str) -> tuple[str, str, str, dict[str, Any]] | None:
    """One ``table s.t: OP: ...`` line as (schema, table, op, values); None for TRUNCATE.

    Values are the text PostgreSQL printed (None for null, :data:`UNCHANGED_TOAST` for a large value
    an UPDATE did not carry). An UPDATE's values are the new image, filled from its old image where
    the new one left a value out; a DELETE's are the replica identity (the key, by default).
    """
    reader = _Reader(data, len("table "))
    schema = reader.identifier(".")
    reader.expect(".")
    table = reader.identifier(":")
    reader.expect(": ")
    action = reader.until(":")
    reader.expect(":")
    if action not in _OPS:
        return None
    images: dict[str, dict[str, Any]] = {"new": {}}
    current = images["new"]
    while reader.more():
        reader.skip_spaces()
        if reader.take("old-key:"):
            current = images.setdefault("old", {})
            continue
        if reader.take("new-tuple:"):
            current = images["new"]
            continue
        if reader.take("(no-tuple-data)"):
            continue
        name = reader.identifier("[")
        reader.expect("[")
        reader.until("]:")
        reader.expect("]:")
        current[name] = reader.value()
    values = images["new"]
    old = images.get("old", {})
    for name, value in values.items():
        if value is UNCHANGED_TOAST and name in old:
            values[name] = old[name]
    return schema, table, _OPS[action], values


@dataclass
class _Reader:
    text: str
    at: int

    def more(self) -> bool:
        return self.at < len(self.text.rstrip())

    def skip_spaces(self) -> None:
        while self.at < len(self.text) and self.text[self.at] == " ":
            self.at += 1

    def take(self, word: str) -> bool:
        if self.text.startswith(word, self.at):
            self.at += len(word)
            return True
        return False

    def expect(self, word: str) -> None:
        if not self.take(word):
            raise ChangeCaptureError(f"cannot read test_decoding output at {self.at}: {self.text[:200]!r}")

    def until(self, stop: str) -> str:
        end = self.text.find(stop, self.at)
        if end < 0:
            raise ChangeCaptureError(f"cannot read test_decoding output at {self.at}: {self.text[:200]!r}")
        found, self.at = self.text[self.at : end], end
        return found

    def quoted(self, quote: str) -> str:
        self.expect(quote)
        parts = []
        while True:
            end = self.text.find(quote, self.at)
            if end < 0:
                raise ChangeCaptureError(
                    f"unterminated quoted text in test_decoding output: {self.text[:200]!r}"
                )
            parts.append(self.text[self.at : end])
            self.at = end + 1
            if not self.text.startswith(quote, self.at):
                return quote.join(parts)
            self.at += 1

    def identifier(self, stop: str) -> str:
        if self.text.startswith('"', self.at):
            return self.quoted('"')
        return self.until(stop)

    def value(self) -> Any:
        if self.text.startswith("'", self.at):
            return self.quoted("'")
        if self.text.startswith("B'", self.at):
            self.at += 1
            return self.quoted("'")
        end = self.text.find(" ", self.at)
        end = len(self.text) if end < 0 else end
        word, self.at = self.text[self.at : end], end
        if word == "null":
            return None
        if word == "unchanged-toast-datum":
            return UNCHANGED_TOAST
        return word


# -- typing changes like a full load's rows -----------------------------------------------------


@dataclass(frozen=True)
class ChangeColumns:
    """The DMS columns of a CDC batch: ``Op``, the commit time as DMS text, ``AR_H_CHANGE_SEQ``."""

    op: pa.Field = field(default_factory=lambda: pa.field(_OP, pa.string(), nullable=False))
    commit_time: pa.Field = field(default_factory=lambda: pa.field(_COMMIT_TIME, pa.string(), nullable=False))
    sequence: pa.Field = field(default_factory=lambda: pa.field(_SEQUENCE, pa.string(), nullable=False))


CHANGE_COLUMNS = ChangeColumns()


def change_batches(
    connection: Connection,
    source: SourceTable,
    changes: Sequence[Change],
    filters: Sequence[SourceFilter],
    batch_rows: int,
    columns: Sequence[str] = (),
) -> Iterator[pa.RecordBatch]:
    """The changes that pass the source filters, in order, as record batches: the three
    :data:`CHANGE_COLUMNS` first, then the source ``columns`` typed exactly as a full load types them.

    The raw values go into a temporary copy of the table, and are read back through the full load's
    own column plans: the source database converts them (PostgreSQL's input functions, SQLite's
    column affinity). A D row that carries only the key (PostgreSQL's default replica identity) passes
    a filter on a column it lacks.
    """
    names = [column.name for column in source.table.columns]
    for name in (_POSITION, _OP, _COMMIT_TIME, _SEQUENCE, _PARTIAL):
        if name in names:
            raise SourceTableError(f"{source.table.schema}.{source.table.name} has a column {name!r}, "
                                   "a name the DMS stand-in's change capture uses")  # fmt: skip
    stage = sa.Table(
        STAGE_TABLE,
        sa.MetaData(),
        *(sa.Column(column.name, column.type) for column in source.table.columns),
        sa.Column(_POSITION, sa.Integer),
        sa.Column(_OP, sa.Text),
        sa.Column(_COMMIT_TIME, sa.Text),
        sa.Column(_SEQUENCE, sa.Text),
        sa.Column(_PARTIAL, sa.Integer),
    )
    rows = [_stage_row(source, position, change, names) for position, change in enumerate(changes)]
    _create_stage(connection, source, names)
    try:
        _fill_stage(connection, names, rows)
        staged = source.staged(stage)
        statement = sa.select(stage.c[_OP], stage.c[_COMMIT_TIME], stage.c[_SEQUENCE]).add_columns(
            *(plan.select for plan in staged.plans(columns))
        )
        for source_filter in filters:
            relaxed = sa.and_(stage.c[_PARTIAL] == 1, stage.c[source_filter.column].is_(None))
            statement = statement.where(sa.or_(filter_clause(stage, source_filter, source.dialect), relaxed))
        statement = statement.order_by(stage.c[_POSITION])
        leading = (CHANGE_COLUMNS.op, CHANGE_COLUMNS.commit_time, CHANGE_COLUMNS.sequence)
        yield from staged.read(connection, statement, batch_rows, leading=leading, columns=columns)
    finally:
        connection.rollback()
        connection.exec_driver_sql(f"DROP TABLE IF EXISTS {STAGE_TABLE}")
        connection.commit()


def _stage_row(source: SourceTable, position: int, change: Change, names: Sequence[str]) -> dict[str, Any]:
    unknown = sorted(set(change.values) - set(names))
    if unknown:
        raise SourceTableError(
            f"a change of {change.schema}.{change.table} has columns {unknown} the table no longer has; "
            "the DMS stand-in does not replicate schema changes"
        )
    for name, value in change.values.items():
        if value is UNCHANGED_TOAST:
            raise SourceTableError(
                f"an UPDATE of {change.schema}.{change.table} left the large value of column {name!r} out "  # noqa: S608
                "of the change (test_decoding's unchanged-toast-datum); set REPLICA IDENTITY FULL on the "
                "table so that changes carry it"
            )
    partial = change.op == "D" and len(change.values) < len(names)
    return {
        **{name: change.values.get(name) for name in names},
        _POSITION: position,
        _OP: change.op,
        _COMMIT_TIME: change.commit_time.astimezone(dt.UTC).strftime(_DMS_TIMESTAMP_FORMAT),
        _SEQUENCE: change.sequence,
        _PARTIAL: int(partial),
    }


def _meta_columns_sql() -> str:
    return f"{_POSITION} INTEGER, {_OP} TEXT, {_COMMIT_TIME} TEXT, {_SEQUENCE} TEXT, {_PARTIAL} INTEGER"


def _create_stage(connection: Connection, source: SourceTable, names: Sequence[str]) -> None:
    connection.exec_driver_sql(f"DROP TABLE IF EXISTS {STAGE_TABLE}")
    table = source.table
    if connection.dialect.name == "sqlite":
        declared = {
            row[1]: row[2]
            for row in connection.exec_driver_sql(
                f"PRAGMA {_quote(table.schema or 'main')}.table_info({_quote(table.name)})"
            )
        }
        columns = ", ".join(f"{_quote(name)} {declared.get(name, '')}" for name in names)
        connection.exec_driver_sql(f"CREATE TEMP TABLE {STAGE_TABLE} ({columns}, {_meta_columns_sql()})")
    else:
        preparer = connection.dialect.identifier_preparer
        qualified = preparer.format_table(table)
        # CREATE TABLE AS copies names and types (with their modifiers), not NOT NULL: a D row's
        # columns outside the key are null.
        connection.exec_driver_sql(
            f"CREATE TEMP TABLE {STAGE_TABLE} AS SELECT * FROM {qualified} WITH NO DATA"  # noqa: S608 (quoted)
        )
        for meta in _meta_columns_sql().split(", "):
            connection.exec_driver_sql(f"ALTER TABLE {STAGE_TABLE} ADD COLUMN {meta}")


def _fill_stage(connection: Connection, names: Sequence[str], rows: Sequence[dict[str, Any]]) -> None:
    all_names = [*names, _POSITION, _OP, _COMMIT_TIME, _SEQUENCE, _PARTIAL]
    insert = _postgres_insert(connection, all_names) if connection.dialect.name != "sqlite" else ""
    for first in range(0, len(rows), 1000):
        chunk = rows[first : first + 1000]
        if connection.dialect.name == "sqlite":
            placeholders = ", ".join("?" for _ in all_names)
            connection.exec_driver_sql(
                f"INSERT INTO {STAGE_TABLE} ({', '.join(map(_quote, all_names))}) VALUES ({placeholders})",  # noqa: S608
                [tuple(row[name] for name in all_names) for row in chunk],
            )
        else:
            connection.execute(sa.text(insert), {"rows": json.dumps(chunk)})


def _postgres_insert(connection: Connection, names: Sequence[str]) -> str:
    """The stage's INSERT from a JSON array of rows of text values: each value is PostgreSQL's own text
    output, and a cast from text reads it with its column type's input function (json included, which
    jsonb_populate_recordset would keep as a JSON string)."""
    types: dict[str, str] = dict(
        connection.execute(
            sa.text(
                "SELECT attname, format_type(atttypid, atttypmod) FROM pg_attribute "
                "WHERE attrelid = CAST(:stage AS regclass) AND attnum > 0 AND NOT attisdropped"
            ),
            {"stage": STAGE_TABLE},
        ).all()
    )
    quoted = [_quote(name) for name in names]
    casts = ", ".join(f"CAST(x.{name} AS {types[raw]})" for name, raw in zip(quoted, names, strict=True))
    record = ", ".join(f"{name} text" for name in quoted)
    return (
        f"INSERT INTO {STAGE_TABLE} ({', '.join(quoted)}) SELECT {casts} "  # noqa: S608
        f"FROM jsonb_to_recordset(CAST(:rows AS jsonb)) AS x({record})"
    )
