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
