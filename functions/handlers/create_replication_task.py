"""CreateReplicationTask: the run's own S3 target endpoint, and a full-load task writing to it.

Input: ``{"targetTableName", "runId", "plan", "instance"}``. Output: ``{"replicationTaskArn",
"targetEndpointArn"}``. The endpoint writes below ``plan.bronzeUri``, so no two runs share a
folder; both resources are named after the run, so a retried invocation finds them instead of
creating twins. Raises InvalidTableMapping (the plan's mapping is not one DMS accepts).
"""

from __future__ import annotations

from typing import Any

from aws_lambda_powertools.utilities.typing import LambdaContext

from icetide.adapters import dms
from icetide.dms.bronze_target import s3_target_settings
from icetide.dms.identifiers import RunDmsResources
from icetide.dms.task_settings import MIGRATION_TYPE
from icetide.observability import observed
from icetide.run.handler_inputs import CreateTaskInput, parse_input
from icetide.settings import load_settings


@observed()
def handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    settings = load_settings()
    run = parse_input(CreateTaskInput, event)
    resources = RunDmsResources(settings.require("stack_name"), run.target_table_name, run.run_id)

    endpoint = dms.create_s3_target_endpoint(
        resources.endpoint_identifier,
        s3_settings=s3_target_settings(
            run.plan.bronze_uri,
            timestamp_column=run.plan.timestamp_column,
            service_access_role_arn=settings.require("dms_target_role_arn"),
        ),
        tags=resources.tags,
    )
    task = dms.create_task(
        resources.task_identifier,
        source_endpoint_arn=settings.require("source_endpoint_arn"),
        target_endpoint_arn=endpoint["EndpointArn"],
        instance_arn=run.instance.replication_instance_arn,
        migration_type=MIGRATION_TYPE,
        table_mappings=run.plan.table_mapping,
        task_settings=run.plan.task_settings,
        tags=resources.tags,
    )
    return {"replicationTaskArn": task["ReplicationTaskArn"], "targetEndpointArn": endpoint["EndpointArn"]}
