"""S3 events through the real StartOnNewFiles handler into the real state machine (issue 13): a
burst of new files of one continuous table starts exactly one execution.

The function is invoked through moto's Lambda (served in-process by the harness, as the Step
Functions tasks are) with batches of SQS records, each holding an EventBridge "Object Created"
event of one file, the way the events rule's queue delivers them: one record per batch (the
queue's worst case), and all ten in one batch. What the execution then does is the continuous
run's business (test_continuous_runs.py); this only counts the executions the events started.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from icetide_local.stepfunctions import TableRunHarness
from statemachine.orders import TABLE, StackFactory, create_shared_instance, orders_item
from statemachine.test_continuous_runs import CONTINUOUS_ITEM, FILES

BURST_START = datetime(2026, 11, 21, 7, 0, 5, tzinfo=UTC)
BURST_SIZE = 10
# Ten files within 4 min 30 s: all in the 5-minute slot from 07:00 (EVENT_SLOT_MINUTES defaults to 5).
BURST_STEP = timedelta(seconds=30)
EXPECTED_RUN = f"{TABLE}-20261121T0700Z"


def _continuous_stack(make_stack: StackFactory) -> TableRunHarness:
    stack = make_stack()
    attributes = {**CONTINUOUS_ITEM, "replicationInstanceArn": create_shared_instance(stack)}
    stack.put_control_item(
        {name: value for name, value in orders_item(**attributes).items() if value is not None}
    )
    return stack


def _start_on_new_files_function(stack: TableRunHarness) -> str:
    """The StartOnNewFiles function, as the template deploys it beside the state machine; its name.

    Not a state-machine substitution (the ASL never calls it), so the harness does not make it by
    itself; made after provisioning, its environment names the state machine.
    """
    arn = stack._create_function("start_on_new_files")
    return arn.rpartition(":")[2]


def _object_created(stack: TableRunHarness, key: str, time: datetime) -> dict[str, Any]:
    bucket = stack.names.raw_bucket
    return {
        "version": "0",
        "detail-type": "Object Created",
        "source": "aws.s3",
        "time": time.strftime("%Y-%m-%dT%H:%M:%SZ"),
        "region": stack.names.region,
        "resources": [f"arn:aws:s3:::{bucket}"],
        "detail": {
            "version": "0",
            "bucket": {"name": bucket},
            "object": {"key": key, "size": 10},
            "reason": "PutObject",
        },
    }


def _invoke(stack: TableRunHarness, function_name: str, events: list[dict[str, Any]]) -> dict[str, Any]:
    """Hand ``events`` to the function as one batch of the queue's records."""
    batch = {"Records": [{"messageId": f"m{i}", "body": json.dumps(event)} for i, event in enumerate(events)]}
    response = stack.client("lambda").invoke(FunctionName=function_name, Payload=json.dumps(batch).encode())
    payload: dict[str, Any] = json.loads(response["Payload"].read())
    assert "FunctionError" not in response, payload
    return payload


def _burst(stack: TableRunHarness) -> list[dict[str, Any]]:
    """DMS writes ten files, S3 tells EventBridge: the ten events the rule puts into the queue."""
    folder = f"bronze/_continuous/{TABLE}/{FILES}"
    events = []
    for index in range(BURST_SIZE):
        written = BURST_START + index * BURST_STEP
        key = f"{folder}{written.strftime('%Y%m%d-%H%M%S')}{written.microsecond // 1000:03d}.parquet"
        stack.client("s3").put_object(Bucket=stack.names.raw_bucket, Key=key, Body=b"x" * 10)
        events.append(_object_created(stack, key, written))
    return events


def _executions(stack: TableRunHarness) -> list[dict[str, Any]]:
    executions: list[dict[str, Any]] = stack.client("stepfunctions").list_executions(
        stateMachineArn=stack.state_machine_arn
    )["executions"]
    return executions


@pytest.mark.parametrize("batch_size", [1, BURST_SIZE], ids=["one-event-per-batch", "one-batch"])
def test_ten_s3_events_for_one_table_in_a_burst_start_exactly_one_execution(
    make_stack: StackFactory, batch_size: int
) -> None:
    stack = _continuous_stack(make_stack)
    function_name = _start_on_new_files_function(stack)
    events = _burst(stack)

    results = [
        _invoke(stack, function_name, events[i : i + batch_size]) for i in range(0, BURST_SIZE, batch_size)
    ]

    executions = _executions(stack)
    assert [execution["name"] for execution in executions] == [EXPECTED_RUN]
    # Later batches find the execution, or the lock it holds while it runs: either way they start
    # nothing, and no record is handed back for a retry.
    assert results == [{"batchItemFailures": []}] * len(results)
    # Let the run end inside the mock (its outcome is test_continuous_runs.py's subject).
    stack.wait(executions[0]["executionArn"])
