"""Run ids, execution names and DMS identifiers (contracts: "Identifiers"; DMS naming rules)."""

import hashlib
import itertools
import re
from datetime import UTC, datetime, timedelta, timezone

import pytest

from icetide.dms.identifiers import (
    RunDmsResources,
    execution_name,
    run_id,
    schedule_slot,
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


# DMS's rule for task and endpoint identifiers (CreateReplicationTask, CreateEndpoint: 1-255 ASCII
# letters, digits, hyphens; first a letter; no "--"; no trailing "-"), written here apart from the
# code under test. Replication instances: the same, at most 63 characters, stored in lower case.
DMS_IDENTIFIER_RULE = re.compile(r"^(?!.*--)[A-Za-z][A-Za-z0-9-]*(?<!-)$")
STACK = "icetide"


def _kinds(resources: RunDmsResources) -> dict[str, str]:
    return {
        "task": resources.task_identifier,
        "endpoint": resources.endpoint_identifier,
        "instance": resources.instance_identifier,
    }


def _assert_dms_accepts(resources: RunDmsResources) -> None:
    for kind, identifier in _kinds(resources).items():
        assert DMS_IDENTIFIER_RULE.match(identifier), (kind, identifier)
        assert len(identifier) <= (63 if kind == "instance" else 255), (kind, identifier)


def _run_of(stack: str, table: str, slot: datetime = SLOT) -> RunDmsResources:
    return RunDmsResources(stack, table, run_id(table, slot))


def test_dms_identifiers_read_as_the_run_and_end_in_a_digest_of_stack_table_and_run() -> None:
    digest = hashlib.sha256(b'["icetide", "dbo_orders", "dbo_orders-20261121T0700Z"]').hexdigest()[:16]

    resources = RunDmsResources("icetide", "dbo_orders", "dbo_orders-20261121T0700Z")

    assert _kinds(resources) == {
        "task": f"icetide-dbo-orders-20261121t0700z-{digest}",
        "endpoint": f"icetide-dbo-orders-20261121t0700z-{digest}",
        "instance": f"icetide-dbo-orders-20261121t0700z-{digest}",
    }


def test_every_dms_resource_of_a_run_is_tagged_with_its_stack_table_and_run() -> None:
    resources = RunDmsResources("icetide-prod", "dbo_orders", "dbo_orders-20261121T0700Z")

    assert resources.tags == {
        "icetide:stack": "icetide-prod",
        "icetide:table": "dbo_orders",
        "icetide:run-id": "dbo_orders-20261121T0700Z",
    }


# Pairs that the old names (`icetide-<lowercased run id>`) merged, and more that sanitize alike.
LONG_PREFIX = "t" * 120
COLLIDING_BEFORE = [
    pytest.param((STACK, "Orders"), (STACK, "orders"), id="case"),
    pytest.param((STACK, "ORDERS"), (STACK, "Orders"), id="case-again"),
    pytest.param((STACK, "a_b"), (STACK, "a__b"), id="double-underscore"),
    pytest.param((STACK, "a_b"), (STACK, "a_b_"), id="trailing-underscore"),
    pytest.param((STACK, "a_b_c"), (STACK, "a__b___c"), id="underscore-runs"),
    pytest.param((STACK, "A_b"), (STACK, "a__B"), id="case-and-underscores"),
    pytest.param((STACK, LONG_PREFIX + "x"), (STACK, LONG_PREFIX + "y"), id="shared-120-prefix"),
    pytest.param((STACK, "orders"), ("icetide-prod", "orders"), id="same-table-two-stacks"),
    pytest.param(("icetide", "Orders"), ("Icetide", "Orders"), id="stacks-differing-in-case"),
    pytest.param(("a-b", "c"), ("a", "b_c"), id="stack-table-boundary"),
]


@pytest.mark.parametrize(("first", "second"), COLLIDING_BEFORE)
def test_runs_of_different_tables_or_stacks_never_share_a_dms_identifier(
    first: tuple[str, str], second: tuple[str, str]
) -> None:
    one, other = _run_of(*first), _run_of(*second)

    _assert_dms_accepts(one)
    _assert_dms_accepts(other)
    for kind, identifier in _kinds(one).items():
        # DMS folds instance identifiers to lower case: compare as DMS would.
        assert identifier.lower() != _kinds(other)[kind].lower(), kind


def test_two_slots_of_one_long_table_keep_apart_and_keep_their_slot_readable() -> None:
    table = "t" * 128
    seven, eight = _run_of(STACK, table, SLOT), _run_of(STACK, table, SLOT + timedelta(hours=1))

    _assert_dms_accepts(seven)
    assert seven.instance_identifier != eight.instance_identifier
    assert len(seven.instance_identifier) == 63
    assert "-20261121t0700z-" in seven.instance_identifier
    assert "-20261121t0800z-" in eight.instance_identifier


def test_names_over_a_200_character_prefix_are_distinct_and_valid() -> None:
    # targetTableName stops at 128 characters; stacks and run ids given by hand may be longer.
    prefix = "p" * 200
    runs = [RunDmsResources(STACK, "orders", prefix + suffix) for suffix in ("", "a", "b", "_", "__")]

    for resources in runs:
        _assert_dms_accepts(resources)
    for kind in ("task", "endpoint", "instance"):
        names = [_kinds(resources)[kind].lower() for resources in runs]
        assert len(set(names)) == len(names), kind


def test_identifiers_stay_valid_whatever_the_run_id_holds() -> None:
    awkward = ["_", "__", "-", "9lives", "Ünïcode-20261121T0700Z", "a" * 300, "x--y__z-", "-20261121T0700Z"]

    for run in awkward:
        _assert_dms_accepts(RunDmsResources(STACK, "orders", run))


def test_every_table_of_a_crowded_control_table_gets_its_own_names() -> None:
    # Every name over a small alphabet that sanitizes alike: case, "_" runs, trailing "_".
    tables = ["".join(chars) for n in range(1, 5) for chars in itertools.product("aB_", repeat=n)]
    tables = [table for table in tables if table[0].isalpha()]
    runs = [_run_of(STACK, table) for table in tables] + [_run_of("icetide-prod", t) for t in tables]

    for kind in ("task", "endpoint", "instance"):
        names = {_kinds(resources)[kind].lower() for resources in runs}
        assert len(names) == len(runs), kind


def test_a_run_needs_a_stack_a_table_and_a_run_id() -> None:
    with pytest.raises(ValueError, match="non-empty stack"):
        RunDmsResources("", "orders", "orders-20261121T0700Z")
    with pytest.raises(ValueError, match="non-empty run id"):
        RunDmsResources(STACK, "orders", "")


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
