"""ensure_continuous_task, select_bronze_files and turning a continuous table off, in moto.

moto keeps a new task "creating" (the tests mark it ready, as DMS does once it is created), starts
and stops tasks at once, and lists S3 keys in S3's order, which is not DMS's.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

import boto3
import pytest
from moto.dms.models import DatabaseMigrationServiceBackend, dms_backends

import handlers.ensure_continuous_task
import handlers.select_bronze_files
import handlers.start_workflow
from bronze_parquet import dms_parquet
from icetide.adapters import dms as dms_adapter
from icetide.dms.identifiers import continuous_resources
from icetide.errors import ContinuousFolderInUse, DmsResourceNotOurs, DmsResourceNotReady
from icetide.run.bronze_selection import BronzeFolderInvalid
from icetide.run.change_count import BronzeChangesNotCounted
from icetide.run.change_count import task_start as task_start_of
from icetide_contracts.bronze_files import BronzeFiles

# "icetide-" + the readable "<table>-continuous" + 16 hex of sha256 over (stack, table, "<table>-continuous").
TASK_ID_PREFIX = "icetide-dbo-orders-continuous-"
# The end of the ARN of what a run creates: DMS_ARN_NAME_PREFIX (conftest.py), "-", 15 hex digits.
OWN_ARN = re.compile(r"arn:aws:dms:eu-west-1:123456789012:(task|endpoint):icetide51af3dc0-[0-9a-f]{15}")


def _backend() -> DatabaseMigrationServiceBackend:
    return dms_backends["123456789012"]["eu-west-1"]


def _tasks() -> list[dict[str, Any]]:
    tasks: list[dict[str, Any]] = boto3.client("dms").describe_replication_tasks()["ReplicationTasks"]  # type: ignore[assignment]
    return tasks


def _shared_instance() -> str:
    return str(
        boto3.client("dms").create_replication_instance(
            ReplicationInstanceIdentifier="icetide-shared", ReplicationInstanceClass="dms.r5.large"
        )["ReplicationInstance"]["ReplicationInstanceArn"]
    )


@pytest.fixture
def ensure_event(aws, source_endpoint, control_items, load_event) -> dict[str, Any]:
    event = load_event("ensure_continuous_task")
    shared = _shared_instance()
    event["plan"]["replicationInstanceArn"] = shared
    event["instance"] = {"replicationInstanceArn": shared, "created": False, "status": "available"}
    event["plan"]["fileCheckpoint"] = None  # the table's first run: nothing merged yet
    bucket = event["plan"]["bronzeUri"].removeprefix("s3://").split("/")[0]
    boto3.client("s3").create_bucket(
        Bucket=bucket, CreateBucketConfiguration={"LocationConstraint": "eu-west-1"}
    )
    control_items.orders(lockHolder=event["runId"], captureMode="cdc", cdcTask="continuous")
    return event


def test_the_first_run_creates_the_task_then_starts_it_and_later_runs_leave_it(ensure_event, lambda_context):
    with pytest.raises(DmsResourceNotReady, match="is creating"):
        handlers.ensure_continuous_task.handler(ensure_event, lambda_context)
    (task,) = _tasks()
    _backend().replication_tasks[task["ReplicationTaskArn"]].ready()

    started = handlers.ensure_continuous_task.handler(ensure_event, lambda_context)
    again = handlers.ensure_continuous_task.handler(ensure_event, lambda_context)

    assert (started["action"], started["longLived"], started["resumed"]) == ("start", True, False)
    assert (again["action"], again["resumed"]) == ("none", False)
    assert started["replicationTaskArn"] == again["replicationTaskArn"] == task["ReplicationTaskArn"]
    (task,) = _tasks()
    assert task["ReplicationTaskIdentifier"].startswith(TASK_ID_PREFIX)
    assert (task["Status"], task["MigrationType"]) == ("running", "full-load-and-cdc")
    tags = boto3.client("dms").list_tags_for_resource(ResourceArn=task["ReplicationTaskArn"])["TagList"]
    assert {tag["Key"]: tag["Value"] for tag in tags} == {
        "icetide:stack": "icetide",
        "icetide:table": "dbo_orders",
        "icetide:run-id": "dbo_orders-continuous",
        "icetide:long-lived": "true",
    }
    (endpoint,) = [
        e for e in boto3.client("dms").describe_endpoints()["Endpoints"] if e["EngineName"] == "s3"
    ]
    assert endpoint["S3Settings"]["BucketFolder"] == "bronze/_continuous/dbo_orders"
    assert endpoint["S3Settings"]["CdcMaxBatchInterval"] == 60
    # Their ARNs end with the ResourceIdentifier this stack chose: the only ones it may tag.
    assert OWN_ARN.fullmatch(task["ReplicationTaskArn"]) and OWN_ARN.fullmatch(endpoint["EndpointArn"])
    assert task["TargetEndpointArn"] == endpoint["EndpointArn"]


def test_a_stopped_task_is_resumed_and_the_resume_recorded(
    ensure_event, lambda_context, control_items, monkeypatch
):
    with pytest.raises(DmsResourceNotReady):
        handlers.ensure_continuous_task.handler(ensure_event, lambda_context)
    (task,) = _tasks()
    _backend().replication_tasks[task["ReplicationTaskArn"]].ready()
    handlers.ensure_continuous_task.handler(ensure_event, lambda_context)
    boto3.client("dms").stop_replication_task(ReplicationTaskArn=task["ReplicationTaskArn"])
    (stopped,) = _tasks()
    # moto has no DescribeTableStatistics: the stopped task's line, as DMS would answer.
    monkeypatch.setattr(
        dms_adapter,
        "table_statistics",
        lambda arn: [{"SchemaName": "dbo", "TableName": "orders", "Inserts": 5, "Updates": 2, "Deletes": 1}],
    )

    resumed = handlers.ensure_continuous_task.handler(ensure_event, lambda_context)

    assert (resumed["action"], resumed["resumed"]) == ("resume", True)
    assert resumed["resumedFrom"].startswith("was stopped")
    assert [described["Status"] for described in _tasks()] == ["running"]
    record = control_items.get("dbo_orders")["lastTaskResume"]
    assert (record["runId"], record["was"]) == (ensure_event["runId"], resumed["resumedFrom"])
    # The start that ended, with what it had counted for the table, is carried by the selection.
    assert resumed["closedStart"]["counted"] == 8 and record["closedStart"]["counted"] == 8
    assert resumed["closedStart"]["taskStart"] == task_start_of(stopped) != "not reported"


def test_a_task_under_the_tables_name_without_our_tags_is_refused(ensure_event, lambda_context):
    dms = boto3.client("dms")
    resources = continuous_resources("icetide", "dbo_orders")
    endpoint = dms.create_endpoint(
        EndpointIdentifier="someone-elses", EndpointType="target", EngineName="s3"
    )["Endpoint"]["EndpointArn"]
    dms.create_replication_task(
        ReplicationTaskIdentifier=resources.task_identifier,
        SourceEndpointArn=endpoint,
        TargetEndpointArn=endpoint,
        ReplicationInstanceArn=ensure_event["instance"]["replicationInstanceArn"],
        MigrationType="cdc",
        TableMappings=json.dumps({"rules": []}),
        Tags=[{"Key": "icetide:stack", "Value": "another-stack"}],
    )

    with pytest.raises(DmsResourceNotOurs, match="lacks this run's tags"):
        handlers.ensure_continuous_task.handler(ensure_event, lambda_context)
    assert [task["Status"] for task in _tasks()] == ["creating"]  # left alone
    targets = [
        e["EndpointIdentifier"]
        for e in dms.describe_endpoints()["Endpoints"]
        if e["EndpointType"].lower() == "target"
    ]
    assert targets == ["someone-elses"]


# --- select_bronze_files -----------------------------------------------------------------------


@dataclass
class Counters:
    """The long-lived task as DMS describes it to the selection: its latest start and the changes it
    counted for dbo.orders under it (the sample plan's count was taken under the same start)."""

    start: datetime = datetime(2026, 11, 20, 7, 0, 4, tzinfo=UTC)
    changes: int = 42


@pytest.fixture
def counters(monkeypatch: pytest.MonkeyPatch) -> Counters:
    task = Counters()
    monkeypatch.setattr(
        dms_adapter, "describe_task_by_arn", lambda arn: {"ReplicationTaskStats": {"StartDate": task.start}}
    )
    monkeypatch.setattr(
        dms_adapter,
        "table_statistics",
        lambda arn: [{"SchemaName": "dbo", "TableName": "orders", "Inserts": task.changes, "Updates": 0}],
    )
    return task


@pytest.fixture
def select_event(aws, load_event, counters) -> dict[str, Any]:
    event = load_event("select_bronze_files")
    bucket = event["plan"]["bronzeUri"].removeprefix("s3://").split("/")[0]
    boto3.client("s3").create_bucket(
        Bucket=bucket, CreateBucketConfiguration={"LocationConstraint": "eu-west-1"}
    )
    return event


def _deliver(event: dict[str, Any], *names: str, rows: int = 1) -> None:
    bucket, _, folder = event["plan"]["bronzeUri"].removeprefix("s3://").partition("/")
    for name in names:
        body = dms_parquet(rows) if name.endswith(".parquet") else b"x"
        boto3.client("s3").put_object(Bucket=bucket, Key=f"{folder}dbo/orders/{name}", Body=body)


def _size(event: dict[str, Any], name: str) -> int:
    bucket, _, folder = event["plan"]["bronzeUri"].removeprefix("s3://").partition("/")
    return int(
        boto3.client("s3").head_object(Bucket=bucket, Key=f"{folder}dbo/orders/{name}")["ContentLength"]
    )


def _written(event: dict[str, Any]) -> BronzeFiles:
    bucket, _, key = event["plan"]["bronzeFilesUri"].removeprefix("s3://").partition("/")
    return BronzeFiles.from_text(boto3.client("s3").get_object(Bucket=bucket, Key=key)["Body"].read())


def test_the_files_after_the_checkpoint_are_selected_in_dms_order_and_written(select_event, lambda_context):
    select_event["plan"]["fileCheckpoint"] = "dbo/orders/20261121-065958123.parquet"
    select_event["plan"]["maxFilesPerRun"] = 2
    _deliver(
        select_event,
        "20261121-065958123.parquet",
        "20261121-080000000.parquet",
        "20261121-070000000.parquet",
        "20261121-090000000.parquet",
        "LOAD00000001.parquet",
    )

    result = handlers.select_bronze_files.handler(select_event, lambda_context)

    assert result == {
        "fileCount": 2,
        "totalBytes": _size(select_event, "20261121-070000000.parquet") * 2,
        "firstFile": "dbo/orders/20261121-070000000.parquet",
        "lastFile": "dbo/orders/20261121-080000000.parquet",
        "bronzeFilesUri": select_event["plan"]["bronzeFilesUri"],
        "changeRows": 2,
        # The sample plan's count: 42 counted under the task's start, 40 merged before.
        "maxChangeRows": "2",
    }
    written = _written(select_event)
    assert (written.run_id, written.bronze_uri) == (select_event["runId"], select_event["plan"]["bronzeUri"])
    assert written.files == ["dbo/orders/20261121-070000000.parquet", "dbo/orders/20261121-080000000.parquet"]


def test_no_new_file_writes_an_empty_selection(select_event, lambda_context):
    select_event["plan"]["fileCheckpoint"] = "dbo/orders/20261121-065958123.parquet"
    _deliver(select_event, "20261121-065958123.parquet")

    result = handlers.select_bronze_files.handler(select_event, lambda_context)

    assert (result["fileCount"], result["lastFile"]) == (0, None)
    assert _written(select_event).files == []


def test_a_stray_file_in_the_folder_fails_the_selection(select_event, lambda_context):
    _deliver(select_event, "LOAD00000001.csv")

    with pytest.raises(BronzeFolderInvalid, match=r"LOAD00000001\.csv"):
        handlers.select_bronze_files.handler(select_event, lambda_context)


def test_files_holding_more_changes_than_dms_counted_are_refused_naming_them(
    select_event, lambda_context, counters
):
    _deliver(select_event, "20261121-070000000.parquet", rows=1)
    _deliver(select_event, "20261121-071500000.parquet", rows=2)  # one row more than the 42 - 40 left

    with pytest.raises(BronzeChangesNotCounted) as refused:
        handlers.select_bronze_files.handler(select_event, lambda_context)

    message = str(refused.value)
    assert "dbo_orders" in message and "hold 3 row(s)" in message and "at most 2 change(s)" in message
    assert "dbo/orders/20261121-071500000.parquet (2 rows)" in message
    assert not _selection_written(select_event)


def test_after_a_resume_the_counts_of_the_start_that_ended_are_carried(
    select_event, lambda_context, counters
):
    # The run resumed the task: its start had counted 45 when it stopped, the new one restarted at 0.
    select_event["task"] |= {
        "action": "resume",
        "closedStart": {"taskStart": "2026-11-20T07:00:04+00:00", "counted": 45},
    }
    counters.start, counters.changes = datetime(2026, 11, 21, 6, 59, 0, tzinfo=UTC), 1
    _deliver(select_event, "20261121-070000000.parquet", rows=6)  # 45 - 40 before the stop, 1 after

    result = handlers.select_bronze_files.handler(select_event, lambda_context)

    assert (result["changeRows"], result["maxChangeRows"]) == (6, "6")
    count = _written(select_event).change_count
    assert count is not None
    assert (count.task_start, count.counted, count.carried, count.merged) == (
        "2026-11-21T06:59:00+00:00",
        1,
        45,
        46,
    )


def _selection_written(event: dict[str, Any]) -> bool:
    bucket, _, key = event["plan"]["bronzeFilesUri"].removeprefix("s3://").partition("/")
    return bool(boto3.client("s3").list_objects_v2(Bucket=bucket, Prefix=key).get("KeyCount"))


# --- turning a continuous table off ------------------------------------------------------------


def test_an_inactive_continuous_tables_task_is_stopped_then_deleted_with_its_endpoint(
    ensure_event, lambda_context, control_items, state_machine, load_event
):
    with pytest.raises(DmsResourceNotReady):
        handlers.ensure_continuous_task.handler(ensure_event, lambda_context)
    (task,) = _tasks()
    _backend().replication_tasks[task["ReplicationTaskArn"]].ready()
    handlers.ensure_continuous_task.handler(ensure_event, lambda_context)
    control_items.orders(
        activeflag="N",
        captureMode="cdc",
        cdcTask="continuous",
        replicationInstanceArn=ensure_event["instance"]["replicationInstanceArn"],
        filtercolumn=None,
        filteroperator=None,
        startvalue=None,
        lookback=None,
    )
    event = load_event("start_workflow")

    steps = [handlers.start_workflow.handler(event, lambda_context)["retired"] for _ in range(4)]

    assert steps == [
        {"dbo_orders": "stopping"},
        {"dbo_orders": "task-deleted"},
        {"dbo_orders": "endpoint-deleted"},
        {"dbo_orders": "retired"},
    ]
    assert _tasks() == []
    assert [e for e in boto3.client("dms").describe_endpoints()["Endpoints"] if e["EngineName"] == "s3"] == []
    instances = boto3.client("dms").describe_replication_instances()["ReplicationInstances"]
    assert [i["ReplicationInstanceArn"] for i in instances] == [
        ensure_event["instance"]["replicationInstanceArn"]
    ]


@pytest.mark.parametrize("leftover", ["checkpoint", "file"])
def test_a_new_task_is_refused_while_an_earlier_tasks_checkpoint_or_files_remain(
    ensure_event, lambda_context, leftover
):
    plan = ensure_event["plan"]
    if leftover == "checkpoint":
        plan["fileCheckpoint"] = "dbo/orders/20261121-065958123.parquet"
    else:
        plan["fileCheckpoint"] = None
        bucket, _, folder = plan["bronzeUri"].removeprefix("s3://").partition("/")
        boto3.client("s3").put_object(
            Bucket=bucket, Key=f"{folder}dbo/orders/LOAD00000001.parquet", Body=b"x"
        )

    with pytest.raises(ContinuousFolderInUse, match="remove cdcFileCheckpoint"):
        handlers.ensure_continuous_task.handler(ensure_event, lambda_context)
    assert _tasks() == []


def test_a_task_writing_to_another_folder_than_the_runs_read_is_refused(ensure_event, lambda_context):
    with pytest.raises(DmsResourceNotReady):
        handlers.ensure_continuous_task.handler(ensure_event, lambda_context)
    (task,) = _tasks()
    _backend().replication_tasks[task["ReplicationTaskArn"]].ready()
    handlers.ensure_continuous_task.handler(ensure_event, lambda_context)
    moved = ensure_event["plan"]["bronzeUri"].replace("/_continuous/", "/_continuous/erp/")
    ensure_event["plan"]["bronzeUri"] = moved  # the item's outputS3Prefix changed

    with pytest.raises(
        ContinuousFolderInUse, match=r"writes to s3://.*/_continuous/dbo_orders/, but its runs read"
    ):
        handlers.ensure_continuous_task.handler(ensure_event, lambda_context)


def test_the_schedule_does_not_start_a_continuous_table_a_live_run_holds(
    control_items, state_machine, load_event, lambda_context, executions
):
    holder = "dbo_orders-20261121T0655Z"
    now = datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    control_items.orders(
        captureMode="cdc",
        cdcTask="continuous",
        replicationInstanceArn="arn:aws:dms:eu-west-1:123456789012:rep:shared",
        filtercolumn=None,
        filteroperator=None,
        startvalue=None,
        lookback=None,
        lockHolder=holder,
        lockTime=now,
    )

    result = handlers.start_workflow.handler(load_event("start_workflow"), lambda_context)

    assert (result["started"], result["locked"]) == ([], {"dbo_orders": holder})
    assert executions() == {}
