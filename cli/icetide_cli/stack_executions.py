"""Starting one execution of a deployed stack's table-run state machine and waiting for its end.

`icetide reload --stack` starts an execution of the machine the stack's ``TableRunStateMachineArn``
output names, under a run id of its own (``states:StartExecution`` on the machine). `icetide verify
--stack` asks the stack's StartVerifyRun function (output ``StartVerifyRunFunctionName``) to start
the verify run, which makes the run id itself: ``lambda:InvokeFunction`` on that function lets an
operator verify and start no other run. Both then poll ``DescribeExecution`` until the execution
leaves RUNNING (``states:DescribeExecution`` on the machine's executions), saying on standard error
how long it has been running.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from icetide_cli.operator_target import StackTarget, TargetError

if TYPE_CHECKING:
    from icetide.control.model import ControlItem

STATE_MACHINE_OUTPUT = "TableRunStateMachineArn"
VERIFY_FUNCTION_OUTPUT = "StartVerifyRunFunctionName"
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


def start_verify_run(target: StackTarget, target_table_name: str) -> tuple[str, str]:
    """Have the stack's StartVerifyRun function start a verify run of the table; its run id and
    execution ARN. TargetError with the function's message when it refused, or the call failed."""
    import botocore.exceptions

    function_name = target.output(VERIFY_FUNCTION_OUTPUT)
    what = f"cannot start a verify run of {target_table_name}"
    try:
        response = target.client("lambda").invoke(
            FunctionName=function_name, Payload=json.dumps({"targetTableName": target_table_name}).encode()
        )
        payload = json.loads(response["Payload"].read() or b"null")
    except botocore.exceptions.ClientError as error:
        raise TargetError(f"{what}: {error.response['Error']['Message']}") from error
    except botocore.exceptions.BotoCoreError as error:
        raise TargetError(f"{what}: {error}") from error
    if "FunctionError" in response:
        message = payload.get("errorMessage") if isinstance(payload, dict) else None
        raise TargetError(f"{what}: {function_name} failed: {message or payload}")
    if not isinstance(payload, dict) or not payload.get("runId") or not payload.get("executionArn"):
        raise TargetError(f"{what}: {function_name} answered {payload!r}, not a run id and execution")
    return str(payload["runId"]), str(payload["executionArn"])


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

    from icetide_cli.operator_control import StackControlItems

    try:
        return StackControlItems(target).find(target_table_name)
    except botocore.exceptions.ClientError as error:
        raise TargetError(f"cannot read the control item of {target_table_name}: {error}") from error


def parsed_control_item(target: StackTarget, target_table_name: str) -> ControlItem:
    """The table's control item, parsed: TargetError when there is none or it is invalid."""
    from icetide.control.model import ControlItem
    from icetide.errors import InvalidControlItem

    raw = control_item(target, target_table_name)
    if raw is None:
        raise TargetError(f"stack {target.stack_name} has no control item for table {target_table_name!r}")
    try:
        return ControlItem.parse(raw)
    except InvalidControlItem as invalid:
        raise TargetError(f"{target_table_name}: the control item is invalid: {invalid}") from None


def print_progress(message: str) -> None:
    """A waiting verb's progress, on standard error (standard output keeps its result)."""
    print(f"... {message}", file=sys.stderr, flush=True)


def wait_for_run(
    target: StackTarget, run: str, execution_arn: str, options: argparse.Namespace
) -> FinishedExecution:
    """Say that ``run`` started, then wait for its execution's end as the verb's wait options say
    (``--timeout``, ``--poll-seconds``: operator_target.add_wait_arguments); TargetError when it
    outlasts the timeout (it goes on in AWS)."""
    print_progress(f"{run} started: {execution_arn}")
    try:
        return wait_for_execution(
            target,
            execution_arn,
            timeout_seconds=options.timeout,
            poll_seconds=options.poll_seconds,
            progress=print_progress,
        )
    except ExecutionNotFinished as still_running:
        raise TargetError(str(still_running)) from None


def read_s3_text(target: StackTarget, uri: str) -> str:
    """The text of the object at ``s3://bucket/key``."""
    import botocore.exceptions

    bucket, _, key = uri.removeprefix("s3://").partition("/")
    try:
        body = target.client("s3").get_object(Bucket=bucket, Key=key)["Body"].read()
    except botocore.exceptions.ClientError as error:
        raise TargetError(f"cannot read {uri}: {error.response['Error']['Message']}") from error
    return str(body.decode("utf-8"))
