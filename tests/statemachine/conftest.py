"""Fixtures of the state-machine tests: local stacks with waits short enough for a test."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Any

import pytest

from icetide_local.standins.dms.lifecycle import DmsLifecycle
from icetide_local.stepfunctions import TableRunHarness
from statemachine.orders import (
    FAST_SUBSTITUTIONS,
    StackFactory,
    orders_item,
    orders_manifest,
    orders_replication,
)


@pytest.fixture
def make_stack() -> Iterator[StackFactory]:
    """Build local stacks (closed at the end of the test); keyword arguments go to TableRunHarness."""
    with contextlib.ExitStack() as stacks:

        def make(substitutions: dict[str, str] | None = None, **options: Any) -> TableRunHarness:
            options.setdefault("glue_runner", orders_manifest())
            options.setdefault("dms", DmsLifecycle(mover=orders_replication))
            return stacks.enter_context(
                TableRunHarness(substitutions={**FAST_SUBSTITUTIONS, **(substitutions or {})}, **options)
            )

        yield make


@pytest.fixture
def stack(make_stack: StackFactory) -> TableRunHarness:
    """A local stack holding the dbo_orders control item."""
    local = make_stack()
    local.put_control_item(orders_item())
    return local
