"""`icetide local demo`, what `make demo` runs: three cycles on the sample shop, then its own check."""

from __future__ import annotations

import json
import re
from datetime import datetime
from decimal import Decimal

import pytest

from code_generation import job_sessions_generating_code, plans_generated_code
from e2e.helpers import silver_by_key

pytestmark = pytest.mark.spark


def _row(cycle_output: str, table: str) -> list[str]:
    return next(line.split() for line in cycle_output.splitlines() if line.strip().startswith(table))


def test_demo_loads_its_cycles_and_says_silver_matches_the_source(tmp_path, icetide, monkeypatch):
    workspace = tmp_path / "demo"
    # As `make demo` runs it: every job run's session generates code (tests/code_generation.py).
    job_sessions = job_sessions_generating_code(monkeypatch)

    result = icetide("local", "demo", "--workspace", workspace)

    # Its merges and maintenance ran in those sessions, which plan whole-stage generated code.
    assert job_sessions, "the demo's job runs made no session through the Glue stand-in"
    assert all(plans_generated_code(session) for session in job_sessions)
    assert result.exit_code == 0, result.text
    assert "main_customers: silver matches source (8 rows)" in result.out
    assert "main_orders: silver matches source (10 rows)" in result.out
    assert "main_payments: silver matches source (5 rows)" in result.out
    # Then maintenance through its state machine: each merged table compacted to one data file
    # without delete files, and the same rows afterwards.
    maintenance, recheck = result.out.split("maintenance: files before -> after, per table")[1].split(
        "check after maintenance"
    )
    for table in ("main_customers", "main_orders", "main_payments"):
        silver = next(
            line for line in maintenance.splitlines() if line.strip().startswith(f"{table} (silver)")
        )
        assert re.search(r"data files [2-9] -> 1, delete files [1-9] -> 0,", silver), silver
    assert "main_payments: silver matches source (5 rows)" in recheck
    assert "main_customers: silver matches source (8 rows)" in recheck

    # `icetide local maintain` on the demo's workspace: one table, as JSON; its lastMaintenance kept.
    again = icetide("local", "maintain", "--workspace", workspace, "--table", "main_orders", "--json")
    assert again.exit_code == 0, again.text
    (run,) = [json.loads(line) for line in again.out.splitlines()]
    assert (run["targetTableName"], run["status"], run["refused"]) == ("main_orders", "SUCCEEDED", None)
    assert run["runId"].startswith("main_orders-maintain-")
    last = run["lastMaintenance"]
    assert (last["status"], last["runId"]) == ("SUCCEEDED", run["runId"])
    assert (last["silver"]["before"]["dataFiles"], last["silver"]["after"]["deleteFiles"]) == (1, 0)
    unknown = icetide("local", "maintain", "--workspace", workspace, "--table", "main_order")
    assert unknown.exit_code == 2
    assert "no table main_order in the workspace's control items" in unknown.err
    delta, changes = result.out.split("second cycle: delta")[1].split("third cycle: changes")
    customers = _row(delta, "main_customers")
    # read, inserted, updated, deleted, then the watermark moving from the first cycle's to the second's
    assert customers[1:6] == ["SUCCEEDED", "4", "2", "2", "0"]
    assert " ".join(customers[6:11]) == "2026-01-05 08:06:00 -> 2026-01-05 09:06:30"
    # The sample's boundary rows, read back independently: customer 6 changed in place at the
    # watermark, customer 7 arrived stamped exactly at it.
    silver = silver_by_key(workspace, "main_customers", ["id", "email", "credit_limit", "updated_at"], "id")
    assert silver[6] == (6, "frances.allen@example.com", Decimal("6000.06"), datetime(2026, 1, 5, 8, 6))
    assert silver[7] == (7, "alan@example.com", Decimal("7000.07"), datetime(2026, 1, 5, 8, 6))
    # Payments (cdc): cycle 2 reads 8 changes: 2 inserts, payment 1 updated, payment 3 updated then
    # deleted, payment 2 deleted, payment 9 inserted then deleted (never in silver).
    assert _row(delta, "main_payments")[1:6] == ["SUCCEEDED", "8", "2", "1", "2"]
    # Cycle 3: payment 2 inserted again, 5 updated then deleted, 6 deleted, 7 updated.
    assert _row(changes, "main_payments")[1:6] == ["SUCCEEDED", "5", "1", "1", "2"]
    payments = silver_by_key(workspace, "main_payments", ["id", "amount", "method"], "id")
    assert payments == {
        1: (1, Decimal("8.00"), "card"),
        2: (2, Decimal("14.26"), "card"),
        4: (4, Decimal("28.52"), "voucher"),
        7: (7, Decimal("70.70"), "card"),
        8: (8, Decimal("12.50"), "transfer"),
    }


def test_demo_refuses_a_workspace_that_already_has_state(tmp_path, icetide):
    (tmp_path / "state").mkdir()
    (tmp_path / "state" / "control-table.json").write_text("[]")

    result = icetide("local", "demo", "--workspace", tmp_path)

    assert result.exit_code == 1
    assert "already holds icetide state; the demo needs a new or empty directory" in result.err
