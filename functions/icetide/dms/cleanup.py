"""Deleting a run's DMS resources: the rules for what to delete and how to report it.

DMS resources are created per run and deleted on success and on failure alike; only an instance
the run did not create (a reused, long-lived one) is kept. Deleting is repeated by the state
machine until it is complete, so "already gone" counts as done, and a resource DMS cannot delete
yet (a task still stopping, an endpoint its task still uses) makes the whole call retryable.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import StrEnum

from icetide.errors import DmsResourceBusy


class DeleteOutcome(StrEnum):
    """What one delete request found."""

    DELETED = "deleted"
    ALREADY_GONE = "alreadyGone"
    BUSY = "busy"


# Task statuses in which DMS refuses a delete until the task is stopped.
MUST_STOP_FIRST = frozenset({"starting", "running"})
# A resource already being deleted needs no second request.
BEING_DELETED = "deleting"


@dataclass
class CleanupReport:
    """The ARNs of a cleanup, by outcome; ``busy`` ones make the call fail with DmsResourceBusy."""

    deleted: list[str] = field(default_factory=list)
    already_gone: list[str] = field(default_factory=list)
    kept: list[str] = field(default_factory=list)
    busy: list[str] = field(default_factory=list)

    def add(self, arn: str, outcome: DeleteOutcome) -> None:
        """File ``arn`` under the list its delete outcome belongs to."""
        {
            DeleteOutcome.DELETED: self.deleted,
            DeleteOutcome.ALREADY_GONE: self.already_gone,
            DeleteOutcome.BUSY: self.busy,
        }[outcome].append(arn)

    def finish(self) -> dict[str, list[str]]:
        """The handler's output; raises DmsResourceBusy naming what could not be deleted yet."""
        if self.busy:
            raise DmsResourceBusy(
                f"DMS cannot delete {', '.join(self.busy)} yet (still stopping or in use); retry later"
            )
        return {"deleted": self.deleted, "alreadyGone": self.already_gone, "kept": self.kept}
