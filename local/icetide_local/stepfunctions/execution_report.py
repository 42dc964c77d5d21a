"""A test-run report of one execution, read from Step Functions' execution history.

The history is what AWS bills and shows in the console, so the report counts state transitions
the same way: one per state entered.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any


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
            for event in execution_history(stepfunctions, execution_arn)
            if event["type"].endswith("StateEntered")
        ),
    )


def execution_history(stepfunctions: Any, execution_arn: str) -> list[dict[str, Any]]:
    """Every event of an execution's history, all pages, oldest first."""
    events: list[dict[str, Any]] = []
    request: dict[str, Any] = {"executionArn": execution_arn}
    while True:
        page = stepfunctions.get_execution_history(**request)
        events.extend(page["events"])
        if not page.get("nextToken"):
            return events
        request["nextToken"] = page["nextToken"]
