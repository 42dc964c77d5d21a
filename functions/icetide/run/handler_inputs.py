"""The handlers' inputs as typed models (docs/contracts.md, "Handlers").

Each handler parses its event with :func:`parse_input` first, so a state machine that passes the
wrong shape fails at once with the attribute and the reason, not with a KeyError halfway through
creating DMS resources. JSON keys are the contract's camelCase names (the field aliases).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from datetime import datetime
from typing import Any, TypeVar

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from icetide.control.problems import problem_lines
from icetide.control.watermark import Watermark
from icetide.errors import IcetideError, InvalidTableMapping


class InvalidHandlerInput(IcetideError):
    """A handler was invoked with an event that breaks its contract (a wiring error). Not retried."""


class _Input(BaseModel):
    model_config = ConfigDict(populate_by_name=True, extra="ignore", frozen=True)


class ScheduleEvent(_Input):
    """An EventBridge scheduled event (only ``time`` matters), or ``{}`` for a manual start."""

    time: datetime | None = None


class RunPlan(_Input):
    """The RunPlan built by ``icetide.run.plan`` at lock time; the fields the handlers use."""

    model_config = ConfigDict(populate_by_name=True, extra="allow", frozen=True)

    target_table_name: str = Field(alias="targetTableName", min_length=1)
    run_id: str = Field(alias="runId", min_length=1)
    source_schema: str = Field(alias="sourceSchema", min_length=1)
    source_table: str = Field(alias="sourceTable", min_length=1)
    watermark_column: str = Field("", alias="watermarkColumn")
    previous_watermark: Watermark | None = Field(None, alias="previousWatermark")
    table_mapping: str = Field(alias="tableMapping", min_length=2)
    task_settings: str = Field(alias="taskSettings", min_length=2)
    replication_instance_arn: str | None = Field(None, alias="replicationInstanceArn")
    bronze_uri: str = Field(alias="bronzeUri", pattern=r"^s3://[^/]+/.+")
    manifest_uri: str = Field(alias="manifestUri", pattern=r"^s3://[^/]+/.+")
    timestamp_column: str = Field("dms_timestamp", alias="timestampColumn", min_length=1)

    @field_validator("table_mapping")
    @classmethod
    def _table_mapping_has_rules(cls, value: str) -> str:
        # Raised as InvalidTableMapping (not ValueError, which pydantic would wrap) because the
        # state machine matches that name: a plan whose mapping DMS would refuse never reaches DMS.
        try:
            mapping = json.loads(value)
        except json.JSONDecodeError as error:
            raise InvalidTableMapping(f"plan.tableMapping is not JSON: {error}") from None
        if (
            not isinstance(mapping, dict)
            or not isinstance(mapping.get("rules"), list)
            or not mapping["rules"]
        ):
            raise InvalidTableMapping('plan.tableMapping must be a JSON object with a non-empty "rules" list')
        return value


class InstanceRef(_Input):
    """The output of ensure_replication_instance, as later states pass it back."""

    replication_instance_arn: str = Field(alias="replicationInstanceArn", min_length=1)
    created: bool = False
    status: str | None = None


class TaskRef(_Input):
    """The output of create_replication_task (or start_replication_task), as later states pass it back."""

    replication_task_arn: str = Field(alias="replicationTaskArn", min_length=1)
    target_endpoint_arn: str | None = Field(None, alias="targetEndpointArn")


class TaskStatistics(_Input):
    """The part of read_task_statistics' output the commit records."""

    full_load_rows: int | None = Field(None, alias="fullLoadRows", ge=0)


class RunInput(_Input):
    """What every per-run handler receives: the table and the run."""

    target_table_name: str = Field(alias="targetTableName", min_length=1)
    run_id: str = Field(alias="runId", min_length=1)


class PlanInput(RunInput):
    """A run's input carrying the plan taken at lock time."""

    plan: RunPlan

    @model_validator(mode="after")
    def _plan_belongs_to_run(self) -> PlanInput:
        # A plan of another run would create resources, or move a watermark, for the wrong table.
        if (self.plan.target_table_name, self.plan.run_id) != (self.target_table_name, self.run_id):
            raise ValueError(
                f"plan is for {self.plan.target_table_name} run {self.plan.run_id}, "
                f"not for {self.target_table_name} run {self.run_id}"
            )
        return self


class CreateTaskInput(PlanInput):
    """create_replication_task: the plan and the instance to run the task on."""

    instance: InstanceRef


class TaskInput(RunInput):
    """start_replication_task, poll_replication_task, read_task_statistics."""

    task: TaskRef


class CommitInput(PlanInput):
    """commit_watermark: the plan, and optionally the DMS statistics of the run."""

    statistics: TaskStatistics | None = None


class CleanupInput(RunInput):
    """delete_dms_resources: whatever the run created; any part may be missing after a failure."""

    task: TaskRef | None = None
    instance: InstanceRef | None = None
    plan: RunPlan | None = None


class FailureInput(RunInput):
    """record_failure: the state that failed and the cause the Catch caught."""

    failed_state: str = Field(alias="failedState", min_length=1)
    cause: str | dict[str, Any] | None = None


InputModel = TypeVar("InputModel", bound=BaseModel)


def parse_input(model: type[InputModel], event: object) -> InputModel:
    """Validate ``event`` as ``model``; InvalidHandlerInput lists every problem as "attribute: reason"."""
    if not isinstance(event, Mapping):
        raise InvalidHandlerInput(
            f"{model.__name__}: the event must be a JSON object, got {type(event).__name__}"
        )
    try:
        return model.model_validate(dict(event))
    except ValidationError as error:
        raise InvalidHandlerInput(f"{model.__name__}: {'; '.join(problem_lines(error))}") from None
