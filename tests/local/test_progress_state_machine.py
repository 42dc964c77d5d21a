"""Live progress from real executions: the table-run state machine in moto (stand-in DMS and Glue,
no Spark), its history followed while the harness waits, and `icetide local run` with and without
`--quiet`."""

from __future__ import annotations

import io
import json
import re
import sqlite3
import threading
import time
from collections.abc import Mapping
from pathlib import Path

import pytest

from icetide_cli.main import main
from icetide_local.execution_progress import ExecutionWatcher
from icetide_local.progress import ProgressConsole
from icetide_local.standins.dms.lifecycle import DmsLifecycle
from icetide_local.stepfunctions import TableRunHarness
from statemachine.orders import (
    FAST_SUBSTITUTIONS,
    TABLE,
    TIME_SCALE,
    orders_item,
    orders_manifest,
    orders_replication,
)

pytestmark = pytest.mark.stack

# When each step came varies from run to run; what the steps are and their order do not.
_WHEN = re.compile(r" \(\+\d+\.\d s\)$")

# dbo_orders' nominal run (tests/statemachine/test_table_run.py), Choice states left out: its own
# instance is "creating" on the first check, its task "running" on the first poll, done on the second.
NOMINAL_PROGRESS = [
    "... dbo_orders: Prepare run",
    "... dbo_orders: Acquire table lock",
    "... dbo_orders: Ensure replication instance",
    "... dbo_orders: Count instance check",
    "... dbo_orders: Wait for replication instance",
    "... dbo_orders: Ensure replication instance #2",
    "... dbo_orders: Create replication task",
    "... dbo_orders: Start replication task",
    "... dbo_orders: Lengthen poll wait",
    "... dbo_orders: Wait for replication task",
    "... dbo_orders: Poll replication task",
    "... dbo_orders: Lengthen poll wait #2",
    "... dbo_orders: Wait for replication task #2",
    "... dbo_orders: Poll replication task #2",
    "... dbo_orders: Read task statistics",
    "... dbo_orders: Run Glue job",
    "... dbo_orders: Delete DMS resources",
    "... dbo_orders: Notify success",
    "... dbo_orders: Commit watermark",
    "... dbo_orders: SUCCEEDED",
]


def _steps(stderr: str) -> list[str]:
    return [_WHEN.sub("", line) for line in stderr.splitlines()]


def test_a_tables_states_are_shown_in_order_while_its_execution_runs() -> None:
    log = io.StringIO()
    console = ProgressConsole(log, live=False)
    write_manifest = orders_manifest()
    shown_while_running = threading.Event()

    def glue_job(arguments: Mapping[str, str]) -> None:
        # The execution stays in "Run Glue job" until this returns: the state must be shown by then.
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline and not shown_while_running.is_set():
            if "dbo_orders: Run Glue job" in log.getvalue():
                shown_while_running.set()
            time.sleep(0.05)
        write_manifest(arguments)

    with TableRunHarness(
        substitutions=FAST_SUBSTITUTIONS,
        glue_runner=glue_job,
        dms=DmsLifecycle(mover=orders_replication),
        time_scale=TIME_SCALE,
    ) as stack:
        stack.put_control_item(orders_item())
        execution = stack.start(TABLE)
        watcher = ExecutionWatcher(stack.client("stepfunctions"), console)
        watcher.watch(execution)
        report = stack.wait(execution, watch=watcher.poll)
        watcher.poll(force=True)

    assert report.status == "SUCCEEDED", report.render()
    assert shown_while_running.is_set(), log.getvalue()
    assert _steps(log.getvalue()) == NOMINAL_PROGRESS


# A table whose source table does not exist: the DMS stand-in fails its task, the run takes the
# failure path, and no Spark job ever starts.
GHOST_PROGRESS = [
    "... ghost_orders: Prepare run",
    "... ghost_orders: Acquire table lock",
    "... ghost_orders: Ensure replication instance",
    "... ghost_orders: Count instance check",
    "... ghost_orders: Wait for replication instance",
    "... ghost_orders: Ensure replication instance #2",
    "... ghost_orders: Create replication task",
    "... ghost_orders: Start replication task",
    "... ghost_orders: Lengthen poll wait",
    "... ghost_orders: Wait for replication task",
    "... ghost_orders: Poll replication task",
    "... ghost_orders: Lengthen poll wait #2",
    "... ghost_orders: Wait for replication task #2",
    "... ghost_orders: Poll replication task #2",
    "... ghost_orders: Replication task failed",
    "... ghost_orders: Delete DMS resources after failure",
    "... ghost_orders: Record failure",
    "... ghost_orders: Notify failure",
    "... ghost_orders: Release table lock after failure",
    "... ghost_orders: Run failed",
    "... ghost_orders: FAILED: TableRunFailed",
]


@pytest.fixture
def ghost_table(tmp_path: Path) -> tuple[str, Path]:
    """A SQLite source without the table its tables file names: (source URL, tables file)."""
    source = tmp_path / "source.db"
    with sqlite3.connect(source) as connection:
        connection.execute("CREATE TABLE customers (id INTEGER PRIMARY KEY)")
    connection.close()
    tables = tmp_path / "tables.json"
    item = {
        "targetTableName": "ghost_orders",
        "sourceSchema": "main",
        "sourceTable": "orders",
        "filtercolumn": "id",
        "filteroperator": "gte",
        "startvalue": 0,
        "primaryKeys": "id",
    }
    tables.write_text(json.dumps([item]), encoding="utf-8")
    return f"sqlite:///{source}", tables


def test_local_run_shows_each_state_on_stderr_and_quiet_shows_none(
    tmp_path: Path, ghost_table: tuple[str, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    source, tables = ghost_table

    def local_run(workspace: str, *options: str) -> tuple[int, str, str]:
        capsys.readouterr()
        code = main(
            ["local", "run", "--workspace", str(tmp_path / workspace), "--source", source,
             "--tables", str(tables), *options]
        )  # fmt: skip
        captured = capsys.readouterr()
        return code, captured.out, captured.err

    shown = local_run("shown")
    quiet = local_run("quiet", "--quiet")

    code, out, err = shown
    assert code == 1
    starting, started, *states = _steps(err)
    assert starting == "... starting the local stack (moto, DMS stand-in, Step Functions, Spark on first use)"
    assert re.fullmatch(r"\.\.\. cycle (\w+): 1 run\(s\) started: ghost_orders-\1", started), started
    assert states == GHOST_PROGRESS
    # Standard output holds the cycle report only, progress never.
    assert "ghost_orders  FAILED" in out
    assert not [line for line in out.splitlines() if line.startswith("...")]

    code, out, err = quiet
    assert code == 1
    assert "ghost_orders  FAILED" in out
    assert err == ""
