"""The operator verbs against a local workspace: its saved control table and its run history.

The workspace is built as cycles leave it (``Workspace.save_control_items``, ``record_runs``); no
Spark and no moto are involved in reading or changing that state.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from cli.conftest import CliResult
from icetide_cli import status
from icetide_local.cycle_report import TableRun
from icetide_local.workspace import TypedItem, Workspace

NOW = datetime(2026, 11, 24, 10, 30, tzinfo=UTC)

ORDERS: TypedItem = {
    "targetTableName": {"S": "orders"},
    "sourceSchema": {"S": "main"},
    "sourceTable": {"S": "orders"},
    "primaryKeys": {"S": "id"},
    "filtercolumn": {"S": "change_no"},
    "filteroperator": {"S": "gte"},
    "startvalue": {"N": "0"},
    "watermark": {"N": "42"},
    "lastRunId": {"S": "orders-20261124T0900Z"},
    "lastRunStatus": {"S": "SUCCEEDED"},
    "lastRunTime": {"S": "2026-11-24T09:05:00Z"},
    "lastRunStats": {"M": {"rowsRead": {"N": "5"}, "rowsInserted": {"N": "3"}, "rowsUpdated": {"N": "2"}}},
}
LOCK: TypedItem = {"lockHolder": {"S": "orders-20261124T1000Z"}, "lockTime": {"S": "2026-11-24T10:00:02Z"}}
CUSTOMERS: TypedItem = {
    "targetTableName": {"S": "customers"},
    "sourceSchema": {"S": "main"},
    "sourceTable": {"S": "customers"},
    "primaryKeys": {"S": "id"},
    "filtercolumn": {"S": "updated_at"},
    "filteroperator": {"S": "gte"},
    "startvalue": {"S": "2026-01-01 00:00:00"},
    "watermark": {"S": "2026-11-24 07:30:00"},
    "lastRunId": {"S": "customers-20261124T1000Z"},
    "lastRunStatus": {"S": "FAILED"},
    "lastRunTime": {"S": "2026-11-24T10:01:00Z"},
    "lastFailedState": {"S": "Run Glue job"},
    "lastRunError": {"S": "SchemaChangeRefused: column email changed from string to int"},
}

Icetide = Callable[..., CliResult]
MakeWorkspace = Callable[[list[TypedItem]], Path]


def _saved(workspace: Path, table: str) -> dict[str, Any]:
    items = json.loads((workspace / "state" / "control-table.json").read_text())
    found: dict[str, Any] = next(item for item in items if item["targetTableName"]["S"] == table)
    return found


# --- status ----------------------------------------------------------------------------------------


def test_status_of_a_workspace_as_json(
    make_workspace: MakeWorkspace, icetide: Icetide, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(status, "utc_now", lambda: NOW)
    workspace = make_workspace([{**ORDERS, **LOCK}, CUSTOMERS])

    result = icetide("status", "--workspace", workspace, "--json")

    assert result.exit_code == 0, result.err
    customers, orders = result.json()
    assert orders == {
        "targetTableName": "orders",
        "state": "locked",  # a lock a process that is gone left (lastRunId is not its holder)
        "captureMode": "delta",
        "continuous": False,
        "watermark": 42,
        "cdcCheckpoint": None,
        "cdcFileCheckpoint": None,
        "lagSeconds": 5100,  # NOW - 09:05, the last successful run (a number watermark has no time)
        "lastRunId": "orders-20261124T0900Z",
        "lastRunStatus": "SUCCEEDED",
        "lastRunTime": "2026-11-24T09:05:00Z",
        "rowsInserted": 3,
        "rowsUpdated": 2,
        "rowsDeleted": None,
        "lockHolder": "orders-20261124T1000Z",
        "lockTime": "2026-11-24T10:00:02Z",
    }
    assert {key: customers[key] for key in ("state", "lagSeconds", "lastFailedState", "lastRunError")} == {
        "state": "failed",
        "lagSeconds": 10800,  # NOW - the timestamp watermark 07:30: the last run failed
        "lastFailedState": "Run Glue job",
        "lastRunError": "SchemaChangeRefused: column email changed from string to int",
    }


def test_status_of_named_tables_only_and_of_an_unknown_one(
    make_workspace: MakeWorkspace, icetide: Icetide
) -> None:
    workspace = make_workspace([ORDERS, CUSTOMERS])

    one = icetide("status", "orders", "--workspace", workspace, "--json")
    unknown = icetide("status", "order", "--workspace", workspace)

    assert [record["targetTableName"] for record in one.json()] == ["orders"]
    assert unknown.exit_code == 2
    assert unknown.err == (
        f"icetide status: workspace {workspace} has no control item 'order' (its tables: customers, orders)\n"
    )


def test_status_of_a_workspace_no_cycle_has_saved_says_so(tmp_path: Path, icetide: Icetide) -> None:
    workspace = Workspace.open(tmp_path / "fresh").root

    result = icetide("status", "--workspace", workspace)

    assert (result.exit_code, result.out) == (0, f"workspace {workspace} has no control item yet\n")


# --- runs ------------------------------------------------------------------------------------------


def _run(run_id: str, status: str, hour: int, item_after: dict[str, Any]) -> TableRun:
    return TableRun(
        target_table_name="customers",
        run_id=run_id,
        status=status,
        started=datetime(2026, 11, 24, hour, 0, 1, tzinfo=UTC),
        stopped=datetime(2026, 11, 24, hour, 1, 0, tzinfo=UTC),
        error="TableRunFailed" if status == "FAILED" else None,
        cause=None,
        item_before={},
        item_after=item_after,
    )


def test_runs_lists_the_recorded_runs_newest_first_with_their_cause(
    make_workspace: MakeWorkspace, icetide: Icetide
) -> None:
    workspace = make_workspace([ORDERS, CUSTOMERS])
    failed_item = {
        "lastRunId": "customers-20261124T0900Z",
        "lastFailedState": "Run Glue job",
        "lastRunError": "BronzeRowCountMismatch: 9 rows, DMS reported 10",
    }
    recorded = Workspace.existing(workspace)
    recorded.record_runs([_run("customers-20261124T0800Z", "SUCCEEDED", 8, {})])
    recorded.record_runs([_run("customers-20261124T0900Z", "FAILED", 9, failed_item)])
    recorded.record_runs([_run("customers-20261124T0900Z", "FAILED", 9, failed_item)])  # kept once

    result = icetide("runs", "customers", "--workspace", workspace, "--json")

    assert result.exit_code == 0, result.err
    assert result.json() == [
        {  # the control item's last run, which no recorded cycle holds (e.g. `icetide local run`'s)
            "targetTableName": "customers",
            "runId": "customers-20261124T1000Z",
            "status": "FAILED",
            "startDate": None,
            "stopDate": "2026-11-24T10:01:00Z",
            "failure": "Run Glue job: SchemaChangeRefused: column email changed from string to int",
        },
        {
            "targetTableName": "customers",
            "runId": "customers-20261124T0900Z",
            "status": "FAILED",
            "startDate": "2026-11-24T09:00:01Z",
            "stopDate": "2026-11-24T09:01:00Z",
            "failure": "Run Glue job: BronzeRowCountMismatch: 9 rows, DMS reported 10",
        },
        {
            "targetTableName": "customers",
            "runId": "customers-20261124T0800Z",
            "status": "SUCCEEDED",
            "startDate": "2026-11-24T08:00:01Z",
            "stopDate": "2026-11-24T08:01:00Z",
            "failure": None,
        },
    ]
    text = icetide("runs", "customers", "--workspace", workspace, "--limit", "2")
    assert [line.split()[:2] for line in text.out.splitlines()] == [
        ["run", "status"],
        ["customers-20261124T1000Z", "FAILED"],
        ["customers-20261124T0900Z", "FAILED"],
    ]


def test_runs_of_an_unknown_table_is_a_usage_error(make_workspace: MakeWorkspace, icetide: Icetide) -> None:
    workspace = make_workspace([ORDERS])

    result = icetide("runs", "customers", "--workspace", workspace)

    assert result.exit_code == 2
    assert (
        result.err
        == f"icetide runs: workspace {workspace} has no control item 'customers' (its tables: orders)\n"
    )


# --- reset -----------------------------------------------------------------------------------------


def test_reset_stores_a_number_watermark_as_a_number(make_workspace: MakeWorkspace, icetide: Icetide) -> None:
    workspace = make_workspace([ORDERS, CUSTOMERS])

    result = icetide("reset", "orders", "--to", "10", "--workspace", workspace)

    assert result.exit_code == 0, result.err
    assert result.out == "orders: watermark 42 -> 10; its next run reads change_no from 10 (gte)\n"
    assert _saved(workspace, "orders")["watermark"] == {"N": "10"}
    assert _saved(workspace, "orders")["lastRunStats"] == ORDERS["lastRunStats"]  # nothing else changes


def test_reset_refuses_a_locked_table(make_workspace: MakeWorkspace, icetide: Icetide) -> None:
    workspace = make_workspace([{**ORDERS, **LOCK}])

    result = icetide("reset", "orders", "--to", "10", "--workspace", workspace)

    assert result.exit_code == 1
    assert result.err == (
        "icetide reset: orders is locked by run orders-20261124T1000Z since 2026-11-24T10:00:02Z: reset "
        "refused. Wait for that run to end; if it is gone, `icetide unlock` removes its lock\n"
    )
    assert _saved(workspace, "orders")["watermark"] == {"N": "42"}


def test_reset_refuses_while_another_process_holds_the_workspace(
    make_workspace: MakeWorkspace, icetide: Icetide
) -> None:
    workspace = make_workspace([ORDERS])

    with Workspace.existing(workspace).exclusive():  # a cycle is running
        result = icetide("reset", "orders", "--to", "10", "--workspace", workspace)

    assert result.exit_code == 1
    assert result.err == (
        f"icetide reset: another icetide process is running in workspace {workspace}; try again when it "
        "has finished\n"
    )
    assert _saved(workspace, "orders")["watermark"] == {"N": "42"}


def test_reset_to_a_timestamp_where_a_number_is_kept_is_a_usage_error(
    make_workspace: MakeWorkspace, icetide: Icetide
) -> None:
    workspace = make_workspace([ORDERS])

    result = icetide("reset", "orders", "--to", "2026-11-01", "--workspace", workspace)

    assert result.exit_code == 2
    assert (
        result.err
        == "icetide reset: --to '2026-11-01' is not a number: orders's watermark is the number 42\n"
    )


def test_reset_before_any_run_takes_the_startvalues_kind(
    make_workspace: MakeWorkspace, icetide: Icetide
) -> None:
    never_ran = {
        name: value for name, value in CUSTOMERS.items() if not name.startswith(("last", "watermark"))
    }
    workspace = make_workspace([never_ran])

    bad = icetide("reset", "customers", "--to", "12", "--workspace", workspace)
    good = icetide("reset", "customers", "--to", "2026-06-01", "--workspace", workspace, "--json")

    assert bad.err == (
        "icetide reset: --to '12' is not a timestamp: customers's startvalue is the timestamp "
        "'2026-01-01 00:00:00'\n"
    )
    assert good.json() == {
        "targetTableName": "customers",
        "previousWatermark": None,
        "watermark": "2026-06-01",
        "nextLowerBound": "2026-06-01",
    }
    assert _saved(workspace, "customers")["watermark"] == {"S": "2026-06-01"}


# --- unlock ----------------------------------------------------------------------------------------


def test_unlock_removes_the_lock_and_names_who_held_it_since_when(
    make_workspace: MakeWorkspace, icetide: Icetide
) -> None:
    workspace = make_workspace([{**ORDERS, **LOCK}])

    result = icetide("unlock", "orders", "--workspace", workspace)

    assert result.exit_code == 0, result.err
    assert (
        result.out
        == "orders: removed the lock of run orders-20261124T1000Z, held since 2026-11-24T10:00:02Z\n"
    )
    assert _saved(workspace, "orders") == ORDERS

    again = icetide("unlock", "orders", "--workspace", workspace, "--json")
    assert again.json() == {
        "targetTableName": "orders",
        "unlocked": False,
        "lockHolder": None,
        "lockTime": None,
    }


# --- the target ------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("arguments", "error"),
    [
        (
            ("status", "--workspace", "{missing}"),
            "icetide status: workspace {missing} does not exist (create it with `icetide local run`)\n",
        ),
        (("unlock", "orders", "--workspace", "{workspace}", "--region", "eu-west-1"),
         "icetide unlock: --region and --profile apply to --stack only\n"),
        (
            ("reset", "orders", "--to", "1", "--workspace", "{workspace}", "--stack", "icetide-prod"),
            "icetide reset: error: argument --stack: not allowed with argument --workspace\n",
        ),
        (("runs", "orders"), "icetide runs: error: one of the arguments --workspace --stack is required\n"),
    ],
)  # fmt: skip
def test_a_bad_target_is_one_clear_usage_error(
    make_workspace: MakeWorkspace,
    icetide: Icetide,
    tmp_path: Path,
    arguments: tuple[str, ...],
    error: str,
) -> None:
    places = {"workspace": str(make_workspace([ORDERS])), "missing": str(tmp_path / "missing")}

    result = icetide(*(argument.format(**places) for argument in arguments))

    assert result.exit_code == 2
    assert result.err.splitlines()[-1] + "\n" == error.format(**places)


def test_local_status_still_reads_the_workspace(make_workspace: MakeWorkspace, icetide: Icetide) -> None:
    workspace = make_workspace([ORDERS])

    result = icetide("local", "status", "--workspace", workspace, "--json")

    assert result.exit_code == 0, result.err
    assert result.json()[0]["watermark"] == 42
