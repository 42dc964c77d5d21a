"""The maintenance plan: what one maintenance run needs, fixed when it takes the table's lock.

acquire_maintenance_lock builds it from the control item; the state machine passes its
``jobArguments`` to the Glue job as they are and hands the whole plan to record_maintenance, which
reads the job's report at ``reportUri``. It never reaches the Glue job as a document (the job gets
arguments, and the policy's one definition is the contract's), so it is defined here, once.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from icetide.control.model import ControlItem
from icetide.run.plan import silver_table_name


class MaintenancePlan(BaseModel):
    """One maintenance run of one table (JSON keys: the ASL's paths, ``$.lock.plan.*``)."""

    model_config = ConfigDict(populate_by_name=True, extra="forbid", frozen=True)

    target_table_name: str = Field(alias="targetTableName", min_length=1)
    run_id: str = Field(alias="runId", min_length=1)
    # The silver table as the merge's RunPlan names it (``silverTable``): `<glue database>.<table>`.
    table: str = Field(min_length=3)
    report_uri: str = Field(alias="reportUri", pattern=r"^s3://[^/]+/.+")
    job_arguments: dict[str, str] = Field(alias="jobArguments")
    policy: dict[str, Any]

    def to_json(self) -> dict[str, Any]:
        return self.model_dump(by_alias=True)


def build_maintenance_plan(
    item: ControlItem, run_id: str, *, raw_bucket: str, manifest_prefix: str, glue_database: str
) -> MaintenancePlan:
    """The plan of maintenance run ``run_id`` of ``item``: its report goes next to the table's run
    manifests, where the job may write and record_maintenance may read."""
    bucket = raw_bucket.strip().strip("/")
    prefix = manifest_prefix.strip().strip("/")
    table = item.target_table_name
    silver = silver_table_name(glue_database, table)
    report_uri = f"s3://{bucket}/{prefix}/{table}/{run_id}.maintenance.json"
    policy = item.maintenance_policy
    return MaintenancePlan.model_validate(
        {
            "targetTableName": table,
            "runId": run_id,
            "table": silver,
            "reportUri": report_uri,
            "jobArguments": {
                "--target_table": silver,
                "--run_id": run_id,
                "--report_uri": report_uri,
                **policy.job_arguments(),
            },
            "policy": policy.to_json(),
        }
    )
