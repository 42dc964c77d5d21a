"""start_workflow: one execution per active, valid table and schedule slot; a repeat starts nothing."""

from __future__ import annotations

import json
import logging
from datetime import UTC, datetime, timedelta
from pathlib import Path

import boto3
import pytest

import handlers.start_workflow
from icetide.run.handler_inputs import InvalidHandlerInput
from icetide.run.scheduling import ExecutionStartFailed
from icetide.settings import SettingsInvalid

STATE_MACHINE_ARN = "arn:aws:states:eu-west-1:123456789012:stateMachine:icetide-table-run"
BLOG_LTE_ITEM = Path(__file__).resolve().parents[1] / "fixtures" / "control_items" / "blog_lte_item.json"


def _minimal_item(name: str, **extra: object) -> dict:
    return {"targetTableName": name, "sourceSchema": "dbo", "sourceTable": name, **extra}


def test_starts_one_execution_per_active_table_named_after_the_slot(
    executions, control_items, state_machine, load_event, lambda_context
):
    control_items.orders()
    control_items.put(_minimal_item("dbo_customers"))
    control_items.put(_minimal_item("dbo_archive", activeflag="N"))
    event = load_event("start_workflow")
    event["time"] = "2026-11-21T07:14:59Z"  # a late event still belongs to the 07:00 slot

    result = handlers.start_workflow.handler(event, lambda_context)

    assert result == {
        "slot": "20261121T0700Z",
        "started": ["dbo_customers-20261121T0700Z", "dbo_orders-20261121T0700Z"],
        "alreadyStarted": [],
        "locked": {},
        "inactive": ["dbo_archive"],
        "invalid": [],
        "retired": {},
    }
    assert executions() == {
        "dbo_customers-20261121T0700Z": {
            "targetTableName": "dbo_customers",
            "runId": "dbo_customers-20261121T0700Z",
            "scheduledTime": "2026-11-21T07:14:59Z",
        },
        "dbo_orders-20261121T0700Z": {
            "targetTableName": "dbo_orders",
            "runId": "dbo_orders-20261121T0700Z",
            "scheduledTime": "2026-11-21T07:14:59Z",
        },
    }


def test_a_repeated_schedule_event_starts_nothing(
    executions, control_items, state_machine, load_event, lambda_context
):
    control_items.orders()
    event = load_event("start_workflow")

    first = handlers.start_workflow.handler(event, lambda_context)
    repeat = handlers.start_workflow.handler(event, lambda_context)

    assert first["started"] == ["dbo_orders-20261121T0700Z"]
    assert repeat["started"] == []
    assert repeat["alreadyStarted"] == ["dbo_orders-20261121T0700Z"]
    assert list(executions()) == ["dbo_orders-20261121T0700Z"]


def test_the_next_slot_starts_a_new_run(executions, control_items, state_machine, load_event, lambda_context):
    control_items.orders()
    event = load_event("start_workflow")
    handlers.start_workflow.handler(event, lambda_context)
    event["time"] = "2026-11-21T08:00:00Z"

    result = handlers.start_workflow.handler(event, lambda_context)

    assert result["slot"] == "20261121T0800Z"
    assert result["started"] == ["dbo_orders-20261121T0800Z"]
    assert sorted(executions()) == ["dbo_orders-20261121T0700Z", "dbo_orders-20261121T0800Z"]


def test_invalid_items_are_reported_while_valid_ones_start(
    executions, control_items, state_machine, load_event, lambda_context
):
    control_items.orders()
    control_items.put(_minimal_item("dbo_lines", filteroperator="greater"))
    control_items.put({"targetTableName": "dbo_no_source", "sourceSchema": "dbo"})

    result = handlers.start_workflow.handler(load_event("start_workflow"), lambda_context)

    assert result["started"] == ["dbo_orders-20261121T0700Z"]
    assert [entry["targetTableName"] for entry in result["invalid"]] == ["dbo_lines", "dbo_no_source"]
    lines_errors, no_source_errors = (entry["errors"] for entry in result["invalid"])
    assert len(lines_errors) == 1 and lines_errors[0].startswith("filteroperator:")
    assert no_source_errors == ["sourceTable: required attribute is missing"]
    assert list(executions()) == ["dbo_orders-20261121T0700Z"]


def test_every_page_of_the_control_table_is_read(control_items, state_machine, load_event, lambda_context):
    # Four items of ~350 KB exceed the 1 MB a scan call returns, so the scan needs several pages.
    # (The bulk sits in an attribute items really hold: an unknown one would make them invalid.)
    names = [f"dbo_big_{index}" for index in range(4)]
    for name in names:
        control_items.put(_minimal_item(name, lastRunError="x" * 350_000))
    pages = list(boto3.client("dynamodb").get_paginator("scan").paginate(TableName="icetide-control"))
    assert len(pages) > 1

    result = handlers.start_workflow.handler(load_event("start_workflow"), lambda_context)

    assert result["started"] == [f"{name}-20261121T0700Z" for name in names]


def test_a_manual_invoke_without_time_uses_the_current_slot(
    executions, control_items, state_machine, lambda_context
):
    control_items.orders()
    before = datetime.now(UTC)

    result = handlers.start_workflow.handler({}, lambda_context)

    after = datetime.now(UTC)
    # The slot of "now": the hour the call ran in (two candidates if it straddled an hour).
    candidates = {moment.strftime("%Y%m%dT%H00Z") for moment in (before, after)}
    assert result["slot"] in candidates
    assert result["started"] == [f"dbo_orders-{result['slot']}"]
    scheduled = datetime.fromisoformat(executions()[result["started"][0]]["scheduledTime"])
    assert before - timedelta(seconds=1) <= scheduled <= after


def test_a_failed_start_names_the_run_after_trying_every_table(
    control_items, load_event, lambda_context, monkeypatch
):
    control_items.orders()
    control_items.put(_minimal_item("dbo_customers"))
    # No state machine exists at this ARN: Step Functions refuses every start.
    monkeypatch.setenv("STATE_MACHINE_ARN", "arn:aws:states:eu-west-1:123456789012:stateMachine:missing")

    with pytest.raises(ExecutionStartFailed) as raised:
        handlers.start_workflow.handler(load_event("start_workflow"), lambda_context)

    message = str(raised.value)
    assert "could not start 2 run(s)" in message
    assert "dbo_customers-20261121T0700Z" in message and "dbo_orders-20261121T0700Z" in message


def test_a_missing_state_machine_setting_is_named(control_items, load_event, lambda_context, monkeypatch):
    monkeypatch.delenv("STATE_MACHINE_ARN")

    with pytest.raises(SettingsInvalid, match="STATE_MACHINE_ARN is not set"):
        handlers.start_workflow.handler(load_event("start_workflow"), lambda_context)


def test_an_event_time_that_is_not_a_time_is_refused(control_items, state_machine, lambda_context):
    with pytest.raises(InvalidHandlerInput, match="time"):
        handlers.start_workflow.handler({"time": "every hour"}, lambda_context)


def test_each_kind_of_invalid_item_gets_one_clear_error_and_the_valid_table_still_starts(
    executions, control_items, state_machine, load_event, lambda_context
):
    """The issue's invalid items, as they can stand in DynamoDB (where the key always exists)."""
    control_items.orders()
    control_items.put(_minimal_item("bad_operator", filtercolumn="id", filteroperator="gt", startvalue="5"))
    control_items.put(
        _minimal_item("bad_between", filtercolumn="id", filteroperator="between", startvalue="1")
    )
    control_items.put(_minimal_item("bad_settings", replication_task_settings="{not json"))
    control_items.put({"targetTableName": "bad_source", "sourceSchema": "dbo", "sourceTable": "orders%"})
    control_items.put(_minimal_item("bad_key_typo", primarykeys="id"))
    control_items.put(
        _minimal_item("bad_range", filtercolumn="id", filteroperator="between", startvalue="10", endvalue="2")
    )

    result = handlers.start_workflow.handler(load_event("start_workflow"), lambda_context)

    assert result["started"] == ["dbo_orders-20261121T0700Z"]
    errors = {entry["targetTableName"]: entry["errors"] for entry in result["invalid"]}
    assert sorted(errors) == [
        "bad_between",
        "bad_key_typo",
        "bad_operator",
        "bad_range",
        "bad_settings",
        "bad_source",
    ]
    assert all(len(lines) == 1 for lines in errors.values()), errors
    assert errors["bad_key_typo"] == ["primarykeys: unknown attribute; did you mean primaryKeys?"]
    assert errors["bad_range"] == [
        "startvalue: '10' is above endvalue '2'; filteroperator between takes the lower value as startvalue"
    ]
    assert errors["bad_operator"][0].startswith("filteroperator:") and "'gt'" in errors["bad_operator"][0]
    assert errors["bad_between"][0].startswith("endvalue:")
    assert errors["bad_settings"][0].startswith("replication_task_settings:")
    assert errors["bad_source"][0].startswith("sourceTable:") and "%" in errors["bad_source"][0]
    assert list(executions()) == ["dbo_orders-20261121T0700Z"]


def test_the_blog_item_as_printed_starts_and_its_ignored_endvalue_is_logged_as_a_warning(
    control_items, state_machine, load_event, lambda_context, caplog
):
    control_items.put(json.loads(BLOG_LTE_ITEM.read_text()))

    with caplog.at_level(logging.WARNING):
        result = handlers.start_workflow.handler(load_event("start_workflow"), lambda_context)

    assert (result["started"], result["invalid"]) == (["mlb_data-20261121T0700Z"], [])
    warnings = [
        (record.getMessage(), record.targetTableName, record.notes)
        for record in caplog.records
        if record.levelno == logging.WARNING
    ]
    assert warnings == [
        (
            "control item values ignored",
            "mlb_data",
            ["endvalue: ignored, filteroperator lte takes only startvalue"],
        )
    ]


def test_tables_whose_names_differ_only_in_case_are_invalid_and_not_started(
    executions, control_items, state_machine, load_event, lambda_context
):
    """DynamoDB keys are case-sensitive, Glue catalog names are not: both items would load dbo_orders."""
    control_items.orders()
    control_items.orders(targetTableName="DBO_Orders")
    control_items.put(_minimal_item("dbo_customers"))

    result = handlers.start_workflow.handler(load_event("start_workflow"), lambda_context)

    assert result["started"] == ["dbo_customers-20261121T0700Z"]
    assert result["invalid"] == [
        {
            "targetTableName": "DBO_Orders",
            "errors": [
                "targetTableName: 'DBO_Orders' differs only in case from 'dbo_orders'; the Glue catalog "
                "lowercases table names, so they would load the same silver table dbo_orders: rename or "
                "remove all but one"
            ],
        },
        {
            "targetTableName": "dbo_orders",
            "errors": [
                "targetTableName: 'dbo_orders' differs only in case from 'DBO_Orders'; the Glue catalog "
                "lowercases table names, so they would load the same silver table dbo_orders: rename or "
                "remove all but one"
            ],
        },
    ]
    assert list(executions()) == ["dbo_customers-20261121T0700Z"]
