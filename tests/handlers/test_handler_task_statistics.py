"""read_task_statistics: DMS's row counts, read with DescribeTableStatistics and never guessed.

The counts become the Glue job's ``--expected_rows`` (the rows of the full load, ``FullLoadRows``)
and ``--max_change_rows`` (the changes DMS counted, which bound the rows of its CDC files), so a run
must not go on without them: the
handler reads them from the DMS stand-in (which, unlike moto, answers DescribeTableStatistics), and
any error DMS answers fails the state instead of turning into "no statistics".
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import boto3
import pytest
from botocore.exceptions import ClientError
from botocore.stub import Stubber

import handlers.read_task_statistics
from icetide.adapters.clients import client
from icetide_local.standins.dms.lifecycle import (
    TABLE_COMPLETED,
    DmsLifecycle,
    ReplicationTaskRun,
    TableStatistics,
)

TASK_ARN = "arn:aws:dms:eu-west-1:123456789012:task:icetide-dbo-orders-20261121t0700z"


def _seven_orders_and_two_lines(run: ReplicationTaskRun) -> list[TableStatistics]:
    return [
        TableStatistics(schema="dbo", table="orders", full_load_rows=7),
        TableStatistics(schema="dbo", table="order_lines", full_load_rows=2),
    ]


@pytest.fixture
def finished_task(aws: None) -> Iterator[str]:
    """A full-load task of the DMS stand-in that ran to its end, reporting 7 + 2 rows."""
    dms = boto3.client("dms")
    with DmsLifecycle(mover=_seven_orders_and_two_lines, instance_describes_until_available=0).install():
        source = dms.create_endpoint(EndpointIdentifier="source", EndpointType="source", EngineName="sqlite")
        target = dms.create_endpoint(
            EndpointIdentifier="target",
            EndpointType="target",
            EngineName="s3",
            S3Settings={
                "BucketName": "raw",
                "BucketFolder": "bronze/dbo_orders/run",
                "DataFormat": "parquet",
            },
        )
        instance = dms.create_replication_instance(
            ReplicationInstanceIdentifier="instance", ReplicationInstanceClass="dms.t3.medium"
        )
        mapping = {
            "rules": [
                {
                    "rule-type": "selection",
                    "rule-id": "1",
                    "rule-name": "1",
                    "object-locator": {"schema-name": "dbo", "table-name": "orders"},
                    "rule-action": "include",
                }
            ]
        }
        arn = dms.create_replication_task(
            ReplicationTaskIdentifier="task",
            SourceEndpointArn=source["Endpoint"]["EndpointArn"],
            TargetEndpointArn=target["Endpoint"]["EndpointArn"],
            ReplicationInstanceArn=instance["ReplicationInstance"]["ReplicationInstanceArn"],
            MigrationType="full-load",
            TableMappings=json.dumps(mapping),
        )["ReplicationTask"]["ReplicationTaskArn"]
        by_arn: list[Any] = [{"Name": "replication-task-arn", "Values": [arn]}]
        dms.describe_replication_tasks(Filters=by_arn)  # creating -> ready
        dms.start_replication_task(ReplicationTaskArn=arn, StartReplicationTaskType="start-replication")
        for _ in range(3):  # starting -> running (the mover runs) -> stopped
            dms.describe_replication_tasks(Filters=by_arn)
        yield arn


def _event(load_event: Any, task_arn: str) -> dict[str, Any]:
    event: dict[str, Any] = load_event("read_task_statistics")
    event["task"] = {"replicationTaskArn": task_arn}
    return event


# What the task left below the plan's bronze folder: two files the Glue job reads, and objects it
# does not (hidden to Spark, or not parquet).
BRONZE_OBJECTS = (
    "dbo/orders/LOAD00000001.parquet",
    "dbo/orders/20261121-070000000.parquet",
    "dbo/orders/_SUCCESS",
    "dbo/orders/.LOAD00000002.parquet.crc",
    "_temporary/dbo/orders/LOAD00000003.parquet",
    "dbo/orders/notes.csv",
)


@pytest.fixture(autouse=True)
def bronze_folder(aws: None, load_event) -> None:
    """The sample plan's bronze folder, as the task left it."""
    bronze_uri = load_event("read_task_statistics")["plan"]["bronzeUri"]
    bucket, folder = bronze_uri.removeprefix("s3://").split("/", 1)
    s3 = boto3.client("s3")
    s3.create_bucket(Bucket=bucket, CreateBucketConfiguration={"LocationConstraint": "eu-west-1"})
    for key in BRONZE_OBJECTS:
        s3.put_object(Bucket=bucket, Key=folder + key, Body=b"...")
    another_run = folder.rstrip("/") + "-other-run/dbo/orders/LOAD00000001.parquet"
    s3.put_object(Bucket=bucket, Key=another_run, Body=b"")


def test_the_stand_ins_table_statistics_give_the_rows_the_job_must_read(
    finished_task, load_event, lambda_context
):
    result = handlers.read_task_statistics.handler(_event(load_event, finished_task), lambda_context)

    assert result == {
        "fullLoadRows": 9,
        "changeRows": 0,
        "expectedRows": "9",
        "maxChangeRows": "0",
        "bronzeFiles": "2",
        "recoveryCheckpoint": None,
        "tablesLoaded": 2,
        "tablesErrored": 0,
        "tables": [
            {
                "schema": "dbo",
                "table": "orders",
                "fullLoadRows": 7,
                "changeRows": 0,
                "state": TABLE_COMPLETED,
            },
            {
                "schema": "dbo",
                "table": "order_lines",
                "fullLoadRows": 2,
                "changeRows": 0,
                "state": TABLE_COMPLETED,
            },
        ],
        "reconcileExpectedRows": "",
        "reconcileStartedAt": "",
    }


def test_statistics_dms_refuses_fail_the_state_instead_of_going_on_uncounted(aws, load_event, lambda_context):
    # A call that cannot be answered (NotImplementedError) must not leave fullLoadRows null and the
    # run going on uncounted: whatever DMS answers instead of statistics is the state's error.
    task = {
        "ReplicationTaskArn": TASK_ARN,
        "Status": "stopped",
        "StopReason": "Stop Reason FULL_LOAD_ONLY_FINISHED",
    }
    with Stubber(client("dms")) as stubbed:
        stubbed.add_response(
            "describe_replication_tasks",
            {"ReplicationTasks": [task]},
            {"Filters": [{"Name": "replication-task-arn", "Values": [TASK_ARN]}]},
        )
        stubbed.add_client_error(
            "describe_table_statistics",
            service_error_code="AccessDeniedFault",
            service_message="not authorized to perform dms:DescribeTableStatistics",
            expected_params={"ReplicationTaskArn": TASK_ARN},
        )
        with pytest.raises(ClientError, match="AccessDeniedFault"):
            handlers.read_task_statistics.handler(_event(load_event, TASK_ARN), lambda_context)


def _stubbed_statistics(
    task: dict[str, Any], tables: list[dict[str, Any]], load_event, lambda_context
) -> Any:
    with Stubber(client("dms")) as stubbed:
        stubbed.add_response(
            "describe_replication_tasks",
            {"ReplicationTasks": [{"ReplicationTaskArn": TASK_ARN, "Status": "stopped", **task}]},
            {"Filters": [{"Name": "replication-task-arn", "Values": [TASK_ARN]}]},
        )
        stubbed.add_response(
            "describe_table_statistics",
            {"ReplicationTaskArn": TASK_ARN, "TableStatistics": tables},
            {"ReplicationTaskArn": TASK_ARN},
        )
        return handlers.read_task_statistics.handler(_event(load_event, TASK_ARN), lambda_context)


# A cdc task's statistics: 5 rows loaded; 4 inserts, 3 updates and 2 deletes "performed on a table",
# some of which a filter may have kept out of the files.
CDC_TABLES = [
    {"SchemaName": "dbo", "TableName": "orders", "FullLoadRows": 5, "Inserts": 4, "Updates": 3, "Deletes": 2},
]


def test_a_cdc_tasks_expected_rows_are_its_full_load_rows_and_its_changes_only_bound_the_cdc_rows(
    aws, load_event, lambda_context
):
    # Not 5 + 4 + 3 + 2 = 14 compared exactly with every bronze row: a filter that keeps a change
    # out of the files, which DMS still counts, would fail a healthy run.
    task = {"MigrationType": "full-load-and-cdc", "StopReason": "Stop Reason STOPPED_AT_SERVER_TIME"}

    result = _stubbed_statistics(task, CDC_TABLES, load_event, lambda_context)

    assert (result["fullLoadRows"], result["changeRows"]) == (5, 9)
    assert (result["expectedRows"], result["maxChangeRows"]) == ("5", "9")


def test_a_full_load_task_may_write_no_cdc_row_whatever_its_change_counters_say(
    aws, load_event, lambda_context
):
    # A full-load task captures no change: any file beside its LOAD files is stray.
    task = {"MigrationType": "full-load", "StopReason": "Stop Reason FULL_LOAD_ONLY_FINISHED"}

    result = _stubbed_statistics(task, CDC_TABLES, load_event, lambda_context)

    assert (result["expectedRows"], result["maxChangeRows"]) == ("5", "0")
