"""The ResourceIdentifier of every DMS resource a run creates: the end of its ARN, chosen by the stack.

CreateReplicationInstance, CreateEndpoint and CreateReplicationTask also authorize
dms:AddTagsToResource (tags given on create), and no IAM condition key tells a tag on create from a
later AddTagsToResource call on an existing resource (Service Authorization Reference, AWS DMS).
So the tagging statements of template.yaml name the resources, not just their tags: only an ARN
ending in ``<stack prefix>...`` may be tagged. DMS puts the ResourceIdentifier given on create at
the end of the ARN, and generates one otherwise (DMS API reference, CreateReplicationInstance,
CreateEndpoint, CreateReplicationTask: ResourceIdentifier), so a colleague's resource, created
without one, never matches; what this stack creates always does.

The prefix is ``icetide`` plus the first 8 hex digits of the stack id's UUID: unique to the stack,
and CloudFormation can spell it (``!Split``/``!Select`` over ``AWS::StackId``) where the stack name,
up to 128 characters, would not fit in 31. The rest is a digest of the kind and the resource's
identifier (which icetide derives per stack, table and run): the same resource gets the same name
on every retry, and two resources of a stack never share one.
"""

from __future__ import annotations

import hashlib
import json
import re
from enum import StrEnum

from icetide.dms.identifiers import validate_identifier

# DMS API reference: "can have up to 31 characters".
RESOURCE_IDENTIFIER_MAX_LENGTH = 31
# template.yaml's DMS_ARN_NAME_PREFIX: `icetide` and 8 lower-case hex digits of the stack id.
ARN_NAME_PREFIX_PATTERN = r"^icetide[0-9a-f]{8}$"
_PREFIX = re.compile(ARN_NAME_PREFIX_PATTERN)
# 15 hex digits (60 bits): prefix (15) + hyphen + digest = 31 characters.
_DIGEST_LENGTH = 15


class ArnKind(StrEnum):
    """The resource type segment of a DMS ARN (Service Authorization Reference, AWS DMS)."""

    INSTANCE = "rep"
    ENDPOINT = "endpoint"
    TASK = "task"


def check_prefix(prefix: str) -> str:
    """Return ``prefix`` if it is an ARN name prefix as template.yaml spells it, else ValueError."""
    if not _PREFIX.match(prefix):
        raise ValueError(
            f"DMS ARN name prefix {prefix!r} must be 'icetide' and 8 lower-case hex digits of the stack id"
        )
    return prefix


def arn_name(prefix: str, kind: ArnKind, identifier: str) -> str:
    """The ResourceIdentifier of the ``kind`` resource named ``identifier``: ``<prefix>-<digest>``.

    The kind is in the digest: a run's task and endpoint share their identifier, and whether DMS
    keeps ResourceIdentifiers unique per resource type or across all of them is not documented.
    """
    if not identifier:
        raise ValueError("a DMS ARN name needs the resource's identifier")
    exact = json.dumps([kind.value, identifier], ensure_ascii=True)
    digest = hashlib.sha256(exact.encode("utf-8")).hexdigest()[:_DIGEST_LENGTH]
    return validate_identifier(
        f"{check_prefix(prefix)}-{digest}", f"{kind.value} ResourceIdentifier", RESOURCE_IDENTIFIER_MAX_LENGTH
    )
