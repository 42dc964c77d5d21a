"""How `make test`'s workers share a tier: whole files, every PostgreSQL test on one worker, and
the costliest first.

pytest-xdist hands a worker one scope (a file, or the PostgreSQL group) at a time, in the order of
its queue; by default the scopes with the most tests go first. Test counts say little about cost
here (one end-to-end test runs local cycles for a minute, a hundred template checks take seconds),
and a long scope taken last leaves the other worker idle until it ends. So the queue is ordered by
expected cost instead (longest processing time first, which keeps that idle tail short): a scope's
cost is the seconds it took when the slower tiers last recorded theirs (``SCOPE_COSTS``, written by
``make test-costs``), else a guess from its tests' directory. A recorded cost that has gone stale
only reorders the queue: every scope still runs.
"""

from __future__ import annotations

import json
from collections import defaultdict
from pathlib import Path

import pytest
from xdist.scheduler import LoadGroupScheduling

# Seconds per scope (a test file, or "@group"), setup and teardown included, from one run of the
# slower tiers with two workers: the costs the queue is ordered by.
SCOPE_COSTS = Path(__file__).with_name("scope_costs.json")

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
    """The scope :class:`FilesAndGroupsScheduling` gives ``item``: "@" and its xdist group, else
    its file as its node id names it (relative to the repository)."""
    group = item.get_closest_marker("xdist_group")
    return f"@{group.args[0]}" if group else item.nodeid.split("::", 1)[0]


def scope_of_report(nodeid: str) -> str:
    """The scope of a finished test's node id: pytest-xdist appends "@group" to a grouped test's
    (an "@" inside [...] is a parameter's)."""
    if nodeid.rfind("@") > nodeid.rfind("]"):
        return "@" + nodeid.rsplit("@", 1)[-1]
    return nodeid.split("::", 1)[0]


def recorded_costs(path: Path = SCOPE_COSTS) -> dict[str, float]:
    return json.loads(path.read_text(encoding="utf-8")) if path.exists() else {}


def costliest_first(items: list[pytest.Item], recorded: dict[str, float]) -> None:
    """Order ``items`` (in place) by their scope's cost, costliest first: the ``recorded`` seconds,
    else the guess from its tests' directories; within a scope, and between scopes of equal cost,
    as collected."""
    guessed: dict[str, float] = defaultdict(float)
    for item in items:
        guessed[scope_of(item)] += test_cost(item)
    cost = {scope: recorded.get(scope, guess) for scope, guess in guessed.items()}
    items.sort(key=lambda item: -cost[scope_of(item)])


class ScopeCostRecorder:
    """``--record-scope-costs``: adds up each finished scope's seconds (setup, call and teardown of
    its tests, as the workers report them) and writes them into ``path`` at the end of the session,
    over the scopes that ran; a scope whose file is gone is dropped."""

    def __init__(self, path: Path, root: Path) -> None:
        self.path, self.root = path, root
        self.seconds: dict[str, float] = defaultdict(float)

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        self.seconds[scope_of_report(report.nodeid)] += report.duration

    def pytest_sessionfinish(self) -> None:
        costs = {
            scope: seconds
            for scope, seconds in recorded_costs(self.path).items()
            if scope.startswith("@") or (self.root / scope).exists()
        }
        costs.update({scope: round(seconds, 1) for scope, seconds in self.seconds.items()})
        ordered = dict(sorted(costs.items(), key=lambda cost: (-cost[1], cost[0])))
        self.path.write_text(json.dumps(ordered, indent=1) + "\n", encoding="utf-8")


def take_scopes_as_ordered(config: pytest.Config) -> None:
    """Make pytest-xdist queue the scopes in the collection's order (``costliest_first``'s), not
    by their number of tests (``--no-loadscope-reorder``)."""
    config.option.loadscopereorder = False


class FilesAndGroupsScheduling(LoadGroupScheduling):
    """pytest-xdist's ``loadgroup``, where a test without an ``xdist_group`` goes with its file
    (``loadfile``) instead of alone: a file's module fixtures and its session's JVM start once."""

    def _split_scope(self, nodeid: str) -> str:
        return scope_of_report(nodeid)
