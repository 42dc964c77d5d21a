"""Shared pytest configuration. Fixtures that belong to one area live in that area's conftest."""

import os

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
