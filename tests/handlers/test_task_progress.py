"""The DMS task rules without AWS: status mapping, start decision, statistics."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from icetide.dms.replication_status import (
    ReplicationTaskMissing,
    must_start,
    progress,
    run_progress,
    statistics,
)
from icetide.errors import DmsResourceNotReady, IcetideError

ARN = "arn:aws:dms:eu-west-1:123456789012:task:icetide-dbo-orders-20261121t0700z"


def _task(status: str, stop_reason: str | None = None, errored: int = 0, message: str | None = None) -> dict:
    task = {"Status": status, "ReplicationTaskStats": {"TablesLoaded": 1, "TablesErrored": errored}}
    if stop_reason:
        task["StopReason"] = stop_reason
    if message:
        task["LastFailureMessage"] = message
    return task


@pytest.mark.parametrize(
    ("task", "expected"),
    [
        (_task("starting"), "running"),
        (_task("running"), "running"),
        (_task("stopping"), "running"),
        (_task("stopped", "Stop Reason FULL_LOAD_ONLY_FINISHED"), "succeeded"),
        (_task("stopped", "Stop Reason FULL_LOAD_ONLY_FINISHED", errored=2), "failed"),
        (_task("stopped", "Stop Reason FATAL_ERROR"), "failed"),
        (_task("stopped", "Stop Reason RECOVERABLE_ERROR"), "failed"),
        (_task("running", errored=1), "failed"),
        (_task("failed", message="Last Error Connection refused"), "failed"),
        (_task("stopped", "Stop Reason STOPPED_BY_USER"), "failed"),
    ],
)
def test_dms_status_stop_reason_and_errored_tables_map_to_progress(task, expected):
    assert progress(task, ARN)["status"] == expected


def _cdc(migration_type: str, status: str, stop_reason: str | None = None) -> dict:
    return {**_task(status, stop_reason), "MigrationType": migration_type}


@pytest.mark.parametrize(
    ("task", "expected"),
    [
        (_cdc("cdc", "running"), "running"),
        (_cdc("cdc", "stopped", "Stop Reason STOPPED_AT_SERVER_TIME"), "succeeded"),
        (_cdc("full-load-and-cdc", "stopped", "Stop Reason STOPPED_AT_SERVER_TIME"), "succeeded"),
        (_cdc("cdc", "stopped", "Stop Reason STOPPED_AT_COMMIT_TIME"), "succeeded"),
        # A cdc task that stopped after its full load, or by hand, did not reach its stop position.
        (_cdc("full-load-and-cdc", "stopped", "Stop Reason FULL_LOAD_ONLY_FINISHED"), "failed"),
        (_cdc("cdc", "stopped", "Stop Reason NORMAL"), "failed"),
        (_cdc("cdc", "stopped", "Stop Reason FATAL_ERROR"), "failed"),
        # A full load never succeeds by a cdc stop reason.
        (_cdc("full-load", "stopped", "Stop Reason STOPPED_AT_SERVER_TIME"), "failed"),
    ],
)
def test_a_cdc_task_succeeds_when_it_stops_at_its_stop_position(task, expected):
    assert progress(task, ARN)["status"] == expected


def test_a_run_with_a_key_extraction_waits_for_both_and_fails_with_either():
    done = _task("stopped", "Stop Reason FULL_LOAD_ONLY_FINISHED")
    key_arn = ARN + "-keys"

    assert run_progress([(done, ARN), (_task("running"), key_arn)])["status"] == "running"
    failed = run_progress([(done, ARN), (_task("failed", message="Table error"), key_arn)])
    assert (failed["status"], failed["lastFailureMessage"]) == ("failed", "Table error")
    assert run_progress([(_task("running"), ARN), (None, key_arn)])["status"] == "failed"
    assert run_progress([(done, ARN), (done, key_arn)])["status"] == "succeeded"


def test_a_failure_carries_reason_and_message():
    result = progress(
        _task("stopped", "Stop Reason FATAL_ERROR", errored=1, message="Last Error ORA-00942"), ARN
    )

    assert result == {
        "status": "failed",
        "dmsStatus": "stopped",
        "stopReason": "Stop Reason FATAL_ERROR",
        "tablesErrored": 1,
        "lastFailureMessage": "Last Error ORA-00942",
    }


@pytest.mark.parametrize("status", ["starting", "running", "stopped", "failed"])
def test_a_task_started_before_is_not_started_again(status):
    assert must_start(_task(status), ARN) is False


def test_a_ready_task_must_be_started():
    assert must_start(_task("ready"), ARN) is True


@pytest.mark.parametrize("status", ["creating", "modifying"])
def test_a_task_being_prepared_is_not_ready(status):
    with pytest.raises(DmsResourceNotReady, match=f"is {status}"):
        must_start(_task(status), ARN)


def test_a_task_being_deleted_cannot_run():
    with pytest.raises(ReplicationTaskMissing, match="is deleting"):
        must_start(_task("deleting"), ARN)


def test_statistics_sum_the_tables_rows():
    tables = [
        {"SchemaName": "dbo", "TableName": "orders", "FullLoadRows": 7, "TableState": "Table completed"},
        {"SchemaName": "dbo", "TableName": "orders_archive", "FullLoadRows": 5, "TableState": "Table error"},
    ]

    assert statistics(_task("stopped", errored=1), tables) == {
        "fullLoadRows": 12,
        "changeRows": 0,
        "expectedRows": "12",
        "maxChangeRows": "0",
        "recoveryCheckpoint": None,
        "tablesLoaded": 1,
        "tablesErrored": 1,
        "tables": [
            {
                "schema": "dbo",
                "table": "orders",
                "fullLoadRows": 7,
                "changeRows": 0,
                "state": "Table completed",
            },
            {
                "schema": "dbo",
                "table": "orders_archive",
                "fullLoadRows": 5,
                "changeRows": 0,
                "state": "Table error",
            },
        ],
        "reconcileExpectedRows": "",
        "reconcileStartedAt": "",
    }


def test_a_cdc_tasks_change_rows_count_and_its_checkpoint_is_reported():
    task = {**_task("stopped"), "RecoveryCheckpoint": "checkpoint:V1#7#0/16B3748:1#0#0#*#0#0"}
    tables = [
        {
            "SchemaName": "dbo",
            "TableName": "orders",
            "FullLoadRows": 4,
            "Inserts": 3,
            "Updates": 2,
            "Deletes": 1,
            "Ddls": 5,  # DDL changes write no rows
            "TableState": "Table completed",
        }
    ]

    result = statistics(task, tables)

    # The full load's rows are compared exactly; the changes DMS counted only bound the CDC files' rows.
    assert (result["fullLoadRows"], result["changeRows"], result["expectedRows"]) == (4, 6, "4")
    assert result["maxChangeRows"] == "6"
    assert result["recoveryCheckpoint"] == "checkpoint:V1#7#0/16B3748:1#0#0#*#0#0"


def test_a_key_extractions_rows_and_start_time_are_the_jobs_reconcile_arguments():
    key_task = {
        **_task("stopped"),
        "ReplicationTaskStartDate": datetime(2026, 11, 21, 7, 2, 9, 120000, tzinfo=UTC),
    }
    key_tables = [
        {"SchemaName": "dbo", "TableName": "orders", "FullLoadRows": 42, "TableState": "Table completed"}
    ]

    result = statistics(_task("stopped"), [], (key_task, key_tables))

    assert (result["reconcileExpectedRows"], result["reconcileStartedAt"]) == (
        "42",
        "2026-11-21T07:02:09.120000Z",
    )
    assert result["expectedRows"] == "0"


def test_a_key_extraction_that_never_started_fails_the_statistics():
    with pytest.raises(IcetideError, match="no start date"):
        statistics(_task("stopped"), [], (_task("stopped"), []))


def test_statistics_of_a_task_that_loaded_no_row_expect_zero_rows():
    # A table DMS found nothing to load for: its folder never appears, and the job must read 0 rows.
    tables = [
        {"SchemaName": "dbo", "TableName": "orders", "FullLoadRows": 0, "TableState": "Table completed"}
    ]

    result = statistics(_task("stopped"), tables)

    assert (result["fullLoadRows"], result["expectedRows"]) == (0, "0")
