"""DMS ARNs end with the ResourceIdentifier given on create, as in DMS: moto made to honour it.

DMS: "A friendly name for the resource identifier at the end of the ... Arn ... up to 31
characters ... only ASCII letters, digits, and hyphen ('-') ... can't end with a hyphen or contain
two consecutive hyphens, and can only begin with a letter"; without one, DMS generates the end of
the ARN (DMS API reference, CreateReplicationInstance, CreateEndpoint, CreateReplicationTask:
ResourceIdentifier). moto 5.2.5 honours it for endpoints only: an instance's ARN ends with its
identifier, a task's with its identifier, and none of the three checks the rules. icetide's IAM
allows tagging only ARNs that end with the stack's ResourceIdentifiers (icetide.dms.arn_names),
so the stand-in builds ARNs as DMS does: :func:`resource_identifier_arns` refuses a
ResourceIdentifier that breaks a rule or is already taken, and gives the new instance or task the
ARN ending with it. Whether DMS keeps ResourceIdentifiers unique per resource type or across all
three is not documented: the stand-in refuses a taken ARN, the narrower reading.
"""

from __future__ import annotations

import contextlib
import json
import re
from collections.abc import Callable, Iterator
from typing import Any
from unittest import mock

from moto.core.exceptions import JsonRESTError
from moto.dms.exceptions import ResourceAlreadyExistsFault
from moto.dms.models import DatabaseMigrationServiceBackend
from moto.dms.responses import DatabaseMigrationServiceResponse
from moto.utilities.utils import get_partition

# The documented rules, written here on their own rather than taken from the code under test.
_RESOURCE_IDENTIFIER = re.compile(r"[A-Za-z](?:-?[A-Za-z0-9])*")
_RESOURCE_IDENTIFIER_MAX_LENGTH = 31


class InvalidResourceIdentifier(JsonRESTError):
    """What DMS answers to a ResourceIdentifier that breaks its rules (a bad parameter value)."""

    code = 400

    def __init__(self, wanted: str) -> None:
        super().__init__(
            "InvalidParameterValueException",
            f"Invalid ResourceIdentifier {wanted!r}: up to {_RESOURCE_IDENTIFIER_MAX_LENGTH} ASCII letters, "
            "digits and single hyphens, starting with a letter and not ending with a hyphen",
        )


_Create = Callable[[DatabaseMigrationServiceResponse], str]


def _arns(backend: DatabaseMigrationServiceBackend) -> set[str]:
    return (
        set(backend.replication_instances)
        | set(backend.replication_tasks)
        | {endpoint.endpoint_arn for endpoint in backend.endpoints.values()}
    )


def _rekey(registry: dict[str, Any], backend: DatabaseMigrationServiceBackend, old: str, new: str) -> None:
    """Move the resource moto filed under ``old`` (and its tags) to ``new``."""
    resource = registry.pop(old)
    resource.arn = new
    tags = backend.tagger.get_tag_dict_for_resource(old)
    backend.tagger.delete_all_tags_for_resource(old)
    if tags:
        backend.tagger.tag_resource(new, [{"Key": key, "Value": value} for key, value in tags.items()])
    registry[new] = resource


def _honouring(create: _Create, kind: str, result_key: str, arn_key: str, registry: str | None) -> _Create:
    """``create`` (moto's action, or a stand-in's patch of it) giving the ARN DMS would give."""

    def created_with_resource_identifier(self: DatabaseMigrationServiceResponse) -> str:
        wanted = self._get_param("ResourceIdentifier")
        if wanted is None:
            return create(self)
        if len(wanted) > _RESOURCE_IDENTIFIER_MAX_LENGTH or not _RESOURCE_IDENTIFIER.fullmatch(wanted):
            raise InvalidResourceIdentifier(wanted)
        backend = self.dms_backend
        arn = f"arn:{get_partition(self.region)}:dms:{self.region}:{self.current_account}:{kind}:{wanted}"
        if arn in _arns(backend):
            raise ResourceAlreadyExistsFault(f"The resource {arn} already exists.")
        created = json.loads(create(self))
        if registry is not None:
            _rekey(getattr(backend, registry), backend, created[result_key][arn_key], arn)
            getattr(backend, registry)[arn].resource_identifier = wanted
            created[result_key][arn_key] = arn
        return json.dumps(created)

    return created_with_resource_identifier


@contextlib.contextmanager
def resource_identifier_arns() -> Iterator[None]:
    """Make moto's DMS end each new instance's, endpoint's and task's ARN with its ResourceIdentifier
    (inside ``mock_aws``; enter it after any other patch of those create actions, so it wraps them)."""
    responses = DatabaseMigrationServiceResponse
    with contextlib.ExitStack() as patches:
        for action, kind, result_key, arn_key, registry in (
            (
                "create_replication_instance",
                "rep",
                "ReplicationInstance",
                "ReplicationInstanceArn",
                "replication_instances",
            ),
            # moto already ends an endpoint's ARN with it and files endpoints by identifier.
            ("create_endpoint", "endpoint", "Endpoint", "EndpointArn", None),
            ("create_replication_task", "task", "ReplicationTask", "ReplicationTaskArn", "replication_tasks"),
        ):
            current = getattr(responses, action)
            patches.enter_context(
                mock.patch.object(responses, action, _honouring(current, kind, result_key, arn_key, registry))
            )
        yield
