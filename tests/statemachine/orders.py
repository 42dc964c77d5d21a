"""The table the state-machine tests load, and what the stand-ins make of its run.

The table ``dbo_orders`` has run before (watermark PREVIOUS_WATERMARK). Its next run replicates
10 rows (the DMS stand-in reports them) and the Glue stand-in writes a manifest that merged 4
inserts, 5 updates and 1 delete up to NEW_WATERMARK. Waits are 0 s unless a test says otherwise, and
the interpreter's pauses are scaled by TIME_SCALE.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from icetide_local.standins.dms.lifecycle import DmsLifecycle, ReplicationTaskRun, TableStatistics
from icetide_local.standins.glue import JobRunner, manifest_writer
from icetide_local.stepfunctions import TableRunHarness

TABLE = "dbo_orders"
PREVIOUS_WATERMARK = "2026-11-21 05:59:58"
NEW_WATERMARK = "2026-11-21 06:59:58"
FULL_LOAD_ROWS = 10
SNAPSHOT_ID = 123456789
SHARED_INSTANCE_ID = "icetide-shared"

FAST_SUBSTITUTIONS = {
    "PollSeconds": "0",
    "MaxPollWaitSeconds": "0",
    "MaxPolls": "5",
    "InstanceCheckSeconds": "0",
    "MaxInstanceChecks": "3",
}

# The interpreter's pauses (Wait states, Retrier intervals, Glue .sync checks) last this share of their
# declared seconds (TableRunHarness's time_scale); the history keeps the declared seconds.
TIME_SCALE = 0.01
# A run whose DMS task never finishes polls it without end, five real seconds apart at TIME_SCALE:
# once it polls (wait_until_polling) it is in a Wait state whenever a test looks or stops it (moto's
# interpreter can record a broken history event for an execution stopped during a Lambda task).
# StopExecution ends a Wait at once.
_POLL_SECONDS = str(round(5 / TIME_SCALE))
POLLING_WITHOUT_END = {
    "PollSeconds": _POLL_SECONDS,
    "MaxPollWaitSeconds": _POLL_SECONDS,
    "MaxPolls": "100000",
}

StackFactory = Callable[..., TableRunHarness]
"""The ``make_stack`` fixture: keyword arguments go to TableRunHarness."""


def orders_stack(substitutions: dict[str, str] | None = None, **options: Any) -> TableRunHarness:
    """A local stack (not yet entered) whose stand-ins replicate and merge dbo_orders' next run, with
    FAST_SUBSTITUTIONS and TIME_SCALE; keyword arguments go to TableRunHarness."""
    options.setdefault("glue_runner", orders_manifest())
    options.setdefault("dms", DmsLifecycle(mover=orders_replication))
    options.setdefault("time_scale", TIME_SCALE)
    return TableRunHarness(substitutions={**FAST_SUBSTITUTIONS, **(substitutions or {})}, **options)


def orders_item(**attributes: Any) -> dict[str, Any]:
    """The control item of dbo_orders, as a user writes it, plus the state of its previous run."""
    return {
        "targetTableName": TABLE,
        "activeflag": "Y",
        "sourceSchema": "dbo",
        "sourceTable": "orders",
        "filtercolumn": "updated_at",
        "filteroperator": "gte",
        "startvalue": "2026-01-01 00:00:00",
        "primaryKeys": "order_id",
        "watermark": PREVIOUS_WATERMARK,
        **attributes,
    }


def orders_manifest() -> JobRunner:
    """The Glue stand-in's run: the merge of this run's 10 rows."""
    return manifest_writer(
        rowsRead=FULL_LOAD_ROWS,
        rowsInserted=4,
        rowsUpdated=5,
        rowsDeleted=1,
        newWatermark=NEW_WATERMARK,
        snapshotId=SNAPSHOT_ID,
    )


def orders_replication(run: ReplicationTaskRun) -> list[TableStatistics]:
    """The DMS stand-in's data movement: it unloads 10 rows of dbo.orders."""
    return [TableStatistics(schema="dbo", table="orders", full_load_rows=FULL_LOAD_ROWS)]


def wait_until_polling(stack: TableRunHarness, execution_arn: str, timeout_seconds: float = 60) -> None:
    """Wait until the run has started its DMS task and waits for it (reads the execution's history)."""
    stepfunctions = stack.client("stepfunctions")
    deadline = time.monotonic() + timeout_seconds
    while time.monotonic() < deadline:
        events = stepfunctions.get_execution_history(executionArn=execution_arn)["events"]
        entered = {
            event["stateEnteredEventDetails"]["name"] for event in events if "StateEntered" in event["type"]
        }
        if "Wait for replication task" in entered:
            return
        time.sleep(0.05)
    raise AssertionError(f"{execution_arn} never reached the DMS poll loop")


def create_shared_instance(stack: TableRunHarness) -> str:
    """A long-lived replication instance, available, as a user who reuses one would have; its ARN."""
    dms = stack.client("dms")
    arn = dms.create_replication_instance(
        ReplicationInstanceIdentifier=SHARED_INSTANCE_ID, ReplicationInstanceClass="dms.t3.medium"
    )["ReplicationInstance"]["ReplicationInstanceArn"]
    for _ in range(10):
        described = dms.describe_replication_instances(
            Filters=[{"Name": "replication-instance-arn", "Values": [arn]}]
        )["ReplicationInstances"][0]
        if described["ReplicationInstanceStatus"] == "available":
            return str(arn)
    raise AssertionError(f"the shared instance {arn} never became available")
