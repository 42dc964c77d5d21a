"""A continuous table's long-lived DMS task: what a run, or turning the table off, does with it.

The task is created by the table's first run and then writes change files all the time; runs only
read them. So a run must find the task in any state a long-lived process can reach: not created
yet, still being created, ready, running, stopped by someone, failed. The rules read the task's
description (DescribeReplicationTasks keys) without calling AWS; the handler does what they say.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

from icetide.dms.replication_status import NOT_YET_STARTABLE


class TaskAction(StrEnum):
    """What a run does to the table's task before it reads the task's files."""

    CREATE = "create"  # no task yet: the first run creates it (and starts it once it is ready)
    START = "start"  # created, never started
    RESUME = "resume"  # stopped or failed: go on from its own checkpoint, no second full load
    NONE = "none"  # starting or running: nothing to do
    WAIT = "wait"  # being created, modified or stopped: retry shortly


_RESUMABLE = frozenset({"stopped", "failed"})
_WORKING = frozenset({"starting", "running"})
_PASSING = NOT_YET_STARTABLE | {"stopping"}


def run_action(task: Mapping[str, Any] | None) -> TaskAction:
    """The action for the task as described (None: there is none). A task being deleted counts as
    passing through: once it is gone the next attempt creates it again."""
    if task is None:
        return TaskAction.CREATE
    status = str(task.get("Status", ""))
    if status == "ready":
        return TaskAction.START
    if status in _RESUMABLE:
        return TaskAction.RESUME
    if status in _WORKING:
        return TaskAction.NONE
    return TaskAction.WAIT


@dataclass(frozen=True)
class TaskResume:
    """A resume the run did: the task's state before, recorded on the control item and notified."""

    status: str
    stop_reason: str | None
    failure: str | None

    @classmethod
    def of(cls, task: Mapping[str, Any]) -> TaskResume:
        """The resume of the task as it was described before it was resumed."""
        return cls(
            status=str(task.get("Status", "")),
            stop_reason=task.get("StopReason") or None,
            failure=task.get("LastFailureMessage") or None,
        )

    def describe(self) -> str:
        """One line for people: "was failed (Stop Reason FATAL_ERROR: ...)"."""
        details = ": ".join(part for part in (self.stop_reason, self.failure) if part)
        return f"was {self.status}" + (f" ({details})" if details else "")


class RetireAction(StrEnum):
    """What turning a continuous table off does to its task, one step per schedule event."""

    STOP = "stop"  # running: stop it first (DMS refuses to delete a running task)
    DELETE = "delete"  # stopped, failed or never started: delete it, then its endpoint
    WAIT = "wait"  # passing through a state; the next schedule event goes on
    GONE = "gone"  # nothing left (only the endpoint, if any, to delete)


def retire_action(task: Mapping[str, Any] | None) -> RetireAction:
    """The next step of turning off a table whose task is described as ``task``."""
    if task is None:
        return RetireAction.GONE
    status = str(task.get("Status", ""))
    if status in _WORKING:
        return RetireAction.STOP
    if status in _RESUMABLE or status == "ready":
        return RetireAction.DELETE
    if status in _PASSING or status == "deleting":
        return RetireAction.WAIT
    return RetireAction.DELETE
