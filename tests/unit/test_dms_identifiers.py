"""Run ids, execution names and DMS identifiers (contracts: "Identifiers"; DMS naming rules)."""

import hashlib
from datetime import UTC, datetime, timedelta, timezone

import pytest

from icetide.dms.identifiers import (
    endpoint_identifier,
    execution_name,
    instance_identifier,
    run_id,
    schedule_slot,
    task_identifier,
    validate_execution_name,
    validate_identifier,
)

SLOT = datetime(2026, 11, 21, 7, 0, tzinfo=UTC)


def test_run_id_is_table_and_utc_slot() -> None:
    assert run_id("dbo_orders", SLOT) == "dbo_orders-20261121T0700Z"


def test_run_id_converts_the_slot_to_utc_and_takes_naive_as_utc() -> None:
    berlin = timezone(timedelta(hours=1))
    assert run_id("dbo_orders", datetime(2026, 11, 21, 8, 0, tzinfo=berlin)) == "dbo_orders-20261121T0700Z"
    assert run_id("dbo_orders", datetime(2026, 11, 21, 7, 0)) == "dbo_orders-20261121T0700Z"


def test_execution_name_is_the_run_id() -> None:
    assert execution_name("dbo_orders", SLOT) == "dbo_orders-20261121T0700Z"


def test_a_long_table_name_is_cut_and_hashed_keeping_the_slot() -> None:
    table = "t" * 100
    digest = hashlib.sha256(table.encode()).hexdigest()[:8]

    name = run_id(table, SLOT)

    assert name == "t" * 57 + digest + "-20261121T0700Z"
    assert len(name) == 80


def test_run_id_refuses_a_bad_table_name() -> None:
    with pytest.raises(ValueError, match=r"'dbo\.orders' is not a valid targetTableName"):
        run_id("dbo.orders", SLOT)


def test_schedule_slot_floors_to_the_slot_start() -> None:
    assert schedule_slot(datetime(2026, 11, 21, 7, 59, 59, tzinfo=UTC)) == SLOT
    assert schedule_slot(datetime(2026, 11, 21, 7, 44, tzinfo=UTC), 15) == datetime(
        2026, 11, 21, 7, 30, tzinfo=UTC
    )
    with pytest.raises(ValueError, match="positive number of minutes"):
        schedule_slot(SLOT, 0)


@pytest.mark.parametrize(
    ("name", "reason"),
    [
        ("", "must be 1 to 80 characters long"),
        ("x" * 81, "must be 1 to 80 characters long"),
        ("orders 2026", "must not contain ' '"),
        ("orders/2026", "must not contain '/'"),
        ("orders:2026", "must not contain ':'"),
        ("orders\x7f", "must not contain white space or control characters"),
    ],
)
def test_execution_names_follow_the_step_functions_charset(name: str, reason: str) -> None:
    with pytest.raises(ValueError, match=reason):
        validate_execution_name(name)


def test_dms_identifiers_are_derived_from_the_run_id() -> None:
    assert task_identifier("dbo_orders-20261121T0700Z") == "icetide-dbo-orders-20261121t0700z"
    assert endpoint_identifier("dbo_orders-20261121T0700Z") == "icetide-dbo-orders-20261121t0700z"
    assert instance_identifier("dbo_orders-20261121T0700Z") == "icetide-dbo-orders-20261121t0700z"


def test_dms_identifiers_never_hold_double_or_trailing_hyphens() -> None:
    assert task_identifier("a__b_-20261121T0700Z") == "icetide-a-b-20261121t0700z"
    assert task_identifier("orders_") == "icetide-orders"


def test_a_long_run_id_gives_a_63_character_instance_identifier_with_a_digest() -> None:
    long_run = "x" * 57 + "abcdef12-20261121T0700Z"
    digest = hashlib.sha256(long_run.encode()).hexdigest()[:8]

    identifier = instance_identifier(long_run)

    assert identifier == "icetide-" + "x" * 46 + "-" + digest
    assert len(identifier) == 63
    # Two slots of the same long table must not share an instance name.
    assert instance_identifier(long_run.replace("0700Z", "0800Z")) != identifier


@pytest.mark.parametrize("value", ["icetide-orders-1", "A", "a" * 63, "Orders9"])
def test_valid_dms_identifiers_pass(value: str) -> None:
    assert validate_identifier(value, "replication instance", 63) == value


@pytest.mark.parametrize(
    ("value", "rule"),
    [
        ("", "must be 1 to 63 characters long"),
        ("a" * 64, "must be 1 to 63 characters long"),
        ("1orders", "must start with a letter"),
        ("-orders", "must start with a letter"),
        ("orders--1", "must not contain two consecutive hyphens"),
        ("orders-", "must not end with a hyphen"),
        ("orders_1", "may contain only ASCII letters, digits and hyphens"),
        ("ordérs", "may contain only ASCII letters, digits and hyphens"),
    ],
)
def test_invalid_dms_identifiers_name_the_rule(value: str, rule: str) -> None:
    with pytest.raises(ValueError, match=f"replication instance identifier '{value}' {rule}"):
        validate_identifier(value, "replication instance", 63)
