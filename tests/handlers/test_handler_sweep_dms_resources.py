"""sweep_dms_resources: a dead run's leftovers go; a running or just-ended run's resources, a
continuous table's long-lived ones, a reused instance and other stacks' resources stay."""

from __future__ import annotations

import json
from datetime import timedelta
from typing import Any

import boto3
import pytest
from dms_runs import RunArns, create_continuous, create_instance, create_run, existing_arns

import handlers.sweep_dms_resources
from icetide.clock import utc_now
from icetide.dms.identifiers import RunDmsResources

STACK = "icetide"  # STACK_NAME of the handlers' environment (conftest.py)
STATE_MACHINE_ARN = "arn:aws:states:eu-west-1:123456789012:stateMachine:icetide-table-run"
DEAD = "dbo_orders-20261121T0700Z"  # stopped by hand, its event lost
LIVE = "dbo_orders-20261121T0800Z"  # still running
GONE = "dbo_orders-20261101T0700Z"  # its execution is no longer known to Step Functions
LONG_LIVED = "long-lived (a continuous table's)"


def _start(run_id: str) -> str:
    """A recorded execution of the table-run machine named ``run_id`` (moto does not run it)."""
    stepfunctions = boto3.client("stepfunctions")
    return str(
        stepfunctions.start_execution(
            stateMachineArn=STATE_MACHINE_ARN,
            name=run_id,
            input=json.dumps({"targetTableName": "dbo_orders"}),
        )["executionArn"]
    )


@pytest.fixture
def world(state_machine, source_endpoint) -> dict[str, Any]:
    reused = create_instance("icetide-shared")
    runs = {run_id: create_run(source_endpoint, STACK, "dbo_orders", run_id) for run_id in (DEAD, LIVE, GONE)}
    boto3.client("stepfunctions").stop_execution(executionArn=_start(DEAD), error="OperatorStop")
    _start(LIVE)
    continuous = create_continuous(source_endpoint, STACK, "dbo_customers", reused)
    other_stack = create_run(source_endpoint, "icetide-other", "dbo_orders", GONE)
    return {
        "runs": runs,
        "continuous": continuous,
        "untouchable": {source_endpoint, reused, *other_stack.all()},
    }


def _sweep(load_event: Any, lambda_context: Any) -> dict[str, Any]:
    return dict(handlers.sweep_dms_resources.handler(load_event("sweep_dms_resources"), lambda_context))


def _in_deletion_order(*runs: RunArns) -> list[str]:
    return [
        *(run.task for run in runs),
        *(run.endpoint for run in runs),
        *(run.instance for run in runs if run.instance),
    ]


def _later(monkeypatch: pytest.MonkeyPatch, hours: int) -> None:
    moment = utc_now() + timedelta(hours=hours)
    monkeypatch.setattr(handlers.sweep_dms_resources, "utc_now", lambda: moment)


def test_two_hours_after_a_run_stopped_its_leftovers_are_deleted(
    world, load_event, lambda_context, monkeypatch, capsys
):
    runs, continuous = world["runs"], world["continuous"]
    _later(monkeypatch, hours=2)

    result = _sweep(load_event, lambda_context)

    assert result["deleted"] == _in_deletion_order(runs[DEAD], runs[GONE])
    assert (result["alreadyGone"], result["busy"]) == ([], [])
    assert {entry["arn"]: entry["reason"] for entry in result["kept"]} == {
        **dict.fromkeys(runs[LIVE].all(), f"run {LIVE} is still running"),
        **dict.fromkeys(continuous.all(), LONG_LIVED),
    }
    assert existing_arns() == {*runs[LIVE].all(), *continuous.all(), *world["untouchable"]}
    # One count per leftover deleted: what the leftovers alarm watches.
    metrics = [json.loads(line) for line in capsys.readouterr().out.splitlines() if '"_aws"' in line]
    assert [line["DmsLeftoversDeleted"] for line in metrics] == [[6.0]]


def test_a_run_that_ended_within_the_grace_is_left_to_its_own_cleanup(world, load_event, lambda_context):
    runs = world["runs"]

    result = _sweep(load_event, lambda_context)

    # GONE has no execution at all: nothing can still clean it up.
    assert result["deleted"] == _in_deletion_order(runs[GONE])
    reasons = {entry["arn"]: entry["reason"] for entry in result["kept"]}
    assert {reasons[arn] for arn in runs[DEAD].all()} == {
        f"run {DEAD} ended less than 1 h ago; its own cleanup goes first"
    }
    assert set(runs[DEAD].all()) <= existing_arns()


def test_sweeping_again_deletes_nothing_more(world, load_event, lambda_context, monkeypatch):
    _later(monkeypatch, hours=2)
    _sweep(load_event, lambda_context)
    left = existing_arns()

    again = _sweep(load_event, lambda_context)

    assert (again["deleted"], again["alreadyGone"], again["busy"]) == ([], [], [])
    assert existing_arns() == left


def test_a_manual_invoke_with_an_empty_event_sweeps_too(world, lambda_context):
    result = dict(handlers.sweep_dms_resources.handler({}, lambda_context))

    assert result["deleted"] == _in_deletion_order(world["runs"][GONE])


def test_a_resource_tagged_as_a_dead_runs_but_not_named_by_icetide_is_left_alone(
    world, load_event, lambda_context, monkeypatch
):
    # A colleague's instance, given this stack's tags for a dead run by anyone allowed to tag.
    colleagues = create_instance("analytics-colleague", RunDmsResources(STACK, "dbo_orders", DEAD).tags)
    _later(monkeypatch, hours=2)

    result = _sweep(load_event, lambda_context)

    assert colleagues in existing_arns()
    assert colleagues not in result["deleted"]
    assert {
        "arn": colleagues,
        "reason": "its identifier analytics-colleague is not one icetide derives for its tags",
    } in result["kept"]
    assert result["deleted"] == _in_deletion_order(world["runs"][DEAD], world["runs"][GONE])
