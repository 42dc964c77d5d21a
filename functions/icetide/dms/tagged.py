"""This stack's DMS resources as their tags describe them: whose they are, and in which order to delete.

Every resource a run creates carries the stack's tag and the run's tag (``identifiers.RunDmsResources``).
That is all a cleanup needs to find them when the run died before recording what it had made (an
execution aborted or timed out), and all a sweep needs to tell a dead run's leftovers from what must
stay: a continuous table's task and endpoint carry the long-lived mark, and a reused replication
instance was created by the user, not by a run, so it carries no run tag at all.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from enum import StrEnum

from icetide.dms.identifiers import LONG_LIVED_TAG, RUN_ID_TAG, STACK_TAG


class ResourceKind(StrEnum):
    """The three kinds of DMS resource a run creates."""

    TASK = "task"
    ENDPOINT = "endpoint"
    INSTANCE = "instance"


# DMS refuses to delete an endpoint a task still uses, and an instance that still has tasks.
DELETION_ORDER = (ResourceKind.TASK, ResourceKind.ENDPOINT, ResourceKind.INSTANCE)


@dataclass(frozen=True)
class TaggedResource:
    """One DMS resource, its status as last described, and its tags."""

    kind: ResourceKind
    arn: str
    status: str | None
    tags: Mapping[str, str] = field(default_factory=dict)

    def of_stack(self, stack: str) -> bool:
        """Whether the resource carries ``stack``'s tag."""
        return self.tags.get(STACK_TAG) == stack

    @property
    def run_id(self) -> str | None:
        """The run that created it; None for what no run created (the stack's source endpoint)."""
        return self.tags.get(RUN_ID_TAG) or None

    @property
    def long_lived(self) -> bool:
        """A continuous table's task or endpoint: it outlives every run, no run cleanup deletes it."""
        return LONG_LIVED_TAG in self.tags


def runs_resources(resources: Iterable[TaggedResource], stack: str, run_id: str) -> list[TaggedResource]:
    """The resources ``stack``'s run ``run_id`` created, in deletion order; never a long-lived one."""
    own = [
        resource
        for resource in resources
        if resource.of_stack(stack) and resource.run_id == run_id and not resource.long_lived
    ]
    return in_deletion_order(own)


def in_deletion_order(resources: Iterable[TaggedResource]) -> list[TaggedResource]:
    """Tasks first, then endpoints, then instances (each kind in the order given)."""
    listed = list(resources)
    return [resource for kind in DELETION_ORDER for resource in listed if resource.kind is kind]
