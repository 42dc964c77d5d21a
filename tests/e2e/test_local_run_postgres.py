"""Two hourly cycles of `icetide local run` against PostgreSQL, with changes in between.

Between cycles the source gets inserts and updates, among them rows whose filter value equals the
watermark the previous cycle stored: `gte` must re-read them, and the merge must update them in
place, or leave them as they are when they did not change. After each cycle every silver table,
read with pyiceberg, must equal its source table, and the run statistics must count what the
changes were.
"""

from __future__ import annotations

import uuid
from datetime import UTC, datetime, timedelta
from decimal import Decimal

import pytest
import sqlalchemy as sa

from e2e.helpers import assert_silver_matches_source, run_cycle
from icetide.control.codec import from_typed_json
from icetide_local.workspace import Workspace

pytestmark = [pytest.mark.spark, pytest.mark.postgres]

T0 = datetime(2026, 3, 1, 10, 0)


@pytest.fixture
def shop(postgres_url):
    """A fresh schema with accounts (timestamp watermark) and ledger (integer watermark)."""
    schema = f"shop_{uuid.uuid4().hex[:8]}"
    engine = sa.create_engine(postgres_url)
    with engine.begin() as connection:
        connection.execute(sa.schema.CreateSchema(schema))
    metadata = sa.MetaData(schema=schema)
    accounts = sa.Table(
        "accounts",
        metadata,
        sa.Column("id", sa.BigInteger, primary_key=True, autoincrement=False),
        sa.Column("owner", sa.String(50)),
        sa.Column("balance", sa.Numeric(14, 4)),
        sa.Column("opened_at", sa.DateTime(timezone=True)),
        sa.Column("updated_at", sa.DateTime, nullable=False),
    )
    ledger = sa.Table(
        "ledger",
        metadata,
        sa.Column("entry_id", sa.Integer, primary_key=True, autoincrement=False),
        sa.Column("account_id", sa.BigInteger, nullable=False),
        sa.Column("amount", sa.Numeric(12, 2), nullable=False),
        sa.Column("memo", sa.Text),
        sa.Column("seq", sa.BigInteger, nullable=False),
    )
    metadata.create_all(engine)
    yield schema, engine, accounts, ledger
    with engine.begin() as connection:
        connection.execute(sa.schema.DropSchema(schema, cascade=True))
    engine.dispose()


def _account(number: int, updated_at: datetime, owner: str | None = None) -> dict:
    return {
        "id": number,
        "owner": owner or f"owner {number}",
        "balance": Decimal(f"{number}000.{number}125"),
        "opened_at": datetime(2020, 1, number, 12, 30, tzinfo=UTC) + timedelta(microseconds=number),
        "updated_at": updated_at,
    }


def _entry(number: int, seq: int, memo: str | None = None) -> dict:
    return {"entry_id": number, "account_id": number % 3 + 1, "amount": Decimal(f"-{number}.5{number}"),
            "memo": memo, "seq": seq}  # fmt: skip


def test_two_cycles_keep_silver_equal_to_the_source(shop, postgres_url, tmp_path, write_tables, icetide):
    schema, engine, accounts, ledger = shop
    workspace = tmp_path / "ws"
    tables_file = write_tables(
        [
            {
                "targetTableName": "pg_accounts",
                "sourceSchema": schema,
                "sourceTable": "accounts",
                "filtercolumn": "updated_at",
                "filteroperator": "gte",
                "startvalue": "2000-01-01 00:00:00",
                "primaryKeys": "id",
            },
            {
                "targetTableName": "pg_ledger",
                "sourceSchema": schema,
                "sourceTable": "ledger",
                "filtercolumn": "seq",
                "filteroperator": "gte",
                "startvalue": "0",
                "primaryKeys": ["entry_id"],
            },
        ]
    )

    def cycle() -> dict[str, dict]:
        statuses = run_cycle(icetide, workspace, postgres_url, tables_file)
        assert_silver_matches_source(workspace, "pg_accounts", engine, accounts)
        assert_silver_matches_source(workspace, "pg_ledger", engine, ledger)
        return statuses

    with engine.begin() as connection:
        connection.execute(accounts.insert(), [_account(n, T0 + timedelta(minutes=n)) for n in range(1, 5)])
        # Entries 1 to 5 at seq 1 to 5; entry 8 at seq 5 too, the watermark, never changed.
        connection.execute(ledger.insert(), [_entry(n, seq=n) for n in range(1, 6)] + [_entry(8, seq=5)])

    first = cycle()

    assert _counts(first["pg_accounts"]) == ("2026-03-01 10:04:00", 4, 0, 0)
    assert _counts(first["pg_ledger"]) == (5, 6, 0, 0)

    with engine.begin() as connection:
        # At the boundary: account 4 changes without its timestamp moving; account 5 arrives stamped
        # exactly at the watermark; ledger entry 5 changes at seq 5 and entry 6 arrives at seq 5.
        connection.execute(accounts.update().where(accounts.c.id == 4).values(balance=Decimal("0.0001")))
        connection.execute(accounts.insert(), [_account(5, T0 + timedelta(minutes=4))])
        connection.execute(
            accounts.update().where(accounts.c.id == 1).values(updated_at=T0 + timedelta(hours=1))
        )
        connection.execute(ledger.update().where(ledger.c.entry_id == 5).values(memo="corrected"))
        connection.execute(ledger.insert(), [_entry(6, seq=5), _entry(7, seq=6, memo="new")])

    second = cycle()

    assert _counts(second["pg_accounts"]) == ("2026-03-01 11:00:00", 1, 2, 0)
    assert _counts(second["pg_ledger"]) == (6, 2, 1, 0)
    # Entries 5 to 8 are read (seq 5 and up). The re-read boundary row entry 8 holds silver's
    # values, so it is unchanged (neither inserted nor updated, whatever its newer DMS transfer
    # time); entry 5 beside it is updated.
    assert second["pg_ledger"]["lastRunStatus"] == "SUCCEEDED"
    ledger_stats = _last_run_stats(workspace, "pg_ledger")
    assert {name: ledger_stats[name] for name in ROW_COUNTS} == {
        "rowsRead": 4,
        "rowsInserted": 2,
        "rowsUpdated": 1,
        "rowsDeleted": 0,
        "rowsUnchanged": 1,
    }


ROW_COUNTS = ("rowsRead", "rowsInserted", "rowsUpdated", "rowsDeleted", "rowsUnchanged")


def _last_run_stats(workspace, target_table_name: str) -> dict:
    """``lastRunStats`` of a table's control item as the workspace saved it (`status` omits some)."""
    items = [from_typed_json(item) for item in Workspace.existing(workspace).load_control_items()]
    [item] = [item for item in items if item["targetTableName"] == target_table_name]
    return item["lastRunStats"]


def _counts(status: dict) -> tuple:
    return status["watermark"], status["rowsInserted"], status["rowsUpdated"], status["rowsDeleted"]
