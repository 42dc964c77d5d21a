"""Starting one table-run execution per table and schedule slot, at most once."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from botocore.exceptions import ClientError

from icetide.adapters.clients import client, error_code


def execution_arn(state_machine_arn: str, execution_name: str) -> str:
    """The ARN an execution named ``execution_name`` of ``state_machine_arn`` has (or would have)."""
    prefix, marker, machine_name = state_machine_arn.partition(":stateMachine:")
    if not marker or not machine_name:
        raise ValueError(f"{state_machine_arn!r} is not a Step Functions state machine ARN")
    return f"{prefix}:execution:{machine_name}:{execution_name}"


def start_execution_once(state_machine_arn: str, name: str, execution_input: Mapping[str, Any]) -> bool:
    """Start execution ``name`` unless one of that name exists; True when this call started it.

    StartExecution alone is not enough: for a *running* execution with the same name and input
    it succeeds again (it is idempotent), which would report a repeated schedule event as a new
    start. So the execution is looked up first, and ExecutionAlreadyExists (a race with another
    invocation, or a finished execution) also counts as "already started".
    """
    stepfunctions = client("stepfunctions")
    try:
        stepfunctions.describe_execution(executionArn=execution_arn(state_machine_arn, name))
        return False
    except ClientError as error:
        if error_code(error) != "ExecutionDoesNotExist":
            raise
    try:
        stepfunctions.start_execution(
            stateMachineArn=state_machine_arn, name=name, input=json.dumps(dict(execution_input))
        )
    except ClientError as error:
        if error_code(error) == "ExecutionAlreadyExists":
            return False
        raise
    return True


def describe_execution(execution_arn: str) -> dict[str, Any] | None:
    """The execution as DescribeExecution shows it (status, input, stopDate...), or None if none exists."""
    try:
        described: dict[str, Any] = client("stepfunctions").describe_execution(executionArn=execution_arn)
    except ClientError as error:
        if error_code(error) == "ExecutionDoesNotExist":
            return None
        raise
    return described


# Enough of an ended execution's newest events to hold the last state it entered (its end takes a
# few events after that one).
_NEWEST_EVENTS = 50


def last_entered_state(execution_arn: str) -> str | None:
    """The name of the last state the execution entered, from its newest history events; None if it
    entered none or does not exist.

    Asked newest first; the entry with the highest event id wins, so the answer does not depend on
    the order the page comes in.
    """
    try:
        events = client("stepfunctions").get_execution_history(
            executionArn=execution_arn, reverseOrder=True, maxResults=_NEWEST_EVENTS
        )["events"]
    except ClientError as error:
        if error_code(error) == "ExecutionDoesNotExist":
            return None
        raise
    entered = [event for event in events if str(event.get("type", "")).endswith("StateEntered")]
    if not entered:
        return None
    newest = max(entered, key=lambda event: int(event["id"]))
    return str(newest["stateEnteredEventDetails"]["name"])


class ExecutionNameTaken(Exception):
    """Step Functions refused an execution name it has seen (ExecutionAlreadyExists)."""


def start_named_execution(state_machine_arn: str, name: str, execution_input: Mapping[str, Any]) -> str:
    """Start execution ``name``; its ARN. ExecutionNameTaken when the name is one Step Functions
    has seen with another input or whose execution ended (a running one of the same name and input
    is returned as started: StartExecution is idempotent for it)."""
    try:
        started = client("stepfunctions").start_execution(
            stateMachineArn=state_machine_arn, name=name, input=json.dumps(dict(execution_input))
        )
    except ClientError as error:
        if error_code(error) == "ExecutionAlreadyExists":
            raise ExecutionNameTaken(f"execution {name} exists already") from None
        raise
    return str(started["executionArn"])
