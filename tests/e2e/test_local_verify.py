"""`icetide verify TABLE --workspace DIR --source URL` against silver tables built by real cycles.

One workspace for the module, built by two cycles of the local stack (SQLite, real Spark + Iceberg):
a delta table keyed by `id`, an append-only table without keys and a cdc table with soft deletes
whose second cycle (of that table alone) marks a deleted key. Silver is never touched afterwards:
each test injects its differences into a copy of the source database (a row inserted without a
cycle is missing from silver, a row deleted without a cycle is extra in silver) and verifies
against that copy.
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import timedelta
from decimal import Decimal
from pathlib import Path

import pytest
import sqlalchemy as sa

from e2e.conftest import CliResult
from icetide.clock import utc_now
from icetide_local.workspace import Workspace
from icetide_local.workspace_cycle import run_workspace_cycle

pytestmark = pytest.mark.spark

ORDERS_ITEM = {
    "targetTableName": "shop_orders",
    "sourceSchema": "main",
    "sourceTable": "orders",
    "filtercolumn": "change_no",
    "filteroperator": "gte",
    "startvalue": 0,
    "primaryKeys": "id",
}
EVENTS_ITEM = {
    "targetTableName": "shop_events",
    "sourceSchema": "main",
    "sourceTable": "events",
    "filtercolumn": "seq",
    "filteroperator": "gte",
    "startvalue": 0,
    "loadMode": "append",
}
PAYMENTS_ITEM = {
    "targetTableName": "shop_payments",
    "sourceSchema": "main",
    "sourceTable": "payments",
    "primaryKeys": "id",
    "captureMode": "cdc",
    "deleteMode": "soft",
}
ITEMS = [ORDERS_ITEM, EVENTS_ITEM, PAYMENTS_ITEM]


@dataclass(frozen=True)
class Shop:
    """The module's workspace, its source database file and its tables."""

    workspace: Path
    database: Path
    orders: sa.Table
    events: sa.Table
    payments: sa.Table


def _tables() -> tuple[sa.MetaData, sa.Table, sa.Table, sa.Table]:
    metadata = sa.MetaData()
    orders = sa.Table(
        "orders",
        metadata,
        sa.Column("id", sa.Integer, primary_key=True, autoincrement=False),
        sa.Column("amount", sa.Numeric(10, 2), nullable=False),
        sa.Column("note", sa.String(40)),
        sa.Column("change_no", sa.Integer, nullable=False),
    )
    # No primary key: loaded append-only, compared as whole rows.
    events = sa.Table(
        "events",
        metadata,
        sa.Column("seq", sa.Integer, nullable=False),
        sa.Column("kind", sa.String(20), nullable=False),
    )
    payments = sa.Table(
        "payments",
        metadata,
        sa.Column("id", sa.Integer, primary_key=True, autoincrement=False),
        sa.Column("amount", sa.Numeric(10, 2), nullable=False),
    )
    return metadata, orders, events, payments


@pytest.fixture(scope="module")
def shop(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Shop]:
    root = tmp_path_factory.mktemp("verify")
    database = root / "shop.db"
    engine = sa.create_engine(f"sqlite:///{database}")
    metadata, orders, events, payments = _tables()
    metadata.create_all(engine)
    with engine.begin() as connection:
        connection.execute(
            orders.insert(),
            [
                {"id": n, "amount": Decimal(f"{n}.50"), "note": f"order {n}", "change_no": n}
                for n in range(1, 7)
            ],
        )
        connection.execute(events.insert(), [{"seq": 1, "kind": "open"}, {"seq": 2, "kind": "pay"}])
        connection.execute(payments.insert(), [{"id": n, "amount": Decimal(f"{n}.25")} for n in range(1, 5)])
    workspace = Workspace.open(root / "ws")
    start = utc_now()
    first = run_workspace_cycle(workspace, f"sqlite:///{database}", ITEMS, now=start)
    assert first.succeeded, first
    # Deleted at the source and captured: the second cycle keeps the row in silver, marked deleted.
    with engine.begin() as connection:
        connection.execute(payments.delete().where(payments.c.id == 2))
    # The cdc table alone: the others keep their state in the workspace and do not run.
    second = run_workspace_cycle(
        workspace, f"sqlite:///{database}", [PAYMENTS_ITEM], now=start + timedelta(minutes=1)
    )
    assert second.succeeded, second
    engine.dispose()
    yield Shop(root / "ws", database, orders, events, payments)


@pytest.fixture
def source_copy(shop: Shop, tmp_path: Path) -> Callable[..., str]:
    """``source_copy(change)``: the source database copied for this test, ``change(connection)``
    applied to the copy (no cycle runs); its URL."""

    def copy(change: Callable[[sa.Connection], object] | None = None) -> str:
        path = tmp_path / "source-copy.db"
        shutil.copyfile(shop.database, path)
        url = f"sqlite:///{path}"
        if change is not None:
            engine = sa.create_engine(url)
            with engine.begin() as connection:
                change(connection)
            engine.dispose()
        return url

    return copy


@pytest.fixture
def verify(icetide: Callable[..., CliResult], monkeypatch: pytest.MonkeyPatch) -> Callable[..., CliResult]:
    """``verify(TABLE, ARGS...)``: `icetide verify` run in this process."""

    def run(*args: object) -> CliResult:
        return icetide("verify", *args)

    return run


def test_silver_built_by_the_cycles_matches_its_source(shop: Shop, verify) -> None:
    for table, rows in (("shop_orders", 6), ("shop_events", 2), ("shop_payments", 3)):
        result = verify(table, "--workspace", shop.workspace, "--source", f"sqlite:///{shop.database}")

        assert result.exit_code == 0, result.text
        assert result.out.splitlines()[0].startswith(f"{table}: silver matches source"), result.out
        assert f"  source rows    {rows}" in result.out


def test_a_key_inserted_without_a_cycle_is_missing_and_one_deleted_is_extra(
    shop: Shop, verify, source_copy
) -> None:
    def change(connection: sa.Connection) -> None:
        connection.execute(
            shop.orders.insert(), [{"id": 7, "amount": Decimal("7.50"), "note": None, "change_no": 7}]
        )
        connection.execute(shop.orders.delete().where(shop.orders.c.id == 2))

    result = verify("shop_orders", "--workspace", shop.workspace, "--source", source_copy(change), "--json")

    assert result.exit_code == 1, result.text
    assert json.loads(result.out) == {
        "silverTable": "icetide_silver.shop_orders",
        "runId": None,
        "compared": "keys",
        "keyColumns": ["id"],
        "sourceFilter": "change_no gte '0'",
        "sourceRows": 6,
        "silverRows": 6,
        "missingFromSilver": {"count": 1, "first": [{"id": 7}]},
        "extraInSilver": {"count": 1, "first": [{"id": 2}]},
        "valuesDiffer": None,
        "duplicateKeysInSilver": 0,
        "columnsMissingFromSilver": [],
        "matches": False,
    }


def test_the_text_report_names_the_keys_and_their_counts(shop: Shop, verify, source_copy) -> None:
    def change(connection: sa.Connection) -> None:
        connection.execute(
            shop.orders.insert(),
            [{"id": n, "amount": Decimal("1.00"), "note": None, "change_no": n} for n in (8, 9, 10)],
        )
        connection.execute(shop.orders.delete().where(shop.orders.c.id.in_([1, 4])))

    result = verify(
        "shop_orders", "--workspace", shop.workspace, "--source", source_copy(change), "--show", "2"
    )

    assert result.exit_code == 1, result.text
    assert result.out.splitlines() == [
        "shop_orders: silver DIFFERS from source (compared keys)",
        "  source rows    7 (filter: change_no gte '0')",
        "  silver rows    6 (icetide_silver.shop_orders, live rows)",
        "  missing from silver: 3 keys",
        "    id=8",
        "    id=9",
        "    ... and 1 more",
        "  extra in silver: 2 keys",
        "    id=1",
        "    id=4",
    ]


def test_values_are_compared_only_when_asked(shop: Shop, verify, source_copy) -> None:
    def change(connection: sa.Connection) -> None:
        connection.execute(shop.orders.update().where(shop.orders.c.id == 3).values(amount=Decimal("0.30")))
        connection.execute(shop.orders.update().where(shop.orders.c.id == 5).values(note=None))

    url = source_copy(change)
    keys_only = verify("shop_orders", "--workspace", shop.workspace, "--source", url)
    with_values = verify("shop_orders", "--workspace", shop.workspace, "--source", url, "--values", "--json")

    assert keys_only.exit_code == 0, keys_only.text
    assert with_values.exit_code == 1, with_values.text
    report = json.loads(with_values.out)
    assert report["compared"] == "keys and values"
    assert report["valuesDiffer"] == {"count": 2, "first": [{"id": 3}, {"id": 5}]}
    assert (report["missingFromSilver"]["count"], report["extraInSilver"]["count"]) == (0, 0)


def test_a_soft_deleted_row_is_not_live(shop: Shop, verify, source_copy) -> None:
    # Silver still holds payment 2, marked deleted; the source has it again without a cycle.
    def change(connection: sa.Connection) -> None:
        connection.execute(shop.payments.insert(), [{"id": 2, "amount": Decimal("2.25")}])

    result = verify("shop_payments", "--workspace", shop.workspace, "--source", source_copy(change), "--json")

    assert result.exit_code == 1, result.text
    report = json.loads(result.out)
    assert (report["sourceRows"], report["silverRows"], report["sourceFilter"]) == (4, 3, None)
    assert report["missingFromSilver"] == {"count": 1, "first": [{"id": 2}]}
    assert report["extraInSilver"] == {"count": 0, "first": []}


def test_a_table_without_keys_is_compared_by_whole_rows(shop: Shop, verify, source_copy) -> None:
    def change(connection: sa.Connection) -> None:
        # A second copy of an existing row, and a row silver never got.
        connection.execute(shop.events.insert(), [{"seq": 2, "kind": "pay"}, {"seq": 3, "kind": "refund"}])
        connection.execute(shop.events.delete().where(shop.events.c.kind == "open"))

    result = verify("shop_events", "--workspace", shop.workspace, "--source", source_copy(change), "--json")

    assert result.exit_code == 1, result.text
    report = json.loads(result.out)
    assert (report["compared"], report["keyColumns"]) == ("rows", [])
    assert report["missingFromSilver"] == {
        "count": 2,
        "first": [{"seq": 2, "kind": "pay"}, {"seq": 3, "kind": "refund"}],
    }
    assert report["extraInSilver"] == {"count": 1, "first": [{"seq": 1, "kind": "open"}]}


def test_what_cannot_be_verified_is_said_with_exit_code_2(shop: Shop, verify, tmp_path: Path) -> None:
    url = f"sqlite:///{shop.database}"
    unknown = verify("shop_refunds", "--workspace", shop.workspace, "--source", url)
    no_source = verify("shop_orders", "--workspace", shop.workspace)
    missing_file = verify(
        "shop_orders", "--workspace", shop.workspace, "--source", f"sqlite:///{tmp_path}/x.db"
    )
    not_a_workspace = verify("shop_orders", "--workspace", tmp_path, "--source", url)

    assert unknown.exit_code == 2
    assert unknown.err.strip() == (
        f"icetide verify: workspace {shop.workspace} has no table 'shop_refunds' "
        "(its tables: shop_events, shop_orders, shop_payments)"
    )
    assert no_source.exit_code == 2
    assert "--workspace needs --source URL" in no_source.err
    assert missing_file.exit_code == 2
    assert "does not exist" in missing_file.err
    assert not_a_workspace.exit_code == 2
    assert "is not an icetide workspace" in not_a_workspace.err
