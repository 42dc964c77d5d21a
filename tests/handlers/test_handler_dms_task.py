"""ensure_replication_instance, create/start/poll_replication_task, read_task_statistics, in moto.

moto's DMS differs from the service in ways these tests work around with moto's own backend: a
new task stays "creating" (the tests mark it ready, as DMS does once the task is created), a task
never finishes by itself, and no stop reason is reported.
"""

from __future__ import annotations

import json
from typing import Any

import boto3
import pytest
from botocore.stub import Stubber
from moto.dms.exceptions import DmsClientError, InvalidResourceStateFault
from moto.dms.models import DatabaseMigrationServiceBackend, FakeReplicationTask, dms_backends

import handlers.create_replication_task
import handlers.ensure_replication_instance
import handlers.poll_replication_task
import handlers.read_task_statistics
import handlers.start_replication_task
from icetide.adapters import dms
from icetide.adapters.clients import client
from icetide.dms.engine_version import ReplicationEngineTooOld
from icetide.dms.replication_status import ReplicationInstanceMissing, ReplicationTaskMissing
from icetide.errors import DmsQuotaExceeded, DmsResourceNotOurs, DmsResourceNotReady, InvalidTableMapping
from icetide.run.handler_inputs import InvalidHandlerInput
from icetide.settings import SettingsInvalid

# The run id, lowercase, "_" -> "-", prefixed, then 16 hex of sha256('["icetide", "dbo_orders",
# "dbo_orders-20261121T0700Z"]'): stack "icetide" (handler_env), table, run id.
RUN_RESOURCE_ID = "icetide-dbo-orders-20261121t0700z-0ffeac5a4883539d"
# DMS ends the ARN of what a run creates with its ResourceIdentifier: DMS_ARN_NAME_PREFIX (handler_env),
# "-", then 15 hex of sha256('["<ARN resource type>", "<RUN_RESOURCE_ID>"]'). Never DMS's own name.
INSTANCE_ARN = "arn:aws:dms:eu-west-1:123456789012:rep:icetide51af3dc0-8357ae34b04216e"
ENDPOINT_ARN = "arn:aws:dms:eu-west-1:123456789012:endpoint:icetide51af3dc0-24a6f8886d3673e"
TASK_ARN = "arn:aws:dms:eu-west-1:123456789012:task:icetide51af3dc0-1b8f9d0ae414a71"


def _backend() -> DatabaseMigrationServiceBackend:
    return dms_backends["123456789012"]["eu-west-1"]


def _instances() -> list[Any]:
    return boto3.client("dms").describe_replication_instances()["ReplicationInstances"]


def _target_endpoints() -> list[Any]:
    endpoints = boto3.client("dms").describe_endpoints()["Endpoints"]
    return [endpoint for endpoint in endpoints if endpoint["EndpointType"].lower() == "target"]


def _shared_instance(engine_version: str | None = None) -> str:
    """A user's instance to reuse; without ``engine_version`` the stand-in's default (the template's)."""
    request: dict[str, Any] = {
        "ReplicationInstanceIdentifier": "icetide-shared",
        "ReplicationInstanceClass": "dms.r5.large",
    }
    if engine_version:
        request["EngineVersion"] = engine_version
    return str(
        boto3.client("dms").create_replication_instance(**request)["ReplicationInstance"][
            "ReplicationInstanceArn"
        ]
    )


@pytest.fixture
def created_task(aws, source_endpoint, load_event, lambda_context) -> dict:
    """The run's instance, endpoint and task, made by the handlers themselves."""
    instance = handlers.ensure_replication_instance.handler(
        load_event("ensure_replication_instance"), lambda_context
    )
    event = load_event("create_replication_task")
    event["instance"] = instance
    return handlers.create_replication_task.handler(event, lambda_context)


def _task_event(load_event, name: str, task: dict) -> dict:
    event = load_event(name)
    event["task"] = task
    return event


# --- ensure_replication_instance ----------------------------------------------------------------


def test_a_private_instance_is_created_for_the_run(aws, load_event, lambda_context):
    event = load_event("ensure_replication_instance")

    first = handlers.ensure_replication_instance.handler(event, lambda_context)
    again = handlers.ensure_replication_instance.handler(event, lambda_context)

    arn = INSTANCE_ARN
    assert first == {"replicationInstanceArn": arn, "created": True, "status": "creating"}
    assert again == {"replicationInstanceArn": arn, "created": True, "status": "available"}
    (instance,) = _instances()
    assert instance["ReplicationInstanceIdentifier"] == RUN_RESOURCE_ID
    assert instance["ReplicationInstanceClass"] == "dms.t3.medium"
    assert instance["PubliclyAccessible"] is False
    assert instance["ReplicationSubnetGroup"]["ReplicationSubnetGroupIdentifier"] == "icetide-private"
    assert [group["VpcSecurityGroupId"] for group in instance["VpcSecurityGroups"]] == [
        "sg-0a1b2c3d4e5f60718",
        "sg-0f1e2d3c4b5a69788",
    ]
    tags = boto3.client("dms").list_tags_for_resource(ResourceArn=arn)["TagList"]
    assert {tag["Key"]: tag["Value"] for tag in tags} == {
        "icetide:stack": "icetide",
        "icetide:table": "dbo_orders",
        "icetide:run-id": "dbo_orders-20261121T0700Z",
    }


def test_a_run_instances_task_log_group_is_created_first_with_the_stacks_retention(
    aws, load_event, lambda_context, monkeypatch
):
    monkeypatch.setenv("DMS_LOG_RETENTION_DAYS", "30")
    event = load_event("ensure_replication_instance")

    handlers.ensure_replication_instance.handler(event, lambda_context)
    handlers.ensure_replication_instance.handler(event, lambda_context)  # polled again: no error

    groups = boto3.client("logs").describe_log_groups(logGroupNamePrefix="dms-tasks-")["logGroups"]
    # DMS writes the instance's task logs to dms-tasks-<instance identifier>; it would create the
    # group itself, never expiring.
    assert [(group["logGroupName"], group.get("retentionInDays")) for group in groups] == [
        (f"dms-tasks-{RUN_RESOURCE_ID}", 30)
    ]


def test_a_reused_instances_log_group_is_not_ours_to_touch(aws, load_event, lambda_context, monkeypatch):
    monkeypatch.setenv("DMS_LOG_RETENTION_DAYS", "30")
    event = load_event("ensure_replication_instance")
    event["plan"]["replicationInstanceArn"] = _shared_instance()

    handlers.ensure_replication_instance.handler(event, lambda_context)

    assert boto3.client("logs").describe_log_groups(logGroupNamePrefix="dms-tasks-")["logGroups"] == []


def test_the_runs_instance_gets_the_stacks_engine_version(aws, load_event, lambda_context, monkeypatch):
    monkeypatch.setenv("REPLICATION_ENGINE_VERSION", "3.6.1")

    handlers.ensure_replication_instance.handler(load_event("ensure_replication_instance"), lambda_context)

    (instance,) = _instances()
    assert instance["EngineVersion"] == "3.6.1"


@pytest.mark.parametrize("version", ["3.4.6", "3.1.4", "2.4.5"])
def test_a_named_instance_older_than_the_settings_need_is_refused(aws, load_event, lambda_context, version):
    shared = _shared_instance(version)
    event = load_event("ensure_replication_instance")
    event["plan"]["replicationInstanceArn"] = shared

    refusal = rf"{shared} runs DMS engine {version}; .* needs 3\.4\.7"
    with pytest.raises(ReplicationEngineTooOld, match=refusal):
        handlers.ensure_replication_instance.handler(event, lambda_context)


@pytest.mark.parametrize("version", ["3.4.7", "3.5.4", "3.6.1"])
def test_a_named_instance_new_enough_is_reused(aws, load_event, lambda_context, monkeypatch, version):
    shared = _shared_instance(version)
    monkeypatch.setenv("REPLICATION_INSTANCE_ARN", shared)

    result = handlers.ensure_replication_instance.handler(
        load_event("ensure_replication_instance"), lambda_context
    )

    assert result["replicationInstanceArn"] == shared and result["created"] is False


def test_the_items_instance_is_reused_never_created(aws, load_event, lambda_context):
    shared = _shared_instance()
    event = load_event("ensure_replication_instance")
    event["plan"]["replicationInstanceArn"] = shared

    result = handlers.ensure_replication_instance.handler(event, lambda_context)

    assert result == {"replicationInstanceArn": shared, "created": False, "status": "available"}
    assert [instance["ReplicationInstanceArn"] for instance in _instances()] == [shared]


def test_the_stack_wide_instance_is_reused(aws, load_event, lambda_context, monkeypatch):
    shared = _shared_instance()
    monkeypatch.setenv("REPLICATION_INSTANCE_ARN", shared)

    result = handlers.ensure_replication_instance.handler(
        load_event("ensure_replication_instance"), lambda_context
    )

    assert result["replicationInstanceArn"] == shared and result["created"] is False
    assert len(_instances()) == 1


def test_a_reused_instance_that_does_not_exist_is_named(aws, load_event, lambda_context):
    event = load_event("ensure_replication_instance")
    event["plan"]["replicationInstanceArn"] = "arn:aws:dms:eu-west-1:123456789012:rep:gone"

    with pytest.raises(ReplicationInstanceMissing, match="rep:gone"):
        handlers.ensure_replication_instance.handler(event, lambda_context)


def test_a_dms_quota_is_reported_by_name(aws, load_event, lambda_context, monkeypatch):
    def refuse(*args, **kwargs):
        raise DmsClientError("ResourceQuotaExceededFault", "Quota exceeded for replication instances")

    monkeypatch.setattr(DatabaseMigrationServiceBackend, "create_replication_instance", refuse)

    with pytest.raises(DmsQuotaExceeded, match=RUN_RESOURCE_ID):
        handlers.ensure_replication_instance.handler(
            load_event("ensure_replication_instance"), lambda_context
        )


def test_a_plan_of_another_run_is_refused(aws, load_event, lambda_context):
    event = load_event("ensure_replication_instance")
    event["runId"] = "dbo_orders-20261121T0800Z"

    with pytest.raises(InvalidHandlerInput, match="plan is for dbo_orders run dbo_orders-20261121T0700Z"):
        handlers.ensure_replication_instance.handler(event, lambda_context)


# --- create_replication_task --------------------------------------------------------------------


def test_a_per_run_s3_target_and_a_full_load_task_are_created(created_task, source_endpoint, load_event):
    (endpoint,) = _target_endpoints()
    assert endpoint["EndpointIdentifier"] == RUN_RESOURCE_ID
    assert endpoint["EngineName"] == "s3"
    assert endpoint["S3Settings"] == {
        "BucketName": "icetide-raw-123456789012-eu-west-1",
        "BucketFolder": "bronze/dbo_orders/dbo_orders-20261121T0700Z",
        "DataFormat": "parquet",
        "ParquetVersion": "parquet-2-0",
        "TimestampColumnName": "dms_timestamp",
        "IncludeOpForFullLoad": True,
        "AddColumnName": True,
        "EncryptionMode": "SSE_S3",
        "ServiceAccessRoleArn": "arn:aws:iam::123456789012:role/icetide-dms-s3-target",
    }
    (task,) = boto3.client("dms").describe_replication_tasks()["ReplicationTasks"]
    plan = load_event("create_replication_task")["plan"]
    assert created_task == {
        "replicationTaskArn": TASK_ARN,
        "targetEndpointArn": ENDPOINT_ARN,
        "keyTaskArn": None,
        "keyEndpointArn": None,
    }
    assert task["ReplicationTaskIdentifier"] == RUN_RESOURCE_ID
    assert task["MigrationType"] == "full-load"
    assert task["SourceEndpointArn"] == source_endpoint
    assert task["TargetEndpointArn"] == endpoint["EndpointArn"]
    assert task["ReplicationInstanceArn"] == INSTANCE_ARN
    assert json.loads(task["TableMappings"]) == json.loads(plan["tableMapping"])
    assert json.loads(task["ReplicationTaskSettings"]) == json.loads(plan["taskSettings"])


def test_creating_again_finds_the_runs_resources(created_task, load_event, lambda_context):
    event = load_event("create_replication_task")
    event["instance"]["replicationInstanceArn"] = INSTANCE_ARN

    again = handlers.create_replication_task.handler(event, lambda_context)

    assert again == created_task
    assert len(_target_endpoints()) == 1
    assert len(boto3.client("dms").describe_replication_tasks()["ReplicationTasks"]) == 1


def test_a_table_mapping_dms_would_refuse_never_reaches_dms(aws, source_endpoint, load_event, lambda_context):
    event = load_event("create_replication_task")
    event["plan"]["tableMapping"] = json.dumps({"rules": []})

    with pytest.raises(InvalidTableMapping, match='non-empty "rules"'):
        handlers.create_replication_task.handler(event, lambda_context)

    assert _target_endpoints() == []


def test_the_target_role_setting_is_required(aws, source_endpoint, load_event, lambda_context, monkeypatch):
    monkeypatch.delenv("DMS_TARGET_ROLE_ARN")

    with pytest.raises(SettingsInvalid, match="DMS_TARGET_ROLE_ARN"):
        handlers.create_replication_task.handler(load_event("create_replication_task"), lambda_context)


def test_a_task_on_an_instance_not_yet_available_is_not_ready(
    aws, source_endpoint, load_event, lambda_context, monkeypatch
):
    def instance_busy(*args, **kwargs):
        raise InvalidResourceStateFault("Replication instance is not in available state")

    monkeypatch.setattr(DatabaseMigrationServiceBackend, "create_replication_task", instance_busy)

    with pytest.raises(DmsResourceNotReady, match=RUN_RESOURCE_ID):
        handlers.create_replication_task.handler(load_event("create_replication_task"), lambda_context)


# --- names and tags: one run of one stack, never another's -------------------------------------


def _for_table(event: dict, table: str) -> dict:
    """``event`` (a sample run of dbo_orders) as the same slot's run of ``table``."""
    run = f"{table}-20261121T0700Z"
    event.update(targetTableName=table, runId=run)
    event["plan"].update(targetTableName=table, runId=run)
    return event


def _run_resources(load_event, lambda_context, monkeypatch, stack: str, table: str) -> tuple[dict, dict]:
    """The instance and task that stack ``stack`` creates for its run of ``table`` in the same slot."""
    monkeypatch.setenv("STACK_NAME", stack)
    instance = handlers.ensure_replication_instance.handler(
        _for_table(load_event("ensure_replication_instance"), table), lambda_context
    )
    event = _for_table(load_event("create_replication_task"), table)
    event["instance"] = instance
    return instance, handlers.create_replication_task.handler(event, lambda_context)


def _tags_of(arn: str) -> dict[str, str]:
    tags = boto3.client("dms").list_tags_for_resource(ResourceArn=arn)["TagList"]
    return {tag["Key"]: tag["Value"] for tag in tags}


@pytest.mark.parametrize(
    ("first", "second"),
    [
        (("icetide", "dbo_orders"), ("icetide-prod", "dbo_orders")),
        (("icetide", "Orders"), ("icetide", "orders")),
        (("icetide", "a_b"), ("icetide", "a__b")),
    ],
    ids=["two-stacks", "case", "underscores"],
)
def test_runs_of_two_stacks_or_similar_tables_create_their_own_resources(
    aws, source_endpoint, load_event, lambda_context, monkeypatch, first, second
):
    created = [_run_resources(load_event, lambda_context, monkeypatch, *run) for run in (first, second)]

    arns = [
        {instance["replicationInstanceArn"], task["replicationTaskArn"], task["targetEndpointArn"]}
        for instance, task in created
    ]
    assert len(arns[0] | arns[1]) == 6  # nothing adopted from the other run
    assert len(_instances()) == 2 and len(_target_endpoints()) == 2
    for (stack, table), run_arns in zip((first, second), arns, strict=True):
        for arn in run_arns:
            assert _tags_of(arn) == {
                "icetide:stack": stack,
                "icetide:table": table,
                "icetide:run-id": f"{table}-20261121T0700Z",
            }


def test_an_instance_of_the_runs_name_that_is_not_the_runs_is_not_adopted(aws, load_event, lambda_context):
    boto3.client("dms").create_replication_instance(
        ReplicationInstanceIdentifier=RUN_RESOURCE_ID,
        ReplicationInstanceClass="dms.r5.large",
        Tags=[{"Key": "icetide:stack", "Value": "someone-else"}],
    )

    event = load_event("ensure_replication_instance")

    with pytest.raises(DmsResourceNotOurs, match=f"{RUN_RESOURCE_ID} .* lacks this run's tags"):
        handlers.ensure_replication_instance.handler(event, lambda_context)


@pytest.mark.parametrize("kind", ["endpoint", "task"])
def test_an_endpoint_or_task_of_the_runs_name_that_is_not_the_runs_is_not_adopted(
    aws, source_endpoint, load_event, lambda_context, kind
):
    dms_client = boto3.client("dms")
    instance = handlers.ensure_replication_instance.handler(
        load_event("ensure_replication_instance"), lambda_context
    )
    target = dms_client.create_endpoint(
        EndpointIdentifier=RUN_RESOURCE_ID if kind == "endpoint" else "made-by-hand",
        EndpointType="target",
        EngineName="s3",
        S3Settings={"BucketName": "elsewhere", "ServiceAccessRoleArn": "arn:aws:iam::123456789012:role/x"},
    )["Endpoint"]
    if kind == "task":
        dms_client.create_replication_task(
            ReplicationTaskIdentifier=RUN_RESOURCE_ID,
            SourceEndpointArn=source_endpoint,
            TargetEndpointArn=target["EndpointArn"],
            ReplicationInstanceArn=instance["replicationInstanceArn"],
            MigrationType="full-load",
            TableMappings=json.dumps({"rules": []}),
        )
    event = load_event("create_replication_task")
    event["instance"] = instance

    with pytest.raises(DmsResourceNotOurs, match=RUN_RESOURCE_ID):
        handlers.create_replication_task.handler(event, lambda_context)


def test_the_stack_name_setting_is_required(aws, load_event, lambda_context, monkeypatch):
    monkeypatch.delenv("STACK_NAME")

    event = load_event("ensure_replication_instance")

    with pytest.raises(SettingsInvalid, match="STACK_NAME"):
        handlers.ensure_replication_instance.handler(event, lambda_context)


@pytest.mark.parametrize(
    ("handler", "event_name"),
    [
        (handlers.ensure_replication_instance.handler, "ensure_replication_instance"),
        (handlers.create_replication_task.handler, "create_replication_task"),
    ],
)
def test_nothing_is_created_without_the_stacks_arn_name_prefix(
    aws, source_endpoint, load_event, lambda_context, monkeypatch, handler, event_name
):
    monkeypatch.delenv("DMS_ARN_NAME_PREFIX")

    with pytest.raises(SettingsInvalid, match="DMS_ARN_NAME_PREFIX"):
        handler(load_event(event_name), lambda_context)

    assert _instances() == [] and _target_endpoints() == []


# --- start_replication_task ---------------------------------------------------------------------


def test_a_task_still_being_created_is_not_ready(created_task, load_event, lambda_context):
    # moto leaves a new task "creating"; DMS reports the same until the task is created.
    with pytest.raises(DmsResourceNotReady, match="is creating"):
        handlers.start_replication_task.handler(
            _task_event(load_event, "start_replication_task", created_task), lambda_context
        )


def test_a_ready_task_is_started_once(created_task, load_event, lambda_context, monkeypatch):
    _backend().replication_tasks[created_task["replicationTaskArn"]].ready()
    starts = []
    start = DatabaseMigrationServiceBackend.start_replication_task

    def counted(self, replication_task_arn):
        starts.append(replication_task_arn)
        return start(self, replication_task_arn)

    monkeypatch.setattr(DatabaseMigrationServiceBackend, "start_replication_task", counted)
    event = _task_event(load_event, "start_replication_task", created_task)

    started = handlers.start_replication_task.handler(event, lambda_context)
    retried = handlers.start_replication_task.handler(event, lambda_context)

    expected = {"replicationTaskArn": created_task["replicationTaskArn"], "status": "running"}
    assert {key: started[key] for key in expected} == expected
    assert {key: retried[key] for key in expected} == expected
    assert starts == [created_task["replicationTaskArn"]]
    # The stop position set when it started; the retry reports what DMS describes (moto: none).
    assert started["cdcStopPosition"].startswith("server_time:")
    assert retried["cdcStopPosition"] is None


def test_starting_a_missing_task_is_named(aws, load_event, lambda_context):
    with pytest.raises(ReplicationTaskMissing, match="does not exist"):
        handlers.start_replication_task.handler(load_event("start_replication_task"), lambda_context)


# --- poll_replication_task ----------------------------------------------------------------------


@pytest.fixture
def running_task(created_task) -> dict:
    task = _backend().replication_tasks[created_task["replicationTaskArn"]]
    task.ready()
    task.start()
    return created_task


def _poll(load_event, lambda_context, task: dict) -> dict:
    return handlers.poll_replication_task.handler(
        _task_event(load_event, "poll_replication_task", task), lambda_context
    )


def test_a_running_task_is_running(running_task, load_event, lambda_context):
    assert _poll(load_event, lambda_context, running_task) == {
        "status": "running",
        "dmsStatus": "running",
        "stopReason": None,
        "tablesErrored": 0,
        "lastFailureMessage": None,
    }


def test_a_full_load_that_finished_succeeded(running_task, load_event, lambda_context, monkeypatch):
    _backend().replication_tasks[running_task["replicationTaskArn"]].stop()
    described = FakeReplicationTask.to_dict
    # moto reports no StopReason; DMS gives this one when a full-load-only task completes.
    monkeypatch.setattr(
        FakeReplicationTask,
        "to_dict",
        lambda self: {**described(self), "StopReason": "Stop Reason FULL_LOAD_ONLY_FINISHED"},
    )

    result = _poll(load_event, lambda_context, running_task)

    assert result["status"] == "succeeded"
    assert result["stopReason"] == "Stop Reason FULL_LOAD_ONLY_FINISHED"


def test_a_failed_task_is_failed_with_its_reason(running_task, load_event, lambda_context, monkeypatch):
    described = FakeReplicationTask.to_dict
    monkeypatch.setattr(
        FakeReplicationTask,
        "to_dict",
        lambda self: {
            **described(self),
            "Status": "failed",
            "StopReason": "Stop Reason FATAL_ERROR",
            "LastFailureMessage": "Last Error ODBC general error. Task error notification received",
        },
    )

    assert _poll(load_event, lambda_context, running_task) == {
        "status": "failed",
        "dmsStatus": "failed",
        "stopReason": "Stop Reason FATAL_ERROR",
        "tablesErrored": 0,
        "lastFailureMessage": "Last Error ODBC general error. Task error notification received",
    }


def test_a_task_stopped_by_hand_is_failed(running_task, load_event, lambda_context):
    _backend().replication_tasks[running_task["replicationTaskArn"]].stop()  # moto: no stop reason

    result = _poll(load_event, lambda_context, running_task)

    assert result["status"] == "failed"
    assert result["lastFailureMessage"] == "replication task stopped before its work was done (None)"


def test_a_vanished_task_is_failed(aws, load_event, lambda_context):
    result = handlers.poll_replication_task.handler(load_event("poll_replication_task"), lambda_context)

    assert result["status"] == "failed"
    assert result["lastFailureMessage"] == (
        "replication task arn:aws:dms:eu-west-1:123456789012:task:icetide-dbo-orders-20261121t0700z"
        " no longer exists"  # the sample event's task
    )


def test_polling_describes_the_task_exactly_once(running_task, load_event, lambda_context, monkeypatch):
    calls = []
    describe = DatabaseMigrationServiceBackend.describe_replication_tasks

    def counted(self, *args, **kwargs):
        calls.append(1)
        return describe(self, *args, **kwargs)

    monkeypatch.setattr(DatabaseMigrationServiceBackend, "describe_replication_tasks", counted)

    _poll(load_event, lambda_context, running_task)

    assert len(calls) == 1


# --- read_task_statistics -----------------------------------------------------------------------


def test_table_statistics_are_read_page_by_page(aws):
    arn = f"arn:aws:dms:eu-west-1:123456789012:task:{RUN_RESOURCE_ID}"
    first = {"SchemaName": "dbo", "TableName": "orders", "FullLoadRows": 7, "TableState": "Table completed"}
    second = {
        "SchemaName": "dbo",
        "TableName": "orders_2025",
        "FullLoadRows": 3,
        "TableState": "Table completed",
    }
    with Stubber(client("dms")) as stubbed:
        stubbed.add_response(
            "describe_table_statistics",
            {"ReplicationTaskArn": arn, "TableStatistics": [first], "Marker": "page-2"},
            {"ReplicationTaskArn": arn},
        )
        stubbed.add_response(
            "describe_table_statistics",
            {"ReplicationTaskArn": arn, "TableStatistics": [second]},
            {"ReplicationTaskArn": arn, "Marker": "page-2"},
        )

        assert dms.table_statistics(arn) == [first, second]


def test_statistics_of_a_missing_task_are_refused(aws, load_event, lambda_context):
    with pytest.raises(ReplicationTaskMissing):
        handlers.read_task_statistics.handler(load_event("read_task_statistics"), lambda_context)
