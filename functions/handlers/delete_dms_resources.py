"""DeleteDmsResources: delete what the run created in DMS, on success and on failure alike.

Input: ``{"targetTableName", "runId", "task"?, "instance"?, "plan"?}``; any part may be absent
after a failure. Output: ``{"deleted", "alreadyGone", "kept"}`` (ARNs). Each task (the run's own,
and a reconcile run's key extraction) is stopped first if it still runs; then its S3 target
endpoint; then the instance, only if the run created it (a
reused instance goes in ``kept``). Parts the input lacks are looked up by the names derived from
the stack and run id, so a run that failed half-way through creating them leaves nothing behind;
a resource found by such a name is deleted only if it carries the run's tags. A continuous table's
task and endpoint (``task.longLived``) are kept. Raises
DmsResourceBusy (retried) while DMS cannot delete something yet.
"""

from __future__ import annotations

from typing import Any

from aws_lambda_powertools.utilities.typing import LambdaContext

from icetide.adapters import dms
from icetide.dms.cleanup import BEING_DELETED, MUST_STOP_FIRST, CleanupReport, DeleteOutcome
from icetide.dms.identifiers import RunDmsResources
from icetide.observability import logger, observed
from icetide.run.handler_inputs import CleanupInput, parse_input
from icetide.settings import load_settings


def _delete_task(task_arn: str, report: CleanupReport) -> None:
    task = dms.describe_task_by_arn(task_arn)
    if task is None:
        report.add(task_arn, DeleteOutcome.ALREADY_GONE)
        return
    if task.get("Status") == BEING_DELETED:
        report.add(task_arn, DeleteOutcome.DELETED)
        return
    if task.get("Status") in MUST_STOP_FIRST:
        dms.stop_task(task_arn)
    report.add(task_arn, dms.delete_task(task_arn))


def _own_arn(resource: dict[str, Any] | None, key: str, tags: dict[str, str]) -> str | None:
    """The ARN of a resource found by the run's identifier, if it is the run's (carries its tags)."""
    if resource is None:
        return None
    if dms.carries_tags(resource[key], tags):
        return str(resource[key])
    logger.warning("not the run's DMS resource, left alone", extra={"arn": resource[key], "tags": tags})
    return None


@observed()
def handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    settings = load_settings()
    run = parse_input(CleanupInput, event)
    report = CleanupReport()
    resources = RunDmsResources(settings.require("stack_name"), run.target_table_name, run.run_id)

    given = run.task
    if given is not None and given.long_lived:
        # A continuous table's task outlives every run: only turning the table off deletes it.
        report.kept += [arn for arn in (given.replication_task_arn, given.target_endpoint_arn) if arn]
        given = None
    pairs = [
        (
            given.replication_task_arn if given else None,
            resources.task_identifier,
            given.target_endpoint_arn if given else None,
            resources.endpoint_identifier,
        )
    ]
    # CreateReplicationTask's output names the key extraction when there is one; only without that
    # output (a run that failed while creating) must the key pair be looked up by name.
    if given is None or given.key_task_arn:
        pairs.append(
            (
                given.key_task_arn if given else None,
                resources.key_task_identifier,
                given.key_endpoint_arn if given else None,
                resources.key_endpoint_identifier,
            )
        )
    for task_given, task_identifier, endpoint_given, endpoint_identifier in pairs:
        task_arn = task_given or _own_arn(
            dms.describe_task_by_id(task_identifier), "ReplicationTaskArn", resources.tags
        )
        if task_arn:
            _delete_task(task_arn, report)
        endpoint_arn = endpoint_given or _own_arn(
            dms.describe_endpoint_by_id(endpoint_identifier), "EndpointArn", resources.tags
        )
        if endpoint_arn:
            report.add(endpoint_arn, dms.delete_endpoint(endpoint_arn))

    reused_arn = (
        run.plan.replication_instance_arn if run.plan else None
    ) or settings.replication_instance_arn
    if run.instance and not run.instance.created:
        report.kept.append(run.instance.replication_instance_arn)
    elif run.instance:
        report.add(
            run.instance.replication_instance_arn, dms.delete_instance(run.instance.replication_instance_arn)
        )
    else:
        own = dms.describe_instance_by_id(resources.instance_identifier)
        own_arn = _own_arn(own, "ReplicationInstanceArn", resources.tags)
        if own_arn:
            report.add(own_arn, dms.delete_instance(own_arn))
        elif reused_arn:
            report.kept.append(reused_arn)

    logger.info("DMS resources cleaned up", extra={"deleted": report.deleted, "busy": report.busy})
    return report.finish()
