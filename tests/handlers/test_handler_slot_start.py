"""A cdc table on a PostgreSQL source endpoint that names a replication slot: every task that captures
changes is created and started with a valid CdcStartPosition, on the first run, later runs and reloads.

DMS API reference, PostgreSQLSettings.SlotName: DMS "verifies that the task was created with a valid
setting of CdcStartPosition. If the specified slot doesn't exist or the task doesn't have a valid
CdcStartPosition setting, DMS raises an error." The DMS stand-in enforces it (a task on a slot endpoint
created without one fails when it runs); the handlers run against it, so a task they create without a
position would fail here as in AWS.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import boto3
import pytest

import handlers.acquire_lock
import handlers.create_replication_task
import handlers.ensure_continuous_task
import handlers.ensure_replication_instance
import handlers.start_replication_task
from icetide.dms.start_position import SlotStartPositionMissing
from icetide.errors import DmsResourceNotReady
from icetide_local.standins.dms.lifecycle import FATAL_ERROR, DmsLifecycle

RUN_ID = "dbo_orders-20261121T0700Z"
EXECUTION = {
    "input": {"targetTableName": "dbo_orders", "runId": RUN_ID, "scheduledTime": "2026-11-21T07:00:00Z"},
    "startTime": "2026-11-21T07:00:01.500Z",
}
CDC_ITEM = {"captureMode": "cdc", "lookback": None}
LOADED = {"lastRunStats": {"rowsRead": 3}}
SLOT = "icetide_orders"
# The slot's confirmed_flush_lsn, noted when it was created (a native start point).
SLOT_START = "4AF/B00000D0"
# A RecoveryCheckpoint an earlier task on the slot reported (the stand-in's form of one).
CHECKPOINT = "checkpoint:V1#icetide#postgres#4AF/B00001F0"


@pytest.fixture
def dms(aws: None) -> Iterator[DmsLifecycle]:
    with DmsLifecycle(instance_describes_until_available=0).install() as lifecycle:
        yield lifecycle


def _source_endpoint(monkeypatch: pytest.MonkeyPatch, **postgres: Any) -> str:
    arn = str(
        boto3.client("dms").create_endpoint(
            EndpointIdentifier="icetide-source-postgres",
            EndpointType="source",
            EngineName="postgres",
            ServerName="orders-db.internal",
            Port=5432,
            DatabaseName="orders",
            **postgres,
        )["Endpoint"]["EndpointArn"]
    )
    monkeypatch.setenv("SOURCE_ENDPOINT_ARN", arn)
    return arn


@pytest.fixture
def slot_endpoint(dms: DmsLifecycle, monkeypatch: pytest.MonkeyPatch) -> str:
    return _source_endpoint(monkeypatch, PostgreSQLSettings={"SlotName": SLOT, "PluginName": "test-decoding"})


def _plan(control_items, load_event, lambda_context, **item: Any) -> dict[str, Any]:
    control_items.orders(**CDC_ITEM, **item)
    event = {**load_event("acquire_lock"), "execution": EXECUTION}
    plan: dict[str, Any] = handlers.acquire_lock.handler(event, lambda_context)["plan"]
    return plan


def _create_and_start(load_event, lambda_context, plan: dict[str, Any]) -> dict[str, Any]:
    """Create and start the run's task as the state machine does; the task as DMS describes it once
    it has started reading (the stand-in moves one step per describe)."""
    instance = handlers.ensure_replication_instance.handler(
        {**load_event("ensure_replication_instance"), "plan": plan}, lambda_context
    )
    created = handlers.create_replication_task.handler(
        {**load_event("create_replication_task"), "plan": plan, "instance": instance}, lambda_context
    )
    _describe(created["replicationTaskArn"])  # creating -> ready
    handlers.start_replication_task.handler(
        {**load_event("start_replication_task"), "plan": plan, "task": created}, lambda_context
    )
    _describe(created["replicationTaskArn"])  # starting -> running: the data moves
    return _describe(created["replicationTaskArn"])


def _describe(arn: str) -> dict[str, Any]:
    (task,) = boto3.client("dms").describe_replication_tasks(
        Filters=[{"Name": "replication-task-arn", "Values": [arn]}]
    )["ReplicationTasks"]
    return dict(task)


def test_a_first_run_without_a_start_point_is_refused_before_anything_is_created(
    control_items, slot_endpoint, load_event, lambda_context, dms
):
    plan = _plan(control_items, load_event, lambda_context)

    with pytest.raises(SlotStartPositionMissing, match=rf"slot '{SLOT}'.*cdcStartPoint.*confirmed_flush_lsn"):
        _create_and_start(load_event, lambda_context, plan)

    assert boto3.client("dms").describe_replication_tasks()["ReplicationTasks"] == []
    targets = [
        e for e in boto3.client("dms").describe_endpoints()["Endpoints"] if e["EndpointType"] == "TARGET"
    ]
    assert targets == []


@pytest.mark.parametrize(
    ("item", "migration", "position"),
    [
        ({"cdcStartPoint": SLOT_START}, "full-load-and-cdc", SLOT_START),  # first run, from the slot's start
        ({"cdcCheckpoint": CHECKPOINT, **LOADED}, "cdc", CHECKPOINT),  # a later run
        (  # a reload: a full load again, capturing from the stored checkpoint
            {
                "cdcCheckpoint": CHECKPOINT,
                **LOADED,
                "reloadRequested": {"requestedAt": "2026-11-21T06:30:00Z"},
            },
            "full-load-and-cdc",
            CHECKPOINT,
        ),
    ],
)
def test_every_task_on_a_slot_is_created_and_started_with_its_start_position(
    control_items, slot_endpoint, load_event, lambda_context, dms, item, migration, position
):
    plan = _plan(control_items, load_event, lambda_context, **item)

    task = _create_and_start(load_event, lambda_context, plan)

    assert (task["MigrationType"], task["CdcStartPosition"]) == (migration, position)
    assert task["Status"] == "running"  # reading; it stops at its stop position, minutes later
    (run,) = dms.started_runs
    assert (run.migration_type, run.cdc_start_position) == (migration, position)


def test_a_task_created_without_a_start_position_on_a_slot_fails_as_dms_says(
    control_items, slot_endpoint, load_event, lambda_context, dms
):
    # What the product did before: a first run's full-load-and-cdc task created without a position.
    instance = boto3.client("dms").create_replication_instance(
        ReplicationInstanceIdentifier="plain", ReplicationInstanceClass="dms.t3.medium"
    )["ReplicationInstance"]["ReplicationInstanceArn"]
    target = boto3.client("dms").create_endpoint(
        EndpointIdentifier="target", EndpointType="target", EngineName="s3", S3Settings={"BucketName": "raw"}
    )["Endpoint"]["EndpointArn"]
    arn = boto3.client("dms").create_replication_task(
        ReplicationTaskIdentifier="no-position",
        SourceEndpointArn=slot_endpoint,
        TargetEndpointArn=target,
        ReplicationInstanceArn=instance,
        MigrationType="full-load-and-cdc",
        TableMappings=_plan(control_items, load_event, lambda_context)["tableMapping"],
    )["ReplicationTask"]["ReplicationTaskArn"]
    _describe(arn)
    boto3.client("dms").start_replication_task(
        ReplicationTaskArn=arn, StartReplicationTaskType="start-replication"
    )
    _describe(arn)

    failed = _describe(arn)

    assert (failed["Status"], failed["StopReason"]) == ("failed", FATAL_ERROR)
    assert f"replication slot '{SLOT}'" in failed["LastFailureMessage"]
    assert "created with a valid CdcStartPosition" in failed["LastFailureMessage"]


def test_an_endpoint_without_a_slot_keeps_dms_own_start(
    control_items, load_event, lambda_context, dms, monkeypatch
):
    _source_endpoint(monkeypatch)  # PostgreSQL, no slot: DMS makes one of its own per task

    task = _create_and_start(load_event, lambda_context, _plan(control_items, load_event, lambda_context))

    assert (task["MigrationType"], task.get("CdcStartPosition")) == ("full-load-and-cdc", None)
    assert task["Status"] == "running"  # reading; it stops at its stop position, minutes later


def test_a_continuous_tables_task_on_a_slot_starts_from_the_stored_start_point(
    control_items, raw_bucket, slot_endpoint, load_event, lambda_context, dms
):
    instance = boto3.client("dms").create_replication_instance(
        ReplicationInstanceIdentifier="long-lived", ReplicationInstanceClass="dms.t3.medium"
    )["ReplicationInstance"]
    plan = _plan(
        control_items,
        load_event,
        lambda_context,
        cdcTask="continuous",
        replicationInstanceArn=instance["ReplicationInstanceArn"],
        cdcStartPoint=SLOT_START,
    )
    event = {
        **load_event("ensure_continuous_task"),
        "plan": plan,
        "instance": {"replicationInstanceArn": instance["ReplicationInstanceArn"], "created": False},
    }

    with pytest.raises(DmsResourceNotReady):  # created; DMS is still creating it
        handlers.ensure_continuous_task.handler(event, lambda_context)
    (created,) = boto3.client("dms").describe_replication_tasks()["ReplicationTasks"]  # -> ready
    handlers.ensure_continuous_task.handler(event, lambda_context)  # started
    _describe(created["ReplicationTaskArn"])  # starting -> running

    task = _describe(created["ReplicationTaskArn"])
    assert (task["Status"], task["CdcStartPosition"]) == ("running", SLOT_START)
    (run,) = dms.started_runs
    assert run.cdc_start_position == SLOT_START
