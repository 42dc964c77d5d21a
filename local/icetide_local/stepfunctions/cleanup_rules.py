"""Stand-ins for the two EventBridge rules that clean up after table runs (template.yaml).

In AWS, Step Functions sends a "Step Functions Execution Status Change" event to EventBridge when
an execution ends, and the rule on the table-run machine's ABORTED, TIMED_OUT and FAILED
executions invokes CleanUpExecutionFunction with it; an hourly schedule invokes
SweepDmsResourcesFunction. moto's Step Functions sends no events and moto's EventBridge invokes no
in-process Lambda, so the harness has these instead:

- :class:`ExecutionStatusRule` builds, from DescribeExecution and the execution's history, the
  event AWS would send for an ended execution, matches it against the rule's pattern (the statuses
  of ``icetide.run.abandoned.CLEANUP_STATUSES``, this stack's state machine) and invokes the real
  handler through moto's Lambda, like every other function of the harness.
- :class:`SweepSchedule` invokes the sweep with a scheduled event.

Differences from AWS, on purpose and only these: a rule delivers when a test asks
(:meth:`ExecutionStatusRule.deliver`), not by itself when an execution ends; Lambda's asynchronous
invocation (the first attempt and :data:`ASYNC_RETRIES` retries after a function error, minutes
apart) is played as up to three synchronous invokes without the waits. Two come from moto: it
records no stop time for a TIMED_OUT execution (the event then says "now"), and it drops the error
and cause given to StopExecution (the event of an aborted execution then has none).
"""

from __future__ import annotations

import json
import uuid
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from icetide.run.abandoned import CLEANUP_STATUSES, EVENT_SOURCE, STATUS_CHANGE
from icetide_local.stepfunctions.execution_report import execution_history

# Lambda's default for asynchronous invocations (MaximumRetryAttempts), which the template keeps.
ASYNC_RETRIES = 2
_END_EVENTS = {
    "ExecutionAborted": "executionAbortedEventDetails",
    "ExecutionFailed": "executionFailedEventDetails",
    "ExecutionTimedOut": "executionTimedOutEventDetails",
}


@dataclass(frozen=True)
class Attempt:
    """One invocation of a rule's target: its function error (None: it succeeded) and its payload."""

    error_type: str | None
    payload: Any


@dataclass(frozen=True)
class Delivery:
    """An event and what the target made of it, attempt by attempt."""

    event: dict[str, Any]
    attempts: tuple[Attempt, ...]

    @property
    def succeeded(self) -> bool:
        return self.attempts[-1].error_type is None

    @property
    def result(self) -> Any:
        """The payload of the last attempt (the handler's output, or its error document)."""
        return self.attempts[-1].payload


def invoke_as_async(lambda_client: Any, function_name: str, event: dict[str, Any]) -> Delivery:
    """Invoke like an asynchronous invocation: retried after a function error, at most ASYNC_RETRIES times."""
    attempts: list[Attempt] = []
    for _ in range(1 + ASYNC_RETRIES):
        response = lambda_client.invoke(FunctionName=function_name, Payload=json.dumps(event).encode())
        payload = json.loads(response["Payload"].read() or b"null")
        error_type = payload.get("errorType") if response.get("FunctionError") else None
        attempts.append(Attempt(error_type, payload))
        if error_type is None:
            break
    return Delivery(event, tuple(attempts))


def _epoch_millis(moment: datetime | None) -> int | None:
    return None if moment is None else int(moment.timestamp() * 1000)


class ExecutionStatusRule:
    """The rule on the table-run machine's ended executions, and its target, CleanUpExecution."""

    def __init__(self, stepfunctions: Any, lambda_client: Any, state_machine_arn: str, function_name: str):
        self._stepfunctions = stepfunctions
        self._lambda = lambda_client
        self.state_machine_arn = state_machine_arn
        self.function_name = function_name

    def pattern(self) -> dict[str, Any]:
        """The rule's event pattern, as template.yaml writes it (with the machine's ARN resolved)."""
        return {
            "source": [EVENT_SOURCE],
            "detail-type": [STATUS_CHANGE],
            "detail": {"status": list(CLEANUP_STATUSES), "stateMachineArn": [self.state_machine_arn]},
        }

    def matches(self, event: dict[str, Any]) -> bool:
        """Whether the pattern matches ``event`` (exact values only, as the pattern uses)."""
        pattern = self.pattern()
        detail = event.get("detail", {})
        return (
            event.get("source") in pattern["source"]
            and event.get("detail-type") in pattern["detail-type"]
            and all(detail.get(key) in values for key, values in pattern["detail"].items())
        )

    def event_for(self, execution_arn: str) -> dict[str, Any]:
        """The status-change event AWS sends when the execution ends (its current status)."""
        described = self._stepfunctions.describe_execution(executionArn=execution_arn)
        error, cause = described.get("error"), described.get("cause")
        end = self._end_details(execution_arn)
        stopped = described.get("stopDate") or datetime.now(UTC)
        _, _, _, region, account, *_ = execution_arn.split(":")
        return {
            "version": "0",
            "id": str(uuid.uuid4()),
            "detail-type": STATUS_CHANGE,
            "source": EVENT_SOURCE,
            "account": account,
            "time": stopped.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
            "region": region,
            "resources": [execution_arn],
            "detail": {
                "executionArn": execution_arn,
                "stateMachineArn": described["stateMachineArn"],
                "name": described["name"],
                "status": described["status"],
                "startDate": _epoch_millis(described.get("startDate")),
                "stopDate": _epoch_millis(stopped),
                "input": described.get("input"),
                "inputDetails": {"included": True},
                "output": described.get("output"),
                "outputDetails": {"included": True} if described.get("output") is not None else None,
                # AWS sends null for what StopExecution was not given; moto keeps "" (and drops what
                # it was given).
                "error": (error if error is not None else end.get("error")) or None,
                "cause": (cause if cause is not None else end.get("cause")) or None,
            },
        }

    def deliver(self, execution_arn: str) -> Delivery | None:
        """Send the execution's status-change event to the target if the rule matches it; None if not."""
        event = self.event_for(execution_arn)
        if not self.matches(event):
            return None
        return invoke_as_async(self._lambda, self.function_name, event)

    def _end_details(self, execution_arn: str) -> dict[str, Any]:
        """error and cause of the execution's end event (moto keeps a stop's only there)."""
        events = execution_history(execution_arn)
        for history_event in reversed(events):
            key = _END_EVENTS.get(history_event["type"])
            if key is not None:
                return dict(history_event.get(key) or {})
        return {}


class SweepSchedule:
    """The hourly schedule of SweepDmsResources."""

    def __init__(self, lambda_client: Any, function_name: str, region: str, account: str):
        self._lambda = lambda_client
        self.function_name = function_name
        self._region = region
        self._account = account

    def fire(self, time: datetime | None = None) -> Delivery:
        """Invoke the sweep with the scheduled event of ``time`` (default: now)."""
        moment = (time or datetime.now(UTC)).astimezone(UTC)
        event = {
            "version": "0",
            "id": str(uuid.uuid4()),
            "detail-type": "Scheduled Event",
            "source": "aws.events",
            "account": self._account,
            "time": moment.strftime("%Y-%m-%dT%H:%M:%SZ"),
            "region": self._region,
            "resources": [f"arn:aws:events:{self._region}:{self._account}:rule/icetide-sweep-dms-resources"],
            "detail": {},
        }
        return invoke_as_async(self._lambda, self.function_name, event)


def with_run_timeout(definition: str, seconds: int) -> str:
    """``definition`` with a top-level ``TimeoutSeconds``: statemachine/table_run.asl.json has none,
    so a test that wants a run to time out adds one (moto's interpreter honours it)."""
    document = json.loads(definition)
    document["TimeoutSeconds"] = seconds
    return json.dumps(document)
