"""How `make test`'s workers share a tier: whole files, every PostgreSQL test on one worker, and
the costliest first.

pytest-xdist hands a worker one scope (a file, or the PostgreSQL group) at a time, in the order of
its queue; by default the scopes with the most tests go first. Test counts say little about cost
here (one end-to-end test runs local cycles for a minute, a hundred template checks take seconds),
and a long scope taken last leaves the other worker idle until it ends. So the queue is ordered by
expected cost instead (longest processing time first, which keeps that idle tail short): a test's
cost is guessed from its directory, the scope's from its tests.
"""

from __future__ import annotations

from collections import defaultdict

import pytest
from xdist.scheduler import LoadGroupScheduling

# The guessed cost of one test by its directory under tests/, relative: an end-to-end test runs
# local cycles (stack, DMS stand-in, Spark), a benchmark smoke run the benchmarks; a deployment
# test runs the SAM CLI; glue and state-machine tests run a few Spark jobs or an execution.
TEST_COST_BY_DIRECTORY = {
    "e2e": 25.0,
    "benchmarks": 25.0,
    "acceptance": 5.0,
    "deploy": 2.0,
    "glue": 3.0,
    "statemachine": 3.0,
    "cli": 2.0,
    "local": 1.0,
}
# Any other directory's tests (unit, handlers): a fraction of a second each.
OTHER_TEST_COST = 0.1


def test_cost(item: pytest.Item) -> float:
    return TEST_COST_BY_DIRECTORY.get(item.path.parent.name, OTHER_TEST_COST)


def scope_of(item: pytest.Item) -> str:
    """The scope :class:`FilesAndGroupsScheduling` gives ``item``: its xdist group, else its file."""
    group = item.get_closest_marker("xdist_group")
    return f"@{group.args[0]}" if group else str(item.path)


def costliest_first(items: list[pytest.Item]) -> None:
    """Order ``items`` (in place) by their scope's guessed cost, costliest first; within a scope,
    and between scopes of equal cost, as collected."""
    cost: dict[str, float] = defaultdict(float)
    for item in items:
        cost[scope_of(item)] += test_cost(item)
    items.sort(key=lambda item: -cost[scope_of(item)])


def take_scopes_as_ordered(config: pytest.Config) -> None:
    """Make pytest-xdist queue the scopes in the collection's order (``costliest_first``'s), not
    by their number of tests (``--no-loadscope-reorder``)."""
    config.option.loadscopereorder = False


class FilesAndGroupsScheduling(LoadGroupScheduling):
    """pytest-xdist's ``loadgroup``, where a test without an ``xdist_group`` goes with its file
    (``loadfile``) instead of alone: a file's module fixtures and its session's JVM start once."""

    def _split_scope(self, nodeid: str) -> str:
        if nodeid.rfind("@") > nodeid.rfind("]"):  # xdist's own test: an '@' inside [...] is a parameter
            return nodeid.rsplit("@", 1)[-1]
        return nodeid.split("::", 1)[0]
