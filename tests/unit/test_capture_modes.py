"""Capture modes on the control item (issue 11): every wrong combination is one clear line, and the
plan a cdc or reconciling table gets at lock time."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Any

import pytest

from icetide.control.model import CaptureMode, ControlItem, DeleteMode
from icetide.errors import InvalidControlItem
from icetide.run.plan import RunTiming, build_run_plan, reconcile_due

ORDERS: dict[str, Any] = {
    "targetTableName": "dbo_orders",
    "sourceSchema": "dbo",
    "sourceTable": "orders",
    "primaryKeys": ["order_id"],
}
CDC = {**ORDERS, "captureMode": "cdc"}
SCHEDULED = datetime(2026, 11, 21, 7, 0, tzinfo=UTC)


def errors_of(raw: dict[str, Any]) -> list[str]:
    with pytest.raises(InvalidControlItem) as caught:
        ControlItem.parse(raw)
    return caught.value.errors


def test_the_defaults_are_todays_behaviour(blog_item: dict[str, Any]) -> None:
    item = ControlItem.parse(blog_item)

    assert (item.capture_mode, item.delete_mode, item.reconcile_every_hours) == (
        CaptureMode.DELTA,
        DeleteMode.HARD,
        None,
    )
    assert (item.cdc_max_batch_interval, item.cdc_min_file_size, item.cdc_checkpoint) == (None, None, None)


def test_the_new_attributes_are_read_case_insensitively_and_numbers_as_text() -> None:
    item = ControlItem.parse(
        {
            **CDC,
            "captureMode": "CDC",
            "deleteMode": "Soft",
            "cdcMaxBatchInterval": "30",
            "cdcMinFileSize": 1024,
        }
    )

    assert (item.capture_mode, item.delete_mode) == (CaptureMode.CDC, DeleteMode.SOFT)
    assert (item.cdc_max_batch_interval, item.cdc_min_file_size) == (30, 1024)
    assert ControlItem.parse({**ORDERS, "reconcileEveryHours": "24"}).reconcile_every_hours == 24


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        (
            {**CDC, "primaryKeys": []},
            "primaryKeys: required when captureMode is cdc; changes and deletes are applied by key",
        ),
        (
            {**CDC, "loadMode": "append"},
            "loadMode: a cdc table merges its changes on the keys; remove loadMode append",
        ),
        (
            {
                **CDC,
                "filtercolumn": "updated_at",
                "filteroperator": "gte",
                "startvalue": "2026-01-01",
                "lookback": 60,
            },
            "lookback: a cdc table reads every change from its committed checkpoint; "
            "lookback is for delta tables",
        ),
        (
            {**CDC, "reconcileEveryHours": 24},
            "reconcileEveryHours: a cdc table sees deletes in its change stream; "
            "reconcile is for delta tables",
        ),
        (
            {**ORDERS, "primaryKeys": [], "reconcileEveryHours": 24},
            "reconcileEveryHours: needs primaryKeys (a merge table) to know which keys the source lost",
        ),
        (
            {**ORDERS, "cdcMaxBatchInterval": 60},
            "cdcMaxBatchInterval: only cdc tables write change files; "
            "set captureMode cdc or remove cdcMaxBatchInterval",
        ),
        (
            {**ORDERS, "cdcMinFileSize": 32000},
            "cdcMinFileSize: only cdc tables write change files; "
            "set captureMode cdc or remove cdcMinFileSize",
        ),
        (
            {**ORDERS, "primaryKeys": [], "deleteMode": "soft"},
            "deleteMode: soft deletes mark rows by key; an append-only table has no keys (set primaryKeys)",
        ),
        ({**ORDERS, "captureMode": "log"}, "captureMode: 'log' is not one of delta or cdc"),
        ({**ORDERS, "deleteMode": "purge"}, "deleteMode: 'purge' is not one of hard or soft"),
        (
            {**ORDERS, "reconcileEveryHours": 0},
            "reconcileEveryHours: 0 is not a whole number of hours (1 or more)",
        ),
        (
            {**ORDERS, "reconcileEveryHours": 1.5},
            "reconcileEveryHours: 1.5 is not a whole number of hours (1 or more)",
        ),
        (
            {**CDC, "cdcMinFileSize": True},
            "cdcMinFileSize: must be a whole number of KB, got the boolean True",
        ),
    ],
)
def test_each_wrong_combination_is_one_clear_line(raw: dict[str, Any], expected: str) -> None:
    assert errors_of(raw) == [expected]


def test_the_checkpoint_and_reconcile_time_the_handlers_write_keep_an_item_valid() -> None:
    item = ControlItem.parse(
        {
            **CDC,
            "cdcCheckpoint": "checkpoint:V1#1#0/0:1#0#0#*#0#0",
            "lastReconcileTime": "2026-11-21T07:00:00Z",
        }
    )

    assert item.cdc_checkpoint == "checkpoint:V1#1#0/0:1#0#0#*#0#0"


def _plan(raw: dict[str, Any], timing: RunTiming) -> dict[str, Any]:
    plan = build_run_plan(
        ControlItem.parse(raw),
        "dbo_orders-20261121T0700Z",
        raw_bucket="raw",
        bronze_prefix="bronze",
        manifest_prefix="manifests",
        glue_database="silver",
        timestamp_column="dms_timestamp",
        timing=timing,
    )
    return plan.to_json()


AT_SEVEN = RunTiming(scheduled_time=SCHEDULED, locked_at=datetime(2026, 11, 21, 7, 0, 4, 750000, tzinfo=UTC))


def test_the_first_run_of_a_cdc_table_loads_and_captures_until_the_slot_start() -> None:
    plan = _plan(CDC, AT_SEVEN)

    assert (plan["captureMode"], plan["migrationType"]) == ("cdc", "full-load-and-cdc")
    # No stop position in the plan: the task's is set when it starts (icetide.dms.stop_position).
    assert (plan["cdcStartPosition"], "cdcStopPosition" in plan) == (None, False)
    assert (plan["cdcMaxBatchInterval"], plan["cdcMinFileSize"]) == (60, 32000)
    rules = json.loads(plan["tableMapping"])["rules"]
    assert rules[1] == {
        "rule-type": "transformation",
        "rule-id": "2",
        "rule-name": "add-change-sequence",
        "rule-target": "column",
        "object-locator": {"schema-name": "dbo", "table-name": "orders"},
        "rule-action": "add-column",
        "value": "AR_H_CHANGE_SEQ",
        "expression": "$AR_H_CHANGE_SEQ",
        "data-type": {"type": "string", "length": 35},
    }


def test_later_runs_capture_from_the_committed_checkpoint() -> None:
    checkpoint = "checkpoint:V1#27#mysql-bin-changelog.157832:1975:-1:2002:677883278264080#0#0#*#0#93"
    raw = {**CDC, "cdcCheckpoint": checkpoint, "cdcMaxBatchInterval": 10, "cdcMinFileSize": 500}

    plan = _plan({**raw, "lastRunStats": {"rowsRead": 3}}, AT_SEVEN)

    assert (plan["migrationType"], plan["cdcStartPosition"]) == ("cdc", checkpoint)
    assert (plan["cdcMaxBatchInterval"], plan["cdcMinFileSize"]) == (10, 500)


def test_a_slots_start_point_goes_into_the_plan_of_every_run_of_the_table() -> None:
    # A replication slot's start point, set in the tables file: where the first task starts.
    first = _plan({**CDC, "cdcStartPoint": "4AF/B00000D0"}, AT_SEVEN)
    later = _plan({**CDC, "cdcStartPoint": "4AF/B00000D0", "cdcCheckpoint": "4AF/B00001F0"}, AT_SEVEN)

    assert (first["migrationType"], first["cdcStartPosition"], first["cdcStartPoint"]) == (
        "full-load-and-cdc",
        None,
        "4AF/B00000D0",
    )
    assert (later["migrationType"], later["cdcStartPosition"]) == ("cdc", "4AF/B00001F0")


def test_a_continuous_tables_plan_names_the_checkpoint_its_task_starts_from() -> None:
    raw = {
        **CDC,
        "cdcTask": "continuous",
        "replicationInstanceArn": "arn:aws:dms:eu-west-1:123456789012:rep:long-lived",
        "cdcStartPoint": "4AF/B00000D0",
    }

    plan = _plan(raw, AT_SEVEN)

    assert (plan["migrationType"], plan["cdcStartPoint"]) == ("full-load-and-cdc", "4AF/B00000D0")


def test_a_cdc_tables_filter_does_not_move_with_the_watermark() -> None:
    # An update or delete of an old row must pass the filter, so the configured value stays.
    raw = {
        **CDC,
        "filtercolumn": "updated_at",
        "filteroperator": "gte",
        "startvalue": "2020-01-01 00:00:00",
        "watermark": "2026-11-21 06:00:00",
    }

    condition = json.loads(_plan(raw, AT_SEVEN)["tableMapping"])["rules"][0]["filters"][0][
        "filter-conditions"
    ]

    assert condition == [{"filter-operator": "gte", "value": "2020-01-01 00:00:00"}]


def test_a_delta_run_is_a_full_load_without_cdc_positions_or_sequence_rule() -> None:
    plan = _plan(ORDERS, AT_SEVEN)

    assert (plan["migrationType"], plan["cdcStartPosition"], "cdcStopPosition" in plan) == (
        "full-load",
        None,
        False,
    )
    assert len(json.loads(plan["tableMapping"])["rules"]) == 1


RECONCILED = {**ORDERS, "reconcileEveryHours": 24, "lastRunStats": {"rowsRead": 5}}


@pytest.mark.parametrize(
    ("raw", "due"),
    [
        ({**ORDERS, "reconcileEveryHours": 24}, False),  # the first load: nothing to lose yet
        (RECONCILED, True),  # loaded before, never reconciled
        ({**RECONCILED, "lastReconcileTime": "2026-11-20T07:00:00Z"}, True),  # exactly 24 h ago
        ({**RECONCILED, "lastReconcileTime": "2026-11-20T08:00:00Z"}, False),  # 23 h ago
        ({**RECONCILED, "reconcileEveryHours": None}, False),
    ],
)
def test_a_reconcile_is_due_every_n_hours_after_the_first_load(raw: dict[str, Any], due: bool) -> None:
    assert reconcile_due(ControlItem.parse(raw), AT_SEVEN) is due


def test_a_reconcile_run_extracts_the_key_columns_of_the_whole_table() -> None:
    raw = {**RECONCILED, "primaryKeys": ["region", "order_id"], "filtercolumn": "id", "filteroperator": "gte"}
    raw["startvalue"] = "0"

    plan = _plan(raw, AT_SEVEN)

    assert plan["reconcileBronzeUri"] == "s3://raw/bronze/_reconcile/dbo_orders/dbo_orders-20261121T0700Z/"
    assert plan["reconcileSlot"] == "2026-11-21T07:00:00Z"
    assert json.loads(plan["reconcileTableMapping"]) == {
        "rules": [
            {
                "rule-type": "selection",
                "rule-id": "1",
                "rule-name": "1",
                "object-locator": {"schema-name": "dbo", "table-name": "orders"},
                "rule-action": "include",
                "filters": [],
            },
            {
                "rule-type": "transformation",
                "rule-id": "2",
                "rule-name": "keep-1",
                "rule-target": "column",
                "object-locator": {"schema-name": "dbo", "table-name": "orders", "column-name": "region"},
                "rule-action": "include-column",
            },
            {
                "rule-type": "transformation",
                "rule-id": "3",
                "rule-name": "keep-2",
                "rule-target": "column",
                "object-locator": {"schema-name": "dbo", "table-name": "orders", "column-name": "order_id"},
                "rule-action": "include-column",
            },
        ]
    }


def test_a_run_that_does_not_reconcile_has_no_key_extraction() -> None:
    plan = _plan({**ORDERS, "reconcileEveryHours": 24}, AT_SEVEN)

    assert (plan["reconcileTableMapping"], plan["reconcileBronzeUri"], plan["reconcileSlot"]) == (
        None,
        "",
        None,
    )


def test_an_unreadable_last_reconcile_time_is_a_fault_of_the_item() -> None:
    item = ControlItem.parse({**RECONCILED, "lastReconcileTime": "yesterday"})

    with pytest.raises(
        InvalidControlItem, match="lastReconcileTime: 'yesterday' is not an ISO-8601 UTC time"
    ):
        reconcile_due(item, AT_SEVEN)
