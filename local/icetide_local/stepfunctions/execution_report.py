"""A test-run report of one execution, read from Step Functions' execution history.

The history is what AWS bills and shows in the console, so the report counts state transitions
the same way: one per state entered.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from moto.stepfunctions.responses import get_backend


@dataclass(frozen=True)
class RunReport:
    """How one execution went: its end, and every state it entered, in order."""

    execution_arn: str
    status: str
    error: str | None
    cause: str | None
    output: Any
    states_entered: tuple[str, ...]

    @property
    def transitions(self) -> int:
        """State transitions: the number of states entered (a state entered twice counts twice)."""
        return len(self.states_entered)

    def entered(self, state_name: str) -> int:
        """How many times the execution entered ``state_name``."""
        return self.states_entered.count(state_name)

    def render(self) -> str:
        """A few readable lines, for logs and assertion messages."""
        lines = [f"{self.execution_arn}: {self.status} after {self.transitions} state transitions"]
        if self.error or self.cause:
            lines.append(f"  error: {self.error}: {self.cause}")
        lines.extend(f"  {number:>3}. {name}" for number, name in enumerate(self.states_entered, 1))
        return "\n".join(lines)


def execution_report(stepfunctions: Any, execution_arn: str) -> RunReport:
    """Build the report of a finished execution with a boto3 Step Functions client."""
    described = stepfunctions.describe_execution(executionArn=execution_arn)
    output = described.get("output")
    return RunReport(
        execution_arn=execution_arn,
        status=described["status"],
        error=described.get("error"),
        cause=described.get("cause"),
        output=json.loads(output) if output else None,
        states_entered=tuple(
            event["stateEnteredEventDetails"]["name"]
            for event in execution_history(execution_arn)
            if event["type"].endswith("StateEntered")
        ),
    )


def execution_history(execution_arn: str) -> list[dict[str, Any]]:
    """Every event of an execution's history, oldest first, as ``GetExecutionHistory`` answers
    (through boto3: event types as text, timestamps as datetimes, no member that is null).

    Read from moto's record of the execution (every stack this package builds runs on moto), not
    through the API: moto answers ``GetExecutionHistory`` with the whole history every time, passed
    through its generic response serializer and parsed back by botocore, a cost that grows with
    every event, and the local stack reads the history of a run that may poll a task for a while,
    while it runs. moto keeps each event as the API's fields, the type an enum of the API's names,
    the timestamp ISO-8601 text, and a member it has no value for as null, which its serializer
    leaves out: those are turned into what boto3 gives.
    """
    _, _, _, region, account, _ = execution_arn.split(":", 5)
    backend = get_backend(account, region)  # the backend moto's API answers from
    # A JSON round trip: the enums become their names, null members go, and nothing is shared with
    # moto's record.
    events: list[dict[str, Any]] = json.loads(
        json.dumps(backend.get_execution_history(execution_arn)["events"]), object_hook=_without_nulls
    )
    for event in events:
        event["timestamp"] = datetime.fromisoformat(event["timestamp"])
    return events


def _without_nulls(members: dict[str, Any]) -> dict[str, Any]:
    return {name: value for name, value in members.items() if value is not None}
