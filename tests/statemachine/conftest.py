"""Fixtures of the state-machine tests: local stacks with waits short enough for a test."""

from __future__ import annotations

import contextlib
import os
import shutil
import subprocess
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from icetide_local.stepfunctions import TableRunHarness
from once_per_run import once_per_run
from statemachine.orders import StackFactory, orders_item, orders_stack


@pytest.fixture
def make_stack() -> Iterator[StackFactory]:
    """Build local stacks (closed at the end of the test); keyword arguments go to TableRunHarness."""
    with contextlib.ExitStack() as stacks:

        def make(substitutions: dict[str, str] | None = None, **options: Any) -> TableRunHarness:
            return stacks.enter_context(orders_stack(substitutions, **options))

        yield make


@pytest.fixture
def stack(make_stack: StackFactory) -> TableRunHarness:
    """A local stack holding the dbo_orders control item."""
    local = make_stack()
    local.put_control_item(orders_item())
    return local


AslValidator = Callable[[Path], subprocess.CompletedProcess[str]]


@pytest.fixture(scope="session")
def asl_validator(tmp_path_factory: pytest.TempPathFactory, worker_id: str) -> AslValidator:
    """``validate(path)``: asl-validator 4 (npm, through npx) run on an ASL file.

    The package is fetched once per test run, before either definition's test runs it: two
    workers' first ``npx --yes`` at the same moment install into one npx cache folder, which some
    npm versions fail (npm/cli#8224).
    """
    npx = shutil.which("npx")
    if npx is None:
        # CI must validate: there a missing npx is a broken runner, not a reason to pass.
        if os.environ.get("CI"):
            pytest.fail("npx is not installed, and CI must run asl-validator on the definitions")
        pytest.skip("npx is not installed (CI and the dev machine have it)")
    command = [npx, "--yes", "asl-validator@4"]

    def fetch() -> dict[str, Any]:
        done = subprocess.run(
            [*command, "--version"], capture_output=True, text=True, timeout=300, check=False
        )
        return {"returncode": done.returncode, "output": done.stdout + done.stderr}

    fetched = once_per_run(tmp_path_factory, worker_id, "asl-validator", fetch)
    assert fetched["returncode"] == 0, fetched["output"]

    def validate(path: Path) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [*command, "--json-path", str(path)], capture_output=True, text=True, timeout=300, check=False
        )

    return validate
