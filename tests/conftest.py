"""Shared pytest configuration. Fixtures that belong to one area live in that area's conftest."""

import functools
import os
import socket
from collections.abc import Generator, Iterator
from pathlib import Path
from typing import Any

import botocore.loaders
import botocore.session
import pytest

from scheduling import (
    SCOPE_COSTS,
    FilesAndGroupsScheduling,
    ScopeCostRecorder,
    costliest_first,
    recorded_costs,
    take_scopes_as_ordered,
)
from seeds import EachSeed, each_seed_of
from tiers import POSTGRES, TierGuard, mark_by_directory, unmarked_fixture_uses

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
# Every Spark the suite starts (a worker's session, an `icetide` subprocess's) reads its defaults
# from here: no generated code; the file says why, and which tests generate code all the same.
os.environ["SPARK_CONF_DIR"] = str(Path(__file__).parent / "spark_conf")

# After the environment above: the handlers' Powertools objects read it at import.
import importlib
import pkgutil

import handlers
from icetide_local.postgres import temporary_postgres

# moto's mock_aws gives every test a new default boto3 session, and each new session parses
# botocore's service and endpoint models (megabytes of JSON) again for its first client: most of a
# moto-backed test's time. The models are data files of the installed botocore; one loader for every
# session parses each once per worker. A session still builds its own clients, credentials and
# event handlers, so nothing a test changes is shared through it.
botocore.session.create_loader = functools.cache(botocore.loaders.create_loader)

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


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--seed",
        action="append",
        type=int,
        default=[],
        metavar="N",
        help="run a seeded test's loop for seed N only (repeatable): how a failing seed is reproduced",
    )
    parser.addoption(
        "--record-scope-costs",
        action="store_true",
        help=f"write each test file's (and xdist group's) seconds into {SCOPE_COSTS.name}, the costs "
        "make test's workers order their queue by (make test-costs)",
    )


def pytest_configure(config: pytest.Config) -> None:
    if config.getoption("--record-scope-costs") and not hasattr(config, "workerinput"):
        config.pluginmanager.register(ScopeCostRecorder(SCOPE_COSTS, config.rootpath), "scope-cost-recorder")


@pytest.fixture
def each_seed(request: pytest.FixtureRequest) -> EachSeed:
    """``each_seed(seeds, check)``: ``check(seed)`` for every seed, as one test (tests/seeds.py)."""
    return each_seed_of(request.node.nodeid, request.config.getoption("--seed"))


_tier_guard = TierGuard()


@pytest.hookimpl(tryfirst=True)  # before pytest-xdist reads the groups
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    mark_by_directory(items)
    unmarked = unmarked_fixture_uses(items)
    if unmarked:
        raise pytest.UsageError("\n".join(["tests that need a tier's resource lack its marker:", *unmarked]))
    for item in items:
        if item.get_closest_marker(POSTGRES):
            item.add_marker(pytest.mark.xdist_group(POSTGRES))
    costliest_first(items, recorded_costs())


def pytest_xdist_make_scheduler(config: pytest.Config, log: Any) -> Any:
    """With ``--dist loadgroup`` (make test): whole files per worker, as ``--dist loadfile``, and
    every PostgreSQL test on one worker, so the run starts one server (``postgres_server``); the
    costliest scopes first (tests/scheduling.py).

    One worker, not one server shared by both: the local DMS stand-in reads a replication slot by
    its name, which is unique in the whole server, and tests on two workers would take each other's
    changes from a slot of the same name.
    """
    if config.getvalue("dist") != "loadgroup":
        return None
    take_scopes_as_ordered(config)
    return FilesAndGroupsScheduling(config, log)


@pytest.fixture(scope="session")
def postgres_server() -> Iterator[str]:
    """The process's PostgreSQL server (icetide_local.postgres), started by the first test that
    needs it: the URL of its ``icetide_test`` database."""
    _tier_guard.require(POSTGRES, "started the run's PostgreSQL server")
    with temporary_postgres(database="icetide_test") as url:
        yield url


@pytest.hookimpl(wrapper=True)
def pytest_runtest_protocol(item: pytest.Item) -> Generator[None, object, object]:
    _tier_guard.enter(item)
    return (yield)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_teardown(item: pytest.Item) -> Generator[None, None, None]:
    """Fails the test, at its teardown, for what it did without its tier's marker: then the test's
    own fixtures and assertions have run, and code that caught an error cannot hide the finding."""
    try:
        yield
    finally:
        found = _tier_guard.leave()
        if found:
            pytest.fail("\n".join(found), pytrace=False)
