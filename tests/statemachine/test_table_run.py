"""The real table-run state machine, executed by moto with the real handlers (docs/state-machine.md).

Each test starts a local stack, writes the dbo_orders control item, runs one execution and checks
what a user would look at afterwards: the control item, the DMS resources left, the SNS messages.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Any

import pytest

from icetide_local.dms.lifecycle import TABLE_ERROR, DmsLifecycle, ReplicationTaskRun, TableStatistics
from icetide_local.glue_standin import failing_job
from icetide_local.harness import SNS_PUBLISH, Fault, LocalTableRunStack, RunReport
from statemachine.orders import (
    FULL_LOAD_ROWS,
    NEW_WATERMARK,
    PREVIOUS_WATERMARK,
    SNAPSHOT_ID,
    TABLE,
    StackFactory,
    create_shared_instance,
    orders_item,
)

RUN_ID = "dbo_orders-20261121T0700Z"  # the stack's first run of the table

# A nominal run with an instance of its own: the instance is "creating" on the first check, the
# task is "running" on the first poll and has finished on the second.
NOMINAL_STATES = (
    "Prepare run",
    "Acquire table lock",
    "Ensure replication instance",
    "Replication instance available?",
    "Count instance check",
    "Wait for replication instance",
    "Ensure replication instance",
    "Replication instance available?",
    "Create replication task",
    "Start replication task",
    "Lengthen poll wait",
    "Wait for replication task",
    "Poll replication task",
    "Replication task finished?",
    "Lengthen poll wait",
    "Wait for replication task",
    "Poll replication task",
    "Replication task finished?",
    "Read task statistics",
    "Run Glue job",
    "Commit watermark",
    "Delete DMS resources",
    "Notify success",
    "Release table lock",
)

GLUE_JOB = "glue job"  # not a fault target: the Glue stand-in fails through its job runner
INJECTED = "injected by test_table_run"

# Every Task state of the main path, the fault that makes it fail, and the error name the
# execution then ends with.
TASK_FAILURES = [
    pytest.param("Acquire table lock", "acquire_lock", "InjectedFailure", id="acquire-lock"),
    pytest.param(
        "Ensure replication instance", "ensure_replication_instance", "InjectedFailure", id="ensure"
    ),
    pytest.param("Create replication task", "create_replication_task", "InjectedFailure", id="create-task"),
    pytest.param("Start replication task", "start_replication_task", "InjectedFailure", id="start-task"),
    pytest.param("Poll replication task", "poll_replication_task", "InjectedFailure", id="poll-task"),
    pytest.param("Read task statistics", "read_task_statistics", "InjectedFailure", id="statistics"),
    pytest.param("Run Glue job", GLUE_JOB, "States.TaskFailed", id="glue-job"),
    pytest.param("Commit watermark", "commit_watermark", "InjectedFailure", id="commit"),
    pytest.param("Delete DMS resources", "delete_dms_resources", "InjectedFailure", id="delete"),
    pytest.param("Notify success", SNS_PUBLISH, "SNS.InvalidParameterException", id="notify"),
    pytest.param("Release table lock", "release_lock", "InjectedFailure", id="release-lock"),
]
# States after the watermark commit: the data is in silver, so the watermark rightly stays moved.
AFTER_COMMIT = {"Delete DMS resources", "Notify success", "Release table lock"}


def _make_fail(stack: LocalTableRunStack, target: str) -> None:
    # Once, with an error no Retry matches: the state fails; later calls (cleanup) succeed.
    if target == SNS_PUBLISH:
        stack.faults.inject(target, Fault("InvalidParameter", INJECTED, times=1))  # an AWS error code
    elif target != GLUE_JOB:
        stack.faults.inject(target, Fault("InjectedFailure", INJECTED, times=1))


def _item(stack: LocalTableRunStack) -> dict[str, Any]:
    item = stack.control_item(TABLE)
    assert item is not None, "the control item disappeared"
    return item


def _assert_failed(report: RunReport, failed_state: str, error: str) -> None:
    """The execution failed with the state machine's one error name and a cause naming state and error."""
    assert report.status == "FAILED", report.render()
    assert report.error == "TableRunFailed"
    assert (report.cause or "").startswith(f"{failed_state} failed with {error}: "), report.cause


def _handlers_called(stack: LocalTableRunStack, handler: str) -> list[str | None]:
    """The error type of each call of ``handler`` (None: it succeeded)."""
    return [call.error_type for call in stack.lambdas.invocations if call.handler == handler]


def test_a_run_merges_commits_the_watermark_and_cleans_up(stack: LocalTableRunStack) -> None:
    report = stack.run(TABLE)

    assert report.status == "SUCCEEDED", report.render()
    item = _item(stack)
    assert item["watermark"] == NEW_WATERMARK
    assert item["lastRunStatus"] == "SUCCEEDED"
    assert item["lastRunId"] == RUN_ID
    assert item["lastRunStats"] == {
        "rowsRead": FULL_LOAD_ROWS,
        "rowsInserted": 4,
        "rowsUpdated": 5,
        "rowsDeleted": 1,
        "rowsUnchanged": 0,
        "snapshotId": SNAPSHOT_ID,
        "fullLoadRows": FULL_LOAD_ROWS,
    }
    assert "lockHolder" not in item
    inventory = stack.dms_inventory()
    assert (inventory.tasks, inventory.instances, inventory.target_endpoints) == ([], [], [])
    [notification] = stack.notifications()
    assert notification.attributes == {"status": "SUCCEEDED", "targetTableName": TABLE}
    assert notification.message["runId"] == RUN_ID
    assert notification.message["previousWatermark"] == PREVIOUS_WATERMARK
    assert notification.message["watermark"] == NEW_WATERMARK


def test_the_glue_job_gets_the_contract_arguments_from_the_plan(stack: LocalTableRunStack) -> None:
    stack.run(TABLE)

    [job_run] = stack.glue.runs
    assert job_run.arguments == {
        "--target_table": "icetide_silver.dbo_orders",
        "--run_id": RUN_ID,
        "--bronze_uri": f"s3://icetide-raw-local/bronze/dbo_orders/{RUN_ID}/",
        "--manifest_uri": f"s3://icetide-raw-local/manifests/dbo_orders/{RUN_ID}.json",
        "--primary_keys": "order_id",
        "--load_mode": "merge",
        "--watermark_column": "updated_at",
        "--timestamp_column": "dms_timestamp",
    }


def test_a_nominal_run_takes_24_state_transitions(stack: LocalTableRunStack) -> None:
    report = stack.run(TABLE)

    assert report.states_entered == NOMINAL_STATES, report.render()
    assert report.transitions == 24
    assert report.transitions <= 30  # the budget a nominal run must stay within


@pytest.mark.parametrize("instance", ["own instance", "shared instance"])
@pytest.mark.parametrize(("failed_state", "target", "error"), TASK_FAILURES)
def test_a_failed_state_is_cleaned_up_recorded_notified_and_unlocked(
    make_stack: StackFactory, failed_state: str, target: str, error: str, instance: str
) -> None:
    stack = make_stack(glue_runner=failing_job(INJECTED)) if target == GLUE_JOB else make_stack()
    shared = create_shared_instance(stack) if instance == "shared instance" else None
    stack.put_control_item(orders_item(**({"replicationInstanceArn": shared} if shared else {})))
    _make_fail(stack, target)

    report = stack.run(TABLE)

    _assert_failed(report, failed_state, error)
    assert f"{failed_state} failed" in report.states_entered
    inventory = stack.dms_inventory()
    assert inventory.tasks == []
    assert inventory.target_endpoints == []
    assert inventory.instances == ([shared] if shared else [])
    item = _item(stack)
    assert item["watermark"] == (NEW_WATERMARK if failed_state in AFTER_COMMIT else PREVIOUS_WATERMARK)
    assert item["lastRunStatus"] == "FAILED"
    assert item["lastFailedState"] == failed_state
    assert INJECTED in item["lastRunError"]
    assert "lockHolder" not in item
    failure = stack.notifications()[-1]
    assert failure.attributes == {"status": "FAILED", "targetTableName": TABLE}
    assert failure.message["failedState"] == failed_state
    assert failure.message["error"] == error


def test_a_locked_table_fails_at_once_and_leaves_the_lock_and_dms_alone(make_stack: StackFactory) -> None:
    stack = make_stack()
    other_run = "dbo_orders-20261121T0600Z"
    locked_since = datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    stack.put_control_item(orders_item(lockHolder=other_run, lockTime=locked_since))

    report = stack.run(TABLE)

    assert report.status == "FAILED"
    assert report.error == "TableLocked"
    assert report.states_entered == ("Prepare run", "Acquire table lock", "Table locked by another run")
    assert [call.handler for call in stack.lambdas.invocations] == ["acquire_lock"]
    item = _item(stack)
    assert (item["lockHolder"], item["lockTime"]) == (other_run, locked_since)
    assert item["watermark"] == PREVIOUS_WATERMARK
    assert "lastFailedState" not in item
    assert stack.notifications() == []


@pytest.mark.parametrize(
    ("handler", "transient_error"),
    [
        ("start_replication_task", "DmsResourceNotReady"),
        ("commit_watermark", "Lambda.ServiceException"),
        ("delete_dms_resources", "DmsResourceBusy"),
    ],
)
def test_a_transient_error_is_retried_and_the_run_succeeds(
    stack: LocalTableRunStack, handler: str, transient_error: str
) -> None:
    stack.faults.inject(handler, Fault(transient_error, INJECTED, times=1))

    report = stack.run(TABLE)

    assert report.status == "SUCCEEDED", report.render()
    assert report.states_entered == NOMINAL_STATES  # a retry is not a transition
    assert _handlers_called(stack, handler) == [transient_error, None]
    assert _item(stack)["watermark"] == NEW_WATERMARK


def test_a_shared_instance_is_reused_and_kept_on_success(make_stack: StackFactory) -> None:
    stack = make_stack()
    shared = create_shared_instance(stack)
    stack.put_control_item(orders_item(replicationInstanceArn=shared))

    report = stack.run(TABLE)

    assert report.status == "SUCCEEDED", report.render()
    assert report.entered("Count instance check") == 0
    assert stack.dms_inventory().instances == [shared]
    assert _item(stack)["watermark"] == NEW_WATERMARK


def test_polls_are_bounded_and_a_task_that_never_finishes_is_stopped_and_deleted(
    make_stack: StackFactory,
) -> None:
    stack = make_stack(
        substitutions={"PollSeconds": "1", "MaxPollWaitSeconds": "2", "MaxPolls": "3"},
        dms=DmsLifecycle(full_load_finishes=False),
    )
    stack.put_control_item(orders_item())

    report = stack.run(TABLE)

    _assert_failed(report, "Poll replication task", "ReplicationTaskTimedOut")
    assert report.entered("Poll replication task") == 3
    assert _wait_lengths(stack, report.execution_arn) == [1, 2, 2]  # grows by 1 s, never past 2 s
    inventory = stack.dms_inventory()
    assert (inventory.tasks, inventory.instances, inventory.target_endpoints) == ([], [], [])
    item = _item(stack)
    assert item["lastFailedState"] == "Poll replication task"
    assert "after 3 polls" in item["lastRunError"]
    assert item["watermark"] == PREVIOUS_WATERMARK
    assert "lockHolder" not in item
    assert stack.notifications()[-1].message["error"] == "ReplicationTaskTimedOut"


def _wait_lengths(stack: LocalTableRunStack, execution_arn: str) -> list[int]:
    events = stack.client("stepfunctions").get_execution_history(executionArn=execution_arn)["events"]
    return [
        json.loads(event["stateEnteredEventDetails"]["input"])["polling"]["waitSeconds"]
        for event in events
        if event["type"] == "WaitStateEntered"
        and event["stateEnteredEventDetails"]["name"] == "Wait for replication task"
    ]


def _mover_fails(run: ReplicationTaskRun) -> list[TableStatistics]:
    raise ConnectionError("source database refused the connection")


def _table_errors(run: ReplicationTaskRun) -> list[TableStatistics]:
    return [TableStatistics(schema="dbo", table="orders", state=TABLE_ERROR)]


@pytest.mark.parametrize(
    ("mover", "cause"),
    [
        (_mover_fails, "ConnectionError: source database refused the connection"),
        (_table_errors, "1 table(s) errored"),
    ],
    ids=["task-failed", "table-errored"],
)
def test_a_failed_replication_task_fails_the_run_with_its_reason(
    make_stack: StackFactory, mover: Any, cause: str
) -> None:
    stack = make_stack(dms=DmsLifecycle(mover=mover))
    stack.put_control_item(orders_item())

    report = stack.run(TABLE)

    _assert_failed(report, "Poll replication task", "ReplicationTaskFailed")
    assert cause in (report.cause or "")
    assert report.entered("Run Glue job") == 0
    inventory = stack.dms_inventory()
    assert (inventory.tasks, inventory.instances, inventory.target_endpoints) == ([], [], [])
    item = _item(stack)
    assert item["lastFailedState"] == "Poll replication task"
    assert item["watermark"] == PREVIOUS_WATERMARK


def test_an_instance_that_never_becomes_available_fails_the_run_after_the_bound(
    make_stack: StackFactory,
) -> None:
    stack = make_stack(
        substitutions={"MaxInstanceChecks": "2"}, dms=DmsLifecycle(instance_describes_until_available=50)
    )
    stack.put_control_item(orders_item())

    report = stack.run(TABLE)

    _assert_failed(report, "Ensure replication instance", "ReplicationInstanceNotAvailable")
    assert report.entered("Ensure replication instance") == 3  # the first check and 2 more
    assert stack.dms_inventory().instances == []
    assert _item(stack)["lastFailedState"] == "Ensure replication instance"


# -- the cleanup path's own Task states -----------------------------------------------------------
# A failing cleanup step must not stop the others. The run first fails at Commit watermark.


def test_when_cleanup_cannot_delete_the_failure_is_still_recorded_notified_and_unlocked(
    stack: LocalTableRunStack,
) -> None:
    _make_fail(stack, "commit_watermark")
    stack.faults.inject("delete_dms_resources", Fault("InjectedFailure", INJECTED, times=None))

    report = stack.run(TABLE)

    _assert_failed(report, "Commit watermark", "InjectedFailure")
    assert report.entered("Delete DMS resources after failure") == 1
    inventory = stack.dms_inventory()
    assert len(inventory.tasks) == 1  # left for a person: the failure message says so
    item = _item(stack)
    assert item["lastFailedState"] == "Commit watermark"
    assert "lockHolder" not in item
    assert stack.notifications()[-1].message["failedState"] == "Commit watermark"


def test_when_recording_fails_the_run_is_still_cleaned_up_notified_and_unlocked(
    stack: LocalTableRunStack,
) -> None:
    _make_fail(stack, "commit_watermark")
    stack.faults.inject("record_failure", Fault("InjectedFailure", INJECTED, times=None))

    report = stack.run(TABLE)

    _assert_failed(report, "Commit watermark", "InjectedFailure")
    assert stack.dms_inventory().tasks == []
    item = _item(stack)
    assert "lastFailedState" not in item
    assert "lockHolder" not in item
    assert stack.notifications()[-1].message["failedState"] == "Commit watermark"


def test_when_notifying_fails_the_run_is_still_recorded_and_unlocked(stack: LocalTableRunStack) -> None:
    _make_fail(stack, "commit_watermark")
    stack.faults.inject(SNS_PUBLISH, Fault("InvalidParameter", INJECTED, times=None))

    report = stack.run(TABLE)

    _assert_failed(report, "Commit watermark", "InjectedFailure")
    assert report.entered("Notify failure") == 1
    assert stack.notifications() == []
    item = _item(stack)
    assert item["lastFailedState"] == "Commit watermark"
    assert "lockHolder" not in item


def test_when_unlocking_fails_the_run_still_ends_failed_with_its_first_error(
    stack: LocalTableRunStack,
) -> None:
    _make_fail(stack, "commit_watermark")
    stack.faults.inject("release_lock", Fault("InjectedFailure", INJECTED, times=None))

    report = stack.run(TABLE)

    _assert_failed(report, "Commit watermark", "InjectedFailure")
    assert report.states_entered[-2:] == ("Release table lock after failure", "Run failed")
    item = _item(stack)
    assert item["lastFailedState"] == "Commit watermark"
    assert item["lockHolder"] == RUN_ID  # a later run breaks it once it is stale
