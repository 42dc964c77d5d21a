"""AWS DMS: the per-run replication instance, S3 target endpoint and full-load task.

Every call here is safe to repeat, because Lambda and the state machine retry: creating what
already exists returns the existing resource (only if it carries the run's tags: a resource of
the same name that is not the run's is never adopted), deleting what is gone reports it as gone. AWS
errors that the state machine must tell apart become icetide's named errors (quota, not ready);
a resource that cannot be deleted *yet* is reported as busy, so the caller can try the others
first.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from botocore.exceptions import ClientError

from icetide.adapters.clients import client, error_code
from icetide.dms.cleanup import DeleteOutcome
from icetide.errors import DmsQuotaExceeded, DmsResourceNotOurs, DmsResourceNotReady

_NOT_FOUND = "ResourceNotFoundFault"
_ALREADY_EXISTS = "ResourceAlreadyExistsFault"
_WRONG_STATE = "InvalidResourceStateFault"
_QUOTA_CODES = frozenset(
    {"ResourceQuotaExceededFault", "InsufficientResourceCapacityFault", "StorageQuotaExceededFault"}
)
# IAM lets a function read the tags of its own stack's resources only; a refusal means "not ours".
_ACCESS_DENIED = frozenset({"AccessDeniedException", "AccessDeniedFault", "AccessDenied"})
_ARN_KEYS = {
    "ReplicationInstance": "ReplicationInstanceArn",
    "Endpoint": "EndpointArn",
    "ReplicationTask": "ReplicationTaskArn",
}


def _tags(tags: Mapping[str, str]) -> list[dict[str, str]]:
    return [{"Key": key, "Value": value} for key, value in tags.items()]


def carries_tags(arn: str, tags: Mapping[str, str]) -> bool:
    """Whether the resource carries every one of ``tags`` with the same value."""
    try:
        listed = client("dms").list_tags_for_resource(ResourceArn=arn)["TagList"]
    except ClientError as error:
        if error_code(error) in _ACCESS_DENIED:
            return False
        raise
    found = {tag["Key"]: tag.get("Value") for tag in listed}
    return all(found.get(key) == value for key, value in tags.items())


def _adopted(
    result_key: str, existing: dict[str, Any], identifier: str, tags: Mapping[str, str]
) -> dict[str, Any]:
    """``existing`` if it is the run's own resource (it carries the run's tags), else DmsResourceNotOurs."""
    arn = existing[_ARN_KEYS[result_key]]
    if not carries_tags(arn, tags):
        raise DmsResourceNotOurs(
            f"{identifier} ({arn}) exists but lacks this run's tags {dict(tags)}; it is not adopted"
        )
    return existing


def _first(operation: str, result_key: str, filter_name: str, value: str) -> dict[str, Any] | None:
    """The one resource a describe call finds by a filter, or None.

    DMS answers "nothing matches" with ResourceNotFoundFault; moto answers with an empty list.
    """
    try:
        response = getattr(client("dms"), operation)(Filters=[{"Name": filter_name, "Values": [value]}])
    except ClientError as error:
        if error_code(error) == _NOT_FOUND:
            return None
        raise
    found: list[dict[str, Any]] = response.get(result_key, [])
    return found[0] if found else None


# --- replication instance ---------------------------------------------------------------------


def describe_instance_by_arn(arn: str) -> dict[str, Any] | None:
    """The replication instance with this ARN, or None."""
    return _first("describe_replication_instances", "ReplicationInstances", "replication-instance-arn", arn)


def describe_instance_by_id(identifier: str) -> dict[str, Any] | None:
    """The replication instance with this identifier, or None."""
    return _first(
        "describe_replication_instances", "ReplicationInstances", "replication-instance-id", identifier
    )


def create_instance(
    identifier: str,
    *,
    instance_class: str,
    engine_version: str,
    subnet_group_id: str | None,
    security_group_ids: tuple[str, ...],
    tags: Mapping[str, str],
    resource_identifier: str,
) -> dict[str, Any]:
    """Create a private replication instance, or return the one already created under ``identifier``.

    Its ARN ends in ``resource_identifier`` (icetide.dms.arn_names): the tagging IAM allows on create.
    """
    existing = describe_instance_by_id(identifier)
    if existing is not None:
        return _adopted("ReplicationInstance", existing, identifier, tags)
    request: dict[str, Any] = {
        "ReplicationInstanceIdentifier": identifier,
        "ReplicationInstanceClass": instance_class,
        # A version icetide's settings are known to work on (icetide.dms.engine_version), not the
        # Region's default of the day.
        "EngineVersion": engine_version,
        # The instance reaches the source through the VPC; it never needs a public address.
        "PubliclyAccessible": False,
        "MultiAZ": False,
        "Tags": _tags(tags),
        "ResourceIdentifier": resource_identifier,
    }
    if subnet_group_id:
        request["ReplicationSubnetGroupIdentifier"] = subnet_group_id
    if security_group_ids:
        request["VpcSecurityGroupIds"] = list(security_group_ids)
    return _create_or_get(
        "create_replication_instance",
        "ReplicationInstance",
        identifier,
        describe_instance_by_id,
        request,
        tags,
    )


def delete_instance(arn: str) -> DeleteOutcome:
    """Ask DMS to delete the instance; busy while tasks on it are still being deleted."""
    return _delete("delete_replication_instance", ReplicationInstanceArn=arn)


# --- S3 target endpoint -----------------------------------------------------------------------


def describe_endpoint_by_id(identifier: str) -> dict[str, Any] | None:
    """The endpoint with this identifier, or None."""
    return _first("describe_endpoints", "Endpoints", "endpoint-id", identifier)


def describe_endpoint_by_arn(arn: str) -> dict[str, Any] | None:
    """The endpoint with this ARN (with its S3Settings), or None."""
    return _first("describe_endpoints", "Endpoints", "endpoint-arn", arn)


def create_s3_target_endpoint(
    identifier: str, *, s3_settings: Mapping[str, Any], tags: Mapping[str, str], resource_identifier: str
) -> dict[str, Any]:
    """Create an S3 target endpoint, or return the one already created under ``identifier``; its ARN
    ends in ``resource_identifier`` (icetide.dms.arn_names)."""
    request = {
        "EndpointIdentifier": identifier,
        "EndpointType": "target",
        "EngineName": "s3",
        "S3Settings": dict(s3_settings),
        "Tags": _tags(tags),
        "ResourceIdentifier": resource_identifier,
    }
    return _create_or_get("create_endpoint", "Endpoint", identifier, describe_endpoint_by_id, request, tags)


def delete_endpoint(arn: str) -> DeleteOutcome:
    """Ask DMS to delete the endpoint; busy while a task still uses it."""
    return _delete("delete_endpoint", EndpointArn=arn)


# --- replication task -------------------------------------------------------------------------


def describe_task_by_arn(arn: str) -> dict[str, Any] | None:
    """The replication task with this ARN (with its ReplicationTaskStats), or None."""
    return _first("describe_replication_tasks", "ReplicationTasks", "replication-task-arn", arn)


def describe_task_by_id(identifier: str) -> dict[str, Any] | None:
    """The replication task with this identifier, or None."""
    return _first("describe_replication_tasks", "ReplicationTasks", "replication-task-id", identifier)


def create_task(
    identifier: str,
    *,
    source_endpoint_arn: str,
    target_endpoint_arn: str,
    instance_arn: str,
    migration_type: str,
    table_mappings: str,
    task_settings: str,
    tags: Mapping[str, str],
    resource_identifier: str,
    cdc_start_position: str | None = None,
) -> dict[str, Any]:
    """Create a task, or return the one already created under ``identifier``; its ARN ends in
    ``resource_identifier`` (icetide.dms.arn_names). A task that captures changes through a
    replication slot is created with its ``cdc_start_position`` (icetide.dms.start_position)."""
    request: dict[str, Any] = {
        "ReplicationTaskIdentifier": identifier,
        "SourceEndpointArn": source_endpoint_arn,
        "TargetEndpointArn": target_endpoint_arn,
        "ReplicationInstanceArn": instance_arn,
        "MigrationType": migration_type,
        "TableMappings": table_mappings,
        "ReplicationTaskSettings": task_settings,
        "Tags": _tags(tags),
        "ResourceIdentifier": resource_identifier,
    }
    if cdc_start_position is not None:
        request["CdcStartPosition"] = cdc_start_position
    return _create_or_get(
        "create_replication_task", "ReplicationTask", identifier, describe_task_by_id, request, tags
    )


def start_task(
    arn: str,
    *,
    cdc_start_position: str | None = None,
    cdc_stop_position: str | None = None,
    resume: bool = False,
) -> dict[str, Any]:
    """Start a ready task for the first time, or ``resume`` a stopped or failed one from its own
    checkpoint (no second full load); DmsResourceNotReady when DMS says it cannot start yet.

    A cdc task starts at ``cdc_start_position`` and stops by itself at ``cdc_stop_position``.
    """
    positions = {
        name: value
        for name, value in (("CdcStartPosition", cdc_start_position), ("CdcStopPosition", cdc_stop_position))
        if value is not None
    }
    try:
        task: dict[str, Any] = client("dms").start_replication_task(
            ReplicationTaskArn=arn,
            StartReplicationTaskType="resume-processing" if resume else "start-replication",
            **positions,
        )["ReplicationTask"]
        return task
    except ClientError as error:
        if error_code(error) == _WRONG_STATE:
            raise DmsResourceNotReady(f"replication task {arn} cannot start yet: {error}") from error
        raise


def stop_task(arn: str) -> None:
    """Ask a running task to stop (deleting a running task is refused by DMS)."""
    try:
        client("dms").stop_replication_task(ReplicationTaskArn=arn)
    except ClientError as error:
        # Already stopping or stopped between our describe and this call: the delete decides.
        if error_code(error) not in {_WRONG_STATE, _NOT_FOUND}:
            raise


def delete_task(arn: str) -> DeleteOutcome:
    """Ask DMS to delete the task; busy while it is still stopping."""
    return _delete("delete_replication_task", ReplicationTaskArn=arn)


def table_statistics(task_arn: str) -> list[dict[str, Any]]:
    """Per-table statistics of a task (all pages).

    DMS answers for every task it has; any error is raised, never read as "no statistics": the
    Glue job checks the rows it reads against these counts, and a run without them would commit
    unchecked.
    """
    dms = client("dms")
    tables: list[dict[str, Any]] = []
    request: dict[str, Any] = {"ReplicationTaskArn": task_arn}
    while True:
        response = dms.describe_table_statistics(**request)
        tables.extend(response.get("TableStatistics", []))
        marker = response.get("Marker")
        if not marker:
            return tables
        request["Marker"] = marker


def _create_or_get(
    operation: str,
    result_key: str,
    identifier: str,
    describe_by_id: Callable[[str], dict[str, Any] | None],
    request: Mapping[str, Any],
    tags: Mapping[str, str],
) -> dict[str, Any]:
    """Create a resource; when it already exists (a retried invocation) return it if it is the run's."""
    try:
        created: dict[str, Any] = getattr(client("dms"), operation)(**request)[result_key]
        return created
    except ClientError as error:
        code = error_code(error)
        if code in _QUOTA_CODES:
            raise DmsQuotaExceeded(f"DMS refused to create {identifier} ({operation}): {error}") from error
        if code == _WRONG_STATE:
            # E.g. a task on an instance that is not available yet: the state machine retries.
            raise DmsResourceNotReady(f"DMS cannot create {identifier} yet: {error}") from error
        if code != _ALREADY_EXISTS:
            raise
    existing = describe_by_id(identifier)
    if existing is None:
        # It existed a moment ago and cannot be found now: it is being deleted; retry creates it anew.
        raise DmsResourceNotReady(f"{identifier} already exists but cannot be described yet (being deleted?)")
    return _adopted(result_key, existing, identifier, tags)


def _delete(operation: str, **arn: str) -> DeleteOutcome:
    try:
        getattr(client("dms"), operation)(**arn)
    except ClientError as error:
        code = error_code(error)
        if code == _NOT_FOUND:
            return DeleteOutcome.ALREADY_GONE
        if code == _WRONG_STATE:
            return DeleteOutcome.BUSY
        raise
    return DeleteOutcome.DELETED


# --- this stack's resources, found by their tags ------------------------------------------------
#
# A run that ended outside the state machine's paths (aborted, timed out) may have died before it
# recorded what it created; its cleanup, and the hourly sweep, find the resources by their tags.


def list_tasks() -> list[dict[str, Any]]:
    """Every replication task of the account and Region (all pages, without their settings)."""
    return _all_pages("describe_replication_tasks", "ReplicationTasks", WithoutSettings=True)


def list_endpoints() -> list[dict[str, Any]]:
    """Every endpoint of the account and Region (all pages)."""
    return _all_pages("describe_endpoints", "Endpoints")


def list_instances() -> list[dict[str, Any]]:
    """Every replication instance of the account and Region (all pages)."""
    return _all_pages("describe_replication_instances", "ReplicationInstances")


def tags_of(arn: str) -> dict[str, str]:
    """The resource's tags; empty when it is gone, or when IAM refuses to show them (not this stack's)."""
    try:
        listed = client("dms").list_tags_for_resource(ResourceArn=arn)["TagList"]
    except ClientError as error:
        if error_code(error) in _ACCESS_DENIED or error_code(error) == _NOT_FOUND:
            return {}
        raise
    return {str(tag["Key"]): str(tag.get("Value", "")) for tag in listed}


def _all_pages(operation: str, result_key: str, **request: Any) -> list[dict[str, Any]]:
    found: list[dict[str, Any]] = []
    try:
        for page in client("dms").get_paginator(operation).paginate(**request):
            found.extend(page.get(result_key, []))
    except ClientError as error:
        # DMS answers "there are none" with ResourceNotFoundFault.
        if error_code(error) != _NOT_FOUND:
            raise
    return found
