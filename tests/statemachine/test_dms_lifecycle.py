"""The DMS stand-in's task lifecycle, through boto3 against moto (no state machine involved)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import boto3
import pytest
from botocore.exceptions import ClientError
from moto import mock_aws

from icetide_local.standins.dms.lifecycle import (
    FATAL_ERROR,
    FULL_LOAD_FINISHED,
    STOPPED_BY_USER,
    TABLE_ERROR,
    DmsLifecycle,
    ReplicationTaskRun,
    TableStatistics,
)

REGION = "eu-west-1"
TABLE_MAPPINGS = {
    "rules": [
        {
            "rule-type": "selection",
            "rule-id": "1",
            "rule-name": "orders",
            "object-locator": {"schema-name": "dbo", "table-name": "orders"},
            "rule-action": "include",
        }
    ]
}
TASK_SETTINGS = {"TargetMetadata": {"ParallelLoadThreads": 0}}
S3_SETTINGS = {"BucketName": "raw", "BucketFolder": "bronze/dbo_orders/run-1", "DataFormat": "parquet"}


class Recorder:
    """A data mover that remembers what it was told and reports 7 rows of dbo.orders."""

    def __init__(self) -> None:
        self.runs: list[ReplicationTaskRun] = []

    def __call__(self, run: ReplicationTaskRun) -> list[TableStatistics]:
        self.runs.append(run)
        return [TableStatistics(schema="dbo", table="orders", full_load_rows=7)]


@pytest.fixture
def dms_client() -> Iterator[Any]:
    with mock_aws():
        yield boto3.client("dms", region_name=REGION)


def _create_task(
    dms: Any, migration_type: str = "full-load", mappings: str | None = None, settings: str | None = None
) -> str:
    source = dms.create_endpoint(EndpointIdentifier="source", EndpointType="source", EngineName="sqlite")
    target = dms.create_endpoint(
        EndpointIdentifier="target", EndpointType="target", EngineName="s3", S3Settings=S3_SETTINGS
    )
    instance = dms.create_replication_instance(
        ReplicationInstanceIdentifier="instance", ReplicationInstanceClass="dms.t3.medium"
    )
    return str(
        dms.create_replication_task(
            ReplicationTaskIdentifier="task",
            SourceEndpointArn=source["Endpoint"]["EndpointArn"],
            TargetEndpointArn=target["Endpoint"]["EndpointArn"],
            ReplicationInstanceArn=instance["ReplicationInstance"]["ReplicationInstanceArn"],
            MigrationType=migration_type,
            TableMappings=mappings if mappings is not None else json.dumps(TABLE_MAPPINGS),
            ReplicationTaskSettings=settings if settings is not None else json.dumps(TASK_SETTINGS),
        )["ReplicationTask"]["ReplicationTaskArn"]
    )


def _describe(dms: Any, task_arn: str) -> dict[str, Any]:
    [task] = dms.describe_replication_tasks(Filters=[{"Name": "replication-task-arn", "Values": [task_arn]}])[
        "ReplicationTasks"
    ]
    return dict(task)


def _start_when_ready(dms: Any, task_arn: str) -> None:
    """The first describe makes a new task ready; then start it as the start handler does."""
    _describe(dms, task_arn)
    dms.start_replication_task(ReplicationTaskArn=task_arn, StartReplicationTaskType="start-replication")


def test_a_full_load_task_moves_one_status_per_describe_and_stops_when_loaded(dms_client: Any) -> None:
    mover = Recorder()
    with DmsLifecycle(mover=mover).install():
        task_arn = _create_task(dms_client)
        seen = [_describe(dms_client, task_arn)["Status"]]
        dms_client.start_replication_task(
            ReplicationTaskArn=task_arn, StartReplicationTaskType="start-replication"
        )
        running = _describe(dms_client, task_arn)
        stopped = _describe(dms_client, task_arn)

    assert seen == ["ready"]
    assert running["Status"] == "running"
    assert (stopped["Status"], stopped["StopReason"]) == ("stopped", FULL_LOAD_FINISHED)
    assert stopped["ReplicationTaskStats"]["TablesLoaded"] == 1
    assert stopped["ReplicationTaskStats"]["TablesErrored"] == 0


def test_the_mover_is_told_the_mapping_settings_and_target_of_the_task(dms_client: Any) -> None:
    mover = Recorder()
    with DmsLifecycle(mover=mover).install():
        task_arn = _create_task(dms_client)
        _start_when_ready(dms_client, task_arn)
        _describe(dms_client, task_arn)

    [run] = mover.runs
    assert run.task_arn == task_arn
    assert run.migration_type == "full-load"
    assert run.table_mappings == TABLE_MAPPINGS
    assert run.selected_tables() == [("dbo", "orders")]
    assert run.task_settings == TASK_SETTINGS
    assert run.target_s3_settings == S3_SETTINGS
    assert run.source_endpoint["EngineName"] == "sqlite"


def test_a_task_cannot_start_before_it_is_ready(dms_client: Any) -> None:
    with DmsLifecycle().install():
        task_arn = _create_task(dms_client)
        with pytest.raises(ClientError) as refused:
            dms_client.start_replication_task(
                ReplicationTaskArn=task_arn, StartReplicationTaskType="start-replication"
            )

    assert refused.value.response["Error"]["Code"] == "InvalidResourceStateFault"


def _failing_mover(run: ReplicationTaskRun) -> list[TableStatistics]:
    raise ConnectionError("source database refused the connection")


def test_a_mover_that_raises_makes_the_task_fail_with_its_message(dms_client: Any) -> None:
    with DmsLifecycle(mover=_failing_mover).install():
        task_arn = _create_task(dms_client)
        _start_when_ready(dms_client, task_arn)
        _describe(dms_client, task_arn)
        failed = _describe(dms_client, task_arn)

    assert (failed["Status"], failed["StopReason"]) == ("failed", FATAL_ERROR)
    assert failed["LastFailureMessage"] == "ConnectionError: source database refused the connection"


def test_an_errored_table_is_counted_and_listed_in_table_statistics(dms_client: Any) -> None:
    def mover(run: ReplicationTaskRun) -> list[TableStatistics]:
        return [
            TableStatistics(schema="dbo", table="orders", full_load_rows=3),
            TableStatistics(schema="dbo", table="lines", state=TABLE_ERROR),
        ]

    with DmsLifecycle(mover=mover).install():
        task_arn = _create_task(dms_client)
        _start_when_ready(dms_client, task_arn)
        _describe(dms_client, task_arn)
        stopped = _describe(dms_client, task_arn)
        every_table = dms_client.describe_table_statistics(ReplicationTaskArn=task_arn)["TableStatistics"]
        errored = dms_client.describe_table_statistics(
            ReplicationTaskArn=task_arn, Filters=[{"Name": "table-state", "Values": [TABLE_ERROR]}]
        )["TableStatistics"]

    assert stopped["ReplicationTaskStats"]["TablesErrored"] == 1
    assert [(t["TableName"], t["FullLoadRows"], t["TableState"]) for t in every_table] == [
        ("orders", 3, "Table completed"),
        ("lines", 0, TABLE_ERROR),
    ]
    assert [t["TableName"] for t in errored] == ["lines"]


def test_table_statistics_of_an_unknown_task_are_refused(dms_client: Any) -> None:
    with DmsLifecycle().install(), pytest.raises(ClientError) as refused:
        dms_client.describe_table_statistics(
            ReplicationTaskArn="arn:aws:dms:eu-west-1:123456789012:task:NOPE"
        )

    assert refused.value.response["Error"]["Code"] == "ResourceNotFoundFault"


def test_a_running_task_must_be_stopped_before_it_can_be_deleted(dms_client: Any) -> None:
    with DmsLifecycle(full_load_finishes=False).install():
        task_arn = _create_task(dms_client)
        _start_when_ready(dms_client, task_arn)
        assert _describe(dms_client, task_arn)["Status"] == "running"
        assert _describe(dms_client, task_arn)["Status"] == "running"  # never finishes by itself
        with pytest.raises(ClientError) as refused:
            dms_client.delete_replication_task(ReplicationTaskArn=task_arn)
        dms_client.stop_replication_task(ReplicationTaskArn=task_arn)
        with pytest.raises(ClientError) as still_stopping:
            dms_client.delete_replication_task(ReplicationTaskArn=task_arn)
        stopped = _describe(dms_client, task_arn)
        dms_client.delete_replication_task(ReplicationTaskArn=task_arn)
        left = dms_client.describe_replication_tasks()["ReplicationTasks"]

    assert refused.value.response["Error"]["Code"] == "InvalidResourceStateFault"
    assert still_stopping.value.response["Error"]["Code"] == "InvalidResourceStateFault"
    assert (stopped["Status"], stopped["StopReason"]) == ("stopped", STOPPED_BY_USER)
    assert left == []


def test_a_cdc_task_keeps_running_until_stopped(dms_client: Any) -> None:
    with DmsLifecycle().install():
        task_arn = _create_task(dms_client, migration_type="full-load-and-cdc")
        _start_when_ready(dms_client, task_arn)
        statuses = [_describe(dms_client, task_arn)["Status"] for _ in range(3)]

    assert statuses == ["running", "running", "running"]


def test_an_instance_with_a_task_cannot_be_deleted(dms_client: Any) -> None:
    with DmsLifecycle().install():
        task_arn = _create_task(dms_client)
        instance_arn = _describe(dms_client, task_arn)["ReplicationInstanceArn"]
        with pytest.raises(ClientError) as refused:
            dms_client.delete_replication_instance(ReplicationInstanceArn=instance_arn)
        dms_client.delete_replication_task(ReplicationTaskArn=task_arn)
        dms_client.delete_replication_instance(ReplicationInstanceArn=instance_arn)
        left = dms_client.describe_replication_instances()["ReplicationInstances"]

    assert refused.value.response["Error"]["Code"] == "InvalidResourceStateFault"
    assert left == []


@pytest.mark.parametrize(
    ("mappings", "settings"),
    [
        ("not json", None),
        (json.dumps({"no": "rules"}), None),
        (None, "not json"),
        (None, json.dumps(["a", "list"])),
    ],
    ids=["mapping-not-json", "mapping-without-rules", "settings-not-json", "settings-not-object"],
)
def test_a_task_dms_would_refuse_is_not_created(
    dms_client: Any, mappings: str | None, settings: str | None
) -> None:
    with DmsLifecycle().install(), pytest.raises(ClientError) as refused:
        _create_task(dms_client, mappings=mappings, settings=settings)

    assert refused.value.response["Error"]["Code"] == "InvalidParameterValueException"


def test_a_failed_task_started_again_loads_afresh(dms_client: Any) -> None:
    attempts: list[str] = []

    def flaky_mover(run: ReplicationTaskRun) -> list[TableStatistics]:
        attempts.append(run.task_arn)
        if len(attempts) == 1:
            raise TimeoutError("source did not answer")
        return [TableStatistics(schema="dbo", table="orders", full_load_rows=7)]

    with DmsLifecycle(mover=flaky_mover).install():
        task_arn = _create_task(dms_client)
        _start_when_ready(dms_client, task_arn)
        _describe(dms_client, task_arn)
        failed = _describe(dms_client, task_arn)
        dms_client.start_replication_task(
            ReplicationTaskArn=task_arn, StartReplicationTaskType="reload-target"
        )
        _describe(dms_client, task_arn)
        stopped = _describe(dms_client, task_arn)

    assert failed["Status"] == "failed"
    assert (stopped["Status"], stopped["StopReason"]) == ("stopped", FULL_LOAD_FINISHED)
    assert "LastFailureMessage" not in stopped
    assert len(attempts) == 2


@pytest.mark.parametrize(
    ("describes", "statuses"), [(0, ["available"]), (2, ["creating", "creating", "available"])]
)
def test_a_new_instance_is_creating_for_the_configured_number_of_describes(
    dms_client: Any, describes: int, statuses: list[str]
) -> None:
    with DmsLifecycle(instance_describes_until_available=describes).install():
        created = dms_client.create_replication_instance(
            ReplicationInstanceIdentifier="instance", ReplicationInstanceClass="dms.t3.medium"
        )["ReplicationInstance"]
        seen = [created["ReplicationInstanceStatus"]]
        while seen[-1] != "available" and len(seen) < 5:
            [described] = dms_client.describe_replication_instances()["ReplicationInstances"]
            seen.append(described["ReplicationInstanceStatus"])

    assert seen == statuses


def test_a_negative_number_of_instance_describes_is_refused() -> None:
    with pytest.raises(ValueError, match="instance_describes_until_available"):
        DmsLifecycle(instance_describes_until_available=-1)


def test_install_restores_moto_afterwards(dms_client: Any) -> None:
    with DmsLifecycle().install():
        pass
    task_arn = _create_task(dms_client)

    # moto's own task, as documented in the field notes: creating, and no table statistics.
    assert _describe(dms_client, task_arn)["Status"] == "creating"
    with pytest.raises(NotImplementedError):
        dms_client.describe_table_statistics(ReplicationTaskArn=task_arn)
