"""record_failure: the failed state and a readable cause go on the item; the watermark never moves."""

from __future__ import annotations

import json
from datetime import UTC, datetime

import pytest

import handlers.record_failure
from icetide.run.failure import MAX_MESSAGE_LENGTH, failure_message

GLUE_MESSAGE = "AnalysisException: cannot resolve column 'order_id' in MERGE condition"


def test_the_failure_is_recorded_with_the_readable_cause(control_items, load_event, lambda_context):
    control_items.orders(lockHolder="dbo_orders-20261121T0700Z", lastRunStatus="RUNNING")
    before = datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")

    result = handlers.record_failure.handler(load_event("record_failure"), lambda_context)

    assert result == {"recorded": True}
    item = control_items.get("dbo_orders")
    assert item["lastRunStatus"] == "FAILED"
    assert item["lastRunId"] == "dbo_orders-20261121T0700Z"
    assert item["lastFailedState"] == "Run Glue merge"
    # The Glue job's error name, not the States.TaskFailed that carried it.
    assert item["lastRunError"] == GLUE_MESSAGE
    assert item["lastRunTime"] >= before
    assert item["watermark"] == "2026-11-21 06:00:00"


def test_a_lambda_error_cause_gives_its_error_message(control_items, load_event, lambda_context):
    control_items.orders()
    event = load_event("record_failure")
    event["failedState"] = "Create replication task"
    event["cause"] = {
        "Error": "DmsQuotaExceeded",
        "Cause": json.dumps(
            {
                "errorMessage": "DMS refused to create icetide-dbo-orders-20261121t0700z: quota reached",
                "errorType": "DmsQuotaExceeded",
                "requestId": "0b6f1c1e-5a9c-4d8e-9f1a-2b3c4d5e6f70",
                "stackTrace": [
                    '  File "/var/task/handlers/create_replication_task.py", line 40, in handler\n'
                ],
            }
        ),
    }

    handlers.record_failure.handler(event, lambda_context)

    assert control_items.get("dbo_orders")["lastRunError"] == (
        "DmsQuotaExceeded: DMS refused to create icetide-dbo-orders-20261121t0700z: quota reached"
    )


def test_a_plain_string_cause_is_recorded_as_given(control_items, load_event, lambda_context):
    control_items.orders()
    event = load_event("record_failure")
    event["cause"] = "poll limit reached: the DMS task ran longer than 2 hours"

    handlers.record_failure.handler(event, lambda_context)

    assert (
        control_items.get("dbo_orders")["lastRunError"]
        == "poll limit reached: the DMS task ran longer than 2 hours"
    )


def test_another_runs_state_is_not_overwritten(control_items, load_event, lambda_context):
    # This run was refused with TableLocked: the run holding the lock is still RUNNING.
    control_items.orders(
        lockHolder="dbo_orders-20261121T0600Z", lastRunId="dbo_orders-20261121T0600Z", lastRunStatus="RUNNING"
    )

    result = handlers.record_failure.handler(load_event("record_failure"), lambda_context)

    assert result == {"recorded": False}
    item = control_items.get("dbo_orders")
    assert (item["lastRunId"], item["lastRunStatus"]) == ("dbo_orders-20261121T0600Z", "RUNNING")
    assert "lastRunError" not in item


def test_a_missing_item_is_not_created(control_items, load_event, lambda_context):
    assert handlers.record_failure.handler(load_event("record_failure"), lambda_context) == {
        "recorded": False
    }
    assert control_items.get("dbo_orders") is None


def test_failure_messages_from_the_shapes_a_catch_hands_over():
    assert failure_message(None) == "unknown failure (no cause given)"
    assert failure_message({"Error": "States.Timeout"}) == "States.Timeout"
    assert (
        failure_message({"Error": "States.TaskFailed", "Cause": "not json {"})
        == "States.TaskFailed: not json {"
    )
    assert failure_message('{"errorMessage": "boom", "errorType": "ValueError"}') == "boom"
    assert failure_message({"error": "TableLocked", "cause": "locked"}) == "TableLocked: locked"


def test_a_huge_cause_is_cut_to_fit_the_item():
    message = failure_message("x" * 10_000)

    assert len(message) == MAX_MESSAGE_LENGTH
    assert message.endswith("…")


def _glue_failure(error_message: str) -> dict[str, str]:
    """The Catch's error object for a failed startJobRun.sync task: the job run as the Cause."""
    job_run = {
        "Id": "jr_0a1b2c3d4e5f",
        "JobName": "icetide-bronze-to-silver",
        "JobRunState": "FAILED",
        "ErrorMessage": error_message,
    }
    return {"Error": "States.TaskFailed", "Cause": json.dumps(job_run)}


UNREADABLE = (
    "bronze file s3://icetide-bronze/dbo_orders/run-7/dbo/orders/LOAD00000002.parquet is not a Parquet "
    "file. Expected magic number at tail, but found [48, 44, 50, 10]; it is truncated or corrupt"
)


@pytest.mark.parametrize(
    "error_message",
    [
        f"UnreadableBronzeFile: {UNREADABLE}",
        # bronze_to_silver.py starts its message with the name; Glue may add the class name again.
        f"UnreadableBronzeFile: UnreadableBronzeFile: {UNREADABLE}",
        f"Error Category: UNCLASSIFIED_ERROR; UnreadableBronzeFile: {UNREADABLE}",
        f"Error Category: UNCLASSIFIED_ERROR; Failed Line Number: 64; UnreadableBronzeFile: {UNREADABLE}",
        f"icetide_glue.errors.UnreadableBronzeFile: {UNREADABLE}",
    ],
    ids=["name", "name-twice", "glue-category", "glue-category-and-line", "qualified-name"],
)
def test_a_glue_jobs_error_name_replaces_states_task_failed(error_message: str) -> None:
    assert failure_message(_glue_failure(error_message)) == f"UnreadableBronzeFile: {UNREADABLE}"


def test_a_glue_message_without_an_error_name_keeps_states_task_failed() -> None:
    assert failure_message(_glue_failure("Error Category: TIMEOUT_ERROR; the job ran out of time")) == (
        "States.TaskFailed: Error Category: TIMEOUT_ERROR; the job ran out of time"
    )
    # Another error (not a task failure) keeps its own name, even before a name-like message.
    assert failure_message({"Error": "States.Timeout", "Cause": "MergeTimedOut: 2 hours"}) == (
        "States.Timeout: MergeTimedOut: 2 hours"
    )
