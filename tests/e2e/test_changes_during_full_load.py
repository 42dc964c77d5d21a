"""Changes committed during a cdc table's first full load, with the replication instance's clock
ahead of the source's, end to end: `icetide local run` on SQLite, the DMS stand-in, the real job.

DMS stamps full-load rows with their transfer time on the instance's clock and CDC rows with the
source's commit time (AWS DMS API reference, ``S3Settings.TimestampColumnName``), and applies
the changes committed during the full load after it. Here the stand-in reads each table's full load
in one statement, then, before transferring it, the source updates one row, deletes another and
inserts a third: the full load carries the old row and the deleted one, stamped a minute after
the changes' commit times. Whether those changes land in the first run's folder or in the next
one (the window's stop position), silver must end up holding the source's rows.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest
import sqlalchemy as sa

from e2e.helpers import PAYMENT_COLUMNS, payment, payments_table, run_cycle, silver_by_key, source_by_key
from icetide_local.standins.dms import replicator

pytestmark = pytest.mark.spark

DELETED_AT = "_icetide_deleted_at"


def _item(table: sa.Table, delete_mode: str) -> dict[str, Any]:
    return {
        "targetTableName": f"during_{table.name}",
        "sourceSchema": "main",
        "sourceTable": table.name,
        "primaryKeys": "id",
        "captureMode": "cdc",
        "deleteMode": delete_mode,
    }


def _changes_during_load(engine: sa.Engine, tables: dict[str, sa.Table]) -> Callable[[str, str], None]:
    """The stand-in's full-load hook: once per table, an update, a delete and an insert."""
    done: set[str] = set()

    def commit(schema: str, name: str) -> None:
        if name in done or name not in tables:
            return
        done.add(name)
        table = tables[name]
        with engine.begin() as connection:
            connection.execute(table.update().where(table.c.id == 1).values(note="changed during the load"))
            connection.execute(table.delete().where(table.c.id == 2))
            connection.execute(table.insert(), [payment(7, "inserted during the load")])

    return commit


def test_changes_committed_during_the_full_load_win_over_its_rows(
    tmp_path: Path, write_tables: Callable[..., Path], icetide: Callable[..., Any], monkeypatch
) -> None:
    path = tmp_path / "shop.db"
    engine = sa.create_engine(f"sqlite:///{path}")
    metadata = sa.MetaData()
    hard, soft = payments_table(metadata, "payments"), payments_table(metadata, "refunds")
    metadata.create_all(engine)
    with engine.begin() as connection:
        for table in (hard, soft):
            connection.execute(table.insert(), [payment(number) for number in range(1, 7)])
    tables_file = write_tables([_item(hard, "hard"), _item(soft, "soft")])
    monkeypatch.setattr(replicator, "INSTANCE_CLOCK_SKEW", dt.timedelta(minutes=1))
    monkeypatch.setattr(
        replicator, "DURING_FULL_LOAD", _changes_during_load(engine, {"payments": hard, "refunds": soft})
    )
    workspace, source = tmp_path / "ws", f"sqlite:///{path}"

    run_cycle(icetide, workspace, source, tables_file)  # the first runs: full-load-and-cdc
    monkeypatch.setattr(replicator, "DURING_FULL_LOAD", None)
    with engine.begin() as connection:
        connection.execute(hard.update().where(hard.c.id == 3).values(amount=Decimal("3.33")))
    run_cycle(icetide, workspace, source, tables_file)  # the next window: cdc

    expected = source_by_key(engine, hard, "id")
    assert expected[1][2] == "changed during the load" and 2 not in expected and 7 in expected
    assert silver_by_key(workspace, "during_payments", PAYMENT_COLUMNS, "id") == expected
    soft_silver = silver_by_key(workspace, "during_refunds", [*PAYMENT_COLUMNS, DELETED_AT], "id")
    assert {key: row[:-1] for key, row in soft_silver.items() if row[-1] is None} == source_by_key(
        engine, soft, "id"
    )
    assert {key for key, row in soft_silver.items() if row[-1] is not None} == {2}
    engine.dispose()
