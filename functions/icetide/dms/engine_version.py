"""Which DMS replication engine versions can run icetide's tasks.

Every run writes parquet with ``IncludeOpForFullLoad`` and a ``TimestampColumnName`` column
(icetide.dms.bronze_target). The DMS API reference (S3Settings, ``IncludeOpForFullLoad`` and
``TimestampColumnName``) gives each a first engine version: "DMS supports the use of the .parquet
files with the IncludeOpForFullLoad parameter in versions 3.4.7 and later", 3.1.4 for
``TimestampColumnName``. So an instance older than 3.4.7 would write files the Glue job
cannot read correctly (full-load rows without ``Op``): a named instance that old is refused before
any task is created on it, with its version in the message.

An instance a run creates gets the stack's ``EngineVersion`` (template parameter DmsEngineVersion,
REPLICATION_ENGINE_VERSION): without one DMS picks "the latest" (user guide, "Working with
replication engine versions"), a version the code cannot vouch for.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from icetide.errors import IcetideError

# The first engine version with every setting icetide's S3 target uses (module docstring).
MINIMUM_ENGINE_VERSION = (3, 4, 7)
_VERSION = re.compile(r"^(\d+)\.(\d+)\.(\d+)")


class ReplicationEngineTooOld(IcetideError):
    """A named replication instance runs an engine older than icetide's tasks need, or one whose
    version DMS does not report. Not retried: the instance must be upgraded (ModifyReplicationInstance
    with EngineVersion) or another named."""


def version_numbers(text: str) -> tuple[int, int, int] | None:
    """``3.5.4`` (or ``3.5.4.R1``) as (3, 5, 4); None when the text is not such a version."""
    matched = _VERSION.match(text.strip())
    if matched is None:
        return None
    major, minor, patch = (int(part) for part in matched.groups())
    return major, minor, patch


def _dotted(numbers: tuple[int, ...]) -> str:
    return ".".join(str(part) for part in numbers)


def check_engine_version(reported: str, what: str) -> str:
    """``reported`` (an EngineVersion) when it can run icetide's tasks; ReplicationEngineTooOld
    naming ``what`` (the instance, or the setting) otherwise."""
    numbers = version_numbers(reported)
    if numbers is None:
        raise ReplicationEngineTooOld(
            f"{what} reports engine version {reported or 'none'!r}; icetide needs "
            f"{_dotted(MINIMUM_ENGINE_VERSION)} or later (parquet with IncludeOpForFullLoad) and cannot "
            "tell whether it has it"
        )
    if numbers < MINIMUM_ENGINE_VERSION:
        raise ReplicationEngineTooOld(
            f"{what} runs DMS engine {reported}; icetide's S3 target needs "
            f"{_dotted(MINIMUM_ENGINE_VERSION)} or later (parquet with IncludeOpForFullLoad): upgrade it "
            "(ModifyReplicationInstance EngineVersion) or name another instance"
        )
    return reported


def check_instance(instance: Mapping[str, Any], arn: str) -> str:
    """The instance's ``EngineVersion`` (DescribeReplicationInstances) when it is new enough;
    ReplicationEngineTooOld otherwise."""
    return check_engine_version(str(instance.get("EngineVersion") or ""), f"replication instance {arn}")
