"""EnsureContinuousTask: make sure a continuous table's long-lived DMS task exists and is running.

Input: ``{"targetTableName", "runId", "plan", "instance"}``. Output: ``{"replicationTaskArn",
"targetEndpointArn", "keyTaskArn": null, "keyEndpointArn": null, "longLived": true, "action",
"resumed", "resumedFrom", "closedStart"}``. The table's first run creates the S3 target endpoint
(writing to the table's fixed folder, ``plan.bronzeUri``) and a ``full-load-and-cdc`` task named
after the table, not the run, and starts it; later runs find it. A stopped or failed task is resumed
from its own checkpoint (``resume-processing``: no second full load); the resume is recorded on the
control item (``lastTaskResume``) and reported (``resumed``) for the state machine to notify. Before
resuming, the stopped task's counters for the table are read and reported as the start that ended
(``closedStart``: its ``StartDate`` and Inserts + Updates + Deletes): whether a resume restarts them
is not documented, and select_bronze_files carries them over (icetide.run.change_count). No run deletes the
task (``longLived``). On a source endpoint that names a replication slot the task is created and
started with ``CdcStartPosition`` = the item's ``cdcStartPoint`` (icetide.dms.start_position).
Raises SlotStartPositionMissing, DmsResourceNotReady (retried) while DMS creates, modifies or stops it,
ContinuousFolderInUse when a task must be created but an earlier task's files or checkpoint remain.
"""

from __future__ import annotations

from typing import Any

from aws_lambda_powertools.utilities.typing import LambdaContext

from icetide.adapters import dms, s3
from icetide.adapters.control_table import ControlTable
from icetide.clock import stored_time, utc_now
from icetide.dms.arn_names import ArnKind, arn_name
from icetide.dms.bronze_target import s3_target_settings
from icetide.dms.continuous import TaskAction, TaskResume, run_action
from icetide.dms.identifiers import continuous_resources, continuous_tags
from icetide.dms.start_position import creation_start_position, endpoint_slot, start_start_position
from icetide.errors import ContinuousFolderInUse, DmsResourceNotOurs, DmsResourceNotReady
from icetide.observability import MetricUnit, logger, metrics, observed
from icetide.run.change_count import table_changes, task_start
from icetide.run.handler_inputs import CreateTaskInput, InvalidHandlerInput, parse_input
from icetide.settings import Settings, load_settings
from icetide_contracts.change_count import ClosedStart
from icetide_contracts.run_plan import RunPlan


def _create(settings: Settings, run: CreateTaskInput) -> dict[str, Any]:
    plan = run.plan
    resources = continuous_resources(settings.require("stack_name"), run.target_table_name)
    tags = continuous_tags(resources)
    prefix = settings.require("dms_arn_name_prefix")
    source_endpoint_arn = settings.require("source_endpoint_arn")
    # Checked before anything is created: DMS would not run a task on a slot without a start position.
    start_position = creation_start_position(
        plan.migration_type,
        endpoint_slot(dms.describe_endpoint_by_arn(source_endpoint_arn)),
        None,  # a continuous table commits files, not positions: its task starts at the start point
        plan.cdc_start_point,
        plan.target_table_name,
    )
    endpoint = dms.create_s3_target_endpoint(
        resources.endpoint_identifier,
        s3_settings=s3_target_settings(
            plan.bronze_uri,
            timestamp_column=plan.timestamp_column,
            service_access_role_arn=settings.require("dms_target_role_arn"),
            cdc_max_batch_interval=plan.cdc_max_batch_interval,
            cdc_min_file_size=plan.cdc_min_file_size,
        ),
        tags=tags,
        resource_identifier=arn_name(prefix, ArnKind.ENDPOINT, resources.endpoint_identifier),
    )
    return dms.create_task(
        resources.task_identifier,
        source_endpoint_arn=source_endpoint_arn,
        target_endpoint_arn=endpoint["EndpointArn"],
        instance_arn=run.instance.replication_instance_arn,
        migration_type=plan.migration_type,
        table_mappings=plan.table_mapping,
        task_settings=plan.task_settings,
        tags=tags,
        resource_identifier=arn_name(prefix, ArnKind.TASK, resources.task_identifier),
        cdc_start_position=start_position,
    )


def _refuse_an_earlier_tasks_leftovers(plan: RunPlan) -> None:
    leftover = plan.file_checkpoint or next((key for key, _, _ in s3.list_objects(plan.bronze_uri)), None)
    if leftover is not None:
        raise ContinuousFolderInUse(
            f"{plan.target_table_name} has no continuous task, but an earlier task's files or checkpoint "
            f"remain ({leftover}): a new task would write its full load over the earlier file names and the "
            f"earlier changes would be merged again. Empty {plan.bronze_uri} and remove cdcFileCheckpoint "
            "from the control item to start the table over (docs/continuous-cdc.md); nothing was created"
        )


def _refuse_another_folder(plan: RunPlan, task: dict[str, Any]) -> None:
    """The task must write where this run reads: an item whose output prefix changed would otherwise
    list an empty folder run after run and look healthy."""
    endpoint = dms.describe_endpoint_by_arn(str(task.get("TargetEndpointArn", "")))
    settings_ = (endpoint or {}).get("S3Settings") or {}
    writes_to = f"s3://{settings_.get('BucketName')}/{str(settings_.get('BucketFolder', '')).strip('/')}/"
    if endpoint is not None and writes_to != plan.bronze_uri:
        raise ContinuousFolderInUse(
            f"the continuous task of {plan.target_table_name} writes to {writes_to}, but its runs read "
            f"{plan.bronze_uri} (was outputS3Prefix changed?): turn the table off until StartWorkflow "
            "reports it retired, empty the old folder, and turn it on again (docs/continuous-cdc.md)"
        )


@observed()
def handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    settings = load_settings()
    run = parse_input(CreateTaskInput, event)
    if not run.plan.continuous:
        raise InvalidHandlerInput("EnsureContinuousTask: the plan is not a continuous cdc run's")
    resources = continuous_resources(settings.require("stack_name"), run.target_table_name)

    task = dms.describe_task_by_id(resources.task_identifier)
    if task is not None and not dms.carries_tags(task["ReplicationTaskArn"], continuous_tags(resources)):
        raise DmsResourceNotOurs(
            f"{resources.task_identifier} ({task['ReplicationTaskArn']}) exists but lacks this run's tags "
            f"{continuous_tags(resources)}; it is not adopted, and nothing was created"
        )
    action = run_action(task)
    if action is TaskAction.CREATE:
        _refuse_an_earlier_tasks_leftovers(run.plan)
        task = _create(settings, run)
        action = run_action(task)
    assert task is not None  # created above, or described
    task_arn = str(task["ReplicationTaskArn"])
    _refuse_another_folder(run.plan, task)
    if action is TaskAction.WAIT:
        raise DmsResourceNotReady(
            f"the continuous task {task_arn} of {run.target_table_name} is {task.get('Status')}; "
            "retry shortly"
        )

    resume: TaskResume | None = None
    closed: ClosedStart | None = None
    if action is TaskAction.START:
        dms.start_task(task_arn, cdc_start_position=start_start_position(run.plan.migration_type, None, task))
    elif action is TaskAction.RESUME:
        resume = TaskResume.of(task)
        # Stopped or failed, the task counts nothing more: what its start counted ends here.
        closed = ClosedStart(
            task_start=task_start(task),
            counted=table_changes(
                dms.table_statistics(task_arn), run.plan.source_schema, run.plan.source_table
            ),
        )
        # Recorded first: a retry after the resume finds the task starting and would not know.
        ControlTable(settings.control_table_name).record_task_resume(
            run.target_table_name,
            run.run_id,
            {
                "time": stored_time(utc_now()),
                "runId": run.run_id,
                "was": resume.describe(),
                "closedStart": closed.to_json(),
            },
        )
        dms.start_task(task_arn, resume=True)
        logger.warning("continuous task resumed", extra={"task": task_arn, "was": resume.describe()})
        metrics.add_metric(name="ContinuousTaskResumed", unit=MetricUnit.Count, value=1)
    return {
        "replicationTaskArn": task_arn,
        "targetEndpointArn": task.get("TargetEndpointArn"),
        "keyTaskArn": None,
        "keyEndpointArn": None,
        "longLived": True,
        "action": action.value,
        "resumed": resume is not None,
        "resumedFrom": resume.describe() if resume is not None else None,
        "closedStart": closed.to_json() if closed is not None else None,
    }
