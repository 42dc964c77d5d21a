"""Each table's state as its execution moves, read from the executions' histories while they run.

The history (what ``GetExecutionHistory`` answers) is what the Step Functions console shows, and moto's
interpreter appends to it as it goes, so it is the one source of truth for where a run is: no
handler reports anything. :func:`state_changes` turns a history into texts, one per state entered
and one for the end; :class:`ExecutionWatcher` polls the histories of a cycle's executions while the
local stack waits for them and hands each new text to a :class:`~icetide_local.progress.RunProgress`.
"""

from __future__ import annotations

import json
import time
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from icetide_local.progress import RunProgress
from icetide_local.stepfunctions.execution_report import execution_history

# The history's end events and the status Step Functions gives the execution for each.
END_EVENTS = {
    "ExecutionSucceeded": "SUCCEEDED",
    "ExecutionFailed": "FAILED",
    "ExecutionAborted": "ABORTED",
    "ExecutionTimedOut": "TIMED_OUT",
}
_FAILURE_DETAILS = {
    "ExecutionFailed": "executionFailedEventDetails",
    "ExecutionAborted": "executionAbortedEventDetails",
}
# A Choice state decides and moves on at once: the state it chose says what it decided.
_CHOICE_ENTERED = "ChoiceStateEntered"
# moto appends to a history as the execution moves; reading it at every poll of a wait would only cost.
DEFAULT_POLL_SECONDS = 0.2
# A read copies the whole history (execution_report.execution_history), under the GIL of the process
# whose threads run the executions and drive Spark, and a run that polls its DMS task without waiting
# grows a long history. So the next read waits this many times as long as the last one took: the
# watcher's share of the process stays small however long the histories grow. Short histories are
# read every poll_seconds, or at each poll of the wait that calls the watcher when those come less
# often.
READ_COST_FACTOR = 9


@dataclass(frozen=True)
class StateChange:
    """One step of an execution, as shown: a state entered, or the end (``final``)."""

    text: str
    final: bool = False


def state_changes(events: Sequence[Mapping[str, Any]]) -> list[StateChange]:
    """The steps of one execution's history so far, in order: each state entered but a Choice, and the end.

    A state entered again says how many times (``Wait for replication task #3``: the third poll
    wait); every step says when it came, in seconds after the execution started. The end names the
    error of a failed or aborted execution (its cause is in the cycle report).
    """
    started: datetime | None = None
    entered: Counter[str] = Counter()
    changes: list[StateChange] = []
    for event in events:
        kind = str(event["type"])
        if kind == "ExecutionStarted":
            started = event["timestamp"]
            continue
        if kind.endswith("StateEntered") and kind != _CHOICE_ENTERED:
            name = str(event["stateEnteredEventDetails"]["name"])
            entered[name] += 1
            text = name if entered[name] == 1 else f"{name} #{entered[name]}"
        elif kind in END_EVENTS:
            error = event.get(_FAILURE_DETAILS.get(kind, ""), {}).get("error")
            text = END_EVENTS[kind] + (f": {error}" if error else "")
        else:
            continue
        if started is not None:
            text += f" (+{(event['timestamp'] - started).total_seconds():.1f} s)"
        changes.append(StateChange(text, final=kind in END_EVENTS))
    return changes


@dataclass
class _Watched:
    table: str
    shown: int = 0
    ended: bool = False


class ExecutionWatcher:
    """Follows executions and reports each table's new steps to ``progress`` as they happen.

    Call :meth:`poll` as often as convenient (the harness's wait loop does); it reads the histories
    at most every ``poll_seconds``, and after a read that took a while, READ_COST_FACTOR times as
    long. A history only grows, so each poll shows the steps past those already shown, and every
    step is shown once, however late a poll comes.
    """

    def __init__(
        self, stepfunctions: Any, progress: RunProgress, poll_seconds: float = DEFAULT_POLL_SECONDS
    ) -> None:
        self._stepfunctions = stepfunctions
        self._progress = progress
        self._poll_seconds = poll_seconds
        self._watched: dict[str, _Watched] = {}
        self._next_poll = float("-inf")

    def watch(self, execution_arn: str) -> None:
        """Follow ``execution_arn`` from now on, under the name of the table its input names."""
        described = self._stepfunctions.describe_execution(executionArn=execution_arn)
        table = json.loads(described.get("input") or "{}").get("targetTableName") or described["name"]
        self._watched[execution_arn] = _Watched(str(table))

    def poll(self, *, force: bool = False) -> None:
        """Report what the running executions did since the last poll (unless polled too recently)."""
        started = time.monotonic()
        if not force and started < self._next_poll:
            return
        for execution_arn, watched in self._watched.items():
            if not watched.ended:
                self._report(watched, state_changes(execution_history(execution_arn)))
        took = time.monotonic() - started
        self._next_poll = started + max(self._poll_seconds, took * READ_COST_FACTOR)

    def _report(self, watched: _Watched, changes: list[StateChange]) -> None:
        for change in changes[watched.shown :]:
            if change.final:
                watched.ended = True
                self._progress.table_done(watched.table, change.text)
            else:
                self._progress.table_state(watched.table, change.text)
        watched.shown = len(changes)
