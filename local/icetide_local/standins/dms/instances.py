"""DMS replication instances carry an engine version, as in DMS: moto's instances made to report one.

DMS gives an instance created without ``EngineVersion`` "the latest" engine (user guide, "Working
with replication engine versions") and DescribeReplicationInstances always reports it; moto 5.2.5
reports none. :func:`instance_engine_versions` makes moto fill in :data:`DEFAULT_ENGINE_VERSION`, the
template's DmsEngineVersion default, so a test that wants an older instance names its version
(``EngineVersion="3.4.6"``) and one that does not gets what a deployed stack creates.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Any
from unittest import mock

from moto.dms import models as dms_models

# template.yaml's DmsEngineVersion default (tests/deploy checks that the two agree).
DEFAULT_ENGINE_VERSION = "3.5.4"

_CREATE_INSTANCE = dms_models.DatabaseMigrationServiceBackend.create_replication_instance


def _versioned_create_instance(self: Any, *args: Any, **kwargs: Any) -> Any:
    kwargs["engine_version"] = kwargs.get("engine_version") or DEFAULT_ENGINE_VERSION
    return _CREATE_INSTANCE(self, *args, **kwargs)


@contextlib.contextmanager
def instance_engine_versions() -> Iterator[None]:
    """Make moto's DMS give every new replication instance an engine version (inside ``mock_aws``)."""
    with mock.patch.object(
        dms_models.DatabaseMigrationServiceBackend, "create_replication_instance", _versioned_create_instance
    ):
        yield
