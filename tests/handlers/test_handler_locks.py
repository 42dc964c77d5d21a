"""acquire_lock and release_lock: one run per table, stale locks broken, releases only by the holder."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta

import pytest

import handlers.acquire_lock
import handlers.release_lock
from icetide import observability
from icetide.errors import ControlItemNotFound, InvalidControlItem, TableLocked
from icetide.settings import SettingsInvalid

EARLIER_RUN = "dbo_orders-20261121T0600Z"


def _stored(moment: datetime) -> str:
    return moment.strftime("%Y-%m-%dT%H:%M:%SZ")


def _decoded(plan: dict) -> dict:
    # The mapping and settings are JSON strings; compare what they say, not their spacing.
    return {
        **plan,
        "tableMapping": json.loads(plan["tableMapping"]),
        "taskSettings": json.loads(plan["taskSettings"]),
    }


def test_the_lock_is_taken_and_the_plan_fixed(control_items, load_event, lambda_context):
    control_items.orders()
    before = _stored(datetime.now(UTC))

    result = handlers.acquire_lock.handler(load_event("acquire_lock"), lambda_context)

    after = _stored(datetime.now(UTC))
    # The sample plan in events/ was written by hand from the contract for this very item.
    assert _decoded(result["plan"]) == _decoded(load_event("ensure_replication_instance")["plan"])
    item = control_items.get("dbo_orders")
    assert item["lockHolder"] == "dbo_orders-20261121T0700Z"
    assert item["lastRunId"] == "dbo_orders-20261121T0700Z"
    assert item["lastRunStatus"] == "RUNNING"
    assert before <= item["lockTime"] <= after
    assert item["lastRunTime"] == item["lockTime"]
    assert item["watermark"] == "2026-11-21 06:00:00"


def test_a_second_run_of_a_locked_table_is_refused_naming_holder_and_time(
    control_items, load_event, lambda_context
):
    since = _stored(datetime.now(UTC) - timedelta(minutes=10))
    control_items.orders(lockHolder=EARLIER_RUN, lockTime=since)

    with pytest.raises(TableLocked) as raised:
        handlers.acquire_lock.handler(load_event("acquire_lock"), lambda_context)

    assert f"table dbo_orders is locked by run {EARLIER_RUN} since {since}" in str(raised.value)
    assert "dbo_orders-20261121T0700Z was refused" in str(raised.value)
    item = control_items.get("dbo_orders")
    assert (item["lockHolder"], item["lockTime"]) == (EARLIER_RUN, since)
    assert "lastRunStatus" not in item


def test_the_holder_may_take_its_lock_again(control_items, load_event, lambda_context):
    control_items.orders()
    event = load_event("acquire_lock")
    handlers.acquire_lock.handler(event, lambda_context)

    retried = handlers.acquire_lock.handler(event, lambda_context)

    assert retried["plan"]["runId"] == "dbo_orders-20261121T0700Z"
    assert control_items.get("dbo_orders")["lockHolder"] == "dbo_orders-20261121T0700Z"


def test_a_stale_lock_is_broken_and_logged(control_items, load_event, lambda_context, monkeypatch):
    # LOCK_STALE_AFTER_SECONDS is 6 hours in the fixture environment.
    since = _stored(datetime.now(UTC) - timedelta(hours=7))
    control_items.orders(lockHolder=EARLIER_RUN, lockTime=since)
    warnings: list[tuple[str, dict]] = []
    monkeypatch.setattr(
        observability.logger, "warning", lambda message, extra=None, **_: warnings.append((message, extra))
    )

    result = handlers.acquire_lock.handler(load_event("acquire_lock"), lambda_context)

    assert result["plan"]["runId"] == "dbo_orders-20261121T0700Z"
    assert control_items.get("dbo_orders")["lockHolder"] == "dbo_orders-20261121T0700Z"
    assert warnings == [("broke a stale lock", {"brokenHolder": EARLIER_RUN, "lockedSince": since})]


def test_the_stale_age_comes_from_the_environment(control_items, load_event, lambda_context, monkeypatch):
    monkeypatch.setenv("LOCK_STALE_AFTER_SECONDS", "60")
    control_items.orders(lockHolder=EARLIER_RUN, lockTime=_stored(datetime.now(UTC) - timedelta(minutes=2)))

    handlers.acquire_lock.handler(load_event("acquire_lock"), lambda_context)

    assert control_items.get("dbo_orders")["lockHolder"] == "dbo_orders-20261121T0700Z"


def test_a_table_without_control_item_is_not_found(control_items, load_event, lambda_context):
    with pytest.raises(ControlItemNotFound, match="'dbo_orders'"):
        handlers.acquire_lock.handler(load_event("acquire_lock"), lambda_context)

    assert control_items.get("dbo_orders") is None


def test_an_invalid_item_is_refused_before_its_table_is_locked(control_items, load_event, lambda_context):
    control_items.orders(primaryKeys=None)  # loadMode merge without keys

    with pytest.raises(InvalidControlItem) as raised:
        handlers.acquire_lock.handler(load_event("acquire_lock"), lambda_context)

    assert raised.value.errors == [
        "primaryKeys: required when loadMode is merge; list the key columns or set loadMode to append"
    ]
    assert "lockHolder" not in control_items.get("dbo_orders")


def test_a_missing_setting_fails_before_the_lock(control_items, load_event, lambda_context, monkeypatch):
    control_items.orders()
    monkeypatch.delenv("RAW_BUCKET")

    with pytest.raises(SettingsInvalid, match="RAW_BUCKET"):
        handlers.acquire_lock.handler(load_event("acquire_lock"), lambda_context)

    assert "lockHolder" not in control_items.get("dbo_orders")


def test_the_stack_wide_instance_goes_into_the_plan(control_items, load_event, lambda_context, monkeypatch):
    shared = "arn:aws:dms:eu-west-1:123456789012:rep:icetide-shared"
    monkeypatch.setenv("REPLICATION_INSTANCE_ARN", shared)
    control_items.orders()

    result = handlers.acquire_lock.handler(load_event("acquire_lock"), lambda_context)

    assert result["plan"]["replicationInstanceArn"] == shared


def test_the_holder_releases_its_lock(control_items, load_event, lambda_context):
    control_items.orders()
    handlers.acquire_lock.handler(load_event("acquire_lock"), lambda_context)

    result = handlers.release_lock.handler(load_event("release_lock"), lambda_context)

    assert result == {"released": True}
    item = control_items.get("dbo_orders")
    assert "lockHolder" not in item and "lockTime" not in item
    assert item["lastRunStatus"] == "RUNNING"  # the run's status is commit's and record_failure's to set


def test_releasing_twice_is_harmless(control_items, load_event, lambda_context):
    control_items.orders()
    handlers.acquire_lock.handler(load_event("acquire_lock"), lambda_context)
    handlers.release_lock.handler(load_event("release_lock"), lambda_context)

    assert handlers.release_lock.handler(load_event("release_lock"), lambda_context) == {"released": False}


def test_a_run_never_releases_another_runs_lock(control_items, load_event, lambda_context):
    since = _stored(datetime.now(UTC))
    control_items.orders(lockHolder=EARLIER_RUN, lockTime=since)

    result = handlers.release_lock.handler(load_event("release_lock"), lambda_context)

    assert result == {"released": False}
    item = control_items.get("dbo_orders")
    assert (item["lockHolder"], item["lockTime"]) == (EARLIER_RUN, since)


def test_releasing_a_missing_item_creates_nothing(control_items, load_event, lambda_context):
    assert handlers.release_lock.handler(load_event("release_lock"), lambda_context) == {"released": False}
    assert control_items.get("dbo_orders") is None
