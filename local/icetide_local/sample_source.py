"""The demo's source database: a small SQLite shop with customers, orders and payments.

The demo needs a source that exercises what delta loads get wrong, so the data is chosen, not random:
a decimal column (precision and scale must survive), a timestamp watermark (`gte` on `updated_at`),
an integer watermark (`gte` on `change_no`), and a second cycle whose changes include rows whose
filter value is EQUAL to the previous watermark (DMS has no strict "greater than", so those rows are
re-read and must merge without duplicates). Payments are captured as changes (`captureMode: cdc`):
its rows are inserted, updated and deleted between cycles, including a payment updated then deleted
in one window and one deleted then inserted again, which no delta load could follow.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta
from decimal import Decimal
from pathlib import Path
from typing import Any

import sqlalchemy as sa

# SQLite has one schema per database file, named "main"; DMS selection rules need a schema name.
SAMPLE_SCHEMA = "main"

_METADATA = sa.MetaData()

CUSTOMERS = sa.Table(
    "customers",
    _METADATA,
    sa.Column("id", sa.Integer, primary_key=True),
    sa.Column("name", sa.String(100), nullable=False),
    sa.Column("email", sa.String(200)),
    sa.Column("credit_limit", sa.Numeric(12, 2)),
    sa.Column("updated_at", sa.DateTime, nullable=False),
)

ORDERS = sa.Table(
    "orders",
    _METADATA,
    sa.Column("id", sa.Integer, primary_key=True),
    sa.Column("customer_id", sa.Integer, nullable=False),
    sa.Column("amount", sa.Numeric(10, 2), nullable=False),
    sa.Column("status", sa.String(20), nullable=False),
    sa.Column("ordered_at", sa.DateTime, nullable=False),
    sa.Column("change_no", sa.Integer, nullable=False),
)

PAYMENTS = sa.Table(
    "payments",
    _METADATA,
    sa.Column("id", sa.Integer, primary_key=True),
    sa.Column("order_id", sa.Integer, nullable=False),
    sa.Column("amount", sa.Numeric(10, 2), nullable=False),
    sa.Column("method", sa.String(20), nullable=False),
)

_FIRST_LOAD_TIME = datetime(2026, 1, 5, 8, 0, 0)


@dataclass(frozen=True)
class SampleSource:
    """Where the sample database lives and what the demo loads from it."""

    path: Path

    @property
    def url(self) -> str:
        return f"sqlite:///{self.path}"

    def engine(self) -> sa.Engine:
        return sa.create_engine(self.url)


def create_sample_source(path: Path) -> SampleSource:
    """Create the sample database at `path` with the first cycle's rows (replacing any old file)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.unlink(missing_ok=True)
    source = SampleSource(path)
    engine = source.engine()
    try:
        _METADATA.create_all(engine)
        with engine.begin() as connection:
            connection.execute(CUSTOMERS.insert(), _first_customers())
            connection.execute(ORDERS.insert(), _first_orders())
            connection.execute(PAYMENTS.insert(), _first_payments())
    finally:
        engine.dispose()
    return source


def _first_customers() -> list[dict[str, Any]]:
    names = ["Ada", "Grace", "Edsger", "Barbara", "Donald", "Frances"]
    return [
        {
            "id": number,
            "name": name,
            "email": f"{name.lower()}@example.com",
            "credit_limit": Decimal(f"{number * 1000}.{number:02d}"),
            "updated_at": _FIRST_LOAD_TIME + timedelta(minutes=number),
        }
        for number, name in enumerate(names, start=1)
    ]


def _first_orders() -> list[dict[str, Any]]:
    return [
        {
            "id": number,
            "customer_id": (number % 6) + 1,
            "amount": Decimal(f"{number * 7}.{(number * 13) % 100:02d}"),
            "status": "placed",
            "ordered_at": _FIRST_LOAD_TIME + timedelta(minutes=10 * number),
            "change_no": number,
        }
        for number in range(1, 9)
    ]


def _first_payments() -> list[dict[str, Any]]:
    methods = ["card", "transfer", "card", "voucher", "card", "transfer"]
    return [
        {
            "id": number,
            "order_id": number,
            "amount": Decimal(f"{number * 7}.{(number * 13) % 100:02d}"),
            "method": method,
        }
        for number, method in enumerate(methods, start=1)
    ]


def apply_second_cycle_changes(source: SampleSource) -> None:
    """Insert, update and delete rows between the first two demo cycles.

    Some changed rows keep a filter value equal to the first cycle's largest one (the watermark): a
    `gte` filter must pick them up again, and the merge must update, not duplicate, them.
    """
    engine = source.engine()
    try:
        with engine.begin() as connection:
            _change_customers(connection)
            _change_orders(connection)
            _change_payments(connection)
    finally:
        engine.dispose()


def apply_third_cycle_changes(source: SampleSource) -> None:
    """Between the second and third cycles: payments only (the delta tables do not change).

    A payment deleted in the previous window comes back under the same key; another is updated and
    then deleted in this one; one more is refunded (deleted).
    """
    engine = source.engine()
    try:
        with engine.begin() as connection:
            connection.execute(
                PAYMENTS.insert(), [{"id": 2, "order_id": 2, "amount": Decimal("14.26"), "method": "card"}]
            )
            connection.execute(PAYMENTS.update().where(PAYMENTS.c.id == 5).values(method="voucher"))
            connection.execute(PAYMENTS.delete().where(PAYMENTS.c.id == 5))
            connection.execute(PAYMENTS.delete().where(PAYMENTS.c.id == 6))
            connection.execute(PAYMENTS.update().where(PAYMENTS.c.id == 7).values(amount=Decimal("70.70")))
    finally:
        engine.dispose()


def _change_payments(connection: sa.Connection) -> None:
    connection.execute(
        PAYMENTS.insert(),
        [
            {"id": 7, "order_id": 9, "amount": Decimal("99.99"), "method": "card"},
            {"id": 8, "order_id": 10, "amount": Decimal("12.50"), "method": "transfer"},
        ],
    )
    connection.execute(PAYMENTS.update().where(PAYMENTS.c.id == 1).values(amount=Decimal("8.00")))
    # Updated, then deleted, in one window: silver must end without it.
    connection.execute(PAYMENTS.update().where(PAYMENTS.c.id == 3).values(method="voucher"))
    connection.execute(PAYMENTS.delete().where(PAYMENTS.c.id == 3))
    # Deleted now, inserted again before the third cycle.
    connection.execute(PAYMENTS.delete().where(PAYMENTS.c.id == 2))
    # Inserted and deleted in one window: silver never holds it.
    connection.execute(
        PAYMENTS.insert(), [{"id": 9, "order_id": 1, "amount": Decimal("1.00"), "method": "card"}]
    )
    connection.execute(PAYMENTS.delete().where(PAYMENTS.c.id == 9))


def _change_customers(connection: sa.Connection) -> None:
    watermark = connection.execute(sa.select(sa.func.max(CUSTOMERS.c.updated_at))).scalar_one()
    # Updated in place at the boundary: the newest row changes without its timestamp moving.
    connection.execute(
        CUSTOMERS.update()
        .where(CUSTOMERS.c.updated_at == watermark)
        .values(email="frances.allen@example.com")
    )
    connection.execute(
        CUSTOMERS.update()
        .where(CUSTOMERS.c.id == 2)
        .values(credit_limit=Decimal("2500.75"), updated_at=watermark + timedelta(hours=1))
    )
    connection.execute(
        CUSTOMERS.insert(),
        [
            # A new row committed late, stamped exactly at the boundary.
            {
                "id": 7,
                "name": "Alan",
                "email": "alan@example.com",
                "credit_limit": Decimal("7000.07"),
                "updated_at": watermark,
            },
            {
                "id": 8,
                "name": "Radia",
                "email": None,
                "credit_limit": Decimal("0.01"),
                "updated_at": watermark + timedelta(hours=1, seconds=30),
            },
        ],
    )


def _change_orders(connection: sa.Connection) -> None:
    watermark = connection.execute(sa.select(sa.func.max(ORDERS.c.change_no))).scalar_one()
    connection.execute(ORDERS.update().where(ORDERS.c.change_no == watermark).values(status="shipped"))
    connection.execute(
        ORDERS.update()
        .where(ORDERS.c.id == 3)
        .values(status="cancelled", amount=Decimal("0.00"), change_no=watermark + 1)
    )
    connection.execute(
        ORDERS.insert(),
        [
            {
                "id": 9,
                "customer_id": 7,
                "amount": Decimal("99999999.99"),
                "status": "placed",
                "ordered_at": _FIRST_LOAD_TIME + timedelta(days=1),
                "change_no": watermark,
            },
            {
                "id": 10,
                "customer_id": 8,
                "amount": Decimal("12.50"),
                "status": "placed",
                "ordered_at": _FIRST_LOAD_TIME + timedelta(days=1, minutes=5),
                "change_no": watermark + 2,
            },
        ],
    )


def sample_control_items() -> list[dict[str, Any]]:
    """The control items the demo writes for the sample tables, as a user would write them."""
    return [
        {
            "targetTableName": "main_customers",
            "activeflag": "Y",
            "sourceSchema": SAMPLE_SCHEMA,
            "sourceTable": CUSTOMERS.name,
            "filtercolumn": "updated_at",
            "filteroperator": "gte",
            "startvalue": "2000-01-01 00:00:00",
            "primaryKeys": "id",
            "loadMode": "merge",
        },
        {
            "targetTableName": "main_orders",
            "activeflag": "Y",
            "sourceSchema": SAMPLE_SCHEMA,
            "sourceTable": ORDERS.name,
            "filtercolumn": "change_no",
            "filteroperator": "gte",
            "startvalue": 0,
            "primaryKeys": "id",
            "loadMode": "merge",
        },
        {
            "targetTableName": "main_payments",
            "activeflag": "Y",
            "sourceSchema": SAMPLE_SCHEMA,
            "sourceTable": PAYMENTS.name,
            "primaryKeys": "id",
            "captureMode": "cdc",
        },
    ]
