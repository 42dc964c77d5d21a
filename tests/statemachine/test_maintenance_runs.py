"""The table-maintenance state machine in moto: the lock it shares with merge runs, its record, its failures.

The real ASL and the real handlers run; the maintenance Glue job is a stand-in that writes a fixture
report (or fails), so these tests are about orchestration, not Iceberg (tests/glue has the job).
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import UTC, datetime
from decimal import Decimal
from typing import Any

import pytest

import handlers.start_workflow
from icetide_local.standins.glue import JobRunner, failing_job, maintenance_report_writer
from icetide_local.stepfunctions import Fault, TableRunHarness
from icetide_local.stepfunctions.lambdas import LambdaContext
from statemachine.orders import TABLE, StackFactory, orders_item

MAINTENANCE_RUN = "dbo_orders-maintain-20261121T0000Z"
MERGE_RUN = "dbo_orders-20261121T0600Z"
REPORT_URI = f"s3://icetide-raw-local/manifests/dbo_orders/{MAINTENANCE_RUN}.maintenance.json"
SILVER = {
    "table": "icetide_silver.dbo_orders",
    "strategy": "binpack",
    "before": {
        "dataFiles": 12,
        "deleteFiles": 3,
        "positionDeleteFiles": 3,
        "totalBytes": 48000,
        "snapshots": 30,
    },
    "after": {
        "dataFiles": 2,
        "deleteFiles": 0,
        "positionDeleteFiles": 0,
        "totalBytes": 40000,
        "snapshots": 24,
    },
    "dataFilesRewritten": 12,
    "dataFilesAdded": 2,
    "deleteFilesRewritten": 3,
    "snapshotsExpired": 6,
    "filesDeletedByExpiry": 9,
    "orphanFilesRemoved": 1,
}
MAINTAINED = (
    "Prepare maintenance",
    "Acquire table lock",
    "Run maintenance job",
    "Record maintenance",
    "Maintained",
)


def _now() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def _item(stack: TableRunHarness) -> dict[str, Any]:
    item = stack.control_item(TABLE)
    assert item is not None, "the control item disappeared"
    return item


class LockWitness:
    """A maintenance job runner that notes who held the table's lock while the job ran, and its arguments."""

    def __init__(self, stack_of: list[TableRunHarness], inner: JobRunner) -> None:
        self.stack_of = stack_of
        self.inner = inner
        self.lock_holders: list[str | None] = []
        self.arguments: list[dict[str, str]] = []

    def __call__(self, arguments: Mapping[str, str]) -> None:
        self.arguments.append(dict(arguments))
        self.lock_holders.append(_item(self.stack_of[0]).get("lockHolder"))
        self.inner(arguments)


def _witnessed_stack(make_stack: StackFactory, inner: JobRunner) -> tuple[TableRunHarness, LockWitness]:
    holder: list[TableRunHarness] = []
    witness = LockWitness(holder, inner)
    stack = make_stack(maintenance_runner=witness)
    holder.append(stack)
    return stack, witness


def test_a_maintenance_run_holds_the_lock_during_the_job_and_records_the_report(
    make_stack: StackFactory,
) -> None:
    stack, witness = _witnessed_stack(make_stack, maintenance_report_writer(silver=SILVER))
    stack.put_control_item(
        orders_item(
            lastRunId=MERGE_RUN,
            lastRunStatus="SUCCEEDED",
            maintenance={"snapshotRetentionHours": 48, "orphanAgeHours": 96},
        )
    )

    report = stack.maintain(TABLE, MAINTENANCE_RUN)

    assert report.status == "SUCCEEDED", report.render()
    assert report.states_entered == MAINTAINED
    assert witness.lock_holders == [MAINTENANCE_RUN]
    assert witness.arguments == [
        {
            "--target_table": "icetide_silver.dbo_orders",
            "--run_id": MAINTENANCE_RUN,
            "--report_uri": REPORT_URI,
            "--snapshot_retention_hours": "48",
            "--min_snapshots": "24",
            "--orphan_age_hours": "96",
            "--min_input_files": "5",
            "--delete_file_threshold": "1",
        }
    ]
    item = _item(stack)
    assert "lockHolder" not in item and "lockTime" not in item
    # The merge's run state is the merge's: maintenance leaves it alone.
    assert (item["lastRunId"], item["lastRunStatus"]) == (MERGE_RUN, "SUCCEEDED")
    last = item["lastMaintenance"]
    assert last.pop("time") >= "2026-"
    assert last == {
        "runId": MAINTENANCE_RUN,
        "status": "SUCCEEDED",
        "reportUri": REPORT_URI,
        "snapshotsExpired": Decimal(6),
        "orphanFilesRemoved": Decimal(1),
        "dataFilesRewritten": Decimal(12),
        "deleteFilesRewritten": Decimal(3),
        "silver": {
            "before": {"dataFiles": 12, "deleteFiles": 3, "totalBytes": 48000, "snapshots": 30},
            "after": {"dataFiles": 2, "deleteFiles": 0, "totalBytes": 40000, "snapshots": 24},
        },
    }
    assert stack.notifications() == []


def test_a_maintenance_run_while_a_merge_holds_the_lock_is_refused_and_succeeds(
    make_stack: StackFactory,
) -> None:
    stack, witness = _witnessed_stack(make_stack, maintenance_report_writer(silver=SILVER))
    locked_since = _now()
    stack.put_control_item(orders_item(lockHolder=MERGE_RUN, lockTime=locked_since))

    report = stack.maintain(TABLE, MAINTENANCE_RUN)

    assert report.status == "SUCCEEDED"
    assert report.states_entered == (
        "Prepare maintenance",
        "Acquire table lock",
        "Table locked by another run",
        "Refused",
    )
    assert report.output["refused"] == "table locked"
    assert report.output["error"] == "TableLocked"
    assert f"locked by run {MERGE_RUN}" in report.output["cause"]
    assert witness.arguments == []
    assert stack.glue.runs == []
    item = _item(stack)
    assert (item["lockHolder"], item["lockTime"]) == (MERGE_RUN, locked_since)
    assert "lastMaintenance" not in item
    assert stack.notifications() == []


def test_a_table_that_turned_maintenance_off_is_refused_without_a_lock(make_stack: StackFactory) -> None:
    stack, witness = _witnessed_stack(make_stack, maintenance_report_writer(silver=SILVER))
    stack.put_control_item(orders_item(maintenance={"enabled": False}))

    report = stack.maintain(TABLE, MAINTENANCE_RUN)

    assert report.status == "SUCCEEDED"
    assert report.states_entered[-2:] == ("Maintenance turned off", "Refused")
    assert report.output["error"] == "MaintenanceDisabled"
    assert witness.arguments == []
    item = _item(stack)
    assert "lockHolder" not in item and "lastMaintenance" not in item


def test_a_merge_run_while_maintenance_holds_the_lock_is_refused_succeeds_and_touches_nothing(
    make_stack: StackFactory,
) -> None:
    # The moment between StartWorkflow's check and maintenance taking the lock: the merge run is
    # refused without failing (no failure alarm), as a maintenance run refused by a merge is.
    stack = make_stack()
    locked_since = _now()
    stack.put_control_item(orders_item(lockHolder=MAINTENANCE_RUN, lockTime=locked_since))

    report = stack.run(TABLE, MERGE_RUN)

    assert report.status == "SUCCEEDED"
    assert report.states_entered == (
        "Prepare run",
        "Acquire table lock",
        "Table under maintenance",
        "Refused: table under maintenance",
    )
    assert (report.output["refused"], report.output["error"]) == (
        "table under maintenance",
        "TableUnderMaintenance",
    )
    assert f"locked by run {MAINTENANCE_RUN}" in report.output["cause"]
    item = _item(stack)
    assert (item["lockHolder"], item["lockTime"]) == (MAINTENANCE_RUN, locked_since)
    assert "lastRunId" not in item
    assert stack.dms_inventory().tasks == []
    assert stack.glue.runs == []


def test_the_merge_schedule_does_not_start_a_table_maintenance_holds(
    stack: TableRunHarness, monkeypatch: pytest.MonkeyPatch
) -> None:
    stack.put_control_item(orders_item(lockHolder=MAINTENANCE_RUN, lockTime=_now()))
    for name, value in stack.lambda_environment().items():
        monkeypatch.setenv(name, value)
    monkeypatch.setenv("STATE_MACHINE_ARN", stack.state_machine_arn)
    context = LambdaContext(
        "icetide-start-workflow", "arn:aws:lambda:eu-west-1:123456789012:function:x", 256, 60
    )

    summary = handlers.start_workflow.handler({"time": "2026-11-21T07:00:00Z"}, context)

    assert (summary["started"], summary["locked"]) == ([], {TABLE: MAINTENANCE_RUN})
    executions = stack.client("stepfunctions").list_executions(stateMachineArn=stack.state_machine_arn)
    assert executions["executions"] == []


def test_a_failed_maintenance_job_is_recorded_notified_and_unlocked(make_stack: StackFactory) -> None:
    stack = make_stack(maintenance_runner=failing_job("rewrite_data_files ran out of memory"))
    stack.put_control_item(orders_item())

    report = stack.maintain(TABLE, MAINTENANCE_RUN)

    assert report.status == "FAILED"
    assert report.error == "TableMaintenanceFailed"
    assert report.states_entered[-4:] == (
        "Run maintenance job failed",
        "Record maintenance failure",
        "Notify failure",
        "Maintenance failed",
    )
    item = _item(stack)
    assert "lockHolder" not in item
    last = item["lastMaintenance"]
    assert (last["runId"], last["status"], last["failedState"], last["error"], last["cause"]) == (
        MAINTENANCE_RUN,
        "FAILED",
        "Run maintenance job",
        "GlueJobFailed",
        "rewrite_data_files ran out of memory",
    )
    [notification] = stack.notifications()
    assert notification.attributes == {"status": "MAINTENANCE_FAILED", "targetTableName": TABLE}
    assert (notification.message["runId"], notification.message["failedState"]) == (
        MAINTENANCE_RUN,
        "Run maintenance job",
    )


@pytest.mark.parametrize(
    ("fault_target", "maintenance_runner", "failed_state", "error"),
    [
        ("acquire_maintenance_lock", None, "Acquire table lock", "InvalidControlItem"),
        (None, failing_job(), "Run maintenance job", "GlueJobFailed"),
        ("record_maintenance", None, "Record maintenance", "MaintenanceReportInvalid"),
    ],
)
def test_a_failure_at_any_state_leaves_the_lock_released(
    make_stack: StackFactory,
    fault_target: str | None,
    maintenance_runner: JobRunner | None,
    failed_state: str,
    error: str,
) -> None:
    stack = make_stack(maintenance_runner=maintenance_runner or maintenance_report_writer(silver=SILVER))
    stack.put_control_item(orders_item())
    if fault_target is not None:
        stack.faults.inject(fault_target, Fault(error, "injected", times=1))

    report = stack.maintain(TABLE, MAINTENANCE_RUN)

    assert report.status == "FAILED"
    assert report.cause is not None and report.cause.startswith(f"{failed_state} failed with ")
    item = _item(stack)
    assert "lockHolder" not in item and "lockTime" not in item
    assert (item["lastMaintenance"]["status"], item["lastMaintenance"]["error"]) == ("FAILED", error)


def test_a_report_of_another_run_is_refused_and_the_lock_released(make_stack: StackFactory) -> None:
    def other_runs_report(arguments: Mapping[str, str]) -> None:
        maintenance_report_writer(silver=SILVER)(
            {**arguments, "--run_id": "dbo_orders-maintain-20261120T0000Z"}
        )

    stack = make_stack(maintenance_runner=other_runs_report)
    stack.put_control_item(orders_item())

    report = stack.maintain(TABLE, MAINTENANCE_RUN)

    assert report.status == "FAILED"
    last = _item(stack)["lastMaintenance"]
    assert (last["failedState"], last["error"]) == ("Record maintenance", "MaintenanceReportInvalid")
    assert "dbo_orders-maintain-20261120T0000Z" in last["cause"]
    assert "lockHolder" not in _item(stack)


def test_a_skipped_table_is_recorded_as_maintained_with_the_reason(make_stack: StackFactory) -> None:
    stack = make_stack(maintenance_runner=maintenance_report_writer(skipped="no silver table yet"))
    stack.put_control_item(orders_item())

    report = stack.maintain(TABLE, MAINTENANCE_RUN)

    assert report.status == "SUCCEEDED"
    last = _item(stack)["lastMaintenance"]
    assert (last["status"], last["skipped"], last["snapshotsExpired"]) == (
        "SUCCEEDED",
        "no silver table yet",
        0,
    )
    assert "silver" not in last
