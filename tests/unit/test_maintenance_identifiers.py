"""Maintenance run ids: one per table and slot, a valid execution name, told apart from merge runs."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from icetide.dms.identifiers import is_maintenance_run_id, maintenance_run_id, run_id, schedule_slot

SLOT = datetime(2026, 11, 21, 0, 0, tzinfo=UTC)


def test_a_maintenance_run_id_names_the_table_the_marker_and_the_slot() -> None:
    assert maintenance_run_id("dbo_orders", SLOT) == "dbo_orders-maintain-20261121T0000Z"


def test_the_same_slot_gives_the_same_id_whatever_the_time_within_it() -> None:
    late = schedule_slot(datetime(2026, 11, 21, 23, 59, tzinfo=UTC), 1440)

    assert maintenance_run_id("dbo_orders", late) == maintenance_run_id("dbo_orders", SLOT)


def test_a_long_table_name_is_cut_to_an_80_character_execution_name_keeping_the_slot() -> None:
    long_name = "t" + "x" * 127
    other = "t" + "x" * 126 + "y"

    first, second = maintenance_run_id(long_name, SLOT), maintenance_run_id(other, SLOT)

    assert len(first) == 80
    assert first.endswith("-maintain-20261121T0000Z")
    assert first != second


def test_an_invalid_table_name_is_refused() -> None:
    with pytest.raises(ValueError, match="is not a valid targetTableName"):
        maintenance_run_id("dbo-orders", SLOT)


@pytest.mark.parametrize(
    ("candidate", "expected"),
    [
        ("dbo_orders-maintain-20261121T0000Z", True),
        ("dbo_orders-20261121T0700Z", False),
        # A table may be called "maintain": its merge run is still a merge run.
        ("maintain-20261121T0700Z", False),
        ("dbo_orders-maintain-20261121T0000Z-retry", False),
        ("", False),
    ],
)
def test_a_maintenance_run_id_is_told_apart_from_a_merge_run_id(candidate: str, expected: bool) -> None:
    assert is_maintenance_run_id(candidate) is expected


def test_merge_run_ids_are_unchanged() -> None:
    assert run_id("dbo_orders", datetime(2026, 11, 21, 7, 0, tzinfo=UTC)) == "dbo_orders-20261121T0700Z"
    assert is_maintenance_run_id(maintenance_run_id("x" * 128, SLOT))
