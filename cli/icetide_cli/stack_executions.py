"""Starting one execution of a deployed stack's table-run state machine and waiting for its end.

`icetide verify --stack` (and `icetide reload --stack`) start an execution of the machine the
stack's ``TableRunStateMachineArn`` output names, under a run id of their own, then poll
``DescribeExecution`` until it leaves RUNNING, saying on standard error how long it has been
running. The operator's credentials need ``states:StartExecution`` on the machine and
``states:DescribeExecution`` on its executions.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from icetide_cli.operator_target import StackTarget, TargetError

STATE_MACHINE_OUTPUT = "TableRunStateMachineArn"
CONTROL_TABLE_OUTPUT = "ControlTableName"
RUNNING = "RUNNING"


def readable_cause(cause: str | None) -> str | None:
    """An execution's cause without the stack trace: a Lambda task's error reaches it as the
    function error's JSON (``errorType``, ``errorMessage``, ``stackTrace``); its message is the cause."""
    try:
        error = json.loads(cause) if cause else None
    except json.JSONDecodeError:
        return cause
    if isinstance(error, dict) and isinstance(error.get("errorMessage"), str):
        return str(error["errorMessage"])
    return cause


def refusal_of(output: Mapping[str, Any] | None) -> str | None:
    """Why a run refused at the lock did nothing (it SUCCEEDS, its output saying ``refused`` and
    the error's cause), e.g. "table locked by another run (table t is locked by run r since ...)";
    None for any other output."""
    if not output or not output.get("refused"):
        return None
    cause = readable_cause(output.get("cause"))
    return f"{output['refused']} ({cause})" if cause else str(output["refused"])


class ExecutionNotFinished(TimeoutError):
    """The execution is still running when the caller stopped waiting; it goes on in AWS."""


@dataclass(frozen=True)
class FinishedExecution:
    """An execution that left RUNNING: its status, its output (SUCCEEDED) or error and cause."""

    execution_arn: str
    status: str
    output: dict[str, Any]
    error: str | None
    cause: str | None


def start_table_run(target: StackTarget, run_id: str, execution_input: Mapping[str, Any]) -> str:
    """Start an execution named ``run_id`` with ``execution_input``; its ARN.

    A name Step Functions has seen is refused (``ExecutionAlreadyExists``): TargetError says so.
    """
    import botocore.exceptions

    machine = target.output(STATE_MACHINE_OUTPUT)
    try:
        started = target.client("stepfunctions").start_execution(
            stateMachineArn=machine, name=run_id, input=json.dumps(dict(execution_input))
        )
    except botocore.exceptions.ClientError as error:
        raise TargetError(f"cannot start run {run_id}: {error.response['Error']['Message']}") from error
    except botocore.exceptions.BotoCoreError as error:
        raise TargetError(f"cannot start run {run_id}: {error}") from error
    return str(started["executionArn"])


def wait_for_execution(
    target: StackTarget,
    execution_arn: str,
    *,
    timeout_seconds: float,
    poll_seconds: float,
    progress: Callable[[str], None],
) -> FinishedExecution:
    """Poll the execution until it leaves RUNNING (ExecutionNotFinished after ``timeout_seconds``),
    telling ``progress`` how long it has run at each poll."""
    stepfunctions = target.client("stepfunctions")
    started = time.monotonic()
    while True:
        described = stepfunctions.describe_execution(executionArn=execution_arn)
        status = str(described["status"])
        elapsed = time.monotonic() - started
        if status != RUNNING:
            output = json.loads(described.get("output") or "{}")
            return FinishedExecution(
                execution_arn=execution_arn,
                status=status,
                output=output if isinstance(output, dict) else {},
                error=described.get("error"),
                cause=described.get("cause"),
            )
        if elapsed >= timeout_seconds:
            raise ExecutionNotFinished(
                f"{execution_arn} is still running after {timeout_seconds:.0f} s; it goes on in AWS"
            )
        progress(f"{execution_arn.rsplit(':', 1)[-1]}: {status} for {elapsed:.0f} s")
        time.sleep(poll_seconds)


def control_item(target: StackTarget, target_table_name: str) -> dict[str, Any] | None:
    """The table's control item in the stack's control table (plain values), or None."""
    import botocore.exceptions

    from icetide.control.codec import from_typed_json

    try:
        found = target.client("dynamodb").get_item(
            TableName=target.output(CONTROL_TABLE_OUTPUT),
            Key={"targetTableName": {"S": target_table_name}},
            ConsistentRead=True,
        )
    except botocore.exceptions.ClientError as error:
        raise TargetError(f"cannot read the control item of {target_table_name}: {error}") from error
    typed = found.get("Item")
    return from_typed_json(typed) if typed else None


def read_s3_text(target: StackTarget, uri: str) -> str:
    """The text of the object at ``s3://bucket/key``."""
    import botocore.exceptions

    bucket, _, key = uri.removeprefix("s3://").partition("/")
    try:
        body = target.client("s3").get_object(Bucket=bucket, Key=key)["Body"].read()
    except botocore.exceptions.ClientError as error:
        raise TargetError(f"cannot read {uri}: {error.response['Error']['Message']}") from error
    return str(body.decode("utf-8"))
