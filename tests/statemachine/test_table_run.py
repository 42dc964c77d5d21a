"""The real table-run state machine, executed by moto with the real handlers (docs/state-machine.md).

Each test starts a local stack, writes the dbo_orders control item, runs one execution and checks
what a user would look at afterwards: the control item, the DMS resources left, the SNS messages.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

import pytest
from botocore.exceptions import ClientError

import handlers.commit_watermark
from icetide.adapters import dms
from icetide_local.standins.dms.lifecycle import (
    TABLE_ERROR,
    DmsLifecycle,
    ReplicationTaskRun,
    TableStatistics,
)
from icetide_local.standins.glue import JobRunner, StandInJobRun, failing_job
from icetide_local.stepfunctions import SNS_PUBLISH, Fault, RunReport, TableRunHarness
from icetide_local.stepfunctions.harness import DmsInventory, Notification
from statemachine.cdc_orders import STORED_CHECKPOINT, cdc_orders_item, cdc_stack
from statemachine.orders import (
    FULL_LOAD_ROWS,
    NEW_WATERMARK,
    PREVIOUS_WATERMARK,
    SNAPSHOT_ID,
    TABLE,
    StackFactory,
    create_shared_instance,
    orders_item,
    orders_manifest,
    orders_stack,
)

RUN_ID = "dbo_orders-20261121T0700Z"  # the stack's first run of the table
LATER_RUN = "dbo_orders-20261121T1400Z"
INSTANCES = ["own instance", "shared instance"]

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
    "Continuous task?",
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
    "Delete DMS resources",
    "Verify run?",  # not a verify run: on to the success message and the commit
    "Notify success",
    "Commit watermark",  # the last step: watermark, statistics, status and unlock in one write
)

GLUE_JOB = "glue job"  # not a fault target: the Glue stand-in fails through its job runner
INJECTED = "injected by test_table_run"

# Every Task state of the main path, the fault that makes it fail, and the error name the
# execution then ends with. Whichever fails, the watermark stays where it was.
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
    pytest.param("Delete DMS resources", "delete_dms_resources", "InjectedFailure", id="delete"),
    pytest.param("Notify success", SNS_PUBLISH, "SNS.InvalidParameterException", id="notify"),
    pytest.param("Commit watermark", "commit_watermark", "InjectedFailure", id="commit"),
]


def _make_fail(stack: TableRunHarness, target: str) -> None:
    # Once, with an error no Retry matches: the state fails; later calls (cleanup) succeed.
    if target == SNS_PUBLISH:
        stack.faults.inject(target, Fault("InvalidParameter", INJECTED, times=1))  # an AWS error code
    elif target != GLUE_JOB:
        stack.faults.inject(target, Fault("InjectedFailure", INJECTED, times=1))


def _put_orders(stack: TableRunHarness, instance: str) -> str | None:
    """Write the dbo_orders item; with a "shared instance", create one it reuses and return its ARN."""
    shared = create_shared_instance(stack) if instance == "shared instance" else None
    stack.put_control_item(orders_item(**({"replicationInstanceArn": shared} if shared else {})))
    return shared


def _item(stack: TableRunHarness) -> dict[str, Any]:
    item = stack.control_item(TABLE)
    assert item is not None, "the control item disappeared"
    return item


def _assert_failed(report: RunReport, failed_state: str, error: str) -> None:
    """The execution failed with the state machine's one error name and a cause naming state and error."""
    assert report.status == "FAILED", report.render()
    assert report.error == "TableRunFailed"
    assert (report.cause or "").startswith(f"{failed_state} failed with {error}: "), report.cause


def _handlers_called(stack: TableRunHarness, handler: str) -> list[str | None]:
    """The error type of each call of ``handler`` (None: it succeeded)."""
    return [call.error_type for call in stack.lambdas.invocations if call.handler == handler]


@dataclass(frozen=True)
class NominalRun:
    """One nominal run of dbo_orders and what a user looks at after it."""

    report: RunReport
    item: dict[str, Any]
    inventory: DmsInventory
    job_runs: list[StandInJobRun]
    notifications: list[Notification]


@pytest.fixture(scope="module")
def nominal_run() -> NominalRun:
    """The nominal run, once for the tests that only look at it (each checks other parts of it)."""
    with orders_stack() as stack:
        stack.put_control_item(orders_item())
        report = stack.run(TABLE)
        return NominalRun(
            report=report,
            item=_item(stack),
            inventory=stack.dms_inventory(),
            job_runs=list(stack.glue.runs),
            notifications=stack.notifications(),
        )


def test_a_run_merges_cleans_up_notifies_and_commits_the_watermark(nominal_run: NominalRun) -> None:
    report = nominal_run.report

    assert report.status == "SUCCEEDED", report.render()
    item = nominal_run.item
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
        "changeRows": 0,  # a full load writes no change rows
    }
    assert "lockHolder" not in item
    inventory = nominal_run.inventory
    assert (inventory.tasks, inventory.instances, inventory.target_endpoints) == ([], [], [])
    [job_run] = nominal_run.job_runs
    [notification] = nominal_run.notifications
    assert notification.subject == "icetide run merged"
    assert notification.attributes == {"status": "MERGED", "targetTableName": TABLE}
    # Sent before the commit: what was merged and where the run started, no watermark yet.
    message = dict(notification.message)
    deleted = message.pop("deleted")
    assert message == {
        "status": "MERGED",
        "targetTableName": TABLE,
        "runId": RUN_ID,
        "detail": "merged into the silver table; committing the watermark next",
        "silverTable": "icetide_silver.dbo_orders",
        "previousWatermark": PREVIOUS_WATERMARK,
        "fullLoadRows": FULL_LOAD_ROWS,
        "glueJobRunId": job_run.job_run_id,
        "manifestUri": f"s3://icetide-raw-local/manifests/dbo_orders/{RUN_ID}.json",
    }
    assert (deleted["alreadyGone"], deleted["kept"]) == ([], [])
    assert sorted(arn.split(":")[5] for arn in deleted["deleted"]) == ["endpoint", "rep", "task"]


def test_the_glue_job_gets_the_contract_arguments_from_the_plan(nominal_run: NominalRun) -> None:
    [job_run] = nominal_run.job_runs
    assert job_run.arguments == {
        "--target_table": "icetide_silver.dbo_orders",
        "--run_id": RUN_ID,
        "--bronze_uri": f"s3://icetide-raw-local/bronze/dbo_orders/{RUN_ID}/",
        "--manifest_uri": f"s3://icetide-raw-local/manifests/dbo_orders/{RUN_ID}.json",
        "--primary_keys": "order_id",
        "--load_mode": "merge",
        "--watermark_column": "updated_at",
        "--timestamp_column": "dms_timestamp",
        "--expected_rows": "10",  # FULL_LOAD_ROWS, as the DMS stand-in's statistics reported it
        "--max_change_rows": "0",  # a full-load task captures no change
        "--expected_files": "0",  # the stand-in here moves no data: the folder holds no file
        "--delete_mode": "hard",
        # Not a reconcile run: the key extraction's arguments are empty.
        "--reconcile_uri": "",
        "--reconcile_expected_rows": "",
        "--reconcile_started_at": "",
        "--bronze_files_uri": "",
        # Not a verify run: the job merges.
        "--verify_report_uri": "",
    }


def test_an_append_table_runs_the_glue_job_in_append_mode(make_stack: StackFactory) -> None:
    stack = make_stack()
    item = orders_item(loadMode="append")
    del item["primaryKeys"]  # a key-less table, like every item of the blog post
    stack.put_control_item(item)

    stack.run(TABLE)

    [job_run] = stack.glue.runs
    # The job itself skips rows silver already holds (append_once.py): no watermark bound is passed.
    assert (job_run.arguments["--load_mode"], job_run.arguments["--primary_keys"]) == ("append", "")
    assert not any("append_after" in name for name in job_run.arguments)


def test_a_nominal_run_takes_23_state_transitions(nominal_run: NominalRun) -> None:
    report = nominal_run.report

    assert report.states_entered == NOMINAL_STATES, report.render()
    assert report.transitions == 25
    assert report.transitions <= 30  # the budget a nominal run must stay within


# Each failing state twice: a delta table with an instance of its own, and a windowed cdc table on
# a shared instance. The cleanup deletes an own instance and keeps a shared one; a cdc table's
# checkpoint stays where it was, as the watermark does.
RUN_KINDS = ["delta, own instance", "cdc, shared instance"]
# A failed cdc run commits no checkpoint, whatever its task read: its task may stop at the soonest
# stop the handler sets, so that a state after the poll loop is reached with the least idle polling.
SOONEST_CDC_STOP = {"CDC_STOP_AFTER_SECONDS": "1"}


@pytest.mark.parametrize("kind", RUN_KINDS)
@pytest.mark.parametrize(("failed_state", "target", "error"), TASK_FAILURES)
def test_a_failed_state_is_cleaned_up_recorded_notified_and_unlocked(
    make_stack: StackFactory, failed_state: str, target: str, error: str, kind: str
) -> None:
    options = {"glue_runner": failing_job(INJECTED)} if target == GLUE_JOB else {}
    cdc = kind == "cdc, shared instance"
    if cdc:
        stack, _ = cdc_stack(make_stack, environment=SOONEST_CDC_STOP, **options)
        shared: str | None = create_shared_instance(stack)
        stack.put_control_item(
            cdc_orders_item(replicationInstanceArn=shared, cdcCheckpoint=STORED_CHECKPOINT)
        )
    else:
        stack = make_stack(**options)
        shared = _put_orders(stack, "own instance")
    _make_fail(stack, target)

    report = stack.run(TABLE)

    _assert_failed(report, failed_state, error)
    assert f"{failed_state} failed" in report.states_entered
    inventory = stack.dms_inventory()
    assert inventory.tasks == []
    assert inventory.target_endpoints == []
    assert inventory.instances == ([shared] if shared else [])
    item = _item(stack)
    assert item["watermark"] == PREVIOUS_WATERMARK
    if cdc:
        assert item["cdcCheckpoint"] == STORED_CHECKPOINT
    assert "lastRunStats" not in item  # nothing of the commit was written
    assert item["lastRunStatus"] == "FAILED"
    assert item["lastFailedState"] == failed_state
    assert INJECTED in item["lastRunError"]
    assert "lockHolder" not in item
    failure = stack.notifications()[-1]
    assert failure.attributes == {"status": "FAILED", "targetTableName": TABLE}
    assert failure.message["failedState"] == failed_state
    assert failure.message["error"] == error


def test_a_locked_table_is_refused_at_once_not_failed_and_the_lock_and_dms_are_left_alone(
    make_stack: StackFactory,
) -> None:
    stack = make_stack()
    other_run = "dbo_orders-20261121T0600Z"
    locked_since = datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    stack.put_control_item(orders_item(lockHolder=other_run, lockTime=locked_since))

    report = stack.run(TABLE)

    # A refusal is not a failure (no failed-runs alarm, no cleanup event): the execution succeeds
    # and its output says why nothing ran.
    assert report.status == "SUCCEEDED"
    assert report.output["refused"] == "table locked by another run"
    assert report.output["error"] == "TableLocked"
    assert other_run in report.output["cause"]
    assert report.states_entered == (
        "Prepare run",
        "Acquire table lock",
        "Table locked by another run",
        "Refused: table locked",
    )
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
    stack: TableRunHarness, handler: str, transient_error: str
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


@pytest.mark.parametrize("instance", INSTANCES)
def test_polls_are_bounded_and_a_task_that_never_finishes_is_stopped_and_deleted(
    make_stack: StackFactory, instance: str
) -> None:
    stack = make_stack(
        substitutions={"PollSeconds": "1", "MaxPollWaitSeconds": "2", "MaxPolls": "3"},
        dms=DmsLifecycle(full_load_finishes=False),
    )
    shared = _put_orders(stack, instance)

    report = stack.run(TABLE)

    _assert_failed(report, "Poll replication task", "ReplicationTaskTimedOut")
    assert report.entered("Poll replication task") == 3
    assert _wait_lengths(stack, report.execution_arn) == [1, 2, 2]  # grows by 1 s, never past 2 s
    inventory = stack.dms_inventory()
    assert (inventory.tasks, inventory.target_endpoints) == ([], [])
    assert inventory.instances == ([shared] if shared else [])
    item = _item(stack)
    assert item["lastFailedState"] == "Poll replication task"
    assert "after 3 polls" in item["lastRunError"]
    assert item["watermark"] == PREVIOUS_WATERMARK
    assert "lockHolder" not in item
    assert stack.notifications()[-1].message["error"] == "ReplicationTaskTimedOut"


def _wait_lengths(stack: TableRunHarness, execution_arn: str) -> list[int]:
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


# -- a state that fails after it created something -------------------------------------------------
# Faults injected by the harness fire before a handler runs, so nothing was created yet. These
# tests let the handler create its DMS resource first and fail afterwards; cleanup then finds it by
# the identifiers derived from the run id, as the run's state does not name it.


def _dms_refusal(operation: str) -> ClientError:
    return ClientError({"Error": {"Code": "AccessDeniedFault", "Message": INJECTED}}, operation)


def _then_fail(create: Callable[..., Any], operation: str) -> Callable[..., Any]:
    """``create`` that creates its resource and then raises, as if DMS's answer never arrived."""

    def create_then_fail(*args: Any, **kwargs: Any) -> Any:
        create(*args, **kwargs)
        raise _dms_refusal(operation)

    return create_then_fail


def test_an_instance_created_before_ensure_failed_is_deleted(
    make_stack: StackFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    stack = make_stack()
    stack.put_control_item(orders_item())
    monkeypatch.setattr(dms, "create_instance", _then_fail(dms.create_instance, "CreateReplicationInstance"))

    report = stack.run(TABLE)

    _assert_failed(report, "Ensure replication instance", "ClientError")
    assert _handlers_called(stack, "ensure_replication_instance") == ["ClientError"]
    [deleted] = _deleted_by_cleanup(stack)
    assert ":rep:" in deleted  # the instance existed, and cleanup deleted it
    inventory = stack.dms_inventory()
    assert (inventory.tasks, inventory.instances, inventory.target_endpoints) == ([], [], [])
    assert _item(stack)["watermark"] == PREVIOUS_WATERMARK


@pytest.mark.parametrize("instance", INSTANCES)
@pytest.mark.parametrize("task_created", [False, True], ids=["endpoint-only", "endpoint-and-task"])
def test_an_endpoint_and_task_created_before_create_task_failed_are_deleted(
    make_stack: StackFactory, monkeypatch: pytest.MonkeyPatch, instance: str, task_created: bool
) -> None:
    stack = make_stack()
    shared = _put_orders(stack, instance)

    def refuse(*args: Any, **kwargs: Any) -> Any:
        raise _dms_refusal("CreateReplicationTask")

    failing_create = _then_fail(dms.create_task, "CreateReplicationTask") if task_created else refuse
    monkeypatch.setattr(dms, "create_task", failing_create)

    report = stack.run(TABLE)

    _assert_failed(report, "Create replication task", "ClientError")
    created = {":endpoint:", ":task:"} if task_created else {":endpoint:"}
    deleted = _deleted_by_cleanup(stack)
    assert {kind for kind in (":endpoint:", ":task:") for arn in deleted if kind in arn} == created
    inventory = stack.dms_inventory()
    assert (inventory.tasks, inventory.target_endpoints) == ([], [])
    assert inventory.instances == ([shared] if shared else [])
    item = _item(stack)
    assert (item["watermark"], item["lastFailedState"]) == (PREVIOUS_WATERMARK, "Create replication task")
    assert "lockHolder" not in item


def _deleted_by_cleanup(stack: TableRunHarness) -> list[str]:
    """The ARNs the cleanup path deleted, as the failure notification names them."""
    failure = stack.notifications()[-1]
    assert failure.attributes["status"] == "FAILED"
    return list(failure.message["deleted"]["deleted"])


# -- the commit: the last step, all or nothing -----------------------------------------------------


def _glue_job_then(stack_changes: Callable[[], None]) -> JobRunner:
    """The Glue stand-in's merge, after which ``stack_changes`` runs: another writer acting mid-run."""
    merge = orders_manifest()

    def run(arguments: Mapping[str, str]) -> None:
        merge(arguments)
        stack_changes()

    return run


def test_a_run_whose_lock_was_taken_over_commits_nothing_and_leaves_the_new_holder_alone(
    stack: TableRunHarness,
) -> None:
    # The run outlived the lock's staleness and a later run took the table over before the commit.
    taken_at = "2026-11-21T14:00:03Z"
    later = {
        "lockHolder": LATER_RUN,
        "lockTime": taken_at,
        "lastRunId": LATER_RUN,
        "lastRunStatus": "RUNNING",
    }
    stack.glue.runner = _glue_job_then(lambda: stack.put_control_item({**_item(stack), **later}))

    report = stack.run(TABLE)

    _assert_failed(report, "Commit watermark", "LockLost")
    item = _item(stack)
    assert item["watermark"] == PREVIOUS_WATERMARK
    # The item is the later run's now: not marked failed, not unlocked, no statistics of ours.
    assert (item["lockHolder"], item["lockTime"], item["lastRunId"], item["lastRunStatus"]) == (
        LATER_RUN,
        taken_at,
        LATER_RUN,
        "RUNNING",
    )
    assert "lastRunStats" not in item and "lastFailedState" not in item
    inventory = stack.dms_inventory()
    assert (inventory.tasks, inventory.instances, inventory.target_endpoints) == ([], [], [])
    merged, failed = stack.notifications()
    assert merged.attributes["status"] == "MERGED"
    assert (failed.message["failedState"], failed.message["error"]) == ("Commit watermark", "LockLost")


def test_a_watermark_moved_during_the_run_fails_the_commit_and_is_kept(stack: TableRunHarness) -> None:
    moved = "2026-11-21 06:30:00"
    stack.glue.runner = _glue_job_then(lambda: stack.put_control_item({**_item(stack), "watermark": moved}))

    report = stack.run(TABLE)

    _assert_failed(report, "Commit watermark", "WatermarkConflict")
    item = _item(stack)
    assert item["watermark"] == moved
    assert (item["lastRunStatus"], item["lastFailedState"]) == ("FAILED", "Commit watermark")
    assert "lastRunStats" not in item
    assert "lockHolder" not in item  # released by the failure path


def test_a_commit_whose_answer_was_lost_is_retried_and_the_run_succeeds(
    stack: TableRunHarness, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The Lambda service fails after the handler committed: Step Functions retries the state, and
    # the retry finds the run's own commit instead of a lost lock.
    commit = handlers.commit_watermark.handler
    service_exception = type("Lambda.ServiceException", (Exception,), {})  # the errorType AWS reports
    answers_lost: list[int] = []

    def commit_then_lose_the_answer(event: dict[str, Any], context: Any) -> dict[str, Any]:
        result = commit(event, context)
        if not answers_lost:
            answers_lost.append(1)
            raise service_exception("the function's response was lost")
        return result

    monkeypatch.setattr(handlers.commit_watermark, "handler", commit_then_lose_the_answer)

    report = stack.run(TABLE)

    assert report.status == "SUCCEEDED", report.render()
    assert _handlers_called(stack, "commit_watermark") == ["Lambda.ServiceException", None]
    item = _item(stack)
    assert (item["watermark"], item["lastRunStatus"]) == (NEW_WATERMARK, "SUCCEEDED")
    assert "lockHolder" not in item


# -- the cleanup path's own Task states -----------------------------------------------------------
# A failing cleanup step must not stop the others. The run first fails at Read task statistics,
# when the task, its endpoint and the instance all exist.
FIRST_FAILURE = "Read task statistics"


@pytest.mark.parametrize("instance", INSTANCES)
def test_when_cleanup_cannot_delete_the_failure_is_still_recorded_notified_and_unlocked(
    make_stack: StackFactory, instance: str
) -> None:
    stack = make_stack()
    shared = _put_orders(stack, instance)
    _make_fail(stack, "read_task_statistics")
    stack.faults.inject("delete_dms_resources", Fault("InjectedFailure", INJECTED, times=None))

    report = stack.run(TABLE)

    _assert_failed(report, FIRST_FAILURE, "InjectedFailure")
    assert report.entered("Delete DMS resources after failure") == 1
    inventory = stack.dms_inventory()
    # Left for a person (the failure message says so); a shared instance is never the run's to delete.
    assert (len(inventory.tasks), len(inventory.target_endpoints), len(inventory.instances)) == (1, 1, 1)
    if shared:
        assert inventory.instances == [shared]
    item = _item(stack)
    assert (item["watermark"], item["lastFailedState"]) == (PREVIOUS_WATERMARK, FIRST_FAILURE)
    assert "lockHolder" not in item
    assert stack.notifications()[-1].message["failedState"] == FIRST_FAILURE


def test_when_recording_fails_the_run_is_still_cleaned_up_notified_and_unlocked(
    stack: TableRunHarness,
) -> None:
    _make_fail(stack, "read_task_statistics")
    stack.faults.inject("record_failure", Fault("InjectedFailure", INJECTED, times=None))

    report = stack.run(TABLE)

    _assert_failed(report, FIRST_FAILURE, "InjectedFailure")
    inventory = stack.dms_inventory()
    assert (inventory.tasks, inventory.instances, inventory.target_endpoints) == ([], [], [])
    item = _item(stack)
    assert "lastFailedState" not in item
    assert "lockHolder" not in item
    assert stack.notifications()[-1].message["failedState"] == FIRST_FAILURE


def test_when_notifying_fails_the_run_is_still_recorded_and_unlocked(stack: TableRunHarness) -> None:
    _make_fail(stack, "read_task_statistics")
    stack.faults.inject(SNS_PUBLISH, Fault("InvalidParameter", INJECTED, times=None))

    report = stack.run(TABLE)

    _assert_failed(report, FIRST_FAILURE, "InjectedFailure")
    assert report.entered("Notify failure") == 1
    assert stack.notifications() == []
    item = _item(stack)
    assert item["lastFailedState"] == FIRST_FAILURE
    assert "lockHolder" not in item


def test_when_unlocking_fails_the_run_still_ends_failed_with_its_first_error(
    stack: TableRunHarness,
) -> None:
    _make_fail(stack, "read_task_statistics")
    stack.faults.inject("release_lock", Fault("InjectedFailure", INJECTED, times=None))

    report = stack.run(TABLE)

    _assert_failed(report, FIRST_FAILURE, "InjectedFailure")
    assert report.states_entered[-2:] == ("Release table lock after failure", "Run failed")
    item = _item(stack)
    assert item["lastFailedState"] == FIRST_FAILURE
    assert item["lockHolder"] == RUN_ID  # a later run breaks it once it is stale
