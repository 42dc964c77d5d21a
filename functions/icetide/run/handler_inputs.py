"""The handlers' inputs as typed models (docs/contracts.md, "Handlers").

Each handler parses its event with :func:`parse_input` first, so a state machine that passes the
wrong shape fails at once with the attribute and the reason, not with a KeyError halfway through
creating DMS resources. JSON keys are the contract's camelCase names (the field aliases).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from datetime import datetime
from typing import Annotated, Any, TypeVar

from pydantic import BaseModel, ConfigDict, Field, PlainValidator, ValidationError, model_validator

from icetide.control.problems import contract_error, problem_lines
from icetide.errors import IcetideError, InvalidTableMapping
from icetide_contracts.change_count import ClosedStart
from icetide_contracts.json_fields import ContractViolation
from icetide_contracts.run_plan import RunPlan


class InvalidHandlerInput(IcetideError):
    """A handler was invoked with an event that breaks its contract (a wiring error). Not retried."""


class _Input(BaseModel):
    model_config = ConfigDict(populate_by_name=True, extra="ignore", frozen=True)


class ScheduleEvent(_Input):
    """An EventBridge scheduled event (only ``time`` matters), or ``{}`` for a manual start."""

    time: datetime | None = None


def _check_table_mapping(value: object) -> None:
    # Raised as InvalidTableMapping (not ValueError, which pydantic would wrap) because the state
    # machine matches that name: a plan whose mapping DMS would refuse never reaches DMS. Checked
    # before the plan's other attributes, so it wins over their problems as it always did.
    if not isinstance(value, str) or len(value) < 2:
        return  # the plan's own check reports it
    try:
        mapping = json.loads(value)
    except json.JSONDecodeError as error:
        raise InvalidTableMapping(f"plan.tableMapping is not JSON: {error}") from None
    if not isinstance(mapping, dict) or not isinstance(mapping.get("rules"), list) or not mapping["rules"]:
        raise InvalidTableMapping('plan.tableMapping must be a JSON object with a non-empty "rules" list')


def _run_plan(value: object) -> RunPlan:
    """The event's plan as the contract's RunPlan, parsed by the contract's own reader."""
    if isinstance(value, RunPlan):
        return value
    if isinstance(value, Mapping):
        _check_table_mapping(value.get("tableMapping"))
    try:
        return RunPlan.from_json(value)
    except ContractViolation as violation:
        raise contract_error(violation) from None


# The RunPlan built by ``icetide.run.plan`` at lock time (one definition: icetide_contracts.run_plan).
Plan = Annotated[RunPlan, PlainValidator(_run_plan)]


class InstanceRef(_Input):
    """The output of ensure_replication_instance, as later states pass it back."""

    replication_instance_arn: str = Field(alias="replicationInstanceArn", min_length=1)
    created: bool = False
    status: str | None = None


class TaskRef(_Input):
    """The output of create_replication_task (or start_replication_task), as later states pass it back."""

    replication_task_arn: str = Field(alias="replicationTaskArn", min_length=1)
    target_endpoint_arn: str | None = Field(None, alias="targetEndpointArn")
    # A reconcile run's key extraction (null otherwise).
    key_task_arn: str | None = Field(None, alias="keyTaskArn", min_length=1)
    key_endpoint_arn: str | None = Field(None, alias="keyEndpointArn", min_length=1)
    # A continuous table's task (ensure_continuous_task): it outlives the run, no cleanup deletes it.
    long_lived: bool = Field(False, alias="longLived")

    @property
    def task_arns(self) -> list[str]:
        """The run's tasks: its own, then the key extraction's when there is one."""
        return [self.replication_task_arn, *([self.key_task_arn] if self.key_task_arn else [])]


class TaskStatistics(_Input):
    """The part of read_task_statistics' output the commit records."""

    full_load_rows: int | None = Field(None, alias="fullLoadRows", ge=0)
    change_rows: int | None = Field(None, alias="changeRows", ge=0)
    # The cdc task's RecoveryCheckpoint: where the next run's task starts, once this run commits.
    recovery_checkpoint: str | None = Field(None, alias="recoveryCheckpoint", min_length=1)


class ExecutionInput(_Input):
    """The execution's own input, as StartWorkflow wrote it (docs/contracts.md)."""

    scheduled_time: datetime | None = Field(None, alias="scheduledTime")


class RunStart(_Input):
    """How the execution was started: its input (a scheduled run carries ``scheduledTime``) and time."""

    input: ExecutionInput = Field(default_factory=lambda: ExecutionInput.model_validate({}))
    start_time: datetime | None = Field(None, alias="startTime")

    @property
    def scheduled_time(self) -> datetime | None:
        """The schedule time of a scheduled run, else the execution's start time (a manual run)."""
        return self.input.scheduled_time or self.start_time


class RunInput(_Input):
    """What every per-run handler receives: the table and the run."""

    target_table_name: str = Field(alias="targetTableName", min_length=1)
    run_id: str = Field(alias="runId", min_length=1)


class LockInput(RunInput):
    """acquire_lock: the run, and how its execution was started (absent: the run starts now)."""

    execution: RunStart | None = None


class PlanInput(RunInput):
    """A run's input carrying the plan taken at lock time."""

    plan: Plan

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
    """poll_replication_task, read_task_statistics."""

    task: TaskRef


class ContinuousTaskRef(TaskRef):
    """The output of ensure_continuous_task, as the selection reads it."""

    # The start that ended when this run resumed the task, with what its counters held then.
    closed: dict[str, Any] | None = Field(None, alias="closedStart")

    @property
    def closed_start(self) -> ClosedStart | None:
        """The start this run's resume ended (None: the run resumed nothing, or could not read it)."""
        return ClosedStart.from_json(self.closed) if self.closed else None


class SelectionInput(PlanInput):
    """select_bronze_files: the plan, and the continuous task the run ensured."""

    task: ContinuousTaskRef


class StatisticsInput(PlanInput):
    """read_task_statistics: the run's stopped task, and the plan whose bronze folder it wrote."""

    task: TaskRef


class StartTaskInput(PlanInput):
    """start_replication_task: the tasks, and the plan with the cdc start and stop positions."""

    task: TaskRef


class CommitInput(PlanInput):
    """commit_watermark: the plan, and optionally the DMS statistics of the run."""

    statistics: TaskStatistics | None = None


class CleanupInput(RunInput):
    """delete_dms_resources: whatever the run created; any part may be missing after a failure."""

    task: TaskRef | None = None
    instance: InstanceRef | None = None
    plan: Plan | None = None


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
