"""This stack's DMS resources as their tags describe them: whose they are, and in which order to delete.

Every resource a run creates carries the stack's tag and the run's tag (``identifiers.RunDmsResources``),
and an identifier derived from the stack, the table and the run. Tags find a run's resources when the
run died before recording what it had made (an execution aborted or timed out), and tell a dead run's
leftovers from what must stay: a continuous table's task and endpoint carry the long-lived mark, and a
reused replication instance was created by the user, not by a run, so it carries no run tag at all.

Tags alone never make a resource icetide's to delete: anyone allowed to tag could put this stack's
tags on a colleague's instance. A resource is icetide's only when its identifier is also the one
icetide derives for the stack, table and run its tags name (:meth:`TaggedResource.is_icetides`).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from enum import StrEnum

from icetide.dms.identifiers import LONG_LIVED_TAG, RUN_ID_TAG, STACK_TAG, TABLE_TAG, RunDmsResources


class ResourceKind(StrEnum):
    """The three kinds of DMS resource a run creates."""

    TASK = "task"
    ENDPOINT = "endpoint"
    INSTANCE = "instance"


# DMS refuses to delete an endpoint a task still uses, and an instance that still has tasks.
DELETION_ORDER = (ResourceKind.TASK, ResourceKind.ENDPOINT, ResourceKind.INSTANCE)


@dataclass(frozen=True)
class TaggedResource:
    """One DMS resource: its identifier and status as last described, and its tags."""

    kind: ResourceKind
    arn: str
    status: str | None
    tags: Mapping[str, str] = field(default_factory=dict)
    identifier: str | None = None

    def of_stack(self, stack: str) -> bool:
        """Whether the resource carries ``stack``'s tag."""
        return self.tags.get(STACK_TAG) == stack

    @property
    def run_id(self) -> str | None:
        """The run that created it; None for what no run created (the stack's source endpoint)."""
        return self.tags.get(RUN_ID_TAG) or None

    def is_icetides(self, stack: str) -> bool:
        """Whether ``stack``'s run named by the tags created it: the tags name the stack, a table and a
        run, and the identifier is one icetide derives for them (a run's own, or its key extraction's)."""
        table, run_id = self.tags.get(TABLE_TAG), self.run_id
        if not self.of_stack(stack) or not table or run_id is None or self.identifier is None:
            return False
        resources = RunDmsResources(stack, table, run_id)
        derived = {
            ResourceKind.TASK: (resources.task_identifier, resources.key_task_identifier),
            ResourceKind.ENDPOINT: (resources.endpoint_identifier, resources.key_endpoint_identifier),
            ResourceKind.INSTANCE: (resources.instance_identifier,),
        }[self.kind]
        # DMS stores instance identifiers in lower case; icetide derives them in lower case.
        return self.identifier.lower() in derived

    @property
    def long_lived(self) -> bool:
        """A continuous table's task or endpoint: it outlives every run, no run cleanup deletes it."""
        return LONG_LIVED_TAG in self.tags


def runs_resources(resources: Iterable[TaggedResource], stack: str, run_id: str) -> list[TaggedResource]:
    """The resources ``stack``'s run ``run_id`` created, in deletion order; never a long-lived one,
    never one whose identifier is not the one icetide derives for its tags."""
    own = [
        resource
        for resource in resources
        if resource.is_icetides(stack) and resource.run_id == run_id and not resource.long_lived
    ]
    return in_deletion_order(own)


def in_deletion_order(resources: Iterable[TaggedResource]) -> list[TaggedResource]:
    """Tasks first, then endpoints, then instances (each kind in the order given)."""
    listed = list(resources)
    return [resource for kind in DELETION_ORDER for resource in listed if resource.kind is kind]
