"""Reconcile end to end: a delta table whose source lost rows loses them in silver at its reconcile
run, and not before (issue 11).

Three cycles of the local stack on SQLite, the table with `reconcileEveryHours: 1`: the first load
(never a reconcile); rows are deleted at the source; the second cycle reconciles at once (loaded
before, never reconciled yet) and removes them; another row is deleted; the third cycle a minute
later is no reconcile run (the deleted row stays in silver). When a reconcile falls due hours after
the last one is tests/unit/test_capture_modes.py's. Silver is read with pyiceberg.
"""

from __future__ import annotations

from datetime import timedelta
from decimal import Decimal

import pytest
import sqlalchemy as sa

from e2e.helpers import silver_by_key, source_by_key
from icetide.clock import utc_now
from icetide.control.codec import from_typed_json
from icetide_local.workspace import Workspace
from icetide_local.workspace_cycle import run_workspace_cycle

pytestmark = pytest.mark.spark


def test_rows_lost_at_the_source_leave_silver_at_the_reconcile_run(tmp_path):
    path = tmp_path / "shop.db"
    engine = sa.create_engine(f"sqlite:///{path}")
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
    item = {
        "targetTableName": "shop_orders",
        "sourceSchema": "main",
        "sourceTable": "orders",
        "filtercolumn": "change_no",
        "filteroperator": "gte",
        "startvalue": 0,
        "primaryKeys": "id",
        "reconcileEveryHours": 1,
    }
    workspace = Workspace.open(tmp_path / "ws")
    source = f"sqlite:///{path}"
    start = utc_now()

    def cycle(minutes_later: int) -> dict:
        report = run_workspace_cycle(workspace, source, [item], now=start + timedelta(minutes=minutes_later))
        assert report.succeeded, report
        [saved] = [from_typed_json(typed) for typed in workspace.load_control_items()]
        return saved

    def silver_keys() -> set[int]:
        return set(silver_by_key(tmp_path / "ws", "shop_orders", ["id", "amount"], "id"))

    first = cycle(0)
    assert "lastReconcileTime" not in first
    assert silver_keys() == {1, 2, 3, 4, 5, 6}

    with engine.begin() as connection:
        connection.execute(orders.delete().where(orders.c.id.in_([2, 5])))
        connection.execute(
            orders.update().where(orders.c.id == 3).values(amount=Decimal("0.30"), change_no=7)
        )

    second = cycle(1)
    assert second["lastReconcileTime"] is not None
    assert second["lastRunStats"]["rowsDeleted"] == 2
    silver = silver_by_key(tmp_path / "ws", "shop_orders", ["id", "amount", "change_no"], "id")
    assert silver == source_by_key(engine, orders, "id")

    with engine.begin() as connection:
        connection.execute(orders.delete().where(orders.c.id == 4))
        connection.execute(
            orders.update().where(orders.c.id == 6).values(amount=Decimal("0.60"), change_no=8)
        )

    third = cycle(2)
    assert third["lastReconcileTime"] == second["lastReconcileTime"]
    # Not a reconcile run: the update arrives, the deleted row is still in silver.
    assert silver_by_key(tmp_path / "ws", "shop_orders", ["id", "amount"], "id")[6] == (6, Decimal("0.60"))
    assert silver_keys() == {1, 3, 4, 6}
    engine.dispose()
