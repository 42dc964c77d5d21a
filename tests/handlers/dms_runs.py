"""DMS resources of runs, made directly in moto as the run functions make them (same names and tags).

The cleanup and sweep tests need resources of several runs, stacks and kinds side by side: a run's
instance, target endpoint and task; a continuous table's long-lived task and endpoint; a reused
instance no run created. Built here with boto3, not through the run handlers, so each test states
exactly what exists before its handler runs.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

import boto3

from icetide.dms.identifiers import RunDmsResources, continuous_resources, continuous_tags

TABLE_MAPPING = json.dumps(
    {
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
)


@dataclass(frozen=True)
class RunArns:
    """The ARNs of one run's resources (instance None: the task runs on another instance)."""

    task: str
    endpoint: str
    instance: str | None

    def all(self) -> list[str]:
        """Task, endpoint, instance: the order a cleanup deletes them in."""
        return [self.task, self.endpoint, *([self.instance] if self.instance else [])]


def _dms() -> Any:
    return boto3.client("dms")


def _tags(tags: dict[str, str]) -> list[dict[str, str]]:
    return [{"Key": key, "Value": value} for key, value in tags.items()]


def create_instance(identifier: str, tags: dict[str, str] | None = None) -> str:
    """A replication instance (no tags: one a user created to be reused); its ARN."""
    return str(
        _dms().create_replication_instance(
            ReplicationInstanceIdentifier=identifier,
            ReplicationInstanceClass="dms.t3.medium",
            Tags=_tags(tags or {}),
        )["ReplicationInstance"]["ReplicationInstanceArn"]
    )


def create_run(
    source_endpoint: str, stack: str, table: str, run_id: str, *, on_instance: str | None = None
) -> RunArns:
    """A run's target endpoint and task, on its own instance or on ``on_instance`` (a reused one)."""
    resources = RunDmsResources(stack, table, run_id)
    instance = create_instance(resources.instance_identifier, resources.tags) if on_instance is None else None
    endpoint, task = _endpoint_and_task(resources, resources.tags, source_endpoint, on_instance or instance)
    return RunArns(task=task, endpoint=endpoint, instance=instance)


def create_continuous(source_endpoint: str, stack: str, table: str, instance: str) -> RunArns:
    """A continuous table's long-lived endpoint and task (marked so) on ``instance``."""
    resources = continuous_resources(stack, table)
    endpoint, task = _endpoint_and_task(resources, continuous_tags(resources), source_endpoint, instance)
    return RunArns(task=task, endpoint=endpoint, instance=None)


def _endpoint_and_task(
    resources: RunDmsResources, tags: dict[str, str], source_endpoint: str, instance: str | None
) -> tuple[str, str]:
    dms = _dms()
    endpoint = dms.create_endpoint(
        EndpointIdentifier=resources.endpoint_identifier,
        EndpointType="target",
        EngineName="s3",
        S3Settings={"BucketName": "icetide-raw", "BucketFolder": f"bronze/{resources.run_id}"},
        Tags=_tags(tags),
    )["Endpoint"]["EndpointArn"]
    task = dms.create_replication_task(
        ReplicationTaskIdentifier=resources.task_identifier,
        SourceEndpointArn=source_endpoint,
        TargetEndpointArn=endpoint,
        ReplicationInstanceArn=instance,
        MigrationType="full-load",
        TableMappings=TABLE_MAPPING,
        Tags=_tags(tags),
    )["ReplicationTask"]["ReplicationTaskArn"]
    return str(endpoint), str(task)


def existing_arns() -> set[str]:
    """Every task, endpoint and instance that exists now."""
    dms = _dms()
    return (
        {task["ReplicationTaskArn"] for task in dms.describe_replication_tasks()["ReplicationTasks"]}
        | {endpoint["EndpointArn"] for endpoint in dms.describe_endpoints()["Endpoints"]}
        | {
            instance["ReplicationInstanceArn"]
            for instance in dms.describe_replication_instances()["ReplicationInstances"]
        }
    )
