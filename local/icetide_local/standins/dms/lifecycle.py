"""DMS replication tasks that live the way AWS DMS's do, inside moto's DMS backend.

moto 5.2.5 creates a task that stays ``creating`` forever, runs it the moment it is started, never
stops a full load, reports fixed statistics and has no ``describe_table_statistics``: a state machine
that waits for DMS could not get past the first poll. :class:`DmsLifecycle` patches moto's DMS backend
in one place (:meth:`DmsLifecycle.install`) so that a task moves one step per describe, as a slow
real task would look to a poller::

    creating -> ready                         (create, then describe)
    ready -> starting -> running              (start, then describe: the data mover runs here)
    running -> stopped  "Stop Reason FULL_LOAD_ONLY_FINISHED"   (full load done, next describe)
    running -> stopped  "Stop Reason STOPPED_AT_SERVER_TIME"    (a CDC task with CdcStopPosition,
                                                                 the first describe once the clock
                                                                 has reached it, or once it read:
                                                                 windows_end_once_read)
    running -> failed   "Stop Reason FATAL_ERROR" + LastFailureMessage  (the data mover raised, or a
                                                                 cdc task has no CdcStartPosition)
    running -> stopping -> stopped "Stop Reason NORMAL"         (stop_replication_task)
    running -> failed   "Stop Reason FATAL_ERROR"  (a catch-up's mover raised, or fail_task in a test)

A ``server_time:`` CdcStopPosition is read as :class:`StopPositionReading` says (strict by default: one
already past when the task starts stops it at once, having read nothing). The data mover reads when
the task starts running: what is committed later in the window is left to the next task (as a task's
latency would leave it; the RecoveryCheckpoint says where reading ended).

A CDC task (``full-load-and-cdc`` or ``cdc``) without ``CdcStopPosition`` keeps running until it is
stopped: a *continuous* task. DMS would write its change files all the time; the stand-in writes them
when asked, by :meth:`DmsLifecycle.catch_up_running_tasks`: every continuous task that is running gets
the changes since its ``RecoveryCheckpoint`` as CDC files (named after every file it wrote before) and
a new checkpoint. ``start_replication_task``'s ``CdcStartPosition`` and ``CdcStopPosition``, which moto
drops, are kept on the task, shown by ``describe_replication_tasks`` with the ``RecoveryCheckpoint`` the
mover reported, and passed to the mover. ``StartReplicationTaskType`` is honoured: ``resume-processing``
of a stopped or failed CDC task goes on from its ``RecoveryCheckpoint`` (a ``cdc`` run: no second full
load), ``reload-target`` and ``start-replication`` load afresh. What a resume does to the table
statistics is not documented: :class:`StatisticsOnResume` says (by default they start again from
zero, the reading under which a bound taken from one start's counters would refuse healthy files).
Each start sets ``ReplicationTaskStats.StartDate`` ("started either with a fresh start or a resume").

and refuses what DMS refuses: creating a task whose table mapping DMS (or the stand-in) would not
run (:func:`icetide_local.standins.dms.replicator.parse_table_mapping`), starting a task that is not
ready, deleting a task that is running or stopping, deleting an instance that still has tasks,
creating an endpoint whose identifier is taken (:mod:`icetide_local.standins.dms.endpoints`), a
ResourceIdentifier that breaks DMS's rules or is taken (the ARN of what it creates ends with it, as
in DMS: :mod:`icetide_local.standins.dms.arns`), and running a task that captures changes through a
source endpoint's replication slot when it was not created with a valid ``CdcStartPosition`` (the
task fails, as the DMS API reference says of ``PostgreSQLSettings.SlotName``).

Data movement is pluggable: a :data:`DataMover` is called when a task starts running, with the task's
table mapping, settings, CDC positions and endpoints (:class:`ReplicationTaskRun`), and returns the
tables' statistics, or a :class:`MoverResult` that adds the CDC checkpoint. The default mover moves
nothing; the local stack plugs in the replicator that copies source rows and changes into bronze
parquet files.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import functools
import json
import threading
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import asdict, dataclass, field, replace
from enum import StrEnum
from typing import Any
from unittest import mock

import boto3
from moto.core.exceptions import JsonRESTError
from moto.core.utils import utcnow
from moto.dms import models as dms_models
from moto.dms.exceptions import InvalidResourceStateFault, ResourceNotFoundFault
from moto.dms.responses import DatabaseMigrationServiceResponse
from moto.moto_api import state_manager

from icetide_local.standins.dms.arns import resource_identifier_arns
from icetide_local.standins.dms.cdc import CheckpointUnreadable, parse_checkpoint, parse_stop_position
from icetide_local.standins.dms.endpoints import unique_endpoint_identifiers
from icetide_local.standins.dms.instances import instance_engine_versions
from icetide_local.standins.dms.replicator import TableMappingError, parse_table_mapping

FULL_LOAD_FINISHED = "Stop Reason FULL_LOAD_ONLY_FINISHED"
STOPPED_AT_SERVER_TIME = "Stop Reason STOPPED_AT_SERVER_TIME"
FATAL_ERROR = "Stop Reason FATAL_ERROR"
STOPPED_BY_USER = "Stop Reason NORMAL"
TABLE_COMPLETED = "Table completed"
TABLE_ERROR = "Table error"

_INSTANCE_MODEL = "dms::replicationinstance"  # moto's state-manager name for replication instances
_BUSY_STATUSES = frozenset({"starting", "running", "stopping"})
_STARTABLE_STATUSES = frozenset({"ready", "stopped", "failed"})
_CDC_MIGRATION_TYPES = frozenset({"full-load-and-cdc", "cdc"})
RESUME_PROCESSING = "resume-processing"
RELOAD_TARGET = "reload-target"


class StopPositionReading(StrEnum):
    """What a ``server_time:`` CdcStopPosition means: the API reference says only "server time"; the
    user guide, "a server time on the replication instance". Either way the task does not stop before
    the instance's clock reaches it; they differ on a stop position already past when the task starts.

    STRICT (the default): the instance's clock is past it, so the task stops at once, having read
    nothing (not even a full load). KIND: the last commit time to read, so the task reads every change
    committed up to it and then stops.
    """

    STRICT = "strict"
    KIND = "kind"


class StatisticsOnResume(StrEnum):
    """What ``resume-processing`` does to a task's table statistics (``Inserts``, ``Updates``,
    ``Deletes``, ``FullLoadRows``): the API reference says only that they count the "actions
    performed on a table", not whether from the task's creation or from its latest start.

    RESET (the default): they start again from zero at each resume, so the changes counted before it
    are no longer in any counter. KEPT: they go on adding up over the task's starts.
    """

    RESET = "reset"
    KEPT = "kept"


class InvalidParameterValueException(JsonRESTError):
    """What DMS answers to a task whose table mapping is not a JSON document with rules."""

    code = 400

    def __init__(self, message: str) -> None:
        super().__init__("InvalidParameterValueException", message)


@dataclass(frozen=True)
class TableStatistics:
    """One table's line of ``describe_table_statistics``, as a data mover reports it."""

    schema: str
    table: str
    full_load_rows: int = 0
    state: str = TABLE_COMPLETED
    inserts: int = 0
    updates: int = 0
    deletes: int = 0

    @property
    def errored(self) -> bool:
        return self.state == TABLE_ERROR

    def plus(self, later: TableStatistics) -> TableStatistics:
        """These statistics with a later run's change rows added (DMS counts them since the task began)."""
        return replace(
            self,
            state=later.state,
            inserts=self.inserts + later.inserts,
            updates=self.updates + later.updates,
            deletes=self.deletes + later.deletes,
        )

    def to_dms(self) -> dict[str, Any]:
        """The DMS API shape (``TableStatistics`` entry)."""
        return {
            "SchemaName": self.schema,
            "TableName": self.table,
            "Inserts": self.inserts,
            "Deletes": self.deletes,
            "Updates": self.updates,
            "Ddls": 0,
            "FullLoadRows": self.full_load_rows,
            "FullLoadCondtnlChkFailedRows": 0,
            "FullLoadErrorRows": 0,
            "TableState": self.state,
            "ValidationState": "Not enabled",
        }


@dataclass(frozen=True)
class ReplicationTaskRun:
    """What a data mover is told when a task starts running: everything DMS itself would read."""

    task_arn: str
    task_identifier: str
    migration_type: str
    table_mappings: Mapping[str, Any]
    task_settings: Mapping[str, Any]
    source_endpoint: Mapping[str, Any]
    target_s3_settings: Mapping[str, Any]
    cdc_start_position: str | None = None
    """``CdcStartPosition`` of the start: the checkpoint a ``cdc`` task starts after."""
    cdc_stop_position: str | None = None
    """``CdcStopPosition`` of the start (``server_time:YYYY-MM-DDThh:mm:ss``); None: no stop."""
    last_cdc_file: str | None = None
    """The name of the newest CDC file the task wrote before this run (``yyyyMMdd-HHmmssSSS.parquet``),
    None if none: the CDC files of this run must sort after it."""

    def selected_tables(self) -> list[tuple[str, str]]:
        """(schema, table) of every ``include`` selection rule, in rule order."""
        return [
            (rule["object-locator"]["schema-name"], rule["object-locator"]["table-name"])
            for rule in self.table_mappings.get("rules", [])
            if rule.get("rule-type") == "selection" and rule.get("rule-action") == "include"
        ]


@dataclass(frozen=True)
class MoverResult:
    """What a data mover of a CDC task reports: the tables' statistics, the ``RecoveryCheckpoint``,
    and the name of the newest CDC file it wrote (None: it wrote none)."""

    tables: tuple[TableStatistics, ...]
    recovery_checkpoint: str | None = None
    last_cdc_file: str | None = None


class MoverFailed(RuntimeError):
    """A data mover's failure after it wrote some CDC files: ``last_cdc_file`` names the newest, so
    that the task's later files still sort after it."""

    def __init__(self, message: str, *, last_cdc_file: str | None = None) -> None:
        super().__init__(message)
        self.last_cdc_file = last_cdc_file


DataMover = Callable[[ReplicationTaskRun], Sequence[TableStatistics] | MoverResult]
"""Moves a task's data; raising makes the task fail with the exception's text as LastFailureMessage.

A mover that captures no changes may return just the tables' statistics. A run of a continuous task
that catches up, or of a CDC task resumed from its checkpoint, has ``migration_type`` ``cdc`` and the
checkpoint as ``cdc_start_position``."""


def no_data_movement(run: ReplicationTaskRun) -> list[TableStatistics]:
    """The default mover: copies nothing and reports every selected table as loaded with 0 rows."""
    return [TableStatistics(schema=schema, table=table) for schema, table in run.selected_tables()]


@dataclass
class DmsLifecycle:
    """How the stand-in's tasks behave; :meth:`install` puts it into moto's DMS backend.

    ``full_load_finishes=False`` keeps every task running forever (a load that never ends), and
    ``instance_describes_until_available`` is how many describes a new replication instance stays
    ``creating`` before it is ``available`` (moto's default is 1; 0 makes it available at once).

    ``windows_end_once_read=True`` is a named difference from AWS, for stacks whose runs wait on
    real work: a windowed cdc task stops at the first describe after it started running, as if the
    instance's clock had reached its stop position then. The stand-in reads a window's changes
    when the task starts running, so what is left of the window is a wait in which the task reads
    nothing more (a change committed in it goes to the next task either way). The task still starts
    under the stop-position reading and stops with ``STOPPED_AT_SERVER_TIME``, its ``StopDate``
    the real time of that describe, before its stop position (nothing icetide runs reads a task's
    ``StopDate``). Off by default: the stop-position tests wait for the clock.
    """

    mover: DataMover = no_data_movement
    full_load_finishes: bool = True
    stop_position_reading: StopPositionReading = StopPositionReading.STRICT
    statistics_on_resume: StatisticsOnResume = StatisticsOnResume.RESET
    instance_describes_until_available: int = 1
    windows_end_once_read: bool = False
    started_runs: list[ReplicationTaskRun] = field(default_factory=list)
    """Every run the mover was called for: starts, resumes and catch-ups, in order."""
    _tasks: list[LifecycleTask] = field(default_factory=list, init=False, repr=False)
    _tasks_lock: threading.Lock = field(default_factory=threading.Lock, init=False, repr=False)

    def __post_init__(self) -> None:
        if self.instance_describes_until_available < 0:
            raise ValueError(
                "instance_describes_until_available must be 0 or more, "
                f"got {self.instance_describes_until_available}"
            )

    @contextlib.contextmanager
    def install(self) -> Iterator[DmsLifecycle]:
        """Patch moto's DMS backend for the duration of the block (inside ``mock_aws``)."""
        backend_class = dms_models.DatabaseMigrationServiceBackend
        with contextlib.ExitStack() as patches:
            # The backend builds tasks through this module-level name.
            patches.enter_context(
                mock.patch.object(
                    dms_models, "FakeReplicationTask", functools.partial(LifecycleTask, lifecycle=self)
                )
            )
            patches.enter_context(
                mock.patch.object(backend_class, "describe_replication_tasks", _advancing_describe())
            )
            patches.enter_context(
                mock.patch.object(backend_class, "delete_replication_instance", _guarded_instance_delete())
            )
            # moto drops CreateReplicationTask's and StartReplicationTask's CDC positions: these keep them.
            patches.enter_context(
                mock.patch.object(
                    DatabaseMigrationServiceResponse,
                    "create_replication_task",
                    _create_replication_task_response,
                )
            )
            patches.enter_context(
                mock.patch.object(backend_class, "start_replication_task", _start_replication_task)
            )
            patches.enter_context(
                mock.patch.object(
                    DatabaseMigrationServiceResponse,
                    "start_replication_task",
                    _start_replication_task_response,
                )
            )
            # moto has no such action: create=True adds it to the response class's dispatch.
            patches.enter_context(
                mock.patch.object(
                    DatabaseMigrationServiceResponse,
                    "describe_table_statistics",
                    _describe_table_statistics,
                    create=True,
                )
            )
            patches.enter_context(_instance_transition(self.instance_describes_until_available))
            patches.enter_context(unique_endpoint_identifiers())
            patches.enter_context(instance_engine_versions())
            # Last: it wraps the create actions patched above.
            patches.enter_context(resource_identifier_arns())
            yield self

    def catch_up_running_tasks(self) -> list[str]:
        """Write what DMS would have written since the last time: the ARNs of the tasks caught up.

        Every continuous task (``full-load-and-cdc`` or ``cdc`` started without ``CdcStopPosition``)
        that is ``running`` and has a ``RecoveryCheckpoint`` gets the source's changes since that
        checkpoint as CDC files in its target folder, named by the time of writing and sorting after
        every CDC file it wrote before, and its checkpoint moves to where reading ended. No change, no
        file. A stopped, failed or still starting task is left alone. If the mover raises, the task
        fails (``Stop Reason FATAL_ERROR``) and keeps its checkpoint, so a resume reads the changes again.
        """
        caught_up = []
        for task in self._live_tasks():
            with task.lock:
                if task.runs_continuously():
                    task.catch_up()
                    caught_up.append(task.arn)
        return caught_up

    def saved_continuous_tasks(self) -> list[dict[str, Any]]:
        """Every continuous task as a JSON document, for a later process to restore.

        moto forgets its tasks when the process ends; DMS keeps a continuous task, its checkpoint and
        its file names for as long as it exists. ``icetide local run`` saves them in the workspace.
        """
        saved = []
        for task in self._live_tasks():
            with task.lock:
                document = task.saved() if task.is_continuous() else None
            if document is not None:
                saved.append(document)
        return saved

    def restore_continuous_tasks(self, saved: Sequence[Mapping[str, Any]]) -> list[str]:
        """Create saved tasks again, with their target endpoints and tags, as they were: same
        identifiers and ARNs, status, checkpoint, file names and statistics; their ARNs.

        Call it inside ``mock_aws`` with the lifecycle installed, once the source endpoint the tasks
        read (found by its identifier) exists.
        """
        return [_restore(document) for document in saved]

    def fail_task(self, task_arn: str, message: str = "the task failed (test)") -> None:
        """Fail a running task as DMS fails one on a fatal error (a test's hook); resume it to go on."""
        with self._running_task(task_arn) as task:
            task.fail(message)

    def count_changes(self, task_arn: str, counted: TableStatistics) -> None:
        """Add ``counted``'s change counts to a running task's statistics (a test's hook): what the
        task counted for the changes of the CDC files a test writes into its folder as DMS would."""
        with self._running_task(task_arn) as task:
            task.table_statistics = _added(task.table_statistics, [counted])

    @contextlib.contextmanager
    def _running_task(self, task_arn: str) -> Iterator[LifecycleTask]:
        """The running task of that ARN, locked; DMS's faults for a missing or idle one."""
        task = next((task for task in self._live_tasks() if task.arn == task_arn), None)
        if task is None:
            raise ResourceNotFoundFault("Replication task could not be found.")
        with task.lock:
            if task.status != "running":
                raise InvalidResourceStateFault(f"Replication task {task.id} is {task.status}, not running")
            yield task

    def _live_tasks(self) -> list[LifecycleTask]:
        """The tasks that exist now, oldest first (not deleted, not of an earlier ``mock_aws``)."""
        with self._tasks_lock:
            tasks = list(self._tasks)
        return [task for task in tasks if task.is_live()]

    def _register(self, task: LifecycleTask) -> None:
        with self._tasks_lock:
            self._tasks.append(task)


class LifecycleTask(dms_models.FakeReplicationTask):
    """moto's replication task, moved along its lifecycle by describes (see the module docstring)."""

    def __init__(self, *, lifecycle: DmsLifecycle, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        # DMS refuses a bad mapping or bad settings when the task is created, not when it runs.
        _parse_table_mappings(self.table_mappings)
        _parse_task_settings(self.replication_task_settings)
        self.lifecycle = lifecycle
        self.account_id = kwargs["account_id"]
        self.stop_reason: str | None = None
        self.last_failure_message: str | None = None
        self.table_statistics: list[TableStatistics] = []
        self.created_cdc_start_position: str | None = None  # CreateReplicationTask's CdcStartPosition
        self.resource_identifier: str | None = None  # CreateReplicationTask's, set by standins.dms.arns
        self.cdc_start_position: str | None = None
        self.cdc_stop_position: str | None = None
        self.recovery_checkpoint: str | None = None
        self.last_cdc_file: str | None = None  # every later CDC file of the task sorts after it
        # ReplicationTaskStats.FreshStartDate: "started either with a fresh start or a target reload",
        # so a resume leaves it (moto reports every start as fresh).
        self.fresh_start_date: dt.datetime | None = None
        self._mover_error: str | None = None
        self._resuming = False
        # Describes (in the executions' threads) and catch-ups (in the caller's) both move its data.
        self.lock = threading.RLock()
        lifecycle._register(self)

    def start(
        self,
        start_type: str = "start-replication",
        cdc_start_position: str | None = None,
        cdc_stop_position: str | None = None,
    ) -> LifecycleTask:
        if self.status not in _STARTABLE_STATUSES:
            raise InvalidResourceStateFault(
                f"Replication task {self.id} is {self.status}; only a ready, stopped or failed task can start"
            )
        # DMS resumes where the task left off: a CDC task from its checkpoint, without a full load.
        self._resuming = start_type == RESUME_PROCESSING and bool(
            self._captures_changes and (cdc_start_position or self.recovery_checkpoint)
        )
        if start_type == RESUME_PROCESSING and cdc_start_position is None:
            cdc_start_position = self.recovery_checkpoint
        # A task created with a start position starts there unless the start names another; a
        # reload-target loads afresh and captures from the reload (what it loads holds the rest).
        if start_type != RELOAD_TARGET:
            cdc_start_position = cdc_start_position or self.created_cdc_start_position
        self.status = "starting"
        self.start_date = utcnow()
        self.cdc_start_position = cdc_start_position
        self.cdc_stop_position = cdc_stop_position
        self.stop_reason = None
        self.last_failure_message = None
        self._mover_error = None
        if not self._resuming:
            # A task started or reloaded afresh loads again: nothing of the previous attempt carries
            # over but the names of its CDC files, which go on increasing.
            self.table_statistics = []
            self.recovery_checkpoint = None
            self.fresh_start_date = self.start_date
        elif self.lifecycle.statistics_on_resume is StatisticsOnResume.RESET:
            self.table_statistics = []
        return self

    def stop(self) -> LifecycleTask:
        if self.status != "running":
            raise InvalidResourceStateFault(f"Replication task {self.id} is {self.status}, not running")
        self.status = "stopping"
        return self

    def delete(self) -> LifecycleTask:
        if self.status in _BUSY_STATUSES:
            raise InvalidResourceStateFault(
                f"Replication task {self.id} is {self.status}; stop it before deleting it"
            )
        self.status = "deleting"
        return self

    def advance(self) -> None:
        """One describe's worth of progress."""
        with self.lock:
            self._advance()

    def _advance(self) -> None:
        if self.status == "creating":
            self.status = "ready"
        elif self.status == "starting":
            self.status = "running"
            self._move_data()
        elif self.status == "running" and self._finishes():
            self._finish()
        elif self.status == "stopping":
            self._stopped(STOPPED_BY_USER)

    def fail(self, message: str) -> None:
        self.last_failure_message = message
        self._stopped(FATAL_ERROR, status="failed")

    def is_continuous(self) -> bool:
        """A CDC task without a stop position: it runs until someone stops it."""
        return self._captures_changes and self.cdc_stop_position is None

    def saved(self) -> dict[str, Any] | None:
        """The task, its target endpoint and its tags as a JSON document (see :func:`_restore`);
        None if one of its endpoints is gone (DMS would not run it either)."""
        backend = dms_models.dms_backends[self.account_id][self.region]
        endpoints = {endpoint.endpoint_arn: endpoint for endpoint in backend.endpoints.values()}
        source, target = endpoints.get(self.source_endpoint_arn), endpoints.get(self.target_endpoint_arn)
        if source is None or target is None:
            return None
        return {
            "region": self.region,
            "identifier": self.id,
            "resourceIdentifier": self.resource_identifier,
            "migrationType": self.migration_type,
            "tableMappings": self.table_mappings,
            "taskSettings": self.replication_task_settings,
            "replicationInstanceArn": self.replication_instance_arn,
            "sourceEndpointIdentifier": source.endpoint_identifier,
            "tags": backend.tagger.list_tags_for_resource(self.arn)["Tags"],
            "targetEndpoint": {
                "identifier": target.endpoint_identifier,
                "resourceIdentifier": target.id,
                "engineName": target.engine_name,
                "s3Settings": target.s3_settings,
                "serviceAccessRoleArn": target.service_access_role_arn,
                "tags": backend.tagger.list_tags_for_resource(target.endpoint_arn)["Tags"],
            },
            "status": self.status,
            "startDate": self.start_date.isoformat() if self.start_date else None,
            "freshStartDate": self.fresh_start_date.isoformat() if self.fresh_start_date else None,
            "stopReason": self.stop_reason,
            "lastFailureMessage": self.last_failure_message,
            "pendingFailure": self._mover_error,
            "createdCdcStartPosition": self.created_cdc_start_position,
            "cdcStartPosition": self.cdc_start_position,
            "recoveryCheckpoint": self.recovery_checkpoint,
            "lastCdcFile": self.last_cdc_file,
            "tableStatistics": [asdict(table) for table in self.table_statistics],
        }

    def restore_state(self, saved: Mapping[str, Any]) -> None:
        self.status = saved["status"]
        self.start_date = dt.datetime.fromisoformat(saved["startDate"]) if saved["startDate"] else None
        fresh = saved.get("freshStartDate")  # absent from a task saved before it was kept: not known
        self.fresh_start_date = dt.datetime.fromisoformat(fresh) if fresh else None
        self.stop_reason = saved["stopReason"]
        self.last_failure_message = saved["lastFailureMessage"]
        self._mover_error = saved["pendingFailure"]
        self.cdc_start_position = saved["cdcStartPosition"]
        self.recovery_checkpoint = saved["recoveryCheckpoint"]
        self.last_cdc_file = saved["lastCdcFile"]
        self.table_statistics = [TableStatistics(**table) for table in saved["tableStatistics"]]

    def is_live(self) -> bool:
        """Still in its backend: not deleted, and not left over from an earlier ``mock_aws``."""
        backend = dms_models.dms_backends[self.account_id][self.region]
        return backend.replication_tasks.get(self.arn) is self

    def runs_continuously(self) -> bool:
        """A running CDC task without a stop position, that has a checkpoint to go on from."""
        return (
            self.status == "running"
            and self._captures_changes
            and self.cdc_stop_position is None
            and self._mover_error is None
            and self.recovery_checkpoint is not None
        )

    def catch_up(self) -> None:
        """The changes since the checkpoint, written as DMS would have written them by now."""
        run = replace(
            self._run_description(), migration_type="cdc", cdc_start_position=self.recovery_checkpoint
        )
        error = self._call_mover(run, accumulate=True)
        if error is not None:
            self.fail(error)

    @property
    def _captures_changes(self) -> bool:
        return self.migration_type in _CDC_MIGRATION_TYPES

    def _finishes(self) -> bool:
        # A CDC task without a stop position keeps replicating until someone stops it; one with a
        # stop position stops once the replication instance's clock has reached it, or, when
        # windows end once read, at this describe: it read its window when it started running.
        if self._mover_error is not None:
            return True
        if self._captures_changes:
            stop = parse_stop_position(self.cdc_stop_position)
            reached = stop is not None and (self.lifecycle.windows_end_once_read or utcnow_aware() >= stop)
            return self.lifecycle.full_load_finishes and reached
        return self.lifecycle.full_load_finishes

    def _stop_already_past(self) -> bool:
        """True when, under the strict reading, the task's stop position has passed as it starts: it
        stops at once, having read nothing."""
        stop = parse_stop_position(self.cdc_stop_position) if self._captures_changes else None
        return (
            stop is not None
            and self.lifecycle.stop_position_reading is StopPositionReading.STRICT
            and stop <= utcnow_aware()
        )

    def _move_data(self) -> None:
        run = self._run_description()
        if self._resuming:
            run = replace(run, migration_type="cdc")  # from the checkpoint: no second full load
        if run.migration_type == "cdc" and not self.cdc_start_position:
            self.lifecycle.started_runs.append(run)
            self._mover_error = (
                "a cdc task needs CdcStartPosition (the RecoveryCheckpoint of an earlier task of the table); "
                "the task was started without one"
            )
            return
        slot_refusal = self._slot_refusal(run)
        if slot_refusal is not None:
            self.lifecycle.started_runs.append(run)
            self._mover_error = slot_refusal
            return
        if self._stop_already_past():
            # Nothing read: no file, no table, and the checkpoint is where the task was told to start.
            self.recovery_checkpoint = self.cdc_start_position or self.recovery_checkpoint
            return
        self._mover_error = self._call_mover(run, accumulate=self._resuming)

    def _slot_refusal(self, run: ReplicationTaskRun) -> str | None:
        """Why DMS would not run this task on its source's replication slot; None if it would.

        DMS API reference, PostgreSQLSettings.SlotName: DMS "verifies that the task was created with
        a valid setting of CdcStartPosition" and raises an error otherwise; the user guide says so of
        the task when it runs. A position is valid here if the change capture can read it (a
        checkpoint of this stand-in, or a PostgreSQL LSN).
        """
        slot = str((run.source_endpoint.get("PostgreSQLSettings") or {}).get("SlotName") or "")
        if not (self._captures_changes and slot):
            return None
        created = self.created_cdc_start_position
        if created is not None:
            try:
                parse_checkpoint(created, "postgres")
            except CheckpointUnreadable:
                pass
            else:
                return None
        return (
            f"the source endpoint names replication slot {slot!r}: DMS runs a task that reads it only if "
            f"the task was created with a valid CdcStartPosition, and this one was created with {created!r}"
        )

    def _call_mover(self, run: ReplicationTaskRun, *, accumulate: bool) -> str | None:
        """Run the mover; keep what it reports (change counts added to earlier ones when
        ``accumulate``); the failure message if it raised."""
        self.lifecycle.started_runs.append(run)
        try:
            moved = self.lifecycle.mover(run)
        except Exception as error:  # any mover failure is the task's failure, as in DMS
            self._wrote_cdc_file(error.last_cdc_file if isinstance(error, MoverFailed) else None)
            return f"{type(error).__name__}: {error}"
        if isinstance(moved, MoverResult):
            tables = list(moved.tables)
            self.recovery_checkpoint = moved.recovery_checkpoint or self.recovery_checkpoint
            self._wrote_cdc_file(moved.last_cdc_file)
        else:
            tables = list(moved)
        self.table_statistics = _added(self.table_statistics, tables) if accumulate else tables
        return None

    def _wrote_cdc_file(self, name: str | None) -> None:
        if name is not None and (self.last_cdc_file is None or name > self.last_cdc_file):
            self.last_cdc_file = name

    def _finish(self) -> None:
        if self._mover_error is not None:
            self.last_failure_message = self._mover_error
            self._stopped(FATAL_ERROR, status="failed")
        elif self._captures_changes:
            self._stopped(STOPPED_AT_SERVER_TIME)
        else:
            self._stopped(FULL_LOAD_FINISHED)

    def _stopped(self, reason: str, status: str = "stopped") -> None:
        self.status = status
        self.stop_reason = reason
        self.stop_date = utcnow()

    def _run_description(self) -> ReplicationTaskRun:
        backend = dms_models.dms_backends[self.account_id][self.region]
        endpoints = {endpoint.endpoint_arn: endpoint for endpoint in backend.endpoints.values()}
        source = endpoints.get(self.source_endpoint_arn)
        target = endpoints.get(self.target_endpoint_arn)
        return ReplicationTaskRun(
            task_arn=self.arn,
            task_identifier=self.id,
            migration_type=self.migration_type,
            table_mappings=_parse_table_mappings(self.table_mappings),
            task_settings=_parse_task_settings(self.replication_task_settings),
            source_endpoint=source.to_dict() if source else {},
            target_s3_settings=(target.s3_settings or {}) if target else {},
            cdc_start_position=self.cdc_start_position,
            cdc_stop_position=self.cdc_stop_position,
            last_cdc_file=self.last_cdc_file,
        )

    def to_dict(self) -> dict[str, Any]:
        described = super().to_dict()
        stats = described["ReplicationTaskStats"]
        loaded = [table for table in self.table_statistics if not table.errored]
        load_done = self.stop_reason == FULL_LOAD_FINISHED or (
            self.migration_type == "full-load-and-cdc"
            and self.status in ("running", "stopped")
            and self._mover_error is None
            and bool(self.table_statistics)
        )
        stats.update(
            FreshStartDate=self.fresh_start_date.isoformat() if self.fresh_start_date else None,
            TablesLoaded=len(loaded),
            TablesErrored=len(self.table_statistics) - len(loaded),
            FullLoadProgressPercent=100 if load_done else 0,
        )
        positions = {
            "CdcStartPosition": self.cdc_start_position or self.created_cdc_start_position,
            "CdcStopPosition": self.cdc_stop_position,
            "RecoveryCheckpoint": self.recovery_checkpoint,
        }
        described.update({name: value for name, value in positions.items() if value})
        if self.stop_reason:
            described["StopReason"] = self.stop_reason
        if self.last_failure_message:
            described["LastFailureMessage"] = self.last_failure_message
        return described


def utcnow_aware() -> dt.datetime:
    """The replication instance's clock (moto's, so a test that freezes time freezes it too), in UTC."""
    return utcnow().replace(tzinfo=dt.UTC)


def _restore(saved: Mapping[str, Any]) -> str:
    """Create a task saved by :meth:`LifecycleTask.saved` (and its target endpoint) again; its ARN."""
    dms = boto3.client("dms", region_name=saved["region"])
    sources = dms.describe_endpoints(
        Filters=[{"Name": "endpoint-id", "Values": [saved["sourceEndpointIdentifier"]]}]
    )["Endpoints"]
    if not sources:
        raise ResourceNotFoundFault(
            f"cannot restore replication task {saved['identifier']}: its source endpoint "
            f"{saved['sourceEndpointIdentifier']} does not exist"
        )
    target = saved["targetEndpoint"]
    optional = {"S3Settings": target["s3Settings"], "ServiceAccessRoleArn": target["serviceAccessRoleArn"]}
    target_arn = dms.create_endpoint(
        EndpointIdentifier=target["identifier"],
        EndpointType="target",
        EngineName=target["engineName"],
        ResourceIdentifier=target["resourceIdentifier"],
        Tags=target["tags"],
        **{name: value for name, value in optional.items() if value},
    )["Endpoint"]["EndpointArn"]
    task_settings = {"ReplicationTaskSettings": saved["taskSettings"]} if saved["taskSettings"] else {}
    if saved.get("createdCdcStartPosition"):
        task_settings["CdcStartPosition"] = saved["createdCdcStartPosition"]
    if saved.get("resourceIdentifier"):
        task_settings["ResourceIdentifier"] = saved["resourceIdentifier"]
    task_arn = str(
        dms.create_replication_task(
            ReplicationTaskIdentifier=saved["identifier"],
            SourceEndpointArn=sources[0]["EndpointArn"],
            TargetEndpointArn=target_arn,
            ReplicationInstanceArn=saved["replicationInstanceArn"],
            MigrationType=saved["migrationType"],
            TableMappings=saved["tableMappings"],
            Tags=saved["tags"],
            **task_settings,
        )["ReplicationTask"]["ReplicationTaskArn"]
    )
    task = dms_models.dms_backends[task_arn.split(":")[4]][saved["region"]].replication_tasks[task_arn]
    if not isinstance(task, LifecycleTask):
        raise TypeError("restore_continuous_tasks needs the lifecycle installed (DmsLifecycle.install)")
    task.restore_state(saved)
    return task_arn


def _added(earlier: Sequence[TableStatistics], later: Sequence[TableStatistics]) -> list[TableStatistics]:
    """``later``'s tables, each with the change rows ``earlier`` counted for it added."""
    counted = {(table.schema, table.table): table for table in earlier}
    added = [
        counted[(table.schema, table.table)].plus(table) if (table.schema, table.table) in counted else table
        for table in later
    ]
    reported = {(table.schema, table.table) for table in later}
    return [*added, *(table for table in earlier if (table.schema, table.table) not in reported)]


def _parse_table_mappings(text: str | None) -> dict[str, Any]:
    mappings = _json_object(text or "", "table mappings")
    if not isinstance(mappings.get("rules"), list):
        raise InvalidParameterValueException("Invalid table mappings: expected an object with a 'rules' list")
    try:
        parse_table_mapping(mappings)
    except TableMappingError as error:
        raise InvalidParameterValueException(f"Invalid table mappings: {error}") from None
    return mappings


def _parse_task_settings(text: str | None) -> dict[str, Any]:
    return _json_object(text, "task settings") if text else {}  # none given: DMS's defaults apply


def _json_object(text: str, what: str) -> dict[str, Any]:
    try:
        document = json.loads(text)
    except json.JSONDecodeError as error:
        raise InvalidParameterValueException(f"Invalid {what}: not JSON ({error})") from None
    if not isinstance(document, dict):
        raise InvalidParameterValueException(f"Invalid {what}: expected a JSON object")
    return document


def _advancing_describe() -> Callable[..., Any]:
    original = dms_models.DatabaseMigrationServiceBackend.describe_replication_tasks

    def describe_replication_tasks(self: Any, filters: list[dict[str, Any]], max_records: int) -> Any:
        tasks = original(self, filters, max_records)
        for task in tasks:
            if isinstance(task, LifecycleTask):
                task.advance()
        return tasks

    return describe_replication_tasks


def _guarded_instance_delete() -> Callable[..., Any]:
    original = dms_models.DatabaseMigrationServiceBackend.delete_replication_instance

    def delete_replication_instance(self: Any, replication_instance_arn: str) -> Any:
        attached = [
            task.id
            for task in self.replication_tasks.values()
            if task.replication_instance_arn == replication_instance_arn
        ]
        if attached:
            raise InvalidResourceStateFault(
                f"Replication instance {replication_instance_arn} still has tasks: {', '.join(attached)}"
            )
        return original(self, replication_instance_arn)

    return delete_replication_instance


_CREATE_TASK_RESPONSE = DatabaseMigrationServiceResponse.create_replication_task


def _create_replication_task_response(self: DatabaseMigrationServiceResponse) -> str:
    """moto's ``CreateReplicationTask`` action, keeping the ``CdcStartPosition`` moto drops."""
    created = json.loads(_CREATE_TASK_RESPONSE(self))
    task = self.dms_backend.replication_tasks[created["ReplicationTask"]["ReplicationTaskArn"]]
    if isinstance(task, LifecycleTask):
        task.created_cdc_start_position = self._get_param("CdcStartPosition") or None
        created["ReplicationTask"] = task.to_dict()
    return json.dumps(created)


def _start_replication_task(
    self: Any,
    replication_task_arn: str,
    start_type: str = "start-replication",
    cdc_start_position: str | None = None,
    cdc_stop_position: str | None = None,
) -> Any:
    task = self.replication_tasks.get(replication_task_arn)
    if task is None:
        raise ResourceNotFoundFault("Replication task could not be found.")
    if isinstance(task, LifecycleTask):
        return task.start(start_type, cdc_start_position, cdc_stop_position)
    return task.start()


def _start_replication_task_response(self: DatabaseMigrationServiceResponse) -> str:
    """moto's ``StartReplicationTask`` action, passing on the start type and the CDC positions."""
    task = self.dms_backend.start_replication_task(  # type: ignore[call-arg]  # patched by install()
        self._get_param("ReplicationTaskArn"),
        self._get_param("StartReplicationTaskType") or "start-replication",
        self._get_param("CdcStartPosition"),
        self._get_param("CdcStopPosition"),
    )
    return json.dumps({"ReplicationTask": task.to_dict()})


def _describe_table_statistics(self: DatabaseMigrationServiceResponse) -> str:
    """The ``DescribeTableStatistics`` action moto lacks (filters: schema-name, table-name, table-state)."""
    task_arn = self._get_param("ReplicationTaskArn")
    task = self.dms_backend.replication_tasks.get(task_arn)
    if task is None:
        raise ResourceNotFoundFault("Replication task could not be found.")
    wanted = {
        "schema-name": "SchemaName",
        "table-name": "TableName",
        "table-state": "TableState",
    }
    rows = [table.to_dms() for table in getattr(task, "table_statistics", [])]
    for condition in self._get_param("Filters", []):
        key = wanted.get(condition["Name"])
        if key is None:
            raise InvalidParameterValueException(f"Unsupported table statistics filter {condition['Name']!r}")
        rows = [row for row in rows if row[key] in condition["Values"]]
    return json.dumps({"ReplicationTaskArn": task_arn, "TableStatistics": rows})


@contextlib.contextmanager
def _instance_transition(describes: int) -> Iterator[None]:
    # moto's replication instances are a ManagedState: "manual" progression moves them to
    # available after that many describes.
    transition = {"progression": "manual", "times": describes} if describes else {"progression": "immediate"}
    state_manager.set_transition(_INSTANCE_MODEL, transition)
    try:
        yield
    finally:
        state_manager.unset_transition(_INSTANCE_MODEL)
