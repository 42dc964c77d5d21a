"""The scenario's table in the source database the user names: created, seeded, changed, read back.

Through SQLAlchemy, so one code serves PostgreSQL (psycopg), MySQL (pymysql) and the dry run's SQLite.
The table is the scenario's own (a fresh name per run), so nothing of the user's is touched.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from sqlalchemy import Column, Integer, MetaData, String, Table, create_engine, delete, select, text, update
from sqlalchemy.engine import Engine, make_url

SEED_ROWS = 20


class SlotNotFound(LookupError):
    """The source endpoint names a replication slot the source database does not have."""


@dataclass(frozen=True)
class SourceTable:
    """The scenario's table: where it is, and the schema DMS's selection rule names."""

    engine: Engine
    table: Table
    schema: str

    @property
    def name(self) -> str:
        return self.table.name

    def update_rows(self, keys: Iterable[int], note: str) -> None:
        with self.engine.begin() as connection:
            for key in keys:
                connection.execute(update(self.table).where(self.table.c.id == key).values(note=note))

    def delete_rows(self, keys: Iterable[int]) -> None:
        with self.engine.begin() as connection:
            connection.execute(delete(self.table).where(self.table.c.id.in_(list(keys))))

    def rows(self) -> dict[int, str]:
        """Key -> note, as the source holds them now."""
        with self.engine.connect() as connection:
            return {
                row.id: row.note for row in connection.execute(select(self.table.c.id, self.table.c.note))
            }

    def slot_position(self, slot: str) -> str:
        """The replication slot's confirmed_flush_lsn (PostgreSQL): where a first run on it may start."""
        with self.engine.connect() as connection:
            found = connection.execute(
                text("SELECT confirmed_flush_lsn::text FROM pg_replication_slots WHERE slot_name = :slot"),
                {"slot": slot},
            ).scalar()
        if not found:
            raise SlotNotFound(f"the source endpoint names slot {slot!r}, which the source has not")
        return str(found)

    def drop(self) -> None:
        self.table.drop(self.engine, checkfirst=True)
        self.engine.dispose()


def default_schema(url: str) -> str:
    """The schema DMS names the table's in: SQLite's "main", PostgreSQL's "public", MySQL's database."""
    parsed = make_url(url)
    if parsed.get_backend_name() == "sqlite":
        return "main"
    if parsed.get_backend_name() == "postgresql":
        return "public"
    return parsed.database or ""


def create_source_table(url: str, name: str, rows: int = SEED_ROWS) -> SourceTable:
    """Create ``name`` with ``rows`` rows (id 1..rows, note "seed")."""
    engine = create_engine(url)
    table = Table(
        name,
        MetaData(),
        Column("id", Integer, primary_key=True, autoincrement=False),
        Column("note", String(40), nullable=False),
    )
    table.create(engine)
    with engine.begin() as connection:
        connection.execute(table.insert(), [{"id": key, "note": "seed"} for key in range(1, rows + 1)])
    return SourceTable(engine, table, default_schema(url))
