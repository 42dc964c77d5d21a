"""Silver tables read with pyiceberg straight from their Iceberg metadata (never with icetide's code),
and source tables read with SQLAlchemy, in one comparable form."""

from __future__ import annotations

import json
from collections.abc import Callable
from datetime import UTC, datetime
from decimal import Decimal
from pathlib import Path
from typing import Any

import sqlalchemy as sa
from pyiceberg.table import StaticTable

SILVER_DATABASE = "icetide_silver"  # GLUE_DATABASE of the local stack


def silver_table(workspace: Path, target_table_name: str) -> StaticTable:
    """The silver table as pyiceberg sees it from the Hadoop catalog's files."""
    return StaticTable.from_metadata(str(workspace / "warehouse" / SILVER_DATABASE / target_table_name))


def _utc(value: Any) -> Any:
    # Both sides in one form: aware timestamps as UTC, naive ones as they are.
    return value.astimezone(UTC) if isinstance(value, datetime) and value.tzinfo else value


def silver_by_key(workspace: Path, target_table_name: str, columns: list[str], key: str) -> dict[Any, tuple]:
    """Silver rows (only `columns`, in that order) by key; fails on a duplicate key."""
    scan = silver_table(workspace, target_table_name).scan(selected_fields=tuple(columns))
    rows = scan.to_arrow().to_pylist()
    by_key = {row[key]: tuple(_utc(row[column]) for column in columns) for row in rows}
    assert len(by_key) == len(rows), f"{target_table_name}: silver holds a key more than once"
    return by_key


def source_by_key(engine: sa.Engine, table: sa.Table, key: str) -> dict[Any, tuple]:
    """Source rows (every column, in table order) by key, read with SQLAlchemy."""
    with engine.connect() as connection:
        rows = connection.execute(sa.select(table)).mappings().all()
    return {row[key]: tuple(_utc(row[column.name]) for column in table.columns) for row in rows}


def assert_silver_matches_source(
    workspace: Path, target_table_name: str, engine: sa.Engine, table: sa.Table
) -> None:
    key = next(iter(table.primary_key.columns)).name
    columns = [column.name for column in table.columns]
    assert silver_by_key(workspace, target_table_name, columns, key) == source_by_key(engine, table, key)


# The order-table control item several end-to-end tests load (a gte delta on the key).
SHOP_ORDERS_ITEM = {
    "targetTableName": "shop_orders",
    "sourceSchema": "main",
    "sourceTable": "orders",
    "filtercolumn": "id",
    "filteroperator": "gte",
    "startvalue": 0,
    "primaryKeys": "id",
}


def run_cycle(
    icetide: Callable[..., Any], workspace: Path, source: str, tables_file: Path
) -> dict[str, dict]:
    """One `icetide local run` cycle, which must succeed; then each table's status entry by name."""
    result = icetide("local", "run", "--workspace", workspace, "--source", source, "--tables", tables_file)
    assert result.exit_code == 0, result.text
    status = icetide("local", "status", "--workspace", workspace, "--json")
    return {entry["targetTableName"]: entry for entry in json.loads(status.out)}


# The payments table the change-capture tests change cycle after cycle.
PAYMENT_COLUMNS = ["id", "amount", "note"]


def payments_table(metadata: sa.MetaData, name: str = "payments") -> sa.Table:
    """A payments table: an integer key, a decimal amount, a nullable note."""
    return sa.Table(
        name,
        metadata,
        sa.Column("id", sa.Integer, primary_key=True, autoincrement=False),
        sa.Column("amount", sa.Numeric(10, 2), nullable=False),
        sa.Column("note", sa.String(40)),
    )


def payment(number: int, note: str | None = None) -> dict[str, Any]:
    """The payment with key ``number`` (its amount derived from the key)."""
    return {"id": number, "amount": Decimal(f"{number}.{number:02d}"), "note": note}
