"""CreateReplicationTask: the run's own S3 target endpoint, and the task writing to it.

Input: ``{"targetTableName", "runId", "plan", "instance"}``. Output: ``{"replicationTaskArn",
"targetEndpointArn", "keyTaskArn", "keyEndpointArn"}`` (the key pair is null unless the plan
reconciles). The task's MigrationType is the plan's (``full-load`` for delta tables; for cdc tables
``full-load-and-cdc`` on the first run, then ``cdc``). A reconcile run also gets a key extraction:
a second full-load task, on the same instance, writing the key columns below
``plan.reconcileBronzeUri``. Each endpoint writes below its own folder, so no two runs share one;
every resource is named after the run, so a retried invocation finds them instead of creating
twins. On a source endpoint that names a PostgreSQL replication slot, a task that captures changes
is created with ``CdcStartPosition``: ``plan.cdcStartPosition`` (the stored checkpoint), else
``plan.cdcStartPoint`` for a first run (icetide.dms.start_position).
Raises InvalidTableMapping (the plan's mapping is not one DMS accepts), SlotStartPositionMissing.
"""

from __future__ import annotations

from typing import Any

from aws_lambda_powertools.utilities.typing import LambdaContext

from icetide.adapters import dms
from icetide.dms.arn_names import ArnKind, arn_name
from icetide.dms.bronze_target import s3_target_settings
from icetide.dms.identifiers import RunDmsResources
from icetide.dms.start_position import creation_start_position, endpoint_slot
from icetide.observability import observed
from icetide.run.handler_inputs import CreateTaskInput, parse_input
from icetide.settings import Settings, load_settings
from icetide_contracts.run_plan import RunPlan

FULL_LOAD = "full-load"


def _endpoint_and_task(
    settings: Settings,
    run: CreateTaskInput,
    identifiers: tuple[str, str],
    *,
    bronze_uri: str,
    migration_type: str,
    table_mapping: str,
    tags: dict[str, str],
) -> tuple[str, str]:
    plan: RunPlan = run.plan
    source_endpoint_arn = settings.require("source_endpoint_arn")
    endpoint_identifier, task_identifier = identifiers
    prefix = settings.require("dms_arn_name_prefix")
    cdc = migration_type != FULL_LOAD
    # Checked before anything is created: DMS would not run a task on a slot without a start position.
    start_position = (
        creation_start_position(
            migration_type,
            endpoint_slot(dms.describe_endpoint_by_arn(source_endpoint_arn)),
            plan.cdc_start_position,
            plan.cdc_start_point,
            plan.target_table_name,
        )
        if cdc
        else None
    )
    endpoint = dms.create_s3_target_endpoint(
        endpoint_identifier,
        s3_settings=s3_target_settings(
            bronze_uri,
            timestamp_column=plan.timestamp_column,
            service_access_role_arn=settings.require("dms_target_role_arn"),
            cdc_max_batch_interval=plan.cdc_max_batch_interval if cdc else None,
            cdc_min_file_size=plan.cdc_min_file_size if cdc else None,
        ),
        tags=tags,
        resource_identifier=arn_name(prefix, ArnKind.ENDPOINT, endpoint_identifier),
    )
    task = dms.create_task(
        task_identifier,
        source_endpoint_arn=source_endpoint_arn,
        target_endpoint_arn=endpoint["EndpointArn"],
        instance_arn=run.instance.replication_instance_arn,
        migration_type=migration_type,
        table_mappings=table_mapping,
        task_settings=plan.task_settings,
        tags=tags,
        resource_identifier=arn_name(prefix, ArnKind.TASK, task_identifier),
        cdc_start_position=start_position,
    )
    return str(task["ReplicationTaskArn"]), str(endpoint["EndpointArn"])


@observed()
def handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    settings = load_settings()
    run = parse_input(CreateTaskInput, event)
    plan = run.plan
    resources = RunDmsResources(settings.require("stack_name"), run.target_table_name, run.run_id)

    task_arn, endpoint_arn = _endpoint_and_task(
        settings,
        run,
        (resources.endpoint_identifier, resources.task_identifier),
        bronze_uri=plan.bronze_uri,
        migration_type=plan.migration_type,
        table_mapping=plan.table_mapping,
        tags=resources.tags,
    )
    key_task_arn = key_endpoint_arn = None
    if plan.reconciles and plan.reconcile_table_mapping is not None:
        key_task_arn, key_endpoint_arn = _endpoint_and_task(
            settings,
            run,
            (resources.key_endpoint_identifier, resources.key_task_identifier),
            bronze_uri=plan.reconcile_bronze_uri,
            migration_type=FULL_LOAD,
            table_mapping=plan.reconcile_table_mapping,
            tags=resources.tags,
        )
    return {
        "replicationTaskArn": task_arn,
        "targetEndpointArn": endpoint_arn,
        "keyTaskArn": key_task_arn,
        "keyEndpointArn": key_endpoint_arn,
    }
