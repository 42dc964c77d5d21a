"""DMS endpoint identifiers, unique as in DMS: moto's ``create_endpoint`` made to refuse a taken one.

moto 5.2.5 silently replaces an endpoint whose identifier is already taken. DMS refuses with
``ResourceAlreadyExistsFault``, and icetide's DMS adapter relies on that refusal: a retried create
adopts the endpoint only if it carries the run's tags. :func:`unique_endpoint_identifiers` patches
moto to refuse the same way, so the adapter needs no moto-only look-up before creating.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Any
from unittest import mock

from moto.dms import models as dms_models
from moto.dms.exceptions import ResourceAlreadyExistsFault

_CREATE_ENDPOINT = dms_models.DatabaseMigrationServiceBackend.create_endpoint


def _refusing_create_endpoint(self: Any, endpoint_identifier: str, *args: Any, **kwargs: Any) -> Any:
    if endpoint_identifier in self.endpoints:
        raise ResourceAlreadyExistsFault("The resource you are attempting to create already exists.")
    return _CREATE_ENDPOINT(self, endpoint_identifier, *args, **kwargs)


@contextlib.contextmanager
def unique_endpoint_identifiers() -> Iterator[None]:
    """Make moto's DMS refuse a second endpoint of the same identifier (inside ``mock_aws``)."""
    with mock.patch.object(
        dms_models.DatabaseMigrationServiceBackend, "create_endpoint", _refusing_create_endpoint
    ):
        yield
