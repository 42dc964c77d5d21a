"""start_maintenance: one maintenance execution per table and maintenance slot; locked tables wait."""

from __future__ import annotations

import json
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Any

import boto3
import pytest

import handlers.start_maintenance
from icetide.settings import SettingsInvalid

ACCOUNT = "123456789012"
MAINTENANCE_STATE_MACHINE_ARN = f"arn:aws:states:eu-west-1:{ACCOUNT}:stateMachine:icetide-table-maintenance"


def _minimal_item(name: str, **extra: object) -> dict[str, Any]:
    return {"targetTableName": name, "sourceSchema": "dbo", "sourceTable": name, **extra}


def _stored(moment: datetime) -> str:
    return moment.strftime("%Y-%m-%dT%H:%M:%SZ")


@pytest.fixture
def maintenance_executions(aws: None, monkeypatch: pytest.MonkeyPatch) -> Callable[[], dict[str, Any]]:
    """The maintenance state machine (moto records executions only); name -> input of each, when called."""
    stepfunctions = boto3.client("stepfunctions")
    arn = stepfunctions.create_state_machine(
        name="icetide-table-maintenance",
        definition=json.dumps({"StartAt": "Run", "States": {"Run": {"Type": "Pass", "End": True}}}),
        roleArn=f"arn:aws:iam::{ACCOUNT}:role/icetide-state-machine",
    )["stateMachineArn"]
    assert arn == MAINTENANCE_STATE_MACHINE_ARN
    monkeypatch.setenv("MAINTENANCE_STATE_MACHINE_ARN", arn)

    def recorded() -> dict[str, Any]:
        listed = stepfunctions.list_executions(stateMachineArn=arn)["executions"]
        return {
            execution["name"]: json.loads(
                stepfunctions.describe_execution(executionArn=execution["executionArn"])["input"]
            )
            for execution in listed
        }

    return recorded


def test_starts_one_maintenance_run_per_enabled_table_in_the_daily_slot(
    maintenance_executions, control_items, load_event, lambda_context
):
    control_items.orders()
    control_items.put(_minimal_item("dbo_customers", maintenance={"orphanAgeHours": 96}))
    control_items.put(_minimal_item("dbo_audit", maintenance={"enabled": False}))
    control_items.put(_minimal_item("dbo_archive", activeflag="N"))
    control_items.put(_minimal_item("dbo_broken", maintenance={"orphanAgeHours": 2}))
    event = load_event("start_maintenance")
    event["time"] = "2026-11-21T05:30:00Z"  # any time of the day belongs to its 00:00 slot

    result = handlers.start_maintenance.handler(event, lambda_context)

    assert result == {
        "slot": "20261121T0000Z",
        "started": ["dbo_customers-maintain-20261121T0000Z", "dbo_orders-maintain-20261121T0000Z"],
        "alreadyStarted": [],
        "locked": {},
        "disabled": ["dbo_audit"],
        "inactive": ["dbo_archive"],
        "invalid": [
            {
                "targetTableName": "dbo_broken",
                "errors": [
                    "maintenance.orphanAgeHours: must be at least 24 hours: a younger unreferenced file may "
                    "belong to a commit still in flight, and removing it would corrupt the table"
                ],
            }
        ],
        "failed": {},
    }
    assert maintenance_executions()["dbo_orders-maintain-20261121T0000Z"] == {
        "targetTableName": "dbo_orders",
        "runId": "dbo_orders-maintain-20261121T0000Z",
        "scheduledTime": "2026-11-21T05:30:00Z",
    }


def test_a_repeated_event_of_the_same_day_starts_nothing(
    maintenance_executions, control_items, load_event, lambda_context
):
    control_items.orders()
    event = load_event("start_maintenance")

    handlers.start_maintenance.handler(event, lambda_context)
    event["time"] = "2026-11-21T23:59:59Z"
    repeat = handlers.start_maintenance.handler(event, lambda_context)

    assert (repeat["started"], repeat["alreadyStarted"]) == ([], ["dbo_orders-maintain-20261121T0000Z"])
    assert list(maintenance_executions()) == ["dbo_orders-maintain-20261121T0000Z"]


def test_a_table_a_live_run_holds_is_listed_as_locked_not_started(
    maintenance_executions, control_items, load_event, lambda_context
):
    now = datetime.now(UTC)
    control_items.orders(lockHolder="dbo_orders-20261121T0000Z", lockTime=_stored(now))
    control_items.put(
        _minimal_item(
            "dbo_customers",
            lockHolder="dbo_customers-20261120T0000Z",
            lockTime=_stored(now - timedelta(days=1)),
        )
    )

    result = handlers.start_maintenance.handler(load_event("start_maintenance"), lambda_context)

    # A stale lock (older than LOCK_STALE_AFTER_SECONDS) belongs to a dead run: its table is started.
    assert result["locked"] == {"dbo_orders": "dbo_orders-20261121T0000Z"}
    assert result["started"] == ["dbo_customers-maintain-20261121T0000Z"]
    assert list(maintenance_executions()) == ["dbo_customers-maintain-20261121T0000Z"]


def test_the_slot_follows_maintenance_slot_minutes(
    maintenance_executions, control_items, load_event, lambda_context, monkeypatch
):
    monkeypatch.setenv("MAINTENANCE_SLOT_MINUTES", "10080")  # weekly
    control_items.orders()

    result = handlers.start_maintenance.handler(load_event("start_maintenance"), lambda_context)

    # Slots count from the Unix epoch, a Thursday.
    assert result["started"] == ["dbo_orders-maintain-20261119T0000Z"]


def test_one_tables_failed_start_does_not_stop_the_others(
    maintenance_executions, control_items, load_event, lambda_context, monkeypatch
):
    control_items.orders()
    control_items.put(_minimal_item("dbo_customers"))
    real_start = handlers.start_maintenance.stepfunctions.start_execution_once

    def start(arn: str, name: str, execution_input: Any) -> bool:
        if name.startswith("dbo_customers"):
            raise RuntimeError("StartExecution throttled")
        return real_start(arn, name, execution_input)

    monkeypatch.setattr(handlers.start_maintenance.stepfunctions, "start_execution_once", start)

    result = handlers.start_maintenance.handler(load_event("start_maintenance"), lambda_context)

    assert result["started"] == ["dbo_orders-maintain-20261121T0000Z"]
    assert result["failed"] == {
        "dbo_customers-maintain-20261121T0000Z": "RuntimeError: StartExecution throttled"
    }


def test_without_the_maintenance_state_machine_it_fails_naming_the_variable(
    control_items, load_event, lambda_context, monkeypatch
):
    monkeypatch.delenv("MAINTENANCE_STATE_MACHINE_ARN", raising=False)

    with pytest.raises(SettingsInvalid, match="MAINTENANCE_STATE_MACHINE_ARN"):
        handlers.start_maintenance.handler(load_event("start_maintenance"), lambda_context)
