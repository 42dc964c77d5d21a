"""delete_dms_resources: what the run created is deleted, a reused instance is kept, reruns are safe."""

from __future__ import annotations

import boto3
import pytest
from moto.dms.exceptions import InvalidResourceStateFault
from moto.dms.models import DatabaseMigrationServiceBackend, dms_backends

import handlers.create_replication_task
import handlers.delete_dms_resources
import handlers.ensure_replication_instance
from icetide.errors import DmsResourceBusy

# The ARNs the run's handlers create (test_handler_dms_task.py says how they are made).
INSTANCE_ARN = "arn:aws:dms:eu-west-1:123456789012:rep:icetide51af3dc0-8357ae34b04216e"
TASK_ARN = "arn:aws:dms:eu-west-1:123456789012:task:icetide51af3dc0-1b8f9d0ae414a71"


def _instance_arns() -> list[str]:
    instances = boto3.client("dms").describe_replication_instances()["ReplicationInstances"]
    return [instance["ReplicationInstanceArn"] for instance in instances]


def _task_arns() -> list[str]:
    return [
        task["ReplicationTaskArn"]
        for task in boto3.client("dms").describe_replication_tasks()["ReplicationTasks"]
    ]


def _endpoint_arns() -> list[str]:
    return [endpoint["EndpointArn"] for endpoint in boto3.client("dms").describe_endpoints()["Endpoints"]]


def _create_run_resources(
    load_event, lambda_context, *, plan_instance: str | None = None
) -> tuple[dict, dict]:
    """The run's instance (or the reused one), target endpoint and task, made by the handlers."""
    ensure_event = load_event("ensure_replication_instance")
    ensure_event["plan"]["replicationInstanceArn"] = plan_instance
    instance = handlers.ensure_replication_instance.handler(ensure_event, lambda_context)
    create_event = load_event("create_replication_task")
    create_event["plan"]["replicationInstanceArn"] = plan_instance
    create_event["instance"] = instance
    return instance, handlers.create_replication_task.handler(create_event, lambda_context)


def _cleanup_event(load_event, **parts) -> dict:
    event = load_event("delete_dms_resources")
    for name, value in parts.items():
        if value is None:
            event.pop(name, None)
        else:
            event[name] = value
    return event


@pytest.mark.parametrize("with_outputs", [True, False], ids=["from-the-input", "found-by-run-id"])
def test_the_runs_task_endpoint_and_instance_are_deleted(
    aws, source_endpoint, load_event, lambda_context, with_outputs
):
    # Without outputs: a run that failed inside create_replication_task has no "task" (nor "instance").
    instance, task = _create_run_resources(load_event, lambda_context)
    parts = {"task": task, "instance": instance} if with_outputs else {"task": None, "instance": None}

    result = handlers.delete_dms_resources.handler(_cleanup_event(load_event, **parts), lambda_context)

    assert result == {
        "deleted": [TASK_ARN, task["targetEndpointArn"], INSTANCE_ARN],
        "alreadyGone": [],
        "kept": [],
    }
    assert _task_arns() == [] and _instance_arns() == []
    assert _endpoint_arns() == [source_endpoint]  # the long-lived source endpoint stays


def test_deleting_again_finds_everything_already_gone(aws, source_endpoint, load_event, lambda_context):
    instance, task = _create_run_resources(load_event, lambda_context)
    event = _cleanup_event(load_event, task=task, instance=instance)
    handlers.delete_dms_resources.handler(event, lambda_context)

    again = handlers.delete_dms_resources.handler(event, lambda_context)

    assert again == {
        "deleted": [],
        "alreadyGone": [TASK_ARN, task["targetEndpointArn"], INSTANCE_ARN],
        "kept": [],
    }


def test_a_reused_instance_is_kept(aws, source_endpoint, load_event, lambda_context):
    shared = boto3.client("dms").create_replication_instance(
        ReplicationInstanceIdentifier="icetide-shared", ReplicationInstanceClass="dms.r5.large"
    )["ReplicationInstance"]["ReplicationInstanceArn"]
    instance, task = _create_run_resources(load_event, lambda_context, plan_instance=shared)

    result = handlers.delete_dms_resources.handler(
        _cleanup_event(load_event, task=task, instance=instance), lambda_context
    )

    assert result == {"deleted": [TASK_ARN, task["targetEndpointArn"]], "alreadyGone": [], "kept": [shared]}
    assert _instance_arns() == [shared]


def test_a_running_task_is_stopped_before_it_is_deleted(
    aws, source_endpoint, load_event, lambda_context, monkeypatch
):
    instance, task = _create_run_resources(load_event, lambda_context)
    backend = dms_backends["123456789012"]["eu-west-1"]
    backend.replication_tasks[TASK_ARN].ready()
    backend.replication_tasks[TASK_ARN].start()
    delete = DatabaseMigrationServiceBackend.delete_replication_task

    def refuse_running(self, replication_task_arn):
        # DMS refuses to delete a running task; moto does not.
        if self.replication_tasks[replication_task_arn].status == "running":
            raise InvalidResourceStateFault("Task is running")
        return delete(self, replication_task_arn)

    monkeypatch.setattr(DatabaseMigrationServiceBackend, "delete_replication_task", refuse_running)

    result = handlers.delete_dms_resources.handler(
        _cleanup_event(load_event, task=task, instance=instance), lambda_context
    )

    assert TASK_ARN in result["deleted"]
    assert _task_arns() == []


def test_nothing_created_means_nothing_to_do(aws, load_event, lambda_context):
    result = handlers.delete_dms_resources.handler(
        _cleanup_event(load_event, task=None, instance=None, plan=None), lambda_context
    )

    assert result == {"deleted": [], "alreadyGone": [], "kept": []}


def test_a_resource_still_in_use_makes_the_call_retryable(
    aws, source_endpoint, load_event, lambda_context, monkeypatch
):
    instance, task = _create_run_resources(load_event, lambda_context)

    def in_use(self, endpoint_arn):
        raise InvalidResourceStateFault("Endpoint is in use by a replication task")

    monkeypatch.setattr(DatabaseMigrationServiceBackend, "delete_endpoint", in_use)

    with pytest.raises(DmsResourceBusy, match=task["targetEndpointArn"]):
        handlers.delete_dms_resources.handler(
            _cleanup_event(load_event, task=task, instance=instance), lambda_context
        )

    assert _task_arns() == []  # what could be deleted was deleted; the retry finishes the rest


def test_cleanup_of_one_stack_leaves_another_stacks_run_of_the_same_table_alone(
    aws, source_endpoint, load_event, lambda_context, monkeypatch
):
    monkeypatch.setenv("STACK_NAME", "icetide-prod")
    _create_run_resources(load_event, lambda_context)
    prod = (_task_arns(), _endpoint_arns(), _instance_arns())
    monkeypatch.setenv("STACK_NAME", "icetide")
    _, task = _create_run_resources(load_event, lambda_context)

    # Found by run id: the state names none of them, as after a failure inside create_replication_task.
    result = handlers.delete_dms_resources.handler(
        _cleanup_event(load_event, task=None, instance=None), lambda_context
    )

    deleted = [TASK_ARN, task["targetEndpointArn"], INSTANCE_ARN]
    assert result == {"deleted": deleted, "alreadyGone": [], "kept": []}
    assert (_task_arns(), _endpoint_arns(), _instance_arns()) == prod


def test_a_resource_under_the_runs_name_that_is_not_the_runs_is_left_alone(aws, load_event, lambda_context):
    colleagues = boto3.client("dms").create_replication_instance(
        ReplicationInstanceIdentifier="icetide-dbo-orders-20261121t0700z-0ffeac5a4883539d",  # the run's
        ReplicationInstanceClass="dms.r5.large",
        Tags=[{"Key": "icetide:stack", "Value": "icetide-prod"}, {"Key": "icetide:run-id", "Value": "x"}],
    )["ReplicationInstance"]["ReplicationInstanceArn"]

    result = handlers.delete_dms_resources.handler(
        _cleanup_event(load_event, task=None, instance=None), lambda_context
    )

    assert result == {"deleted": [], "alreadyGone": [], "kept": []}
    assert _instance_arns() == [colleagues]
