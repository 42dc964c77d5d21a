"""What a DMS replication task's description means for the run.

DMS reports a task with a status, a stop reason and per-task table counts; the state machine only
needs to know whether to start it, wait, go on, or fail. The rules here read the description
returned by DescribeReplicationTasks (keys as the API spells them) without calling AWS.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from enum import StrEnum
from typing import Any

from icetide.dms.engine_version import check_instance
from icetide.errors import DmsResourceNotReady, IcetideError

FULL_LOAD_FINISHED = "FULL_LOAD_ONLY_FINISHED"
# A cdc task given a CdcStopPosition stops by itself with one of these once it has caught up.
CDC_STOPPED_AT_POSITION = ("STOPPED_AT_SERVER_TIME", "STOPPED_AT_COMMIT_TIME")
# DMS spells stop reasons "Stop Reason FATAL_ERROR"; matching the code word tolerates either form.
FAILURE_STOP_REASONS = ("FATAL_ERROR", "RECOVERABLE_ERROR")
# Statuses a task passes through before it can be started.
NOT_YET_STARTABLE = frozenset({"creating", "modifying", "moving", "testing"})
# Statuses of a task that was started already: a retried start must not start it again.
ALREADY_STARTED = frozenset({"starting", "running", "stopping", "stopped", "failed"})


class ReplicationTaskMissing(IcetideError):
    """The run's replication task does not exist (deleted underneath the run). Not retried."""


class ReplicationInstanceMissing(IcetideError):
    """The replication instance a run was told to reuse does not exist. Not retried."""


class TaskProgress(StrEnum):
    """The three answers the state machine's polling loop acts on."""

    RUNNING = "running"
    SUCCEEDED = "succeeded"
    FAILED = "failed"


def reused_instance(instance: Mapping[str, Any] | None, arn: str) -> dict[str, Any]:
    """The ensure_replication_instance output for an instance the run reuses (and never deletes).

    ReplicationEngineTooOld when the instance runs an engine older than icetide's tasks need: no
    task is created on it.
    """
    if instance is None:
        raise ReplicationInstanceMissing(
            f"replication instance {arn} (replicationInstanceArn or REPLICATION_INSTANCE_ARN) does not exist"
        )
    check_instance(instance, arn)
    return {
        "replicationInstanceArn": arn,
        "created": False,
        "status": instance.get("ReplicationInstanceStatus"),
    }


def existing_task(task: Mapping[str, Any] | None, task_arn: str) -> Mapping[str, Any]:
    """The task's description; ReplicationTaskMissing when DMS has no such task."""
    if task is None:
        raise ReplicationTaskMissing(f"replication task {task_arn} does not exist")
    return task


def must_start(task: Mapping[str, Any] | None, task_arn: str) -> bool:
    """True when the task is ready and must be started; False when it was started before.

    Raises DmsResourceNotReady (retried) while DMS is still preparing the task, and
    ReplicationTaskMissing when there is no task to start.
    """
    status = str(existing_task(task, task_arn).get("Status", ""))
    if status == "ready":
        return True
    if status in ALREADY_STARTED:
        return False
    if status in NOT_YET_STARTABLE:
        raise DmsResourceNotReady(f"replication task {task_arn} is {status}, not ready to start yet")
    raise ReplicationTaskMissing(f"replication task {task_arn} is {status or 'without status'}; cannot run")


def _tables_errored(task: Mapping[str, Any]) -> int:
    return int((task.get("ReplicationTaskStats") or {}).get("TablesErrored") or 0)


def _finished(task: Mapping[str, Any]) -> bool:
    """True when a stopped task stopped because its work was done: a full load finished, or a cdc
    task (``full-load-and-cdc`` or ``cdc``) reached its stop position."""
    reason = str(task.get("StopReason") or "")
    if task.get("MigrationType", "full-load") == "full-load":
        return FULL_LOAD_FINISHED in reason
    return any(position in reason for position in CDC_STOPPED_AT_POSITION)


def progress(task: Mapping[str, Any] | None, task_arn: str) -> dict[str, Any]:
    """The poll result: ``status`` (running/succeeded/failed) with the DMS facts behind it.

    Succeeded: stopped because the work was done (a full load finished; a cdc task reached its
    stop position), with no errored table. Failed: DMS status ``failed``, a fatal or
    recoverable-error stop, any errored table, a task stopped for any other reason (a stopped task
    never resumes by itself, so waiting would only time out), or a task that no longer exists.
    Anything else is still running.
    """
    if task is None:
        return {
            "status": TaskProgress.FAILED.value,
            "dmsStatus": None,
            "stopReason": None,
            "tablesErrored": 0,
            "lastFailureMessage": f"replication task {task_arn} no longer exists",
        }
    dms_status = str(task.get("Status", ""))
    stop_reason = task.get("StopReason") or None
    errored = _tables_errored(task)
    failure_message = task.get("LastFailureMessage") or None
    if (
        dms_status == "failed"
        or errored > 0
        or (stop_reason and any(reason in stop_reason for reason in FAILURE_STOP_REASONS))
    ):
        status = TaskProgress.FAILED
    elif dms_status == "stopped":
        finished = _finished(task)
        status = TaskProgress.SUCCEEDED if finished else TaskProgress.FAILED
        if not finished and failure_message is None:
            failure_message = f"replication task stopped before its work was done ({stop_reason})"
    else:
        status = TaskProgress.RUNNING
    return {
        "status": status.value,
        "dmsStatus": dms_status,
        "stopReason": stop_reason,
        "tablesErrored": errored,
        "lastFailureMessage": failure_message,
    }


def run_progress(tasks: Sequence[tuple[Mapping[str, Any] | None, str]]) -> dict[str, Any]:
    """The poll result of a run's tasks (its own, then a key extraction's): the first failed one,
    else the first still running, else the run's own task, succeeded."""
    results = [progress(task, arn) for task, arn in tasks]
    for wanted in (TaskProgress.FAILED, TaskProgress.RUNNING):
        for result in results:
            if result["status"] == wanted.value:
                return result
    return results[0]


def _count(table: Mapping[str, Any], name: str) -> int:
    return int(table.get(name) or 0)


def change_actions(table: Mapping[str, Any]) -> int:
    # The insert, update and delete "actions performed on a table" (API reference, TableStatistics).
    # Each CDC row DMS writes is one of them (S3Settings.CdcInsertsOnly: a record's I/U/D says how
    # "the row was inserted, updated, or deleted at the source"), but not each of them is a row: a
    # filter or CdcInsertsOnly/CdcInsertsAndUpdates leaves some out. So they bound the CDC rows.
    return sum(_count(table, name) for name in ("Inserts", "Updates", "Deletes"))


def _max_change_rows(task: Mapping[str, Any] | None, change_rows: int) -> int:
    """At most how many rows the task's CDC files may hold: none for a ``full-load`` task (it
    migrates existing data and captures no change, so every file it writes is a LOAD file),
    otherwise the changes DMS counted (:func:`change_actions`)."""
    return 0 if (task or {}).get("MigrationType") == "full-load" else change_rows


def statistics(
    task: Mapping[str, Any] | None,
    tables: Sequence[Mapping[str, Any]],
    key_extraction: tuple[Mapping[str, Any] | None, Sequence[Mapping[str, Any]]] | None = None,
) -> dict[str, Any]:
    """The run's DMS statistics: task counts, each table's rows, their totals and the checkpoint.

    ``expectedRows`` is the rows the full load added (``FullLoadRows``, "the number of rows added
    during the full load operation") as text, the Glue job's ``--expected_rows`` (Glue arguments
    are strings): the job refuses to commit when the run's LOAD files hold another number of rows,
    so a full-load file lost or added between DMS and the job never reaches silver.
    ``maxChangeRows`` (``--max_change_rows``) is at most how many rows its CDC files may hold
    (:func:`_max_change_rows`): the inserts, updates and deletes DMS counted are not documented to
    be the rows it wrote, only to include them, so more rows than that is a stray file and fewer
    is no refusal. ``recoveryCheckpoint`` is the task's RecoveryCheckpoint (a cdc task's position,
    committed with the watermark). A reconcile run's ``key_extraction`` (its task and table
    statistics) gives ``reconcileExpectedRows`` and ``reconcileStartedAt`` (when that task started:
    a key changed later is never removed); both are "" when there is none.
    """
    task_stats = (task or {}).get("ReplicationTaskStats") or {}
    table_rows: list[dict[str, Any]] = [
        {
            "schema": table.get("SchemaName"),
            "table": table.get("TableName"),
            "fullLoadRows": _count(table, "FullLoadRows"),
            "changeRows": change_actions(table),
            "state": table.get("TableState"),
        }
        for table in tables
    ]
    full_load_rows = sum(row["fullLoadRows"] for row in table_rows)
    change_rows = sum(row["changeRows"] for row in table_rows)
    result = {
        "fullLoadRows": full_load_rows,
        "changeRows": change_rows,
        "expectedRows": str(full_load_rows),
        "maxChangeRows": str(_max_change_rows(task, change_rows)),
        "recoveryCheckpoint": (task or {}).get("RecoveryCheckpoint") or None,
        "tablesLoaded": int(task_stats.get("TablesLoaded") or 0),
        "tablesErrored": int(task_stats.get("TablesErrored") or 0),
        "tables": table_rows,
        "reconcileExpectedRows": "",
        "reconcileStartedAt": "",
    }
    if key_extraction is not None:
        key_task, key_tables = key_extraction
        result["reconcileExpectedRows"] = str(sum(_count(table, "FullLoadRows") for table in key_tables))
        result["reconcileStartedAt"] = _started_at(key_task)
    return result


def _started_at(task: Mapping[str, Any] | None) -> str:
    started = (task or {}).get("ReplicationTaskStartDate")
    if started is None:
        raise IcetideError("the key extraction task has no start date: it never started")
    moment = started if isinstance(started, datetime) else datetime.fromisoformat(str(started))
    moment = moment.replace(tzinfo=UTC) if moment.tzinfo is None else moment.astimezone(UTC)
    return moment.strftime("%Y-%m-%dT%H:%M:%S.%fZ")
