"""On SQLite the DMS stand-in compares timestamps as times, whatever text form the rows store them in.

SQLite has no time type: a DATETIME column holds whatever text the writer chose. Users write
``2026-11-21 12:00:00``, ``2026-11-21T12:00:00``, ``...12:00:00.000``, ``...14:00:00+02:00`` or
``...12:00:00Z``, all the same instant. DMS compares a filter value with a typed column as a
timestamp (in UTC), so the stand-in must too: a text comparison against SQLAlchemy's bound
``2026-11-21 12:00:00.000000`` skips the row stamped exactly at the watermark (``'...12:00:00' <
'...12:00:00.000000'``), and lets ``...13:00:00+02:00`` (11:00 UTC) pass a 12:00 lower bound.

Every row is inserted with the driver directly, so the stored text is exactly the form under test.
"""

from __future__ import annotations

from typing import Any

import pytest

from icetide_local.standins.dms.replicator import TABLE_COMPLETED, TABLE_ERROR

WATERMARK = "2026-11-21 12:00:00"  # how the Glue job writes a timestamp watermark (UTC)

# Each form stores three instants: 11:59:59.999999 UTC, 12:00:00 UTC (the watermark) and 12:00:01 UTC.
STORED_FORMS = {
    "space-no-fraction": ("2026-11-21 11:59:59.999999", "2026-11-21 12:00:00", "2026-11-21 12:00:01"),
    "T-no-fraction": ("2026-11-21T11:59:59.999999", "2026-11-21T12:00:00", "2026-11-21T12:00:01"),
    "T-milliseconds": ("2026-11-21T11:59:59.999999", "2026-11-21T12:00:00.000", "2026-11-21T12:00:01.000"),
    "space-six-digits": (
        "2026-11-21 11:59:59.999999",
        "2026-11-21 12:00:00.000000",
        "2026-11-21 12:00:01.000000",
    ),
    "offset-plus-two": (
        "2026-11-21T13:59:59.999999+02:00",
        "2026-11-21T14:00:00+02:00",
        "2026-11-21T14:00:01+02:00",
    ),
    "offset-minus-five": (
        "2026-11-21 06:59:59.999999-05:00",
        "2026-11-21 07:00:00-05:00",
        "2026-11-21 07:00:01-05:00",
    ),
    "zulu": ("2026-11-21T11:59:59.999999Z", "2026-11-21T12:00:00Z", "2026-11-21T12:00:01Z"),
}
BEFORE, AT, AFTER = 1, 2, 3


def _events(sqlite_source, stored: tuple[str, ...], declared_type: str = "DATETIME") -> None:
    with sqlite_source.engine.begin() as connection:
        connection.exec_driver_sql(
            f"CREATE TABLE events (id INTEGER PRIMARY KEY, updated_at {declared_type})"
        )
        for event_id, text in enumerate(stored, start=1):
            connection.exec_driver_sql("INSERT INTO events VALUES (?, ?)", (event_id, text))


def _on_updated_at(condition: dict[str, Any]) -> dict[str, Any]:
    return {"filter-type": "source", "column-name": "updated_at", "filter-conditions": [condition]}


def _loaded_ids(sqlite_source, full_load, bronze, condition: dict[str, Any]) -> set[int]:
    result = full_load(sqlite_source, "events", _on_updated_at(condition))
    assert [t.state for t in result.tables] == [TABLE_COMPLETED], result.tables[0].error_message
    return bronze.ids("main", "events")


@pytest.mark.parametrize("form", STORED_FORMS)
def test_a_gte_run_from_the_watermark_reads_the_row_stamped_at_it(sqlite_source, full_load, bronze, form):
    _events(sqlite_source, STORED_FORMS[form])
    assert _loaded_ids(sqlite_source, full_load, bronze, {"filter-operator": "gte", "value": WATERMARK}) == {
        AT,
        AFTER,
    }


@pytest.mark.parametrize("form", STORED_FORMS)
@pytest.mark.parametrize(
    ("condition", "expected"),
    [
        ({"filter-operator": "eq", "value": WATERMARK}, {AT}),
        ({"filter-operator": "noteq", "value": WATERMARK}, {BEFORE, AFTER}),
        ({"filter-operator": "lte", "value": WATERMARK}, {BEFORE, AT}),
        ({"filter-operator": "between", "start-value": WATERMARK, "end-value": WATERMARK}, {AT}),
        (
            {"filter-operator": "notbetween", "start-value": WATERMARK, "end-value": WATERMARK},
            {BEFORE, AFTER},
        ),
        # The filter value's own form does not matter either: the same instant with T and an offset.
        ({"filter-operator": "gte", "value": "2026-11-21T13:00:00+01:00"}, {AT, AFTER}),
    ],
    ids=["eq", "noteq", "lte", "between", "notbetween", "gte-offset-value"],
)
def test_every_operator_compares_stored_times_as_instants(
    sqlite_source, full_load, bronze, form, condition, expected
):
    _events(sqlite_source, STORED_FORMS[form])
    assert _loaded_ids(sqlite_source, full_load, bronze, condition) == expected


def test_a_timestamp_declared_column_is_a_time_too(sqlite_source, full_load, bronze):
    # SQLAlchemy reflects TIMESTAMP as its own type; it is a DateTime like DATETIME.
    _events(sqlite_source, STORED_FORMS["T-no-fraction"], declared_type="TIMESTAMP")
    gte = {"filter-operator": "gte", "value": WATERMARK}
    assert _loaded_ids(sqlite_source, full_load, bronze, gte) == {AT, AFTER}


def test_nulls_match_no_comparison_and_the_null_operators_still_see_them(sqlite_source, full_load, bronze):
    _events(sqlite_source, ("2026-11-21T12:00:00", None))  # type: ignore[arg-type]
    assert (
        _loaded_ids(sqlite_source, full_load, bronze, {"filter-operator": "noteq", "value": WATERMARK})
        == set()
    )
    assert _loaded_ids(sqlite_source, full_load, bronze, {"filter-operator": "null"}) == {2}


def test_a_stored_value_that_is_no_time_is_a_table_error_naming_it(sqlite_source, full_load, bronze):
    # A text comparison would silently leave the row out of a gte run; DMS would never hold such a value.
    _events(sqlite_source, ("2026-11-21T12:00:00", "next tuesday"))
    result = full_load(
        sqlite_source, "events", _on_updated_at({"filter-operator": "gte", "value": WATERMARK})
    )
    stats = result.tables[0]
    assert stats.state == TABLE_ERROR
    assert "'updated_at'" in stats.error_message
    assert "'next tuesday'" in stats.error_message
    assert not bronze.table_dir("main", "events").exists()


@pytest.mark.parametrize(
    ("stored", "value", "expected"),
    [
        (("12:00:00", "12:00:00.000000", "12:00:01"), "12:00:00", {1, 2, 3}),
        (("12:00", "11:59:59.5", "12:00:00.000001"), "12:00:00", {1, 3}),
    ],
    ids=["without-fractions", "without-seconds"],
)
def test_a_time_of_day_column_compares_as_a_time(sqlite_source, full_load, bronze, stored, value, expected):
    with sqlite_source.engine.begin() as connection:
        connection.exec_driver_sql("CREATE TABLE events (id INTEGER PRIMARY KEY, updated_at TIME)")
        for event_id, text in enumerate(stored, start=1):
            connection.exec_driver_sql("INSERT INTO events VALUES (?, ?)", (event_id, text))
    assert (
        _loaded_ids(sqlite_source, full_load, bronze, {"filter-operator": "gte", "value": value}) == expected
    )


def test_integer_and_text_filters_are_untouched(sqlite_source, full_load, bronze):
    with sqlite_source.engine.begin() as connection:
        connection.exec_driver_sql("CREATE TABLE events (id INTEGER PRIMARY KEY, kind VARCHAR(10))")
        connection.exec_driver_sql("INSERT INTO events VALUES (1, 'a'), (2, 'b'), (10, 'c')")
    gte_two = {"filter-type": "source", "column-name": "id", "filter-conditions": [
        {"filter-operator": "gte", "value": "2"}]}  # fmt: skip
    result = full_load(sqlite_source, "events", gte_two)
    assert result.tables[0].state == TABLE_COMPLETED
    assert bronze.ids("main", "events") == {2, 10}  # as numbers: text would put "10" before "2"


@pytest.mark.parametrize(
    ("stored", "bound", "at_or_after_as_times"),
    [
        ("2026-11-21 12:00:00", "2026-11-21 12:00:00.000000", True),  # the boundary row itself
        ("2026-11-21T13:00:00+02:00", "2026-11-21 12:00:00.000000", False),  # 11:00 UTC
    ],
    ids=["boundary-row-missed", "earlier-row-read"],
)
def test_the_text_comparison_the_stand_in_used_before_gets_the_boundary_wrong(
    sqlite_source, stored, bound, at_or_after_as_times
):
    """The fault the time comparison fixes, shown on SQLite itself: compared as text (the stand-in's
    old filter), the row stamped exactly at the watermark is not `>=` it, and a row an hour before
    the watermark in another zone is."""
    with sqlite_source.engine.begin() as connection:
        as_text = connection.exec_driver_sql("SELECT ? >= ?", (stored, bound)).scalar()
    assert bool(as_text) is not at_or_after_as_times
