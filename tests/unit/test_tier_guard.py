"""The tier guard's check of the state machines' harness: a test that opens it without any tier's
marker is reported, one with a marker is not (tests/tiers.py; the markers decide what the fast tier
runs, so an unmarked harness would put seconds of moto's interpreter into it unannounced)."""

from __future__ import annotations

import sys
import types
from typing import Any

import pytest

from tiers import HARNESS_MODULE, TIER_MARKERS, TierGuard


class _Item:
    """The two things the guard reads of a pytest item."""

    def __init__(self, nodeid: str, markers: tuple[str, ...]) -> None:
        self.nodeid = nodeid
        self._markers = markers

    def get_closest_marker(self, name: str) -> Any:
        return getattr(pytest.mark, name) if name in self._markers else None


class _Harness:
    entered = 0

    def __enter__(self) -> _Harness:
        type(self).entered += 1
        return self

    def __exit__(self, *exc: object) -> None:
        return None


@pytest.fixture
def harness(monkeypatch: pytest.MonkeyPatch) -> type[_Harness]:
    # A stand-in of the harness's module: the guard wraps the class it finds there.
    harness_class = type("TableRunHarness", (_Harness,), {"entered": 0})
    monkeypatch.setitem(sys.modules, HARNESS_MODULE, types.SimpleNamespace(TableRunHarness=harness_class))
    return harness_class


@pytest.mark.parametrize("markers", [(), *((marker,) for marker in TIER_MARKERS)])
def test_opening_the_harness_needs_a_tier_marker(harness: type[_Harness], markers: tuple[str, ...]) -> None:
    guard = TierGuard()

    guard.enter(_Item("tests/x/test_y.py::test_z", markers))
    with harness():
        pass
    found = guard.leave()

    assert harness.entered == 1
    if markers:
        assert found == []
    else:
        assert found == [
            "tests/x/test_y.py::test_z opened the state machines' harness without a tier's marker "
            "(@pytest.mark.spark, @pytest.mark.postgres, @pytest.mark.tools, @pytest.mark.stack; "
            "tests/tiers.py)"
        ]


def test_a_test_that_does_not_open_the_harness_is_not_reported(harness: type[_Harness]) -> None:
    guard = TierGuard()

    guard.enter(_Item("tests/x/test_y.py::test_z", ()))
    found = guard.leave()

    assert (found, harness.entered) == ([], 0)
