"""clean_up_execution: after a run ended outside its paths, its DMS resources go, its failure is
recorded where the item is still its own, its lock is released; everything else stays as it was."""

from __future__ import annotations

import json
from typing import Any

import boto3
import pytest
from dms_runs import RunArns, create_continuous, create_instance, create_run, existing_arns
from moto.dms.exceptions import InvalidResourceStateFault
from moto.dms.models import DatabaseMigrationServiceBackend

import handlers.clean_up_execution
from icetide.dms.identifiers import RunDmsResources
from icetide.errors import DmsResourceBusy
from icetide.run.handler_inputs import InvalidHandlerInput

STACK = "icetide"  # STACK of the handlers' environment (conftest.py)
STATE_MACHINE_ARN = "arn:aws:states:eu-west-1:123456789012:stateMachine:icetide-table-run"
TABLE = "dbo_orders"
RUN = "dbo_orders-20261121T0700Z"  # the run of events/clean_up_execution.json
NEXT_RUN = "dbo_orders-20261121T0800Z"
ABORTED_ERROR = "execution ABORTED: OperatorStop: stopped by hand: the source database is under maintenance"


@pytest.fixture
def world(control_items, state_machine, source_endpoint) -> dict[str, Any]:
    """What exists when the run is stopped: its resources, and what must survive its cleanup.

    The next run's resources, a continuous table's long-lived task and endpoint on a reused
    instance, and another stack's resources tagged with the same run id.
    """
    reused = create_instance("icetide-shared")
    return {
        "run": create_run(source_endpoint, STACK, TABLE, RUN),
        "survivors": {
            source_endpoint,
            reused,
            *create_run(source_endpoint, STACK, TABLE, NEXT_RUN).all(),
            *create_continuous(source_endpoint, STACK, "dbo_customers", reused).all(),
            *create_run(source_endpoint, "icetide-other", TABLE, RUN).all(),
        },
    }


def _running_item(control_items: Any, **changes: Any) -> dict[str, Any]:
    """dbo_orders' item while RUN holds the lock, with ``changes``."""
    state = {
        "lockHolder": RUN,
        "lockTime": "2026-11-21T07:00:03Z",
        "lastRunId": RUN,
        "lastRunStatus": "RUNNING",
    }
    return control_items.orders(**{**state, **changes})


def _clean_up(event: dict[str, Any], lambda_context: Any) -> dict[str, Any]:
    return dict(handlers.clean_up_execution.handler(event, lambda_context))


def test_an_aborted_runs_resources_go_its_failure_is_recorded_and_its_lock_released(
    world, control_items, load_event, lambda_context
):
    _running_item(control_items)
    run: RunArns = world["run"]

    result = _clean_up(load_event("clean_up_execution"), lambda_context)

    assert result == {
        "targetTableName": TABLE,
        "runId": RUN,
        "status": "ABORTED",
        "reason": "the run ended ABORTED outside its failure path",
        "deleted": [run.task, run.endpoint, run.instance],
        "alreadyGone": [],
        "kept": [],
        "failureRecorded": True,
        "lockReleased": True,
    }
    assert existing_arns() == world["survivors"]
    item = control_items.get(TABLE)
    assert item is not None
    assert "lockHolder" not in item and "lockTime" not in item
    assert (item["lastRunId"], item["lastRunStatus"], item["lastRunError"]) == (RUN, "FAILED", ABORTED_ERROR)
    # The execution is not in moto's Step Functions, so its history cannot name the state it was in.
    assert item["lastFailedState"] == "(execution ABORTED)"
    assert item["watermark"] == "2026-11-21 06:00:00"


def test_a_second_delivery_of_the_event_changes_nothing_and_succeeds(
    world, control_items, load_event, lambda_context
):
    _running_item(control_items)
    _clean_up(load_event("clean_up_execution"), lambda_context)
    item_after_first = control_items.get(TABLE)

    again = _clean_up(load_event("clean_up_execution"), lambda_context)

    assert again == {
        "targetTableName": TABLE,
        "runId": RUN,
        "status": "ABORTED",
        "reason": "the run's failure is already recorded",
        "deleted": [],
        "alreadyGone": [],
        "kept": [],
        "failureRecorded": False,
        "lockReleased": False,
    }
    assert control_items.get(TABLE) == item_after_first
    assert existing_arns() == world["survivors"]


def test_a_timed_out_run_is_cleaned_up_like_an_aborted_one(world, control_items, load_event, lambda_context):
    _running_item(control_items)
    event = load_event("clean_up_execution")
    event["detail"].update(status="TIMED_OUT", error=None, cause=None)

    result = _clean_up(event, lambda_context)

    assert (result["deleted"], result["failureRecorded"], result["lockReleased"]) == (
        world["run"].all(),
        True,
        True,
    )
    assert control_items.get(TABLE)["lastRunError"] == "execution TIMED_OUT"


def test_a_failed_run_whose_failure_is_recorded_keeps_its_record_and_loses_its_leftovers(
    world, control_items, load_event, lambda_context
):
    # Its Catch path recorded the failure and unlocked, but its own delete failed (the run's
    # resources are still there): they are deleted by the run's tags; the record stays as it is.
    item = control_items.orders(
        lastRunId=RUN, lastRunStatus="FAILED", lastFailedState="Run Glue job", lastRunError="boom"
    )
    event = load_event("clean_up_execution")
    event["detail"].update(status="FAILED", error="TableRunFailed", cause="Run Glue job failed with ...")

    result = _clean_up(event, lambda_context)

    assert set(result.pop("deleted")) == set(world["run"].all())
    assert result == {
        "targetTableName": TABLE,
        "runId": RUN,
        "status": "FAILED",
        "reason": "the run's failure path ran: its failure is recorded",
        "alreadyGone": [],
        "kept": [],
        "failureRecorded": False,
        "lockReleased": False,
    }
    assert control_items.get(TABLE) == item
    assert existing_arns() == world["survivors"]


def test_another_runs_lock_and_state_are_left_alone(world, control_items, load_event, lambda_context):
    # The next run took the (stale) lock before the event arrived: the item is its, not RUN's.
    item = _running_item(control_items, lockHolder=NEXT_RUN, lastRunId=NEXT_RUN)

    result = _clean_up(load_event("clean_up_execution"), lambda_context)

    assert result["reason"] == f"the control item belongs to run {NEXT_RUN}: left alone"
    assert (result["deleted"], result["failureRecorded"], result["lockReleased"]) == (
        world["run"].all(),
        False,
        False,
    )
    assert control_items.get(TABLE) == item


def test_a_run_stopped_after_its_commit_keeps_its_committed_state(
    world, control_items, load_event, lambda_context
):
    item = control_items.orders(lastRunId=RUN, lastRunStatus="SUCCEEDED", watermark="2026-11-21 07:00:00")

    result = _clean_up(load_event("clean_up_execution"), lambda_context)

    assert result["reason"] == "the run committed before it ended: its state stays"
    assert (result["failureRecorded"], result["lockReleased"]) == (False, False)
    assert control_items.get(TABLE) == item


def test_while_dms_cannot_delete_yet_the_failure_is_recorded_and_unlocked_and_the_call_retried(
    world, control_items, load_event, lambda_context, monkeypatch
):
    _running_item(control_items)

    def still_stopping(self: Any, replication_task_arn: str) -> Any:
        raise InvalidResourceStateFault("Replication task is stopping")

    monkeypatch.setattr(DatabaseMigrationServiceBackend, "delete_replication_task", still_stopping)

    with pytest.raises(DmsResourceBusy) as raised:
        _clean_up(load_event("clean_up_execution"), lambda_context)

    assert world["run"].task in str(raised.value)
    item = control_items.get(TABLE)
    assert item is not None
    assert "lockHolder" not in item
    assert (item["lastRunStatus"], item["lastRunError"]) == ("FAILED", ABORTED_ERROR)


def test_an_input_left_out_of_the_event_is_read_from_the_execution(
    world, control_items, load_event, lambda_context
):
    _running_item(control_items)
    execution_input = json.dumps({"targetTableName": TABLE, "runId": RUN})
    boto3.client("stepfunctions").start_execution(
        stateMachineArn=STATE_MACHINE_ARN, name=RUN, input=execution_input
    )
    event = load_event("clean_up_execution")
    # What EventBridge sends when input and output together are too large for an event.
    event["detail"].update(input=None, inputDetails={"included": False})

    result = _clean_up(event, lambda_context)

    assert (result["targetTableName"], result["deleted"]) == (TABLE, world["run"].all())


def test_an_execution_without_a_table_in_its_input_is_refused_naming_it(
    control_items, state_machine, load_event, lambda_context
):
    event = load_event("clean_up_execution")
    event["detail"].update(input="{}")

    with pytest.raises(InvalidHandlerInput) as raised:
        _clean_up(event, lambda_context)

    assert "has no targetTableName in its input" in str(raised.value)
    assert event["detail"]["executionArn"] in str(raised.value)


def test_an_event_about_another_state_machine_is_refused(control_items, load_event, lambda_context):
    event = load_event("clean_up_execution")
    event["detail"]["stateMachineArn"] = STATE_MACHINE_ARN.replace("icetide-table-run", "someone-elses")

    with pytest.raises(InvalidHandlerInput) as raised:
        _clean_up(event, lambda_context)

    assert "not this stack's table-run state machine" in str(raised.value)


def test_an_event_that_is_not_a_status_change_is_refused_naming_what(
    control_items, load_event, lambda_context
):
    event = load_event("clean_up_execution")
    del event["detail"]["name"]
    event["detail-type"] = "Scheduled Event"

    with pytest.raises(InvalidHandlerInput) as raised:
        _clean_up(event, lambda_context)

    assert "detail-type" in str(raised.value) and "detail.name" in str(raised.value)


def _cleanup_failures_published(capsys: pytest.CaptureFixture[str]) -> list[list[float]]:
    """The CleanupFailures values of the embedded-metric lines Powertools printed (CleanupFailedAlarm)."""
    documents = [json.loads(line) for line in capsys.readouterr().out.splitlines() if '"_aws"' in line]
    return [document["CleanupFailures"] for document in documents if "CleanupFailures" in document]


def test_a_cleanup_that_fails_counts_a_failure_for_the_alarm(
    control_items, load_event, lambda_context, capsys
):
    event = load_event("clean_up_execution")
    event["detail"]["stateMachineArn"] = STATE_MACHINE_ARN.replace("icetide-table-run", "someone-elses")
    capsys.readouterr()

    with pytest.raises(InvalidHandlerInput):
        _clean_up(event, lambda_context)

    assert _cleanup_failures_published(capsys) == [[1.0]]


def test_dms_still_stopping_a_task_is_retried_without_counting_a_failure(
    world, control_items, load_event, lambda_context, monkeypatch, capsys
):
    _running_item(control_items)
    monkeypatch.setattr(
        DatabaseMigrationServiceBackend,
        "delete_replication_task",
        lambda self, replication_task_arn: (_ for _ in ()).throw(InvalidResourceStateFault("stopping")),
    )
    capsys.readouterr()

    with pytest.raises(DmsResourceBusy):
        _clean_up(load_event("clean_up_execution"), lambda_context)

    assert _cleanup_failures_published(capsys) == []


def test_a_resource_tagged_as_the_runs_but_not_named_by_icetide_is_left_alone(
    world, control_items, load_event, lambda_context
):
    _running_item(control_items)
    # A colleague's instance, given this run's tags by anyone allowed to tag.
    colleagues = create_instance("analytics-colleague", RunDmsResources(STACK, TABLE, RUN).tags)
    run: RunArns = world["run"]

    result = _clean_up(load_event("clean_up_execution"), lambda_context)

    assert result["deleted"] == [run.task, run.endpoint, run.instance]
    assert existing_arns() == {*world["survivors"], colleagues}
