"""The ResourceIdentifier of a run's DMS resources (icetide.dms.arn_names; DMS API reference,
CreateReplicationInstance / CreateEndpoint / CreateReplicationTask, ResourceIdentifier)."""

from __future__ import annotations

import random
import re
import string

import pytest

from icetide.dms.arn_names import ArnKind, arn_name, check_prefix
from icetide.dms.identifiers import RunDmsResources

PREFIX = "icetide51af3dc0"
# DMS's rules for a ResourceIdentifier, written out independently of the code: up to 31 ASCII
# letters, digits and hyphens; starts with a letter; no two hyphens in a row; no hyphen at the end.
DMS_RESOURCE_IDENTIFIER = re.compile(r"[A-Za-z](?:-?[A-Za-z0-9])*")


def _accepted_by_dms(value: str) -> bool:
    return len(value) <= 31 and DMS_RESOURCE_IDENTIFIER.fullmatch(value) is not None


def test_the_name_is_the_prefix_a_hyphen_and_a_digest_of_kind_and_identifier() -> None:
    # sha256('["task", "icetide-dbo-orders-20261121t0700z-0ffeac5a4883539d"]'), first 15 hex digits.
    identifier = "icetide-dbo-orders-20261121t0700z-0ffeac5a4883539d"

    assert arn_name(PREFIX, ArnKind.TASK, identifier) == "icetide51af3dc0-1b8f9d0ae414a71"
    assert arn_name(PREFIX, ArnKind.ENDPOINT, identifier) == "icetide51af3dc0-24a6f8886d3673e"
    assert arn_name(PREFIX, ArnKind.INSTANCE, identifier) == "icetide51af3dc0-8357ae34b04216e"


def test_random_runs_get_names_dms_accepts_that_start_with_the_prefix_and_never_repeat() -> None:
    generator = random.Random(47)
    alphabet = string.ascii_letters + string.digits + "_"
    seen: dict[str, tuple[ArnKind, str]] = {}
    for _ in range(2000):
        table = generator.choice(string.ascii_letters) + "".join(
            generator.choice(alphabet) for _ in range(generator.randint(0, 120))
        )
        resources = RunDmsResources("icetide", table, f"{table}-2026112{generator.randint(0, 9)}T0700Z")
        for kind, identifier in (
            (ArnKind.INSTANCE, resources.instance_identifier),
            (ArnKind.ENDPOINT, resources.endpoint_identifier),
            (ArnKind.ENDPOINT, resources.key_endpoint_identifier),
            (ArnKind.TASK, resources.task_identifier),
            (ArnKind.TASK, resources.key_task_identifier),
        ):
            name = arn_name(PREFIX, kind, identifier)

            assert _accepted_by_dms(name), name
            assert name.startswith(f"{PREFIX}-")
            assert seen.setdefault(name, (kind, identifier)) == (kind, identifier)


@pytest.mark.parametrize(
    "prefix",
    [
        "icetide",
        "icetide51af3dc",
        "icetide51af3dc0a",
        "icetide51AF3DC0",
        "Icetide51af3dc0",
        "other51af3dc0",
        "",
    ],
)
def test_a_prefix_not_spelled_as_the_template_spells_it_is_refused(prefix: str) -> None:
    with pytest.raises(ValueError, match="icetide' and 8 lower-case hex digits"):
        check_prefix(prefix)
    with pytest.raises(ValueError, match="icetide' and 8 lower-case hex digits"):
        arn_name(prefix, ArnKind.TASK, "icetide-x")


def test_a_name_needs_the_resources_identifier() -> None:
    with pytest.raises(ValueError, match="identifier"):
        arn_name(PREFIX, ArnKind.TASK, "")
