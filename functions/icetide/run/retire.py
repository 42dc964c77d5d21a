"""Turning a continuous table off: its long-lived task is stopped, then deleted with its endpoint.

DMS refuses to delete a running task, and stopping takes a while, so each schedule event takes the
next step only (stop; later delete the task; later the endpoint) instead of waiting inside one
invocation. The replication instance stays: it is the user's or the stack's, never the table's.
A task or endpoint under the table's name that lacks this stack's long-lived tags is not ours and
is left alone.
"""

from __future__ import annotations

from icetide.adapters import dms
from icetide.dms.continuous import RetireAction, retire_action
from icetide.dms.identifiers import continuous_resources, continuous_tags


def retire_step(stack: str, target_table_name: str) -> str:
    """Take the next step of turning off ``target_table_name``'s task; what it did, in a word."""
    resources = continuous_resources(stack, target_table_name)
    tags = continuous_tags(resources)
    task = dms.describe_task_by_id(resources.task_identifier)
    if task is not None and not dms.carries_tags(task["ReplicationTaskArn"], tags):
        return "not-ours"
    action = retire_action(task)
    if task is not None and action is RetireAction.STOP:
        dms.stop_task(task["ReplicationTaskArn"])
        return "stopping"
    if task is not None and action is RetireAction.DELETE:
        return f"task-{dms.delete_task(task['ReplicationTaskArn']).value}"
    if action is RetireAction.WAIT:
        return "waiting"
    endpoint = dms.describe_endpoint_by_id(resources.endpoint_identifier)
    if endpoint is None or not dms.carries_tags(endpoint["EndpointArn"], tags):
        return "retired"
    return f"endpoint-{dms.delete_endpoint(endpoint['EndpointArn']).value}"
