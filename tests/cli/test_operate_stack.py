"""The operator verbs against a deployed stack: moto resources found through the stack's outputs.

The stack `icetide-prod` holds the real table-run state machine and handlers (moto executes the ASL,
the Lambda tasks run in this process), a StartWorkflow function and a CloudFormation stack whose
outputs name them as template.yaml's do (tests/cli/conftest.py).
"""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Any

import pytest

import handlers.start_workflow as start_workflow
from cli.conftest import NAMES, STACK, CliResult, DeployedStack, DeployFactory
from icetide_cli import run_now, status
from icetide_cli.operator_control import StackControlItems
from icetide_local.standins.dms.lifecycle import DmsLifecycle
from icetide_local.stepfunctions.faults import Fault
from statemachine.orders import (
    POLLING_WITHOUT_END,
    PREVIOUS_WATERMARK,
    TABLE,
    orders_item,
    orders_replication,
    wait_until_polling,
)

pytestmark = pytest.mark.stack

NOW = datetime(2026, 11, 24, 10, 30, tzinfo=UTC)
ACCOUNT = "123456789012"
EXECUTIONS = f"arn:aws:states:eu-west-1:{ACCOUNT}:execution:{NAMES.state_machine}"
ON_STACK = ("--stack", STACK, "--region", "eu-west-1")
# A lock a live run holds: taken 30 minutes before NOW, stale only after six hours.
LIVE_LOCK = {"lockHolder": "dbo_orders-20261124T1000Z", "lockTime": "2026-11-24T10:00:00Z"}


@pytest.fixture
def fixed_clock(monkeypatch: pytest.MonkeyPatch) -> None:
    """NOW for the verbs and for StartWorkflow (the slot, the scheduled time)."""
    for module in (status, run_now, start_workflow):
        monkeypatch.setattr(module, "utc_now", lambda: NOW)


def _execution_input(deployed: DeployedStack, run_id: str) -> dict[str, Any]:
    stepfunctions = deployed.harness.client("stepfunctions")
    described = stepfunctions.describe_execution(executionArn=f"{EXECUTIONS}:{run_id}")
    result: dict[str, Any] = json.loads(described["input"])
    return result


def _execution_names(deployed: DeployedStack) -> list[str]:
    stepfunctions = deployed.harness.client("stepfunctions")
    executions = stepfunctions.list_executions(stateMachineArn=deployed.harness.state_machine_arn)
    return sorted(execution["name"] for execution in executions["executions"])


# --- status ----------------------------------------------------------------------------------------


@pytest.mark.usefixtures("fixed_clock")
def test_status_shows_each_tables_state_position_lag_last_run_and_lock(
    deployed: DeployedStack, icetide
) -> None:
    deployed.put(
        orders_item(
            watermark="2026-11-24 08:59:58",
            lastRunId="dbo_orders-20261124T0900Z",
            lastRunStatus="SUCCEEDED",
            lastRunTime="2026-11-24T09:02:00Z",
            lastRunStats={"rowsRead": 10, "rowsInserted": 4, "rowsUpdated": 5, "rowsDeleted": 1},
        )
    )
    customers_item = orders_item(
        targetTableName="customers",
        sourceTable="customers",
        captureMode="cdc",
        filtercolumn="",
        filteroperator="",
        startvalue="",
        cdcCheckpoint="checkpoint:V1#27#00000001/0A6E35D0:ID:0",
        lastRunId="customers-20261124T1000Z",
        lastRunStatus="RUNNING",
        lastRunTime="2026-11-24T10:00:05Z",
        lockHolder="customers-20261124T1000Z",
        lockTime="2026-11-24T10:00:05Z",
    )
    del customers_item["watermark"]  # a cdc table's position is its checkpoint
    deployed.put(customers_item)
    deployed.put({"targetTableName": "broken", "sourceSchema": "dbo"})

    result = icetide("status", *ON_STACK, "--json")

    assert result.exit_code == 0, result.err
    orders, broken, customers = sorted(result.json(), key=lambda record: record["targetTableName"] != TABLE)
    assert orders == {
        "targetTableName": "dbo_orders",
        "state": "ok",
        "captureMode": "delta",
        "continuous": False,
        "watermark": "2026-11-24 08:59:58",
        "cdcCheckpoint": None,
        "cdcFileCheckpoint": None,
        # NOW - the last successful run's time (09:02), later than the watermark (08:59:58)
        "lagSeconds": 5280,
        "lastRunId": "dbo_orders-20261124T0900Z",
        "lastRunStatus": "SUCCEEDED",
        "lastRunTime": "2026-11-24T09:02:00Z",
        "rowsInserted": 4,
        "rowsUpdated": 5,
        "rowsDeleted": 1,
        "lockHolder": None,
        "lockTime": None,
    }
    assert customers["targetTableName"] == "customers"
    assert (customers["state"], customers["captureMode"], customers["lagSeconds"]) == ("running", "cdc", None)
    assert customers["cdcCheckpoint"] == "checkpoint:V1#27#00000001/0A6E35D0:ID:0"
    assert (customers["lockHolder"], customers["lockTime"]) == (
        "customers-20261124T1000Z",
        "2026-11-24T10:00:05Z",
    )
    assert broken["state"] == "invalid"
    assert broken["problems"] == ["sourceTable: required attribute is missing"]


@pytest.mark.usefixtures("fixed_clock")
def test_status_as_text_puts_a_failed_tables_cause_under_the_table(deployed: DeployedStack, icetide) -> None:
    deployed.put(
        orders_item(
            lastRunId="dbo_orders-20261124T1000Z",
            lastRunStatus="FAILED",
            lastRunTime="2026-11-24T10:01:00Z",
            lastFailedState="Run Glue job",
            lastRunError="BronzeRowCountMismatch: 9 rows, DMS reported 10",
        )
    )

    result = icetide("status", *ON_STACK)

    assert result.exit_code == 0, result.err
    header, row, cause = result.out.splitlines()
    assert header.split() == [
        "table", "state", "position", "lag", "last", "run", "at", "inserted", "updated", "deleted", "lock",
    ]  # fmt: skip
    # The lag counts from the timestamp watermark alone: the last run failed.
    assert row.split() == [
        "dbo_orders", "failed", "watermark", "2026-11-21", "05:59:58", "3d", "04h",
        "dbo_orders-20261124T1000Z", "2026-11-24T10:01:00Z", "-", "-", "-", "-",
    ]  # fmt: skip
    assert cause == (
        "dbo_orders: dbo_orders-20261124T1000Z failed in Run Glue job: "
        "BronzeRowCountMismatch: 9 rows, DMS reported 10"
    )


# --- runs ------------------------------------------------------------------------------------------


def test_runs_lists_the_tables_executions_newest_first_each_with_its_cause(
    deployed: DeployedStack, icetide
) -> None:
    harness = deployed.harness
    deployed.put(orders_item())
    deployed.put(orders_item(targetTableName="dbo_orders_archive"))
    assert harness.run(TABLE).status == "SUCCEEDED"  # dbo_orders-20261121T0700Z
    harness.faults.inject("commit_watermark", Fault("WatermarkConflict", "the watermark moved", times=1))
    assert harness.run(TABLE).status == "FAILED"  # 0800: recorded on the control item by the Catch
    assert harness.run("dbo_orders_archive").status == "SUCCEEDED"  # 0900: another table's
    deployed.put(
        {**(deployed.item(TABLE) or {}), "lockHolder": "a-run-of-2099", "lockTime": "2099-01-01T00:00:00Z"}
    )
    assert harness.run(TABLE).status == "SUCCEEDED"  # 1000: refused at the lock, nothing recorded

    result = icetide("runs", TABLE, *ON_STACK, "--json")

    assert result.exit_code == 0, result.err
    runs = result.json()
    assert [(run["runId"], run["status"], run["failure"]) for run in runs] == [
        (
            "dbo_orders-20261121T1000Z",
            "REFUSED",
            "execution REFUSED: TableLocked: table dbo_orders is locked by run a-run-of-2099 since "
            "2099-01-01T00:00:00Z; run dbo_orders-20261121T1000Z was refused (the lock counts as stale, "
            "and may be taken over, after 2099-01-01T06:00:00Z)",
        ),
        (
            "dbo_orders-20261121T0800Z",
            "FAILED",
            "Commit watermark: WatermarkConflict: the watermark moved",
        ),
        ("dbo_orders-20261121T0700Z", "SUCCEEDED", None),
    ]
    assert all(run["startDate"] <= run["stopDate"] for run in runs)

    newest = icetide("runs", TABLE, *ON_STACK, "--json", "--limit", "1")
    assert [run["runId"] for run in newest.json()] == ["dbo_orders-20261121T1000Z"]


def test_runs_of_a_table_that_neither_exists_nor_ran_is_a_usage_error(
    deployed: DeployedStack, icetide
) -> None:
    deployed.put(orders_item())

    result = icetide("runs", "dbo_order", *ON_STACK)

    assert result.exit_code == 2
    assert result.err == (
        f"icetide runs: stack {STACK} (control table {NAMES.control_table}) has no control item "
        "'dbo_order' (its tables: dbo_orders)\n"
    )


# --- run -------------------------------------------------------------------------------------------


@pytest.mark.usefixtures("fixed_clock")
def test_run_invokes_start_workflow_which_starts_this_slots_run_of_every_active_table(
    deployed: DeployedStack, icetide
) -> None:
    deployed.put(orders_item())
    deployed.put(orders_item(targetTableName="dbo_orders_archive", activeflag="N"))

    result = icetide("run", *ON_STACK, "--json")

    assert result.exit_code == 0, result.err
    assert result.json() == {
        "slot": "20261124T1000Z",
        "started": ["dbo_orders-20261124T1000Z"],
        "alreadyStarted": [],
        "locked": {},
        "inactive": ["dbo_orders_archive"],
        "invalid": [],
        "retired": {},
    }
    report = deployed.harness.wait(f"{EXECUTIONS}:dbo_orders-20261124T1000Z")
    assert report.status == "SUCCEEDED"
    assert _execution_input(deployed, "dbo_orders-20261124T1000Z") == {
        "targetTableName": "dbo_orders",
        "runId": "dbo_orders-20261124T1000Z",
        "scheduledTime": "2026-11-24T10:30:00Z",
    }
    assert (deployed.item(TABLE) or {})["lastRunStatus"] == "SUCCEEDED"

    again = icetide("run", *ON_STACK)
    assert again.exit_code == 0, again.err
    assert again.out.splitlines() == [
        "slot 20261124T1000Z",
        "  already started dbo_orders-20261124T1000Z (a slot's run id is used once; the next slot "
        "starts the next run)",
        "  not started dbo_orders_archive: inactive (activeflag N)",
    ]


@pytest.mark.usefixtures("fixed_clock")
def test_run_of_named_tables_starts_only_those_as_start_workflow_would(
    deployed: DeployedStack, icetide
) -> None:
    deployed.put(orders_item())
    deployed.put(orders_item(targetTableName="dbo_orders_archive"))

    result = icetide("run", TABLE, *ON_STACK, "--json")

    assert result.exit_code == 0, result.err
    assert result.json() == {
        "slot": "20261124T1000Z",
        "started": ["dbo_orders-20261124T1000Z"],
        "alreadyStarted": [],
        "locked": {},
        "inactive": [],
        "invalid": [],
        "failed": {},
    }
    assert _execution_names(deployed) == ["dbo_orders-20261124T1000Z"]
    # The input StartWorkflow gives a scheduled run (test above): the run's slot comes from it.
    assert _execution_input(deployed, "dbo_orders-20261124T1000Z") == {
        "targetTableName": "dbo_orders",
        "runId": "dbo_orders-20261124T1000Z",
        "scheduledTime": "2026-11-24T10:30:00Z",
    }
    assert deployed.harness.wait(f"{EXECUTIONS}:dbo_orders-20261124T1000Z").status == "SUCCEEDED"

    again = icetide("run", TABLE, *ON_STACK, "--json")
    assert again.exit_code == 1  # asked for, not started
    assert again.json()["alreadyStarted"] == ["dbo_orders-20261124T1000Z"]


@pytest.mark.usefixtures("fixed_clock")
def test_run_does_not_start_a_named_table_a_live_run_holds(deployed: DeployedStack, icetide) -> None:
    deployed.put(orders_item(targetTableName="dbo_orders_archive", **LIVE_LOCK))

    result = icetide("run", "dbo_orders_archive", *ON_STACK)

    assert result.exit_code == 1
    assert result.out.splitlines() == [
        "slot 20261124T1000Z",
        "  not started dbo_orders_archive: locked by run dbo_orders-20261124T1000Z",
    ]
    assert _execution_names(deployed) == []


def test_run_of_an_unknown_table_or_with_workspace_options_is_a_usage_error(
    deployed: DeployedStack, icetide
) -> None:
    deployed.put(orders_item())

    unknown = icetide("run", TABLE, "dbo_ordres", *ON_STACK)
    with_source = icetide("run", *ON_STACK, "--source", "sqlite:///shop.db")

    assert (unknown.exit_code, with_source.exit_code) == (2, 2)
    assert unknown.err == (
        f"icetide run: stack {STACK} has no control item 'dbo_ordres' (its tables: dbo_orders)\n"
    )
    assert (
        with_source.err == "icetide run: --source apply to --workspace only (a stack reads its own source)\n"
    )
    assert _execution_names(deployed) == []


# --- reset -----------------------------------------------------------------------------------------


def test_reset_moves_the_watermark_of_an_unlocked_table(deployed: DeployedStack, icetide) -> None:
    deployed.put(orders_item(lookback=3600))

    result = icetide("reset", TABLE, "--to", "2026-11-01T09:00:00+01:00", *ON_STACK, "--json")

    assert result.exit_code == 0, result.err
    assert result.json() == {
        "targetTableName": "dbo_orders",
        "previousWatermark": PREVIOUS_WATERMARK,
        "watermark": "2026-11-01 08:00:00",  # the contract's UTC text form
        "nextLowerBound": "2026-11-01 07:00:00",  # minus the hour of lookback
    }
    assert (deployed.item(TABLE) or {})["watermark"] == "2026-11-01 08:00:00"


def test_reset_refuses_a_locked_table_and_names_the_holder(deployed: DeployedStack, icetide) -> None:
    deployed.put(orders_item(**LIVE_LOCK))

    result = icetide("reset", TABLE, "--to", "2026-11-01 00:00:00", *ON_STACK)

    assert result.exit_code == 1
    assert result.err == (
        "icetide reset: dbo_orders is locked by run dbo_orders-20261124T1000Z since 2026-11-24T10:00:00Z: "
        "reset refused. Wait for that run to end; if it is gone, `icetide unlock` removes its lock\n"
    )
    assert (deployed.item(TABLE) or {})["watermark"] == PREVIOUS_WATERMARK


def test_reset_refuses_when_a_run_locks_the_table_between_its_read_and_its_write(
    deployed: DeployedStack, icetide, monkeypatch: pytest.MonkeyPatch
) -> None:
    deployed.put(orders_item())
    read = StackControlItems.item

    def read_then_a_run_locks(self: StackControlItems, table: str) -> dict[str, Any]:
        item = read(self, table)
        deployed.put({**(deployed.item(table) or {}), **LIVE_LOCK})
        return item

    monkeypatch.setattr(StackControlItems, "item", read_then_a_run_locks)

    result = icetide("reset", TABLE, "--to", "2026-11-01 00:00:00", *ON_STACK)

    assert result.exit_code == 1
    assert "dbo_orders is locked by run dbo_orders-20261124T1000Z since 2026-11-24T10:00:00Z" in result.err
    assert (deployed.item(TABLE) or {})["watermark"] == PREVIOUS_WATERMARK


@pytest.mark.parametrize(
    ("to", "item", "error"),
    [
        (
            "42",
            {},
            "icetide reset: --to '42' is not a timestamp: dbo_orders's watermark is the timestamp "
            "'2026-11-21 05:59:58'\n",
        ),
        ("2026-02-30 10:00:00", {}, "icetide reset: --to: '2026-02-30 10:00:00' is not a valid timestamp: "),
        (
            "2026-11-01 00:00:00",
            {"captureMode": "cdc"},
            "icetide reset: dbo_orders is a cdc table: its runs read the changes after its committed "
            "checkpoint, not from a watermark; `icetide reload` loads it again\n",
        ),
        (
            "2026-11-01 00:00:00",
            {"filteroperator": "lte"},
            "icetide reset: dbo_orders is filtered with lte: its runs do not start from the watermark "
            "(only gte and between do), so a reset would change nothing\n",
        ),
    ],
)
def test_reset_to_a_value_the_table_cannot_take_is_a_usage_error(
    deployed: DeployedStack, icetide, to: str, item: dict[str, str], error: str
) -> None:
    deployed.put(orders_item(**item))

    result = icetide("reset", TABLE, "--to", to, *ON_STACK)

    assert result.exit_code == 2
    assert result.err.startswith(error)
    assert (deployed.item(TABLE) or {})["watermark"] == PREVIOUS_WATERMARK


# --- unlock ----------------------------------------------------------------------------------------


def test_unlock_keeps_the_lock_of_a_running_execution_and_removes_it_once_that_run_is_gone(
    deploy: DeployFactory, icetide
) -> None:
    # The run waits on a DMS task that never finishes: RUNNING, holding its lock, while the test looks.
    deployed = deploy(
        POLLING_WITHOUT_END,
        dms=DmsLifecycle(mover=orders_replication, full_load_finishes=False),
    )
    deployed.put(orders_item())
    execution = deployed.harness.start(TABLE)  # dbo_orders-20261121T0700Z
    wait_until_polling(deployed.harness, execution)
    held_since = (deployed.item(TABLE) or {})["lockTime"]

    refused = icetide("unlock", TABLE, *ON_STACK)

    assert refused.exit_code == 1
    assert refused.err == (
        "icetide unlock: dbo_orders is locked by run dbo_orders-20261121T0700Z, whose execution is still "
        "RUNNING: its lock stays. Stop it if it is stuck (aws stepfunctions stop-execution --execution-arn "
        f"{EXECUTIONS}:dbo_orders-20261121T0700Z); its cleanup releases the lock\n"
    )
    assert (deployed.item(TABLE) or {})["lockHolder"] == "dbo_orders-20261121T0700Z"

    # Stopped, and its cleanup rule never delivered (the case unlock is for): the lock stays behind.
    deployed.harness.client("stepfunctions").stop_execution(executionArn=execution)
    assert deployed.harness.wait(execution).status == "ABORTED"

    result = icetide("unlock", TABLE, *ON_STACK, "--json")

    assert result.exit_code == 0, result.err
    assert result.json() == {
        "targetTableName": "dbo_orders",
        "unlocked": True,
        "lockHolder": "dbo_orders-20261121T0700Z",
        "lockTime": held_since,
    }
    item = deployed.item(TABLE) or {}
    assert "lockHolder" not in item and "lockTime" not in item


def test_unlock_of_an_unlocked_table_says_so(deployed: DeployedStack, icetide) -> None:
    deployed.put(orders_item())

    result = icetide("unlock", TABLE, *ON_STACK)

    assert (result.exit_code, result.out) == (0, "dbo_orders is not locked: nothing to do\n")


def test_unlock_removes_nothing_when_another_run_took_the_lock_meanwhile(
    deployed: DeployedStack, icetide, monkeypatch: pytest.MonkeyPatch
) -> None:
    deployed.put(orders_item(lockHolder="dbo_orders-20261121T0700Z", lockTime="2026-11-21T07:00:00Z"))
    read = StackControlItems.item

    def read_then_another_run_locks(self: StackControlItems, table: str) -> dict[str, Any]:
        item = read(self, table)
        deployed.put({**(deployed.item(table) or {}), **LIVE_LOCK})
        return item

    monkeypatch.setattr(StackControlItems, "item", read_then_another_run_locks)

    result = icetide("unlock", TABLE, *ON_STACK)

    assert result.exit_code == 1
    assert result.err == (
        "icetide unlock: dbo_orders's lock changed since it was read (it is now held by run "
        "dbo_orders-20261124T1000Z since 2026-11-24T10:00:00Z): nothing was removed\n"
    )
    assert (deployed.item(TABLE) or {})["lockHolder"] == "dbo_orders-20261124T1000Z"


# --- the target ------------------------------------------------------------------------------------


def test_a_stack_that_does_not_exist_is_a_usage_error(deployed: DeployedStack, icetide) -> None:
    result: CliResult = icetide("status", "--stack", "icetide-nope", "--region", "eu-west-1")

    assert result.exit_code == 2
    assert result.err == "icetide status: stack icetide-nope: Stack with id icetide-nope does not exist\n"


def test_a_stack_without_the_output_a_verb_needs_names_it(deployed: DeployedStack, icetide) -> None:
    deployed.harness.client("cloudformation").create_stack(
        StackName="not-icetide",
        TemplateBody=json.dumps({"Resources": {"Topic": {"Type": "AWS::SNS::Topic"}}}),
    )

    result = icetide("status", "--stack", "not-icetide", "--region", "eu-west-1")

    assert result.exit_code == 2
    assert result.err == (
        "icetide status: stack not-icetide has no output 'ControlTableName' (is it an icetide stack, "
        "and up to date?)\n"
    )
