"""Finding this stack's DMS resources by their tags, and deleting them in the order DMS accepts.

Used where the names a run recorded cannot be trusted to exist: after an execution ended outside
the state machine's paths (``handlers.clean_up_execution``) and by the hourly sweep
(``handlers.sweep_dms_resources``). Deleting follows ``handlers.delete_dms_resources``: a running
task is stopped first, "already gone" counts as done, and what DMS cannot delete yet is reported
busy for the caller to retry.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

from icetide.adapters import dms
from icetide.dms.cleanup import BEING_DELETED, MUST_STOP_FIRST, CleanupReport, DeleteOutcome
from icetide.dms.identifiers import STACK_TAG
from icetide.dms.tagged import ResourceKind, TaggedResource, in_deletion_order

_LISTINGS: tuple[tuple[ResourceKind, Callable[[], list[dict[str, Any]]], str, str, str], ...] = (
    (ResourceKind.TASK, dms.list_tasks, "ReplicationTaskArn", "Status", "ReplicationTaskIdentifier"),
    (ResourceKind.ENDPOINT, dms.list_endpoints, "EndpointArn", "Status", "EndpointIdentifier"),
    (
        ResourceKind.INSTANCE,
        dms.list_instances,
        "ReplicationInstanceArn",
        "ReplicationInstanceStatus",
        "ReplicationInstanceIdentifier",
    ),
)


def stack_resources(stack: str) -> list[TaggedResource]:
    """Every task, endpoint and instance that carries ``stack``'s tag, with all its tags and its
    identifier (which the callers compare with the one icetide derives before deleting anything)."""
    found = []
    for kind, listing, arn_key, status_key, identifier_key in _LISTINGS:
        for described in listing():
            arn = str(described[arn_key])
            tags = dms.tags_of(arn)
            if tags.get(STACK_TAG) == stack:
                status = described.get(status_key)
                identifier = described.get(identifier_key)
                found.append(
                    TaggedResource(
                        kind,
                        arn,
                        str(status) if status else None,
                        tags,
                        str(identifier) if identifier else None,
                    )
                )
    return found


def delete_resources(resources: Iterable[TaggedResource], report: CleanupReport) -> None:
    """Delete ``resources`` (tasks, then endpoints, then instances), filing each outcome in ``report``."""
    for resource in in_deletion_order(resources):
        if resource.status == BEING_DELETED:
            report.add(resource.arn, DeleteOutcome.DELETED)
        elif resource.kind is ResourceKind.TASK:
            if resource.status in MUST_STOP_FIRST:
                dms.stop_task(resource.arn)
            report.add(resource.arn, dms.delete_task(resource.arn))
        elif resource.kind is ResourceKind.ENDPOINT:
            report.add(resource.arn, dms.delete_endpoint(resource.arn))
        else:
            report.add(resource.arn, dms.delete_instance(resource.arn))
