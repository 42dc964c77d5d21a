"""Change data capture end to end: cycles of `icetide local run` on SQLite (three) and on PostgreSQL
(two, the same changes in fewer windows).

Between cycles the source gets inserts, updates, deletes, a key deleted and inserted again (in a later
window, and within one), and keys updated (or inserted) then deleted within one window. SQLite is
captured by the DMS stand-in's triggers, PostgreSQL by a real logical replication slot. After every
cycle each silver table, read with pyiceberg (never with icetide's code), must hold the source's rows
exactly: with `deleteMode: hard` nothing else; with `deleteMode: soft` the source's rows have
`_icetide_deleted_at` null and every other row is a key deleted at the source, marked.
"""

from __future__ import annotations

from collections.abc import Callable
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest
import sqlalchemy as sa

from e2e.helpers import PAYMENT_COLUMNS, payment, payments_table, run_cycle, silver_by_key, source_by_key
from icetide_local.standins.dms.cdc import DEFAULT_SLOT_NAME
from local.dms_cdc import slot_start_point

pytestmark = pytest.mark.spark

DELETED_AT = "_icetide_deleted_at"
COLUMNS = PAYMENT_COLUMNS


def _item(schema: str, table: sa.Table, delete_mode: str) -> dict[str, Any]:
    return {
        "targetTableName": f"cdc_{table.name}",
        "sourceSchema": schema,
        "sourceTable": table.name,
        "primaryKeys": "id",
        "captureMode": "cdc",
        "deleteMode": delete_mode,
    }


def _first(connection: sa.Connection, table: sa.Table) -> None:
    connection.execute(table.insert(), [payment(number) for number in range(1, 7)])


def _second(connection: sa.Connection, table: sa.Table) -> None:
    connection.execute(table.insert(), [payment(7), payment(8, "new")])
    connection.execute(table.update().where(table.c.id == 1).values(note="updated"))
    # Updated, then deleted, in one window.
    connection.execute(table.update().where(table.c.id == 3).values(amount=Decimal("0.33")))
    connection.execute(table.delete().where(table.c.id == 3))
    # Deleted here, inserted again before the third cycle.
    connection.execute(table.delete().where(table.c.id == 2))
    # Inserted, then deleted, in one window.
    connection.execute(table.insert(), [payment(9)])
    connection.execute(table.delete().where(table.c.id == 9))


def _third(connection: sa.Connection, table: sa.Table) -> None:
    connection.execute(table.insert(), [payment(2, "back again")])
    # Deleted and inserted again in one window, with other values.
    connection.execute(table.delete().where(table.c.id == 4))
    connection.execute(table.insert(), [{"id": 4, "amount": Decimal("44.00"), "note": "re-inserted"}])
    connection.execute(table.update().where(table.c.id == 5).values(note="doomed"))
    connection.execute(table.delete().where(table.c.id == 5))
    connection.execute(table.delete().where(table.c.id == 6))
    connection.execute(table.update().where(table.c.id == 7).values(amount=Decimal("70.70"), note=None))


def _second_and_third(connection: sa.Connection, table: sa.Table) -> None:
    _second(connection, table)
    _third(connection, table)


Changes = Callable[[sa.Connection, sa.Table], None]
# The cycles' changes, and the keys deleted at the source (and not back) after each cycle.
THREE_WINDOWS: list[tuple[Changes, set[int]]] = [(_first, set()), (_second, {2, 3}), (_third, {3, 5, 6})]
# The same changes in two windows: key 2 is deleted and inserted again within the second.
TWO_WINDOWS: list[tuple[Changes, set[int]]] = [(_first, set()), (_second_and_third, {3, 5, 6})]


def _silver(workspace: Path, table: sa.Table, soft: bool) -> dict[Any, tuple]:
    return silver_by_key(workspace, f"cdc_{table.name}", COLUMNS + ([DELETED_AT] if soft else []), "id")


def assert_silver_follows_the_source(
    workspace: Path, engine: sa.Engine, table: sa.Table, soft: bool, deleted: set[int]
) -> None:
    source = source_by_key(engine, table, "id")
    silver = _silver(workspace, table, soft)
    if not soft:
        assert silver == source
        return
    live = {key: row[:-1] for key, row in silver.items() if row[-1] is None}
    marked = {key for key, row in silver.items() if row[-1] is not None}
    assert live == source
    # Every marked row is a key deleted at the source; a key inserted and deleted within one window
    # (9) may be remembered as deleted too, but never live.
    assert deleted <= marked <= deleted | {9}


def _cycles(
    icetide: Callable[..., Any],
    workspace: Path,
    source_url: str,
    tables_file: Path,
    engine: sa.Engine,
    tables: list[tuple[sa.Table, bool]],
    windows: list[tuple[Changes, set[int]]],
) -> list[dict[str, dict]]:
    statuses = []
    for change, deleted in windows:
        with engine.begin() as connection:
            for table, _ in tables:
                change(connection, table)
        statuses.append(run_cycle(icetide, workspace, source_url, tables_file))
        for table, soft in tables:
            assert_silver_follows_the_source(workspace, engine, table, soft, deleted)
    return statuses


def test_sqlite_changes_reach_silver_hard_and_soft(tmp_path, write_tables, icetide):
    path = tmp_path / "shop.db"
    engine = sa.create_engine(f"sqlite:///{path}")
    metadata = sa.MetaData()
    hard, soft = payments_table(metadata, "payments"), payments_table(metadata, "refunds")
    metadata.create_all(engine)
    tables_file = write_tables([_item("main", hard, "hard"), _item("main", soft, "soft")])

    statuses = _cycles(
        icetide,
        tmp_path / "ws",
        f"sqlite:///{path}",
        tables_file,
        engine,
        [(hard, False), (soft, True)],
        THREE_WINDOWS,
    )

    # Cycle 2 reads the 8 changes of the window; the hard table removes keys 2 and 3.
    second = statuses[1]["cdc_payments"]
    assert (second["rowsInserted"], second["rowsUpdated"], second["rowsDeleted"]) == (2, 1, 2)
    engine.dispose()


@pytest.mark.postgres
def test_postgresql_changes_reach_silver_through_a_real_slot_soft(
    pg_schema, postgres_url, tmp_path, write_tables, icetide
):
    schema, engine = pg_schema
    metadata = sa.MetaData(schema=schema)
    table = payments_table(metadata, "payments")
    metadata.create_all(engine)
    # One cdc table per slot (docs/sources.md): the source endpoint names one slot, and the table's
    # first task starts at the slot's start point (cdcStartPoint).
    start_point = slot_start_point(postgres_url, DEFAULT_SLOT_NAME)
    tables_file = write_tables([{**_item(schema, table, "soft"), "cdcStartPoint": start_point}])

    # Two windows: the full load, then a cdc task from its checkpoint (the SQLite test's three
    # windows check the silver side of a key coming back in a later window, whatever the source).
    statuses = _cycles(
        icetide, tmp_path / "ws", postgres_url, tables_file, engine, [(table, True)], TWO_WINDOWS
    )

    assert [status["cdc_payments"]["lastRunStatus"] for status in statuses] == ["SUCCEEDED"] * 2
