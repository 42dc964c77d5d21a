"""The scripted scenario: two runs of a cdc table of the scenario's own, then every check.

1. A fresh table of SEED_ROWS rows in the source; a control item for it (``captureMode`` cdc).
2. The first run (``full-load-and-cdc``): while DMS's full load runs, some rows are updated and one
   deleted (the changes the ordering row is about).
3. Changes committed before the second run; the second run (``cdc``), a window that must stop by
   itself at its stop position having read them.
4. The checks (icetide_acceptance.checks) on what was seen: the runs' tasks, statistics and bronze
   files, silver, each function role's permissions, and what is left in DMS.

The stack is a :class:`ScenarioStack`: a deployed one (icetide_acceptance.deployed) or the dry run's
moto stack (icetide_acceptance.dry_run); the scenario and the checks are the same for both.
"""

from __future__ import annotations

import json
import time
import uuid
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any, Protocol

from botocore.exceptions import ClientError

from icetide.dms.identifiers import run_id, schedule_slot
from icetide.dms.start_position import endpoint_slot
from icetide.run.scheduling import execution_input
from icetide_acceptance import checks
from icetide_acceptance.bronze import BronzeFile, run_files
from icetide_acceptance.iam_simulation import RUN_NEEDS, PolicySimulator, run_questions
from icetide_acceptance.outcome import Outcome
from icetide_acceptance.recorder import RunRecord, RunRecorder
from icetide_acceptance.source import SEED_ROWS, SourceTable, create_source_table

# Keys the scenario changes while the first run's full load runs, and before the second run.
DURING_FULL_LOAD_UPDATES = (3, 4, 5)
DURING_FULL_LOAD_DELETE = 6
BEFORE_SECOND_RUN_UPDATES = (7, 8)
KEY_COLUMN = "id"
_POLL_SECONDS = {"aws": 5.0, "dry-run": 0.02}
_COMMIT_MARGIN_SECONDS = 1.5
_DESCRIBE = {
    ":task:": ("describe_replication_tasks", "replication-task-arn", "ReplicationTasks"),
    ":endpoint:": ("describe_endpoints", "endpoint-arn", "Endpoints"),
    ":rep:": ("describe_replication_instances", "replication-instance-arn", "ReplicationInstances"),
}


class ScenarioFailed(RuntimeError):
    """A run of the scenario did not succeed, so there is nothing to check."""


class ScenarioStack(Protocol):
    """What the scenario needs of a stack."""

    kind: str  # "aws" or "dry-run"
    state_machine_arn: str
    control_table: str
    source_endpoint_arn: str

    def client(self, service: str) -> Any: ...

    def next_run_id(self, table: str) -> tuple[str, dict[str, str]]:
        """The next run's id and its execution input."""

    def function_roles(self) -> dict[str, str]:
        """Role ARN of each function (the template's logical id) of :data:`RUN_NEEDS`."""

    def simulator(self) -> PolicySimulator: ...

    def during_full_load(self, change: Callable[[], None]) -> Callable[[], None] | None:
        """What the watcher calls once it sees the full load running (AWS: ``change``), or None where
        the stack makes ``change`` happen during the full load itself (the DMS stand-in's hook)."""

    def silver_rows(self, table: str) -> dict[Any, Any] | None:
        """Key -> note of the table's live silver rows, or None where silver cannot be read."""


@dataclass(frozen=True)
class ObservedRun:
    run_id: str
    status: str
    record: RunRecord
    files: list[BronzeFile]


def upcoming_run(table: str, now: datetime, slot_minutes: int, nth: int) -> tuple[str, dict[str, str]]:
    """The run id and execution input of ``table``'s run for the ``nth`` slot after now's.

    A slot of its own, never one the schedule is starting runs for; and a window that covers the
    changes committed before the run under either way icetide has set stop positions (the slot's
    start or the lock time, the earlier; or the task's start plus a margin: icetide.dms).
    """
    slot = schedule_slot(now, slot_minutes) + timedelta(minutes=slot_minutes * nth)
    run = run_id(table, slot)
    return run, execution_input(table, run, slot)


def control_item(source: SourceTable, table: str, slot: str | None) -> dict[str, Any]:
    """The scenario table's control item, as DynamoDB typed JSON. On a slot endpoint its first run
    starts at the slot's confirmed position, as an operator sets it (icetide.dms.start_position)."""
    start = {"cdcCheckpoint": {"S": source.slot_position(slot)}} if slot else {}
    return start | {
        "targetTableName": {"S": table},
        "activeflag": {"S": "Y"},
        "sourceSchema": {"S": source.schema},
        "sourceTable": {"S": source.name},
        "primaryKeys": {"S": KEY_COLUMN},
        "captureMode": {"S": "cdc"},
    }


def run_and_watch(
    stack: ScenarioStack, table: str, during_full_load: Callable[[], None] | None, timeout_seconds: float
) -> ObservedRun:
    """Start a run of ``table``, watch its DMS resources until it ends, read its bronze files."""
    run_id, execution_input = stack.next_run_id(table)
    stepfunctions = stack.client("stepfunctions")
    arn = stepfunctions.start_execution(
        stateMachineArn=stack.state_machine_arn, name=run_id, input=json.dumps(execution_input)
    )["executionArn"]
    recorder = RunRecorder(stack.client("dms"), run_id, during_full_load)
    deadline = time.monotonic() + timeout_seconds
    while (status := stepfunctions.describe_execution(executionArn=arn)["status"]) == "RUNNING":
        if time.monotonic() > deadline:
            raise ScenarioFailed(f"run {run_id} still running after {timeout_seconds:.0f} s")
        recorder.poll()
        time.sleep(_POLL_SECONDS[stack.kind])
    return ObservedRun(run_id, status, recorder.record, _bronze_files(stack, recorder.record))


def _bronze_files(stack: ScenarioStack, record: RunRecord) -> list[BronzeFile]:
    settings = (record.target_endpoint or {}).get("S3Settings") or {}
    if not settings.get("BucketName"):
        return []
    return run_files(
        stack.client("s3"),
        settings["BucketName"],
        str(settings.get("BucketFolder", "")).strip("/") + "/",
        timestamp_column=str(settings.get("TimestampColumnName", "")),
        key_column=KEY_COLUMN,
    )


def remaining_resources(dms: Any, record: RunRecord) -> list[str]:
    """The ARNs of the run's resources that still exist and are not being deleted."""
    remaining = []
    for arn in sorted(record.arns):
        operation, filter_name, key = next(kind for part, kind in _DESCRIBE.items() if part in arn)
        try:
            found = getattr(dms, operation)(Filters=[{"Name": filter_name, "Values": [arn]}]).get(key, [])
        except ClientError:
            continue  # ResourceNotFoundFault: gone
        if any(resource.get("Status") != "deleting" for resource in found):
            remaining.append(arn)
    return remaining


def slot_name(stack: ScenarioStack) -> str | None:
    """The PostgreSQL slot the stack's source endpoint names, if any (as the runs read it)."""
    endpoints = stack.client("dms").describe_endpoints(
        Filters=[{"Name": "endpoint-arn", "Values": [stack.source_endpoint_arn]}]
    )["Endpoints"]
    return endpoint_slot(endpoints[0] if endpoints else None)


def run_scenario(
    stack: ScenarioStack, source_url: str, *, rows: int = SEED_ROWS, timeout_seconds: float = 3600
) -> list[Outcome]:
    """Run the scenario against ``stack`` and a source at ``source_url`` (a table of ``rows`` rows,
    enough for DMS's full load to last while the scenario changes rows); every check's outcome."""
    name = f"icetide_acceptance_{uuid.uuid4().hex[:8]}"
    source = create_source_table(source_url, name, rows)
    changed_during_load: list[int] = []
    table = f"{source.schema}_{name}"
    dynamodb = stack.client("dynamodb")
    slot = slot_name(stack)
    dynamodb.put_item(TableName=stack.control_table, Item=control_item(source, table, slot))
    try:

        def change_during_full_load() -> None:
            source.update_rows(DURING_FULL_LOAD_UPDATES, "changed during the full load")
            source.delete_rows([DURING_FULL_LOAD_DELETE])
            changed_during_load.extend([*DURING_FULL_LOAD_UPDATES, DURING_FULL_LOAD_DELETE])

        first = run_and_watch(stack, table, stack.during_full_load(change_during_full_load), timeout_seconds)
        if first.status != "SUCCEEDED":
            raise ScenarioFailed(f"the first run {first.run_id} ended {first.status}")
        source.update_rows(BEFORE_SECOND_RUN_UPDATES, "changed before the second run")
        # Stop positions are whole seconds: the changes must be a second older than the run's lock.
        time.sleep(_COMMIT_MARGIN_SECONDS)
        second = run_and_watch(stack, table, None, timeout_seconds)
        if second.status != "SUCCEEDED":
            raise ScenarioFailed(f"the second run {second.run_id} ended {second.status}")
        return judge(stack, source, table, first, second, changed_during_load)
    finally:
        dynamodb.delete_item(TableName=stack.control_table, Key={"targetTableName": {"S": table}})
        source.drop()


def judge(
    stack: ScenarioStack,
    source: SourceTable,
    table: str,
    first: ObservedRun,
    second: ObservedRun,
    changed_during_load: list[int],
) -> list[Outcome]:
    """Every check, on what the two runs showed."""
    dms = stack.client("dms")
    roles = stack.function_roles()
    questions = {
        roles[function]: run_questions(needs, _resource_arns(first.record), first.record.tags)
        for function, needs in RUN_NEEDS.items()
        if function in roles
    }
    instance_id = (first.record.instance or {}).get("ReplicationInstanceIdentifier")
    groups = stack.client("logs").describe_log_groups(logGroupNamePrefix="dms-tasks-").get("logGroups", [])
    return [
        checks.cdc_files(first.files + second.files),
        checks.op_column(first.files + second.files),
        checks.counters(first.record.statistics, first.files),
        checks.counters(second.record.statistics, second.files),
        # The scenario's tasks are windowed: none is resumed (a continuous phase would observe one).
        checks.counters_on_resume(None, None),
        checks.stop_position(second.record.task, second.files, BEFORE_SECOND_RUN_UPDATES),
        checks.slot(first.record.task, slot_name(stack)),
        checks.full_load_ordering(source.rows(), stack.silver_rows(table), changed_during_load),
        checks.iam_functions(stack.simulator(), questions),
        checks.engine_version(first.record.instance),
        checks.cleanup(remaining_resources(dms, first.record) + remaining_resources(dms, second.record)),
        checks.log_retention(groups, instance_id),
    ]


def _resource_arns(record: RunRecord) -> Mapping[str, str]:
    task = record.task or {}
    settings = (record.target_endpoint or {}).get("S3Settings") or {}
    task_arn = str(task.get("ReplicationTaskArn", "arn:aws:dms:::"))
    partition, account = task_arn.split(":")[1], task_arn.split(":")[4]
    return {
        "task": task.get("ReplicationTaskArn", "*"),
        "endpoint": task.get("TargetEndpointArn", "*"),
        "instance": task.get("ReplicationInstanceArn", "*"),
        "role": settings.get("ServiceAccessRoleArn", "*"),
        "dms-vpc-role": f"arn:{partition}:iam::{account}:role/dms-vpc-role",
    }
