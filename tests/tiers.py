"""Which tier a test belongs to, and the check that its marker says so.

A test that needs a SparkSession carries ``@pytest.mark.spark``, one that needs a PostgreSQL server
``@pytest.mark.postgres``, one that runs a deployment tool installed outside .venv
``@pytest.mark.tools``, one that runs the state machines on the local stack ``@pytest.mark.stack``
(seconds each, without Spark: every test in tests/statemachine has it by its directory, a test
elsewhere that starts executions by its own marker); every other test is in the fast tier, which
``make test`` runs first and ``make test-fast`` runs alone.
The markers are checked twice, because a missing one would put a slow test in the fast tier, where
it would start a JVM, a server or a tool's installation unannounced:

- at collection, a test that asks for a fixture of ``FIXTURE_TIERS``, itself or through another
  fixture, without the marker is an error of the whole run (``unmarked_fixture_uses``; the tools
  are only reached through those fixtures);
- while a test runs, one that builds a SparkSession (the local stack, ``icetide job run`` and the
  benchmarks build theirs without any fixture) or starts the run's PostgreSQL server without the
  marker fails, and so does one that opens the state machines' harness (``TableRunHarness``: the
  local stack and the acceptance dry run are one) without any tier's marker (``TierGuard``).
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterable
from typing import Any

import pytest

SPARK = "spark"
POSTGRES = "postgres"
TOOLS = "tools"
STACK = "stack"
TIER_MARKERS = (SPARK, POSTGRES, TOOLS, STACK)
# Directories whose every test is in a tier, whatever its own markers say.
DIRECTORY_TIERS = {"statemachine": STACK}
# The fixtures that hand a test the tier's resource, and the marker a test using them carries.
FIXTURE_TIERS = {
    "spark": SPARK,
    "postgres_server": POSTGRES,
    "postgres_url": POSTGRES,
    "lint_deploy": TOOLS,
    "transformed": TOOLS,
    "asl_validator": TOOLS,
    "make_stack": STACK,
    "stack": STACK,
    "deploy": STACK,
    "deployed": STACK,
}
# The one door to running the state machines: every local stack is a TableRunHarness.
HARNESS_MODULE = "icetide_local.stepfunctions.harness"
# The tier expression of the fast tier, for `pytest -m`.
FAST = " and ".join(f"not {marker}" for marker in TIER_MARKERS)


def missing_marker(item: pytest.Item, marker: str, what: str) -> str:
    return f"{item.nodeid} {what} without @pytest.mark.{marker} (tests/tiers.py)"


def mark_by_directory(items: Iterable[pytest.Item]) -> None:
    for item in items:
        tier = DIRECTORY_TIERS.get(item.path.parent.name)
        if tier and item.path.parent.parent.name == "tests":
            item.add_marker(tier)


def unmarked_fixture_uses(items: Iterable[pytest.Item]) -> list[str]:
    """A line for each test that asks for a tier's fixture but lacks the tier's marker."""
    found = []
    for item in items:
        for fixture in getattr(item, "fixturenames", ()):
            marker = FIXTURE_TIERS.get(fixture)
            if marker and item.get_closest_marker(marker) is None:
                found.append(missing_marker(item, marker, f"uses the {fixture} fixture"))
    return found


def _spark_context_active() -> bool:
    context = sys.modules.get("pyspark.context")
    return context is not None and context.SparkContext._active_spark_context is not None


class TierGuard:
    """Records, for the running test, a SparkSession built or a PostgreSQL server started without
    the tier's marker; the hooks in tests/conftest.py fail the test with what it recorded."""

    def __init__(self) -> None:
        self.item: pytest.Item | None = None
        self.found: list[str] = []
        self._spark_was_active = False
        self._spark_watched = False
        self._harness_watched = False

    def enter(self, item: pytest.Item) -> None:
        self.item, self.found = item, []
        self._watch_spark()
        self._watch_harness()
        self._spark_was_active = _spark_context_active()

    def leave(self) -> list[str]:
        """What the test did without its marker; a SparkContext first started by the test counts
        too (built before pyspark was imported, so before the builder was watched)."""
        item, found = self.item, self.found
        if item is not None and not self._spark_was_active and _spark_context_active():
            self.require(SPARK, "started a SparkContext")
        self.item, self.found = None, []
        self._watch_spark()
        self._watch_harness()
        return sorted(set(found))

    def require(self, marker: str, what: str) -> None:
        if self.item is not None and self.item.get_closest_marker(marker) is None:
            self.found.append(missing_marker(self.item, marker, what))

    def require_a_tier(self, what: str) -> None:
        """``what`` is slow whichever tier's resource the test also needs (the local stack runs
        Spark jobs, the stack tier's harness stand-in jobs): any tier's marker will do."""
        item = self.item
        if item is not None and not any(item.get_closest_marker(marker) for marker in TIER_MARKERS):
            markers = ", ".join(f"@pytest.mark.{marker}" for marker in TIER_MARKERS)
            self.found.append(f"{item.nodeid} {what} without a tier's marker ({markers}; tests/tiers.py)")

    def _watch_harness(self) -> None:
        """Wrap ``TableRunHarness.__enter__`` once its module is imported (a test module that opens
        a harness imports it when it is collected, before any test runs)."""
        if self._harness_watched or HARNESS_MODULE not in sys.modules:
            return
        harness = sys.modules[HARNESS_MODULE].TableRunHarness
        enter: Callable[..., Any] = harness.__enter__

        def watched(harness_self: Any) -> Any:
            self.require_a_tier("opened the state machines' harness")
            return enter(harness_self)

        harness.__enter__ = watched
        self._harness_watched = True

    def _watch_spark(self) -> None:
        """Wrap ``SparkSession.builder.getOrCreate``, the one door to a session, once pyspark is
        imported (importing it only to watch it would slow every fast-tier worker down)."""
        if self._spark_watched or "pyspark.sql.session" not in sys.modules:
            return
        builder = sys.modules["pyspark.sql.session"].SparkSession.Builder
        get_or_create: Callable[..., Any] = builder.getOrCreate

        def watched(builder_self: Any) -> Any:
            self.require(SPARK, "built a SparkSession")
            return get_or_create(builder_self)

        builder.getOrCreate = watched
        self._spark_watched = True
