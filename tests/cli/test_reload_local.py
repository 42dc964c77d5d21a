"""`icetide reload TABLE --workspace DIR --source URL --tables FILE`: a full reload, locally.

The Spark test is the issue's case: a delta table whose source deletes a row, which an ordinary run
cannot see; after the reload silver (read with pyiceberg) equals the source, and the reload added
exactly one snapshot. The other tests need no Spark: the request is written into the workspace's
state (or refused) before any run.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest
import sqlalchemy as sa
from pyiceberg.table import StaticTable

import icetide.clock
from e2e.helpers import silver_by_key, source_by_key
from icetide.control.codec import from_typed_json, to_typed_json
from icetide.control.model import ControlItem
from icetide.run.reload import reload_due
from icetide_cli import main as cli_main
from icetide_local.workspace import Workspace
from icetide_local.workspace_cycle import run_workspace_cycle

ORDERS = {
    "targetTableName": "shop_orders",
    "sourceSchema": "main",
    "sourceTable": "orders",
    "filtercolumn": "change_no",
    "filteroperator": "gte",
    "startvalue": 0,
    "primaryKeys": "id",
}
NOW = datetime(2026, 11, 24, 10, 15, 30, tzinfo=UTC)


@dataclass(frozen=True)
class Result:
    exit_code: int
    out: str
    err: str


@pytest.fixture
def reload(capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> Callable[..., Result]:
    """``reload(ARGS...)``: `icetide reload` in this process."""

    def run(*args: object) -> Result:
        capsys.readouterr()
        code = cli_main.main(["reload", *(str(arg) for arg in args)])
        captured = capsys.readouterr()
        return Result(code, captured.out, captured.err)

    return run


def _tables_file(tmp_path: Path, *items: dict[str, Any]) -> Path:
    path = tmp_path / "tables.json"
    path.write_text(json.dumps(list(items)), encoding="utf-8")
    return path


def _saved(workspace: Path, table: str) -> dict[str, Any]:
    items = [from_typed_json(typed) for typed in Workspace.existing(workspace).load_control_items()]
    [item] = [item for item in items if item["targetTableName"] == table]
    return item


def _loaded_workspace(tmp_path: Path, item: dict[str, Any]) -> Path:
    """A workspace whose saved state says ``item``'s table loaded once (no Spark: written by hand)."""
    workspace = Workspace.open(tmp_path / "ws")
    state = {"lastRunId": f"{item['targetTableName']}-20261124T0900Z", "lastRunStatus": "SUCCEEDED",
             "lastRunTime": "2026-11-24T09:01:00Z", "watermark": 6}  # fmt: skip
    workspace.save_control_items([to_typed_json({**item, **state})])
    return workspace.root


def test_no_start_writes_the_request_into_the_workspace_state(tmp_path, reload, monkeypatch) -> None:
    monkeypatch.setattr(icetide.clock, "utc_now", lambda: NOW)
    workspace = _loaded_workspace(tmp_path, ORDERS)

    result = reload(
        "shop_orders", "--workspace", workspace, "--tables", _tables_file(tmp_path, ORDERS), "--no-start"
    )

    assert result.exit_code == 0, result.err
    assert result.out.splitlines() == [
        "shop_orders: reload requested at 2026-11-24T10:15:30Z",
        "  the table's next run is the reload",
    ]
    saved = _saved(workspace, "shop_orders")
    assert saved["reloadRequested"] == {
        "requestedAt": "2026-11-24T10:15:30Z",
        "afterRun": "shop_orders-20261124T0900Z",
    }
    assert saved["watermark"] == 6
    assert reload_due(ControlItem.parse(saved)) is True


def test_a_table_without_keys_is_refused_and_nothing_written(tmp_path, reload) -> None:
    events = {**ORDERS, "targetTableName": "shop_events", "loadMode": "append", "primaryKeys": ""}
    workspace = _loaded_workspace(tmp_path, events)

    result = reload(
        "shop_events", "--workspace", workspace, "--tables", _tables_file(tmp_path, events), "--no-start"
    )

    assert result.exit_code == 2
    assert result.err.strip() == (
        "icetide reload: shop_events has no primaryKeys: a reload replaces silver's rows by key, and an "
        "append-only table has none"
    )
    assert "reloadRequested" not in _saved(workspace, "shop_events")


def test_local_options_are_required_and_checked(tmp_path, reload) -> None:
    workspace = _loaded_workspace(tmp_path, ORDERS)
    tables = _tables_file(tmp_path, ORDERS)

    no_tables = reload("shop_orders", "--workspace", workspace, "--no-start")
    no_source = reload("shop_orders", "--workspace", workspace, "--tables", tables)
    unknown = reload("shop_refunds", "--workspace", workspace, "--tables", tables, "--no-start")

    assert (no_tables.exit_code, no_source.exit_code, unknown.exit_code) == (2, 2, 2)
    assert "--workspace needs --tables FILE" in no_tables.err
    assert "--workspace needs --source URL to run the reload (or --no-start)" in no_source.err
    assert "the tables file has no item for table 'shop_refunds'" in unknown.err
    assert "reloadRequested" not in _saved(workspace, "shop_orders")


@pytest.mark.spark
def test_a_reload_removes_a_row_deleted_at_the_source_in_one_new_snapshot(tmp_path, reload) -> None:
    database = tmp_path / "shop.db"
    source = f"sqlite:///{database}"
    engine = sa.create_engine(source)
    metadata = sa.MetaData()
    orders = sa.Table(
        "orders",
        metadata,
        sa.Column("id", sa.Integer, primary_key=True, autoincrement=False),
        sa.Column("amount", sa.Numeric(10, 2), nullable=False),
        sa.Column("change_no", sa.Integer, nullable=False),
    )
    metadata.create_all(engine)
    with engine.begin() as connection:
        connection.execute(
            orders.insert(), [{"id": n, "amount": Decimal(f"{n}.50"), "change_no": n} for n in range(1, 7)]
        )
    workspace = Workspace.open(tmp_path / "ws")
    assert run_workspace_cycle(workspace, source, [ORDERS], now=icetide.clock.utc_now()).succeeded
    # A filtered delta run would see the update (change_no moves), never the delete; the reload
    # reads every row whatever its filter value, so it sees both.
    with engine.begin() as connection:
        connection.execute(orders.delete().where(orders.c.id == 2))
        connection.execute(
            orders.update().where(orders.c.id == 3).values(amount=Decimal("0.30"), change_no=7)
        )
    columns = ["id", "amount", "change_no"]
    location = str(workspace.warehouse / "icetide_silver" / "shop_orders")
    before = [snapshot.snapshot_id for snapshot in StaticTable.from_metadata(location).snapshots()]

    result = reload(
        "shop_orders",
        "--workspace",
        workspace.root,
        "--source",
        source,
        "--tables",
        _tables_file(tmp_path, ORDERS),
        "--json",
    )

    assert result.exit_code == 0, result.err
    outcome = json.loads(result.out)
    assert outcome["status"] == "SUCCEEDED"
    # Every row read again; the one the source lost deleted, the one it changed updated; nothing
    # else rewritten.
    assert {
        name: outcome["stats"][name]
        for name in ("rowsRead", "rowsInserted", "rowsUpdated", "rowsDeleted", "rowsUnchanged")
    } == {
        "rowsRead": 5,
        "rowsInserted": 0,
        "rowsUpdated": 1,
        "rowsDeleted": 1,
        "rowsUnchanged": 4,
    }
    assert silver_by_key(workspace.root, "shop_orders", columns, "id") == source_by_key(engine, orders, "id")
    silver = StaticTable.from_metadata(location)
    after = [snapshot.snapshot_id for snapshot in silver.snapshots()]
    assert after[: len(before)] == before and len(after) == len(before) + 1
    current = silver.current_snapshot()
    assert current is not None and after[-1] == outcome["stats"]["snapshotId"] == current.snapshot_id
    saved = _saved(workspace.root, "shop_orders")
    assert saved["lastRunId"] == outcome["runId"]
    assert saved["reloadRequested"]["requestedAt"] == outcome["reloadRequested"]
    assert reload_due(ControlItem.parse(saved)) is False  # done: the next cycle is an ordinary delta
    engine.dispose()
