"""The DMS task rules without AWS: status mapping, start decision, statistics."""

from __future__ import annotations

import pytest

from icetide.dms.replication_status import ReplicationTaskMissing, must_start, progress, statistics
from icetide.errors import DmsResourceNotReady

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
        "expectedRows": "12",
        "tablesLoaded": 1,
        "tablesErrored": 1,
        "tables": [
            {"schema": "dbo", "table": "orders", "fullLoadRows": 7, "state": "Table completed"},
            {"schema": "dbo", "table": "orders_archive", "fullLoadRows": 5, "state": "Table error"},
        ],
    }


def test_statistics_of_a_task_that_loaded_no_row_expect_zero_rows():
    # A table DMS found nothing to load for: its folder never appears, and the job must read 0 rows.
    tables = [
        {"SchemaName": "dbo", "TableName": "orders", "FullLoadRows": 0, "TableState": "Table completed"}
    ]

    result = statistics(_task("stopped"), tables)

    assert (result["fullLoadRows"], result["expectedRows"]) == (0, "0")
