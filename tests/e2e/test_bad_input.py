"""Bad input through `icetide local run`: each gives a clear message, the good tables still load,
and nothing already in silver is lost (nor any watermark moved by a failed run). One workspace goes
through every kind, a cycle after another: each cycle's failures are told apart by table and state."""

from __future__ import annotations

import json
from decimal import Decimal

import pytest
import sqlalchemy as sa

from e2e.helpers import SHOP_ORDERS_ITEM, assert_silver_matches_source, silver_by_key

pytestmark = pytest.mark.spark

PRICE, TEXT = sa.Numeric(10, 2), sa.String(20)
PRICES = [{"id": 1, "price": Decimal("2.50")}, {"id": 2, "price": Decimal("4.75")}]
PRICES_ITEM = {**SHOP_ORDERS_ITEM, "targetTableName": "shop_prices", "sourceTable": "prices"}


@pytest.fixture
def shop(tmp_path):
    """A SQLite source with orders and prices (a decimal column), loaded once into a workspace."""
    url = f"sqlite:///{tmp_path / 'shop.db'}"
    engine = sa.create_engine(url)
    metadata = sa.MetaData()
    orders = sa.Table("orders", metadata, _key(), sa.Column("item", TEXT))
    prices = sa.Table("prices", metadata, _key(), sa.Column("price", PRICE))
    metadata.create_all(engine)
    with engine.begin() as connection:
        connection.execute(orders.insert(), [{"id": 1, "item": "tea"}, {"id": 2, "item": "cake"}])
        connection.execute(prices.insert(), PRICES)
    yield url, engine, orders, prices
    engine.dispose()


def _key() -> sa.Column:
    return sa.Column("id", sa.Integer, primary_key=True)


def _state(workspace) -> dict[str, dict]:
    items = json.loads((workspace / "state" / "control-table.json").read_text())
    return {item["targetTableName"]["S"]: item for item in items}


def _first_cycle(icetide, write_tables, workspace, url):
    tables_file = write_tables([SHOP_ORDERS_ITEM, PRICES_ITEM])
    result = icetide("local", "run", "--workspace", workspace, "--source", url, "--tables", tables_file)
    assert result.exit_code == 0, result.text


def test_bad_input_fails_its_tables_alone_and_loses_nothing(
    shop, tmp_path, write_tables, icetide, unused_tcp_port
):
    """One workspace through three kinds of bad input, a cycle each after a good first cycle."""
    url, engine, orders, _ = shop
    workspace = tmp_path / "ws"
    _first_cycle(icetide, write_tables, workspace, url)

    _a_bad_item_a_missing_table_and_a_type_change_fail_alone(
        workspace, url, engine, orders, write_tables, icetide
    )
    _an_unreachable_database_fails_every_table_and_changes_nothing(
        workspace, engine, orders, write_tables, icetide, unused_tcp_port
    )


def _a_bad_item_a_missing_table_and_a_type_change_fail_alone(
    workspace, url, engine, orders, write_tables, icetide
):
    """An invalid control item, a source table that does not exist and an incompatible type change
    (prices' decimal column now text) in one cycle: each fails its table alone, orders still loads."""
    with engine.begin() as connection:
        connection.execute(sa.text("DROP TABLE prices"))
        connection.execute(sa.text("CREATE TABLE prices (id INTEGER PRIMARY KEY, price VARCHAR(20))"))
        connection.execute(sa.text("INSERT INTO prices VALUES (1, 'ask the baker'), (2, '4.75')"))
        connection.execute(orders.insert(), [{"id": 3, "item": "scone"}])
    bad_operator = {**SHOP_ORDERS_ITEM, "targetTableName": "shop_bad", "filteroperator": "gt"}
    missing = {**SHOP_ORDERS_ITEM, "targetTableName": "shop_missing", "sourceTable": "no_such_table"}

    result = icetide(
        "local", "run", "--workspace", workspace, "--source", url,
        "--tables", write_tables([SHOP_ORDERS_ITEM, bad_operator, missing, PRICES_ITEM]),
    )  # fmt: skip

    assert result.exit_code == 1
    assert "FAILED shop_bad: invalid control item: filteroperator: 'gt' is not" in result.out, "bad item"
    missing_line = next(line for line in result.out.splitlines() if line.startswith("  FAILED shop_missing:"))
    assert "main.no_such_table" in missing_line, "missing table"
    assert "does not exist" in missing_line, "missing table"
    assert "shop_orders" not in "".join(line for line in result.out.splitlines() if "FAILED" in line)
    assert_silver_matches_source(workspace, "shop_orders", engine, orders)
    assert _state(workspace)["shop_orders"]["watermark"] == {"N": "3"}
    # The type change.
    failure = next(line for line in result.out.splitlines() if line.startswith("  FAILED shop_prices:"))
    assert failure.startswith("  FAILED shop_prices: Run Glue job:")
    assert "price" in failure and "decimal(10,2)" in failure.lower() and "string" in failure.lower()
    # The failure record names the job's error, not the States.TaskFailed that carried it.
    assert failure.startswith("  FAILED shop_prices: Run Glue job: IncompatibleSchemaChange: "), failure
    assert _state(workspace)["shop_prices"]["lastRunError"]["S"].startswith("IncompatibleSchemaChange: ")
    assert silver_by_key(workspace, "shop_prices", ["id", "price"], "id") == {
        1: (1, Decimal("2.50")),
        2: (2, Decimal("4.75")),
    }, "the type change lost silver's prices"
    assert _state(workspace)["shop_prices"]["watermark"] == {"N": "2"}


def _an_unreachable_database_fails_every_table_and_changes_nothing(
    workspace, engine, orders, write_tables, icetide, port
):
    state_before = _state(workspace)
    silver_prices = silver_by_key(workspace, "shop_prices", ["id", "price"], "id")
    unreachable = f"postgresql+psycopg://icetide:pa55word-not-shown@127.0.0.1:{port}/shop"

    result = icetide(
        "local", "run", "--workspace", workspace, "--source", unreachable,
        "--tables", write_tables([SHOP_ORDERS_ITEM, PRICES_ITEM]),
    )  # fmt: skip

    assert result.exit_code == 1
    failed = [line for line in result.out.splitlines() if line.startswith("  FAILED ")]
    assert [line.split(":")[0] for line in failed] == ["  FAILED shop_orders", "  FAILED shop_prices"]
    assert all(f"cannot connect to the source postgresql+psycopg://icetide:***@127.0.0.1:{port}/shop" in line
               for line in failed)  # fmt: skip
    assert "pa55word-not-shown" not in result.text
    assert "pa55word-not-shown" not in (workspace / "logs" / "handlers.log").read_text()
    assert_silver_matches_source(workspace, "shop_orders", engine, orders)
    assert silver_by_key(workspace, "shop_prices", ["id", "price"], "id") == silver_prices
    state_after = _state(workspace)
    for table in ("shop_orders", "shop_prices"):
        assert state_after[table]["watermark"] == state_before[table]["watermark"], table
        assert state_after[table]["lastRunStatus"] == {"S": "FAILED"}, table
        assert state_after[table]["lastFailedState"] == {"S": "Poll replication task"}, table
