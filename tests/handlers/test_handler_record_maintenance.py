"""record_maintenance: the report onto the control item and the lock released, in one conditional write."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Any

import boto3
import pytest

import handlers.record_maintenance
from icetide.errors import LockLost, MaintenanceReportInvalid
from icetide.run.handler_inputs import InvalidHandlerInput

RAW_BUCKET = "icetide-raw-123456789012-eu-west-1"  # the handler tests' raw bucket (conftest)
RUN = "dbo_orders-maintain-20261121T0000Z"
REPORT_KEY = f"manifests/dbo_orders/{RUN}.maintenance.json"
TABLE_FILES_BEFORE = {
    "dataFiles": 40,
    "deleteFiles": 6,
    "positionDeleteFiles": 6,
    "totalBytes": 90000,
    "snapshots": 50,
}
TABLE_FILES_AFTER = {
    "dataFiles": 4,
    "deleteFiles": 0,
    "positionDeleteFiles": 0,
    "totalBytes": 70000,
    "snapshots": 24,
}


def _table(name: str, **counts: int) -> dict[str, Any]:
    return {
        "table": name,
        "strategy": "binpack",
        "before": TABLE_FILES_BEFORE,
        "after": TABLE_FILES_AFTER,
        "dataFilesRewritten": 40,
        "deleteFilesRewritten": 6,
        "snapshotsExpired": 26,
        "orphanFilesRemoved": 2,
        **counts,
    }


def _put_report(report: dict[str, Any] | str) -> None:
    body = report if isinstance(report, str) else json.dumps(report)
    boto3.client("s3").put_object(Bucket=RAW_BUCKET, Key=REPORT_KEY, Body=body.encode())


def _locked(control_items, holder: str = RUN) -> None:
    control_items.orders(lockHolder=holder, lockTime=datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ"))


def test_a_succeeded_run_records_the_report_and_releases_the_lock(
    control_items, raw_bucket, load_event, lambda_context
):
    _locked(control_items)
    _put_report(
        {
            "runId": RUN,
            "table": "icetide_silver.dbo_orders",
            "silver": _table("icetide_silver.dbo_orders"),
            "tombstones": _table("icetide_silver.dbo_orders__icetide_tombstones", snapshotsExpired=4),
        }
    )

    result = handlers.record_maintenance.handler(load_event("record_maintenance"), lambda_context)

    assert result == {"recorded": True}
    item = control_items.get("dbo_orders")
    assert "lockHolder" not in item and "lockTime" not in item
    last = item["lastMaintenance"]
    assert last["time"] >= "2026-"
    files = {
        "before": {"dataFiles": 40, "deleteFiles": 6, "totalBytes": 90000, "snapshots": 50},
        "after": {"dataFiles": 4, "deleteFiles": 0, "totalBytes": 70000, "snapshots": 24},
    }
    assert {key: value for key, value in last.items() if key != "time"} == {
        "runId": RUN,
        "status": "SUCCEEDED",
        "reportUri": f"s3://{RAW_BUCKET}/{REPORT_KEY}",
        "snapshotsExpired": 30,
        "orphanFilesRemoved": 4,
        "dataFilesRewritten": 80,
        "deleteFilesRewritten": 12,
        "silver": files,
        "tombstones": files,
    }


def test_the_report_numbers_are_published_as_metrics_with_the_table(
    control_items, raw_bucket, load_event, lambda_context, capsys
):
    _locked(control_items)
    _put_report(
        {"runId": RUN, "table": "icetide_silver.dbo_orders", "silver": _table("icetide_silver.dbo_orders")}
    )

    handlers.record_maintenance.handler(load_event("record_maintenance"), lambda_context)

    [document] = [json.loads(line) for line in capsys.readouterr().out.splitlines() if '"_aws"' in line]
    assert document["table"] == "dbo_orders"
    # Powertools writes each value as a list of the values added (one here).
    published = {
        name: document[name]
        for name in (
            "MaintenanceRuns",
            "MaintenanceDataFilesBefore",
            "MaintenanceDataFilesAfter",
            "MaintenanceSnapshotsExpired",
            "MaintenanceBytesAfter",
        )
    }
    assert published == {
        "MaintenanceRuns": [1.0],
        "MaintenanceDataFilesBefore": [40.0],
        "MaintenanceDataFilesAfter": [4.0],
        "MaintenanceSnapshotsExpired": [26.0],
        "MaintenanceBytesAfter": [70000.0],
    }


def test_no_report_is_refused_and_the_lock_kept_for_the_failure_path(
    control_items, raw_bucket, load_event, lambda_context
):
    _locked(control_items)

    with pytest.raises(MaintenanceReportInvalid, match="no maintenance report at s3://"):
        handlers.record_maintenance.handler(load_event("record_maintenance"), lambda_context)

    assert control_items.get("dbo_orders")["lockHolder"] == RUN


@pytest.mark.parametrize(
    ("report", "reason"),
    [
        ("not json {", "is not valid JSON"),
        (
            {"runId": RUN, "table": "icetide_silver.dbo_orders"},
            "exactly one of silver and skipped must be set",
        ),
        (
            {
                "runId": "dbo_orders-maintain-20261120T0000Z",
                "table": "icetide_silver.dbo_orders",
                "skipped": "x",
            },
            "is run dbo_orders-maintain-20261120T0000Z's, not run dbo_orders-maintain-20261121T0000Z's",
        ),
    ],
)
def test_a_bad_report_or_another_runs_is_refused(
    control_items, raw_bucket, load_event, lambda_context, report, reason
):
    _locked(control_items)
    _put_report(report)

    with pytest.raises(MaintenanceReportInvalid, match=reason):
        handlers.record_maintenance.handler(load_event("record_maintenance"), lambda_context)

    assert "lastMaintenance" not in control_items.get("dbo_orders")


def test_a_report_is_not_recorded_when_another_run_holds_the_lock(
    control_items, raw_bucket, load_event, lambda_context
):
    _locked(control_items, holder="dbo_orders-20261121T0700Z")
    _put_report({"runId": RUN, "table": "icetide_silver.dbo_orders", "skipped": "no silver table yet"})

    with pytest.raises(LockLost, match="run dbo_orders-20261121T0700Z holds it"):
        handlers.record_maintenance.handler(load_event("record_maintenance"), lambda_context)

    item = control_items.get("dbo_orders")
    assert item["lockHolder"] == "dbo_orders-20261121T0700Z"
    assert "lastMaintenance" not in item


def test_a_retried_invocation_finds_its_own_record_and_writes_nothing(
    control_items, raw_bucket, load_event, lambda_context
):
    _locked(control_items)
    _put_report({"runId": RUN, "table": "icetide_silver.dbo_orders", "skipped": "no silver table yet"})
    handlers.record_maintenance.handler(load_event("record_maintenance"), lambda_context)
    first = control_items.get("dbo_orders")

    again = handlers.record_maintenance.handler(load_event("record_maintenance"), lambda_context)

    assert again == {"recorded": True}
    assert control_items.get("dbo_orders") == first


def test_a_failure_after_the_runs_own_success_was_recorded_changes_nothing(
    control_items, raw_bucket, load_event, lambda_context
):
    # The record step wrote, then failed (a timeout): the Catch path's failure record must not
    # turn the maintained table into a failed one.
    _locked(control_items)
    _put_report({"runId": RUN, "table": "icetide_silver.dbo_orders", "skipped": "no silver table yet"})
    handlers.record_maintenance.handler(load_event("record_maintenance"), lambda_context)
    succeeded = control_items.get("dbo_orders")
    timeout = {"Error": "States.Timeout", "Cause": "x"}
    failure = {"targetTableName": "dbo_orders", "runId": RUN, "error": timeout}

    assert handlers.record_maintenance.handler(failure, lambda_context) == {"recorded": False}
    assert control_items.get("dbo_orders") == succeeded
    assert succeeded["lastMaintenance"]["status"] == "SUCCEEDED"


def test_a_failure_is_recorded_with_its_error_and_the_lock_released(
    control_items, raw_bucket, load_event, lambda_context
):
    _locked(control_items)
    event = {
        "targetTableName": "dbo_orders",
        "runId": RUN,
        "failedState": "Run maintenance job",
        "error": {
            "Error": "States.TaskFailed",
            "Cause": json.dumps({"ErrorMessage": "GlueJobFailed: executor lost", "JobRunState": "FAILED"}),
        },
    }

    result = handlers.record_maintenance.handler(event, lambda_context)

    assert result == {"recorded": True}
    item = control_items.get("dbo_orders")
    assert "lockHolder" not in item
    last = item["lastMaintenance"]
    assert {key: value for key, value in last.items() if key != "time"} == {
        "runId": RUN,
        "status": "FAILED",
        "failedState": "Run maintenance job",
        "error": "GlueJobFailed",
        "cause": "executor lost",
    }


def test_a_failure_is_not_recorded_over_another_runs_lock(control_items, raw_bucket, lambda_context):
    _locked(control_items, holder="dbo_orders-20261121T0700Z")
    event = {"targetTableName": "dbo_orders", "runId": RUN, "error": {"Error": "TableLocked", "Cause": "x"}}

    assert handlers.record_maintenance.handler(event, lambda_context) == {"recorded": False}
    item = control_items.get("dbo_orders")
    assert item["lockHolder"] == "dbo_orders-20261121T0700Z" and "lastMaintenance" not in item


def test_a_success_without_a_plan_or_with_another_runs_plan_is_refused(load_event, lambda_context, aws):
    event = load_event("record_maintenance")
    del event["plan"]
    with pytest.raises(InvalidHandlerInput, match="plan: required when no error is given"):
        handlers.record_maintenance.handler(event, lambda_context)

    event = load_event("record_maintenance")
    event["runId"] = "dbo_orders-maintain-20261122T0000Z"
    with pytest.raises(
        InvalidHandlerInput, match="plan is for dbo_orders run dbo_orders-maintain-20261121T0000Z"
    ):
        handlers.record_maintenance.handler(event, lambda_context)
