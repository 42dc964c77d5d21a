"""Shared pytest configuration. Fixtures that belong to one area live in that area's conftest."""

import os
import socket
from collections.abc import Iterator

import pytest

# No test may reach AWS: moto intercepts boto3, and these make sure nothing falls through to real
# credentials or a real region.
os.environ.setdefault("AWS_DEFAULT_REGION", "eu-west-1")
os.environ["AWS_ACCESS_KEY_ID"] = "testing"
os.environ["AWS_SECRET_ACCESS_KEY"] = "testing"
os.environ["AWS_SECURITY_TOKEN"] = "testing"
os.environ["AWS_SESSION_TOKEN"] = "testing"
os.environ.pop("AWS_PROFILE", None)
os.environ.setdefault("POWERTOOLS_SERVICE_NAME", "icetide")
os.environ.setdefault("POWERTOOLS_METRICS_NAMESPACE", "icetide")
os.environ.setdefault("POWERTOOLS_TRACE_DISABLED", "true")

# After the environment above: the handlers' Powertools objects read it at import.
import importlib
import pkgutil

import handlers

# Handler modules bind names such as `utc_now` at import, and the local stack imports a handler on
# its first invocation. Importing them all now, before any test patches `icetide.clock.utc_now`,
# keeps a handler first invoked under a patched clock from keeping that clock for the whole session.
for _handler in pkgutil.iter_modules(handlers.__path__):
    importlib.import_module(f"handlers.{_handler.name}")


@pytest.fixture
def unused_tcp_port() -> Iterator[int]:
    """A loopback port that refuses connections for the whole test: a database that cannot be reached.

    The probe socket stays bound, without listening, until the test ends: on Linux a connection to
    it is refused, and no other process (the other test worker's PostgreSQL, say) can take the
    port in the meantime, as it could once a closed probe had freed it.
    """
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind(("127.0.0.1", 0))
        yield int(probe.getsockname()[1])
