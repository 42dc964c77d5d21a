"""Runs that end outside the state machine's paths are cleaned up by the rules on their status.

An execution stopped by hand (StopExecution) or timed out skips every Catch: its DMS resources and
its lock stay. Here the real table-run definition runs in moto with a DMS stand-in whose load never
finishes, so the run is waiting on DMS when it is stopped or times out; then the stand-in of the
execution-status rule (icetide_local.stepfunctions.cleanup_rules) hands the event AWS would send to
the real CleanUpExecution handler, and the hourly sweep's stand-in runs the real SweepDmsResources.
"""

from __future__ import annotations

from datetime import timedelta

import pytest

import handlers.sweep_dms_resources
from icetide.clock import utc_now
from icetide_local.standins.dms.lifecycle import DmsLifecycle
from icetide_local.stepfunctions import DmsInventory, Fault, TableRunHarness
from icetide_local.stepfunctions.cleanup_rules import Delivery
from icetide_local.stepfunctions.execution_report import execution_history
from statemachine.orders import (
    POLLING_WITHOUT_END,
    PREVIOUS_WATERMARK,
    TABLE,
    StackFactory,
    orders_item,
    orders_replication,
    wait_until_polling,
)

# The states of the poll loop: a run stopped while it waits on DMS is in one of them.
POLL_LOOP = {
    "Lengthen poll wait",
    "Wait for replication task",
    "Poll replication task",
    "Replication task finished?",
    "Keep poll wait at its longest",
}
FIRST_RUN = "dbo_orders-20261121T0700Z"
# What the first run creates in stack icetide-local (icetide.dms.identifiers names them
# icetide-dbo-orders-20261121t0700z-74887dd61a988708); their ARNs end with the ResourceIdentifier
# DMS_ARN_NAME_PREFIX-<15 hex of sha256('["<ARN type>", "<identifier>"]')> (icetide.dms.arn_names).
FIRST_RUN_TASK = "arn:aws:dms:eu-west-1:123456789012:task:icetide10ca1000-81321dd9b76d51d"
FIRST_RUN_INSTANCE = "arn:aws:dms:eu-west-1:123456789012:rep:icetide10ca1000-e43992a70c3a9c1"
NOTHING = DmsInventory(tasks=[], instances=[], target_endpoints=[])
INJECTED = "failure injected by the test"


def _stack_waiting_on_dms(make_stack: StackFactory) -> TableRunHarness:
    stack = make_stack(
        POLLING_WITHOUT_END, dms=DmsLifecycle(mover=orders_replication, full_load_finishes=False)
    )
    stack.put_control_item(orders_item())
    return stack


def _deliver(stack: TableRunHarness, execution_arn: str) -> Delivery:
    assert stack.execution_status_rule is not None
    delivery = stack.execution_status_rule.deliver(execution_arn)
    assert delivery is not None, "the rule's pattern did not match the execution's event"
    return delivery


def _assert_retried_only_while_dms_was_busy(delivery: Delivery) -> None:
    errors = [attempt.error_type for attempt in delivery.attempts]
    # A task still stopping makes the first attempt fail; Lambda's retry then finishes the job.
    assert errors[-1] is None, delivery.result
    assert set(errors[:-1]) <= {"DmsResourceBusy"}, errors


def test_a_run_stopped_while_it_waits_on_dms_leaves_no_dms_resource_and_no_lock(
    make_stack: StackFactory,
) -> None:
    stack = _stack_waiting_on_dms(make_stack)
    execution = stack.start(TABLE)
    wait_until_polling(stack, execution)
    before = stack.dms_inventory()
    assert (len(before.tasks), len(before.instances), len(before.target_endpoints)) == (1, 1, 1)
    assert (stack.control_item(TABLE) or {}).get("lockHolder") == FIRST_RUN

    stack.client("stepfunctions").stop_execution(executionArn=execution, error="OperatorStop")
    report = stack.wait(execution)
    delivery = _deliver(stack, execution)

    assert report.status == "ABORTED"
    assert_history_is_the_apis(stack, execution)
    assert delivery.event["detail"]["status"] == "ABORTED"
    _assert_retried_only_while_dms_was_busy(delivery)
    assert stack.dms_inventory() == NOTHING
    item = stack.control_item(TABLE)
    assert item is not None
    assert "lockHolder" not in item and "lockTime" not in item
    assert (item["lastRunId"], item["lastRunStatus"]) == (FIRST_RUN, "FAILED")
    # moto drops StopExecution's error and cause; AWS would add ": OperatorStop".
    assert item["lastRunError"] == "execution ABORTED"
    assert item["lastFailedState"] in POLL_LOOP
    assert item["watermark"] == PREVIOUS_WATERMARK


def test_the_same_event_delivered_again_changes_nothing(make_stack: StackFactory) -> None:
    stack = _stack_waiting_on_dms(make_stack)
    execution = stack.start(TABLE)
    wait_until_polling(stack, execution)
    stack.client("stepfunctions").stop_execution(executionArn=execution)
    stack.wait(execution)
    _assert_retried_only_while_dms_was_busy(_deliver(stack, execution))
    item_after_cleanup = stack.control_item(TABLE)

    again = _deliver(stack, execution)

    assert [attempt.error_type for attempt in again.attempts] == [None]
    assert again.result == {
        "targetTableName": TABLE,
        "runId": FIRST_RUN,
        "status": "ABORTED",
        "reason": "the run's failure is already recorded",
        "deleted": [],
        "alreadyGone": [],
        "kept": [],
        "failureRecorded": False,
        "lockReleased": False,
    }
    assert stack.control_item(TABLE) == item_after_cleanup


def test_a_run_that_times_out_while_it_waits_on_dms_is_cleaned_up_the_same_way(
    make_stack: StackFactory,
) -> None:
    stack = _stack_waiting_on_dms(make_stack)
    # The deployed definition has no TimeoutSeconds; moto's interpreter honours one when given.
    stack.limit_run_time(8)  # seconds: time enough to reach the poll loop on a busy machine

    report = stack.run(TABLE)
    delivery = _deliver(stack, report.execution_arn)

    assert report.status == "TIMED_OUT", report.render()
    assert_history_is_the_apis(stack, report.execution_arn)
    assert report.entered("Wait for replication task") >= 1, report.render()
    assert delivery.event["detail"]["status"] == "TIMED_OUT"
    _assert_retried_only_while_dms_was_busy(delivery)
    assert stack.dms_inventory() == NOTHING
    item = stack.control_item(TABLE)
    assert item is not None
    assert "lockHolder" not in item
    assert (item["lastRunId"], item["lastRunStatus"], item["lastRunError"]) == (
        FIRST_RUN,
        "FAILED",
        "execution TIMED_OUT",
    )
    assert item["lastFailedState"] in POLL_LOOP


def _failing_at_statistics(make_stack: StackFactory, *also_failing: str) -> TableRunHarness:
    """A stack whose run fails once at Read task statistics (task, endpoint and instance exist then),
    and whose ``also_failing`` handlers fail on every call."""
    stack = make_stack()
    stack.put_control_item(orders_item())
    stack.faults.inject("read_task_statistics", Fault("InjectedFailure", INJECTED, times=1))
    for handler in also_failing:
        stack.faults.inject(handler, Fault("InjectedFailure", INJECTED, times=None))
    return stack


def test_a_run_that_failed_through_its_catch_path_is_left_as_it_is(make_stack: StackFactory) -> None:
    stack = _failing_at_statistics(make_stack)
    report = stack.run(TABLE)
    item_after_run = stack.control_item(TABLE)

    delivery = _deliver(stack, report.execution_arn)

    assert report.status == "FAILED"
    assert_history_is_the_apis(stack, report.execution_arn)
    assert delivery.result == {
        "targetTableName": TABLE,
        "runId": FIRST_RUN,
        "status": "FAILED",
        "reason": "the run's failure path ran: its failure is recorded",
        "deleted": [],
        "alreadyGone": [],
        "kept": [],
        "failureRecorded": False,
        "lockReleased": False,
    }
    assert stack.control_item(TABLE) == item_after_run
    assert stack.dms_inventory() == NOTHING


def test_a_failed_run_whose_failure_could_not_be_recorded_is_recorded_by_the_rule(
    make_stack: StackFactory,
) -> None:
    stack = _failing_at_statistics(make_stack, "record_failure")
    report = stack.run(TABLE)
    assert "lastFailedState" not in (stack.control_item(TABLE) or {})

    delivery = _deliver(stack, report.execution_arn)

    assert report.status == "FAILED"
    assert delivery.result["failureRecorded"] is True
    item = stack.control_item(TABLE)
    assert item is not None
    assert (item["lastRunId"], item["lastRunStatus"], item["lastFailedState"]) == (
        FIRST_RUN,
        "FAILED",
        "Run failed",
    )
    # The Fail state's cause, as the execution (and so the event) carries it.
    assert item["lastRunError"] == (
        "execution FAILED: TableRunFailed: Read task statistics failed with InjectedFailure: "
        '{"errorType":"InjectedFailure","errorMessage":"failure injected by the test","stackTrace":[]}'
    )


def test_a_failed_run_whose_unlock_failed_is_unlocked_by_the_rule(make_stack: StackFactory) -> None:
    stack = _failing_at_statistics(make_stack, "release_lock")
    report = stack.run(TABLE)
    assert (stack.control_item(TABLE) or {}).get("lockHolder") == FIRST_RUN
    item_after_run = stack.control_item(TABLE) or {}

    delivery = _deliver(stack, report.execution_arn)

    assert delivery.result["lockReleased"] is True
    item = stack.control_item(TABLE)
    assert item is not None
    assert "lockHolder" not in item and "lockTime" not in item
    # Only the lock: the failure the run recorded stays as it was.
    assert {name: value for name, value in item_after_run.items() if not name.startswith("lock")} == item


def test_the_sweep_deletes_a_dead_runs_leftovers_and_leaves_a_running_runs_resources(
    make_stack: StackFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    stack = _stack_waiting_on_dms(make_stack)
    stack.put_control_item(orders_item(targetTableName="dbo_customers", sourceTable="customers"))
    dead = stack.start(TABLE)
    wait_until_polling(stack, dead)
    stack.client("stepfunctions").stop_execution(executionArn=dead)
    stack.wait(dead)  # ABORTED, and its status event never delivered: the leftovers stay
    live = stack.start("dbo_customers")
    wait_until_polling(stack, live)
    everything = stack.dms_inventory()
    live_run = DmsInventory(
        tasks=[arn for arn in everything.tasks if arn != FIRST_RUN_TASK],
        instances=[arn for arn in everything.instances if arn != FIRST_RUN_INSTANCE],
        target_endpoints=[
            arn for arn in everything.target_endpoints if arn not in _endpoints_of(stack, FIRST_RUN)
        ],
    )
    assert (len(live_run.tasks), len(live_run.instances), len(live_run.target_endpoints)) == (1, 1, 1)
    # Two hours after the dead run stopped: past the sweep's grace.
    two_hours_later = utc_now() + timedelta(hours=2)
    monkeypatch.setattr(handlers.sweep_dms_resources, "utc_now", lambda: two_hours_later)
    assert stack.sweep_schedule is not None

    try:
        first = stack.sweep_schedule.fire()
        after_first = stack.dms_inventory()
        second = stack.sweep_schedule.fire()
        after_second = stack.dms_inventory()
        live_status = stack.client("stepfunctions").describe_execution(executionArn=live)["status"]
    finally:
        stack.client("stepfunctions").stop_execution(executionArn=live)

    # The dead run's task was running: the first sweep stops it, the next one deletes what is left.
    assert first.succeeded and second.succeeded
    assert FIRST_RUN_TASK in first.result["busy"]
    assert FIRST_RUN_TASK in second.result["deleted"] and FIRST_RUN_INSTANCE in second.result["deleted"]
    assert FIRST_RUN_TASK in after_first.tasks
    assert after_second == live_run
    assert live_status == "RUNNING"
    kept = {entry["arn"]: entry["reason"] for entry in second.result["kept"]}
    live_reason = "run dbo_customers-20261121T0800Z is still running"
    assert kept == dict.fromkeys(
        [*live_run.tasks, *live_run.target_endpoints, *live_run.instances], live_reason
    )


def _endpoints_of(stack: TableRunHarness, run_id: str) -> list[str]:
    dms = stack.client("dms")
    arns = [endpoint["EndpointArn"] for endpoint in dms.describe_endpoints()["Endpoints"]]
    return [
        arn
        for arn in arns
        if any(
            (tag["Key"], tag["Value"]) == ("icetide:run-id", run_id)
            for tag in dms.list_tags_for_resource(ResourceArn=arn)["TagList"]
        )
    ]


def assert_history_is_the_apis(stack: TableRunHarness, execution_arn: str) -> None:
    """The local stack reads histories from moto's record (execution_report.execution_history): the
    same events as the API's answer, an ended execution's end event included."""
    api = stack.client("stepfunctions").get_execution_history(executionArn=execution_arn)["events"]
    assert execution_history(execution_arn) == api
