"""The table the state-machine tests load, and what the stand-ins make of its run.

The table ``dbo_orders`` has run before (watermark PREVIOUS_WATERMARK). Its next run replicates
10 rows (the DMS stand-in reports them) and the Glue stand-in writes a manifest that merged 4
inserts, 5 updates and 1 delete up to NEW_WATERMARK. Waits are 0 s unless a test says otherwise.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from icetide_local.standins.dms.lifecycle import ReplicationTaskRun, TableStatistics
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

StackFactory = Callable[..., TableRunHarness]
"""The ``make_stack`` fixture: keyword arguments go to TableRunHarness."""


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
