"""EnsureReplicationInstance: the replication instance the run's task runs on.

Input: ``{"targetTableName", "runId", "plan"}``. Output: ``{"replicationInstanceArn", "created",
"status"}``; the state machine calls again until ``status`` is ``available``. A long-lived instance
(``plan.replicationInstanceArn``, else REPLICATION_INSTANCE_ARN) is reused and never created or
deleted (``created: false``), once its engine version is known to run icetide's tasks
(icetide.dms.engine_version); otherwise the run creates a private instance named after itself,
and (with DMS_LOG_RETENTION_DAYS) the log group of its task logs with that retention, before DMS
would create one that never expires; that instance gets REPLICATION_ENGINE_VERSION. Raises
DmsQuotaExceeded, ReplicationEngineTooOld.
"""

from __future__ import annotations

from typing import Any

from aws_lambda_powertools.utilities.typing import LambdaContext

from icetide.adapters import dms, logs
from icetide.dms import replication_status
from icetide.dms.arn_names import ArnKind, arn_name
from icetide.dms.engine_version import check_engine_version
from icetide.dms.identifiers import RunDmsResources
from icetide.observability import observed
from icetide.run.handler_inputs import PlanInput, parse_input
from icetide.settings import load_settings


@observed()
def handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    settings = load_settings()
    run = parse_input(PlanInput, event)

    reused_arn = run.plan.replication_instance_arn or settings.replication_instance_arn
    if reused_arn:
        return replication_status.reused_instance(dms.describe_instance_by_arn(reused_arn), reused_arn)

    resources = RunDmsResources(settings.require("stack_name"), run.target_table_name, run.run_id)
    identifier = resources.instance_identifier
    engine_version = check_engine_version(
        settings.replication_engine_version, "REPLICATION_ENGINE_VERSION (DmsEngineVersion)"
    )
    # Finds the instance a previous call created (never one of the same name that is not the run's).
    instance = dms.create_instance(
        identifier,
        instance_class=settings.replication_instance_class,
        engine_version=engine_version,
        subnet_group_id=settings.replication_subnet_group_id,
        security_group_ids=settings.replication_security_group_ids,
        tags=resources.tags,
        resource_identifier=arn_name(settings.require("dms_arn_name_prefix"), ArnKind.INSTANCE, identifier),
    )
    if settings.dms_log_retention_days is not None:
        # Before DMS creates the group itself, without retention: one group per run, for ever.
        logs.keep_log_group_for(resources.task_log_group, settings.dms_log_retention_days)
    return {
        "replicationInstanceArn": instance["ReplicationInstanceArn"],
        "created": True,
        "status": instance["ReplicationInstanceStatus"],
    }
