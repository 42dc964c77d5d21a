"""The DMS stand-in selects exactly the rows a DMS full load with the same source filters selects.

Semantics from the AWS DMS user guide, "Using source filters": lte/ste (<=), gte (>=), eq, noteq,
between and notbetween (bounds inclusive, so notbetween excludes both bounds), null, notnull;
conditions within one filter ORed, filters ANDed. A NULL matches neither a comparison nor its negation.
Expected key sets are written by hand from the rows below.
"""

from __future__ import annotations

import datetime as dt
from typing import Any

import pytest
import sqlalchemy as sa

from icetide_local.standins.dms.replicator import TABLE_COMPLETED, TABLE_ERROR

# Row 6 sits half a second after 06:00 to test microsecond boundaries; row 7 holds NULLs.
ORDERS_ROWS = [
    {"id": 1, "qty": 10, "status": "new", "updated_at": dt.datetime(2026, 11, 21, 1, 0, 0)},
    {"id": 2, "qty": 20, "status": "new", "updated_at": dt.datetime(2026, 11, 21, 2, 0, 0)},
    {"id": 3, "qty": 30, "status": "paid", "updated_at": dt.datetime(2026, 11, 21, 3, 0, 0)},
    {"id": 4, "qty": 40, "status": "paid", "updated_at": dt.datetime(2026, 11, 21, 4, 0, 0)},
    {"id": 5, "qty": 50, "status": "sent", "updated_at": dt.datetime(2026, 11, 21, 5, 0, 0)},
    {"id": 6, "qty": 60, "status": "sent", "updated_at": dt.datetime(2026, 11, 21, 6, 0, 0, 500000)},
    {"id": 7, "qty": None, "status": "lost", "updated_at": None},
]

T02, T03 = "2026-11-21 02:00:00", "2026-11-21 03:00:00"
T04, T06 = "2026-11-21 04:00:00", "2026-11-21 06:00:00"


@pytest.fixture
def orders(source_db) -> sa.Table:
    return source_db.create_table(
        "orders",
        sa.Column("id", sa.Integer, primary_key=True),
        sa.Column("qty", sa.Integer),
        sa.Column("status", sa.String(100)),
        sa.Column("updated_at", sa.DateTime),
        rows=ORDERS_ROWS,
    )


def on(column: str, *conditions: dict[str, Any]) -> dict[str, Any]:
    """A DMS source filter on ``column``."""
    return {"filter-type": "source", "column-name": column, "filter-conditions": list(conditions)}


@pytest.fixture
def loaded_ids(source_db, orders, full_load, bronze):
    """Loads ``orders`` with the given filters and returns the ids written to bronze."""

    def load(*filters: dict[str, Any]) -> set[int]:
        result = full_load(source_db, "orders", *filters)
        assert [t.state for t in result.tables] == [TABLE_COMPLETED], result.tables[0].error_message
        return bronze.ids(source_db.schema, "orders")

    return load


INTEGER_CASES = [
    ({"filter-operator": "lte", "value": "30"}, {1, 2, 3}),
    ({"filter-operator": "ste", "value": "30"}, {1, 2, 3}),
    ({"filter-operator": "gte", "value": "40"}, {4, 5, 6}),
    ({"filter-operator": "eq", "value": "20"}, {2}),
    ({"filter-operator": "noteq", "value": "20"}, {1, 3, 4, 5, 6}),
    ({"filter-operator": "between", "start-value": "20", "end-value": "40"}, {2, 3, 4}),
    ({"filter-operator": "notbetween", "start-value": "20", "end-value": "40"}, {1, 5, 6}),
    ({"filter-operator": "null"}, {7}),
    ({"filter-operator": "notnull"}, {1, 2, 3, 4, 5, 6}),
]

TIMESTAMP_CASES = [
    ({"filter-operator": "lte", "value": T03}, {1, 2, 3}),
    ({"filter-operator": "ste", "value": T03}, {1, 2, 3}),
    ({"filter-operator": "gte", "value": T04}, {4, 5, 6}),
    ({"filter-operator": "gte", "value": "2026-11-21 06:00:00.5"}, {6}),
    ({"filter-operator": "eq", "value": T02}, {2}),
    ({"filter-operator": "noteq", "value": T02}, {1, 3, 4, 5, 6}),
    ({"filter-operator": "between", "start-value": T02, "end-value": T06}, {2, 3, 4, 5}),
    ({"filter-operator": "notbetween", "start-value": T02, "end-value": T06}, {1, 6}),
    ({"filter-operator": "null"}, {7}),
    ({"filter-operator": "notnull"}, {1, 2, 3, 4, 5, 6}),
]


@pytest.mark.parametrize(("condition", "expected"), INTEGER_CASES, ids=str)
def test_each_operator_on_an_integer_column(loaded_ids, condition, expected):
    assert loaded_ids(on("qty", condition)) == expected


@pytest.mark.parametrize(("condition", "expected"), TIMESTAMP_CASES, ids=str)
def test_each_operator_on_a_timestamp_column(loaded_ids, condition, expected):
    assert loaded_ids(on("updated_at", condition)) == expected


def test_conditions_within_a_filter_are_ored(loaded_ids):
    up_to_10 = {"filter-operator": "lte", "value": "10"}
    from_60 = {"filter-operator": "gte", "value": "60"}
    assert loaded_ids(on("qty", up_to_10, from_60)) == {1, 6}


def test_filters_are_anded(loaded_ids):
    at_least_20 = on("qty", {"filter-operator": "gte", "value": "20"})
    until_three = on("updated_at", {"filter-operator": "lte", "value": T03})
    assert loaded_ids(at_least_20, until_three) == {2, 3}


def test_a_string_filter_compares_the_value_as_written(loaded_ids):
    assert loaded_ids(on("status", {"filter-operator": "eq", "value": "paid"})) == {3, 4}


def test_a_hostile_filter_value_is_bound_not_executed(source_db, orders, full_load):
    hostile = {"filter-operator": "eq", "value": "'; DROP TABLE orders; --"}
    result = full_load(source_db, "orders", on("status", hostile))
    assert (result.tables[0].state, result.tables[0].full_load_rows) == (TABLE_COMPLETED, 0)
    assert source_db.has_table("orders")
    assert source_db.count(orders) == 7


def test_a_hostile_table_name_is_an_unknown_table_not_sql(source_db, orders, full_load):
    result = full_load(source_db, 'orders"; DROP TABLE orders; --')
    assert result.tables[0].state == TABLE_ERROR
    assert source_db.count(orders) == 7


def test_an_empty_result_writes_no_folder(source_db, orders, full_load, bronze):
    result = full_load(source_db, "orders", on("qty", {"filter-operator": "gte", "value": "1000"}))
    stats = result.tables[0]
    assert (stats.state, stats.full_load_rows, stats.files) == (TABLE_COMPLETED, 0, ())
    assert not bronze.table_dir(source_db.schema, "orders").exists()


@pytest.mark.parametrize(
    ("column", "value", "type_word"),
    [("qty", "ten", "INTEGER"), ("qty", "10.5", "INTEGER"), ("updated_at", "yesterday", "TIME")],
)
def test_a_filter_value_of_the_wrong_type_is_a_table_error_naming_column_value_and_type(
    source_db, orders, full_load, bronze, column, value, type_word
):
    result = full_load(source_db, "orders", on(column, {"filter-operator": "gte", "value": value}))
    stats = result.tables[0]
    assert stats.state == TABLE_ERROR
    assert f"'{column}'" in stats.error_message
    assert f"'{value}'" in stats.error_message
    assert type_word in stats.error_message
    assert not bronze.table_dir(source_db.schema, "orders").exists()


def test_a_filter_on_a_missing_column_is_a_table_error(source_db, orders, full_load):
    result = full_load(source_db, "orders", on("no_such_column", {"filter-operator": "null"}))
    assert result.tables[0].state == TABLE_ERROR
    assert "no_such_column" in result.tables[0].error_message


@pytest.mark.postgres
@pytest.mark.parametrize(
    ("condition", "expected"),
    [
        # A value without an offset is UTC; 08:00+02:00 is the same instant as 06:00Z.
        ({"filter-operator": "eq", "value": T06}, {1, 2}),
        ({"filter-operator": "gte", "value": "2026-11-21 08:00:00+01:00"}, {3}),
        ({"filter-operator": "lte", "value": "2026-11-21T06:00:00Z"}, {1, 2}),
    ],
    ids=["naive-is-utc", "offset-converted", "iso-z"],
)
def test_timestamptz_filters_compare_in_utc(postgresql_source, full_load, bronze, condition, expected):
    plus_two = dt.timezone(dt.timedelta(hours=2))
    postgresql_source.create_table(
        "events",
        sa.Column("id", sa.Integer, primary_key=True),
        sa.Column("happened_at", sa.DateTime(timezone=True)),
        rows=[
            {"id": 1, "happened_at": dt.datetime(2026, 11, 21, 6, 0, tzinfo=dt.UTC)},
            {"id": 2, "happened_at": dt.datetime(2026, 11, 21, 8, 0, tzinfo=plus_two)},
            {"id": 3, "happened_at": dt.datetime(2026, 11, 21, 7, 0, tzinfo=dt.UTC)},
        ],
    )
    result = full_load(postgresql_source, "events", on("happened_at", condition))
    assert result.tables[0].state == TABLE_COMPLETED
    assert bronze.ids(postgresql_source.schema, "events") == expected
