"""EnsureReplicationInstance: the replication instance the run's task runs on.

Input: ``{"targetTableName", "runId", "plan"}``. Output: ``{"replicationInstanceArn", "created",
"status"}``; the state machine calls again until ``status`` is ``available``. A long-lived instance
(``plan.replicationInstanceArn``, else REPLICATION_INSTANCE_ARN) is reused and never created or
deleted (``created: false``); otherwise the run creates a private instance named after itself.
Raises DmsQuotaExceeded.
"""

from __future__ import annotations

from typing import Any

from aws_lambda_powertools.utilities.typing import LambdaContext

from icetide import replication_status
from icetide.adapters import dms
from icetide.bronze_target import resource_tags
from icetide.dms.identifiers import instance_identifier
from icetide.handler_inputs import PlanInput, parse_input
from icetide.observability import observed
from icetide.settings import load_settings


@observed()
def handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    settings = load_settings()
    run = parse_input(PlanInput, event)

    reused_arn = run.plan.replication_instance_arn or settings.replication_instance_arn
    if reused_arn:
        return replication_status.reused_instance(dms.describe_instance_by_arn(reused_arn), reused_arn)

    identifier = instance_identifier(run.run_id)
    instance = dms.describe_instance_by_id(identifier) or dms.create_instance(
        identifier,
        instance_class=settings.replication_instance_class,
        subnet_group_id=settings.replication_subnet_group_id,
        security_group_ids=settings.replication_security_group_ids,
        tags=resource_tags(run.target_table_name, run.run_id),
    )
    return {
        "replicationInstanceArn": instance["ReplicationInstanceArn"],
        "created": True,
        "status": instance["ReplicationInstanceStatus"],
    }
