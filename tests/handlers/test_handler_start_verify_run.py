"""start_verify_run: the verify entry point starts a verify run of the named table and nothing else."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import boto3
import pytest

import handlers.start_verify_run
import icetide.clock
from icetide.run.handler_inputs import InvalidHandlerInput
from icetide.run.verify import is_verify_run_id

NOW = datetime(2026, 11, 24, 10, 15, 30, tzinfo=UTC)
RUN_ID = "dbo_orders-verify-20261124T101530Z"


@pytest.fixture(autouse=True)
def _clock(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(icetide.clock, "utc_now", lambda: NOW)


def test_it_starts_the_verify_run_of_the_table_named_after_the_moment(
    executions, state_machine, load_event, lambda_context
):
    result = handlers.start_verify_run.handler(load_event("start_verify_run"), lambda_context)

    execution_arn = state_machine.replace(":stateMachine:", ":execution:") + f":{RUN_ID}"
    assert result == {"targetTableName": "dbo_orders", "runId": RUN_ID, "executionArn": execution_arn}
    assert executions() == {RUN_ID: {"targetTableName": "dbo_orders"}}
    assert is_verify_run_id(RUN_ID)


@pytest.mark.parametrize(
    ("event", "named"),
    [
        # A caller cannot choose the run: a merge run's id, or an execution input of its own.
        ({"targetTableName": "dbo_orders", "runId": "dbo_orders-20261124T1000Z"}, "runId"),
        ({"targetTableName": "dbo_orders", "reload": True}, "reload"),
        ({"targetTableName": "dbo_orders", "input": {"runId": "x"}}, "input"),
        ({}, "targetTableName: required attribute is missing"),
        ({"targetTableName": "dbo-orders-20261124T1000Z"}, "targetTableName"),
        ({"targetTableName": ""}, "targetTableName"),
    ],
    ids=["run-id", "reload", "input", "no-table", "hyphenated-name", "empty-name"],
)
def test_anything_but_a_table_name_is_refused_and_starts_nothing(
    executions, state_machine, lambda_context, event: dict[str, Any], named: str
):
    with pytest.raises(InvalidHandlerInput) as raised:
        handlers.start_verify_run.handler(event, lambda_context)

    assert str(raised.value).startswith("VerifyRequest: ")
    assert named in str(raised.value)
    assert executions() == {}


def test_a_name_step_functions_has_seen_is_said_and_nothing_else_starts(
    executions, state_machine, load_event, lambda_context
):
    # An execution of that name exists already, with another input (as one that ended would be).
    boto3.client("stepfunctions").start_execution(
        stateMachineArn=state_machine, name=RUN_ID, input='{"targetTableName": "dbo_orders", "other": 1}'
    )

    with pytest.raises(
        handlers.start_verify_run.VerifyRunNotStarted, match=f"verify run {RUN_ID} exists already"
    ):
        handlers.start_verify_run.handler(load_event("start_verify_run"), lambda_context)

    assert list(executions()) == [RUN_ID]
