"""The DMS stand-in ends ARNs with the ResourceIdentifier given on create, and refuses what DMS
refuses (DMS API reference, CreateReplicationInstance / CreateEndpoint / CreateReplicationTask:
ResourceIdentifier)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import boto3
import pytest
from botocore.exceptions import ClientError
from moto import mock_aws

from icetide_local.standins.dms.arns import resource_identifier_arns

ARN = "arn:aws:dms:eu-west-1:123456789012"
TAGS = [{"Key": "icetide:stack", "Value": "icetide"}]


@pytest.fixture
def dms() -> Iterator[Any]:
    with mock_aws(), resource_identifier_arns():
        yield boto3.client("dms", region_name="eu-west-1")


def _instance(dms: Any, identifier: str = "run-instance", **named: str) -> str:
    return str(
        dms.create_replication_instance(
            ReplicationInstanceIdentifier=identifier,
            ReplicationInstanceClass="dms.t3.medium",
            Tags=TAGS,
            **named,
        )["ReplicationInstance"]["ReplicationInstanceArn"]
    )


def _endpoint(dms: Any, identifier: str, **named: str) -> str:
    return str(
        dms.create_endpoint(
            EndpointIdentifier=identifier, EndpointType="target", EngineName="s3", Tags=TAGS, **named
        )["Endpoint"]["EndpointArn"]
    )


def _task(dms: Any, identifier: str = "run-task", **named: str) -> str:
    instance = _instance(dms, f"{identifier}-instance")
    return str(
        dms.create_replication_task(
            ReplicationTaskIdentifier=identifier,
            SourceEndpointArn=_endpoint(dms, f"{identifier}-source"),
            TargetEndpointArn=_endpoint(dms, f"{identifier}-target"),
            ReplicationInstanceArn=instance,
            MigrationType="full-load",
            TableMappings='{"rules": []}',
            Tags=TAGS,
            **named,
        )["ReplicationTask"]["ReplicationTaskArn"]
    )


def test_each_kind_of_resource_gets_the_arn_ending_with_its_resource_identifier(dms: Any) -> None:
    instance = _instance(dms, ResourceIdentifier="Example-App-ARN1")
    endpoint = _endpoint(dms, "run-endpoint", ResourceIdentifier="icetide51af3dc0-24a6f8886d3673e")
    task = _task(dms, ResourceIdentifier="icetide51af3dc0-1b8f9d0ae414a71")

    assert instance == f"{ARN}:rep:Example-App-ARN1"
    assert endpoint == f"{ARN}:endpoint:icetide51af3dc0-24a6f8886d3673e"
    assert task == f"{ARN}:task:icetide51af3dc0-1b8f9d0ae414a71"
    for arn in (instance, endpoint, task):
        listed = dms.list_tags_for_resource(ResourceArn=arn)["TagList"]
        assert [{"Key": tag["Key"], "Value": tag["Value"]} for tag in listed] == TAGS, arn
    described = dms.describe_replication_instances(
        Filters=[{"Name": "replication-instance-arn", "Values": [instance]}]
    )["ReplicationInstances"]
    assert [i["ReplicationInstanceIdentifier"] for i in described] == ["run-instance"]
    described = dms.describe_replication_tasks(Filters=[{"Name": "replication-task-arn", "Values": [task]}])
    assert [t["ReplicationTaskIdentifier"] for t in described["ReplicationTasks"]] == ["run-task"]


def test_the_resource_is_deleted_under_that_arn(dms: Any) -> None:
    task = _task(dms, ResourceIdentifier="named-task")
    dms.delete_replication_task(ReplicationTaskArn=task)
    instance = _instance(dms, "spare", ResourceIdentifier="named-instance")
    dms.delete_replication_instance(ReplicationInstanceArn=instance)

    assert dms.describe_replication_tasks()["ReplicationTasks"] == []
    assert [
        i["ReplicationInstanceIdentifier"]
        for i in dms.describe_replication_instances()["ReplicationInstances"]
    ] == ["run-task-instance"]


@pytest.mark.parametrize(
    "value",
    [
        "1starts-with-a-digit",
        "-starts-with-a-hyphen",
        "two--hyphens",
        "ends-with-a-hyphen-",
        "has_an_underscore",
        "a" * 32,  # one more than 31
        "",
    ],
)
@pytest.mark.parametrize("kind", ["instance", "endpoint", "task"])
def test_a_resource_identifier_dms_would_refuse_is_refused_and_nothing_is_created(
    dms: Any, kind: str, value: str
) -> None:
    create = {
        "instance": lambda: _instance(dms, "refused", ResourceIdentifier=value),
        "endpoint": lambda: _endpoint(dms, "refused", ResourceIdentifier=value),
        "task": lambda: _task(dms, "refused", ResourceIdentifier=value),
    }[kind]

    with pytest.raises(ClientError, match="InvalidParameterValueException"):
        create()

    assert "refused" not in {
        i["ReplicationInstanceIdentifier"]
        for i in dms.describe_replication_instances()["ReplicationInstances"]
    }
    assert "refused" not in {e["EndpointIdentifier"] for e in dms.describe_endpoints()["Endpoints"]}
    assert dms.describe_replication_tasks()["ReplicationTasks"] == []


def test_the_longest_resource_identifier_dms_allows_is_accepted(dms: Any) -> None:
    assert _instance(dms, ResourceIdentifier="a" * 31) == f"{ARN}:rep:{'a' * 31}"


def test_a_taken_resource_identifier_is_refused(dms: Any) -> None:
    first = _instance(dms, "first", ResourceIdentifier="taken")

    with pytest.raises(ClientError, match="ResourceAlreadyExistsFault"):
        _instance(dms, "second", ResourceIdentifier="taken")

    assert [
        i["ReplicationInstanceArn"] for i in dms.describe_replication_instances()["ReplicationInstances"]
    ] == [first]


def test_without_a_resource_identifier_the_arn_is_not_one_the_caller_chose(dms: Any) -> None:
    # DMS generates the end of the ARN itself; moto ends an instance's or a task's with its identifier.
    assert _instance(dms, "plain") == f"{ARN}:rep:plain"
