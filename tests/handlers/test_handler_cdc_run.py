"""The handlers of a cdc (and a reconciling delta) run, in moto: the task each run creates and how it
is started, and the checkpoint that only the final conditional write commits (issue 11).

Run 1 of a cdc table has no checkpoint: a full-load-and-cdc task stopping at its slot's start. Run
2 starts a cdc task at the checkpoint run 1 committed. Expected values are literals from the DMS
API reference (MigrationType, CdcStartPosition, CdcStopPosition "server_time:...").
"""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Any

import boto3
import pytest
from botocore.stub import Stubber
from moto.dms.models import dms_backends

import handlers.acquire_lock
import handlers.commit_watermark
import handlers.create_replication_task
import handlers.delete_dms_resources
import handlers.ensure_replication_instance
import handlers.start_replication_task
from icetide.adapters.clients import client
from icetide.errors import WatermarkConflict

RUN_ID = "dbo_orders-20261121T0700Z"
RUN_RESOURCE_ID = "icetide-dbo-orders-20261121t0700z-0ffeac5a4883539d"
CHECKPOINT_1 = "checkpoint:V1#1#0/16B2F58:1#0#0#*#0#0"
CHECKPOINT_2 = "checkpoint:V1#2#0/16B9A10:1#0#0#*#0#0"
# Scheduled at the slot start; the execution started a second later.
EXECUTION = {
    "input": {"targetTableName": "dbo_orders", "runId": RUN_ID, "scheduledTime": "2026-11-21T07:00:00Z"},
    "startTime": "2026-11-21T07:00:01.500Z",
}
CDC_ITEM = {"captureMode": "cdc", "lookback": None, "cdcMaxBatchInterval": 15, "cdcMinFileSize": 2048}
# A table whose first load committed (lastRunStats): its next run captures from the checkpoint.
LOADED_CDC_ITEM = {**CDC_ITEM, "lastRunStats": {"rowsRead": 3}}


def _lock(control_items, load_event, lambda_context, **item) -> dict[str, Any]:
    control_items.orders(**item)
    event = {**load_event("acquire_lock"), "execution": EXECUTION}
    plan: dict[str, Any] = handlers.acquire_lock.handler(event, lambda_context)["plan"]
    return plan


def _create(load_event, lambda_context, plan: dict[str, Any]) -> dict[str, Any]:
    instance = handlers.ensure_replication_instance.handler(
        {**load_event("ensure_replication_instance"), "plan": plan}, lambda_context
    )
    event = {**load_event("create_replication_task"), "plan": plan, "instance": instance}
    created: dict[str, Any] = handlers.create_replication_task.handler(event, lambda_context)
    return created


def _tasks() -> dict[str, Any]:
    tasks = boto3.client("dms").describe_replication_tasks()["ReplicationTasks"]
    return {task["ReplicationTaskIdentifier"]: task for task in tasks}


def _endpoint(arn: str) -> Any:
    return boto3.client("dms").describe_endpoints(Filters=[{"Name": "endpoint-arn", "Values": [arn]}])[
        "Endpoints"
    ][0]


def test_the_first_run_creates_a_full_load_and_cdc_task_with_the_change_sequence(
    control_items, source_endpoint, load_event, lambda_context
):
    plan = _lock(control_items, load_event, lambda_context, **CDC_ITEM)

    created = _create(load_event, lambda_context, plan)

    task = _tasks()[RUN_RESOURCE_ID]
    assert task["MigrationType"] == "full-load-and-cdc"
    rules = json.loads(task["TableMappings"])["rules"]
    assert [rule["rule-action"] for rule in rules] == ["include", "add-column"]
    assert (rules[1]["value"], rules[1]["expression"]) == ("AR_H_CHANGE_SEQ", "$AR_H_CHANGE_SEQ")
    settings = _endpoint(created["targetEndpointArn"])["S3Settings"]
    assert (settings["CdcMaxBatchInterval"], settings["CdcMinFileSize"]) == (15, 2048)
    assert (plan["cdcStartPosition"], "cdcStopPosition" in plan) == (None, False)
    assert (created["keyTaskArn"], created["keyEndpointArn"]) == (None, None)


def test_a_later_run_creates_a_cdc_task(control_items, source_endpoint, load_event, lambda_context):
    plan = _lock(control_items, load_event, lambda_context, **LOADED_CDC_ITEM, cdcCheckpoint=CHECKPOINT_1)

    _create(load_event, lambda_context, plan)

    assert _tasks()[RUN_RESOURCE_ID]["MigrationType"] == "cdc"
    assert plan["cdcStartPosition"] == CHECKPOINT_1


def _start_stubbed(event: dict[str, Any], lambda_context, expected_starts: list[dict[str, Any]]) -> None:
    """Run start_replication_task against a stub that expects exactly ``expected_starts``."""
    with Stubber(client("dms")) as stubbed:
        for start in expected_starts:
            arn = start["ReplicationTaskArn"]
            stubbed.add_response(
                "describe_replication_tasks",
                {"ReplicationTasks": [{"ReplicationTaskArn": arn, "Status": "ready"}]},
                {"Filters": [{"Name": "replication-task-arn", "Values": [arn]}]},
            )
            stubbed.add_response(
                "start_replication_task",
                {"ReplicationTask": {"ReplicationTaskArn": arn, "Status": "starting"}},
                start,
            )
        handlers.start_replication_task.handler(event, lambda_context)
        stubbed.assert_no_pending_responses()


TASK_ARN = f"arn:aws:dms:eu-west-1:123456789012:task:{RUN_RESOURCE_ID}"


# Started at 07:04:12.3; CDC_STOP_AFTER_SECONDS (300 unless set) later, rounded up to a whole second.
STARTED_AT = datetime(2026, 11, 21, 7, 4, 12, 300000, tzinfo=UTC)
STOP = "server_time:2026-11-21T07:09:13"


@pytest.mark.parametrize(
    ("migration", "expected_positions"),
    [
        ("full-load-and-cdc", {"CdcStopPosition": STOP}),
        ("cdc", {"CdcStartPosition": CHECKPOINT_1, "CdcStopPosition": STOP}),
    ],
)
def test_a_cdc_task_starts_at_the_committed_checkpoint_and_stops_a_while_after_its_start(
    aws, load_event, lambda_context, monkeypatch, migration, expected_positions
):
    # A stop position already past when the task starts might stop it at once, having read nothing
    # (a server time is the replication instance's clock): it is set when the task starts.
    monkeypatch.setattr(handlers.start_replication_task, "utc_now", lambda: STARTED_AT)
    event = load_event("start_replication_task")
    event["plan"]["migrationType"] = migration
    event["plan"]["cdcStartPosition"] = CHECKPOINT_1 if migration == "cdc" else None
    event["task"] = {"replicationTaskArn": TASK_ARN}

    _start_stubbed(
        event,
        lambda_context,
        [
            {
                "ReplicationTaskArn": TASK_ARN,
                "StartReplicationTaskType": "start-replication",
                **expected_positions,
            }
        ],
    )


RECONCILING = {"reconcileEveryHours": 24, "lastRunStats": {"rowsRead": 3}}


def test_a_reconcile_run_creates_starts_and_deletes_a_key_extraction_too(
    control_items, source_endpoint, load_event, lambda_context
):
    plan = _lock(control_items, load_event, lambda_context, **RECONCILING)

    created = _create(load_event, lambda_context, plan)

    tasks = _tasks()
    key_task = tasks[f"{RUN_RESOURCE_ID}-keys"]
    assert (tasks[RUN_RESOURCE_ID]["MigrationType"], key_task["MigrationType"]) == ("full-load", "full-load")
    assert json.loads(key_task["TableMappings"]) == json.loads(plan["reconcileTableMapping"])
    key_settings = _endpoint(created["keyEndpointArn"])["S3Settings"]
    assert (key_settings["BucketName"], key_settings["BucketFolder"]) == (
        "icetide-raw-123456789012-eu-west-1",
        f"bronze/_reconcile/dbo_orders/{RUN_ID}",
    )
    assert "CdcMaxBatchInterval" not in key_settings

    start_event = {**load_event("start_replication_task"), "plan": plan, "task": created}
    full_load = {"StartReplicationTaskType": "start-replication"}
    _start_stubbed(
        start_event,
        lambda_context,
        [
            {"ReplicationTaskArn": created["replicationTaskArn"], **full_load},
            {"ReplicationTaskArn": created["keyTaskArn"], **full_load},
        ],
    )

    # After a failure that lost the state's output, the names find all four resources.
    for task in tasks.values():
        dms_backends["123456789012"]["eu-west-1"].replication_tasks[
            task["ReplicationTaskArn"]
        ].status = "stopped"
    cleanup = handlers.delete_dms_resources.handler(
        {"targetTableName": "dbo_orders", "runId": RUN_ID, "plan": plan}, lambda_context
    )
    assert set(cleanup["deleted"]) >= {
        created["replicationTaskArn"],
        created["targetEndpointArn"],
        created["keyTaskArn"],
        created["keyEndpointArn"],
    }


@pytest.fixture
def run_manifest(raw_bucket):
    manifest = {
        "runId": RUN_ID,
        "targetTable": "icetide_silver.dbo_orders",
        "rowsRead": 4,
        "rowsInserted": 1,
        "rowsUpdated": 1,
        "rowsDeleted": 2,
        "rowsUnchanged": 0,
        "watermarkColumn": "updated_at",
        "newWatermark": "2026-11-21 06:59:58",
        "snapshotId": 42,
        "alreadyCommitted": False,
        "schemaChanges": [],
    }
    boto3.client("s3").put_object(
        Bucket=raw_bucket, Key=f"manifests/dbo_orders/{RUN_ID}.json", Body=json.dumps(manifest).encode()
    )


def _commit(load_event, lambda_context, plan: dict[str, Any], checkpoint: str | None) -> dict[str, Any]:
    event = {
        **load_event("commit_watermark"),
        "plan": plan,
        "statistics": {"fullLoadRows": 0, "changeRows": 4, "recoveryCheckpoint": checkpoint},
    }
    result: dict[str, Any] = handlers.commit_watermark.handler(event, lambda_context)
    return result


def test_the_checkpoint_is_committed_with_the_watermark(
    control_items, run_manifest, load_event, lambda_context
):
    plan = _lock(control_items, load_event, lambda_context, **CDC_ITEM, cdcCheckpoint=CHECKPOINT_1)

    result = _commit(load_event, lambda_context, plan, CHECKPOINT_2)

    item = control_items.get("dbo_orders")
    assert (item["cdcCheckpoint"], item["watermark"], item["lastRunStatus"]) == (
        CHECKPOINT_2,
        "2026-11-21 06:59:58",
        "SUCCEEDED",
    )
    assert "lockHolder" not in item
    assert result["cdcCheckpoint"] == CHECKPOINT_2


def test_a_checkpoint_moved_by_another_writer_is_a_conflict_and_nothing_is_stored(
    control_items, run_manifest, load_event, lambda_context
):
    plan = _lock(control_items, load_event, lambda_context, **CDC_ITEM, cdcCheckpoint=CHECKPOINT_1)
    moved = {**control_items.get("dbo_orders"), "cdcCheckpoint": "checkpoint:V1#9#0/FFFFFFF:1#0#0#*#0#0"}
    control_items.put(moved)

    with pytest.raises(WatermarkConflict, match="cdc checkpoint 'checkpoint:V1#9#0/FFFFFFF"):
        _commit(load_event, lambda_context, plan, CHECKPOINT_2)

    assert control_items.get("dbo_orders") == moved


def test_a_task_that_reports_no_checkpoint_keeps_the_stored_one(
    control_items, run_manifest, load_event, lambda_context
):
    plan = _lock(control_items, load_event, lambda_context, **CDC_ITEM, cdcCheckpoint=CHECKPOINT_1)

    _commit(load_event, lambda_context, plan, None)

    assert control_items.get("dbo_orders")["cdcCheckpoint"] == CHECKPOINT_1


def test_the_first_cdc_run_commits_its_first_checkpoint(
    control_items, run_manifest, load_event, lambda_context
):
    plan = _lock(control_items, load_event, lambda_context, **CDC_ITEM)

    _commit(load_event, lambda_context, plan, CHECKPOINT_1)

    assert control_items.get("dbo_orders")["cdcCheckpoint"] == CHECKPOINT_1


def test_an_empty_checkpoint_reads_as_none_and_the_first_commit_writes_one(
    control_items, run_manifest, load_event, lambda_context
):
    plan = _lock(control_items, load_event, lambda_context, **CDC_ITEM, cdcCheckpoint="")
    assert plan["migrationType"] == "full-load-and-cdc"

    _commit(load_event, lambda_context, plan, CHECKPOINT_1)

    item = control_items.get("dbo_orders")
    assert (item["cdcCheckpoint"], item["lastRunStats"]["changeRows"]) == (CHECKPOINT_1, 4)


def test_a_reconcile_run_records_its_slot(control_items, run_manifest, load_event, lambda_context):
    plan = _lock(control_items, load_event, lambda_context, **RECONCILING)

    _commit(load_event, lambda_context, plan, None)

    item = control_items.get("dbo_orders")
    assert (item["lastReconcileTime"], "cdcCheckpoint" in item) == ("2026-11-21T07:00:00Z", False)
