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
                                                                 next describe)
    running -> failed   "Stop Reason FATAL_ERROR" + LastFailureMessage  (the data mover raised, or a
                                                                 cdc task has no CdcStartPosition)
    running -> stopping -> stopped "Stop Reason NORMAL"         (stop_replication_task)

A CDC task (``full-load-and-cdc`` or ``cdc``) without ``CdcStopPosition`` keeps running until it is
stopped. ``start_replication_task``'s ``CdcStartPosition`` and ``CdcStopPosition``, which moto drops,
are kept on the task, shown by ``describe_replication_tasks`` with the ``RecoveryCheckpoint`` the mover
reported, and passed to the mover.

and refuses what DMS refuses: creating a task whose table mapping DMS (or the stand-in) would not
run (:func:`icetide_local.standins.dms.replicator.parse_table_mapping`), starting a task that is not
ready, deleting a task that is running or stopping, deleting an instance that still has tasks,
creating an endpoint whose identifier is taken (:mod:`icetide_local.standins.dms.endpoints`).

Data movement is pluggable: a :data:`DataMover` is called when a task starts running, with the task's
table mapping, settings, CDC positions and endpoints (:class:`ReplicationTaskRun`), and returns the
tables' statistics, or a :class:`MoverResult` that adds the CDC checkpoint. The default mover moves
nothing; the local stack plugs in the replicator that copies source rows and changes into bronze
parquet files.
"""

from __future__ import annotations

import contextlib
import functools
import json
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any
from unittest import mock

from moto.core.exceptions import JsonRESTError
from moto.core.utils import utcnow
from moto.dms import models as dms_models
from moto.dms.exceptions import InvalidResourceStateFault, ResourceNotFoundFault
from moto.dms.responses import DatabaseMigrationServiceResponse
from moto.moto_api import state_manager

from icetide_local.standins.dms.endpoints import unique_endpoint_identifiers
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

    def selected_tables(self) -> list[tuple[str, str]]:
        """(schema, table) of every ``include`` selection rule, in rule order."""
        return [
            (rule["object-locator"]["schema-name"], rule["object-locator"]["table-name"])
            for rule in self.table_mappings.get("rules", [])
            if rule.get("rule-type") == "selection" and rule.get("rule-action") == "include"
        ]


@dataclass(frozen=True)
class MoverResult:
    """What a data mover of a CDC task reports: the tables' statistics and the ``RecoveryCheckpoint``."""

    tables: tuple[TableStatistics, ...]
    recovery_checkpoint: str | None = None


DataMover = Callable[[ReplicationTaskRun], Sequence[TableStatistics] | MoverResult]
"""Moves a task's data; raising makes the task fail with the exception's text as LastFailureMessage.

A mover that captures no changes may return just the tables' statistics."""


def no_data_movement(run: ReplicationTaskRun) -> list[TableStatistics]:
    """The default mover: copies nothing and reports every selected table as loaded with 0 rows."""
    return [TableStatistics(schema=schema, table=table) for schema, table in run.selected_tables()]


@dataclass
class DmsLifecycle:
    """How the stand-in's tasks behave; :meth:`install` puts it into moto's DMS backend.

    ``full_load_finishes=False`` keeps every task running forever (a load that never ends), and
    ``instance_describes_until_available`` is how many describes a new replication instance stays
    ``creating`` before it is ``available`` (moto's default is 1; 0 makes it available at once).
    """

    mover: DataMover = no_data_movement
    full_load_finishes: bool = True
    instance_describes_until_available: int = 1
    started_runs: list[ReplicationTaskRun] = field(default_factory=list)

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
            # moto drops StartReplicationTask's CDC positions: these keep them.
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
            yield self


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
        self.cdc_start_position: str | None = None
        self.cdc_stop_position: str | None = None
        self.recovery_checkpoint: str | None = None
        self._mover_error: str | None = None

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
        if start_type == "resume-processing" and cdc_start_position is None:
            cdc_start_position = self.recovery_checkpoint  # DMS resumes where the task left off
        self.status = "starting"
        self.start_date = utcnow()
        self.cdc_start_position = cdc_start_position
        self.cdc_stop_position = cdc_stop_position
        # A restarted task loads again: nothing of the previous attempt carries over.
        self.stop_reason = None
        self.last_failure_message = None
        self.table_statistics = []
        self.recovery_checkpoint = None
        self._mover_error = None
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
        if self.status == "creating":
            self.status = "ready"
        elif self.status == "starting":
            self.status = "running"
            self._move_data()
        elif self.status == "running" and self._finishes():
            self._finish()
        elif self.status == "stopping":
            self._stopped(STOPPED_BY_USER)

    @property
    def _captures_changes(self) -> bool:
        return self.migration_type in _CDC_MIGRATION_TYPES

    def _finishes(self) -> bool:
        # A CDC task without a stop position keeps replicating until someone stops it.
        if self._mover_error is not None:
            return True
        if self._captures_changes:
            return self.lifecycle.full_load_finishes and self.cdc_stop_position is not None
        return self.lifecycle.full_load_finishes

    def _move_data(self) -> None:
        run = self._run_description()
        self.lifecycle.started_runs.append(run)
        if self.migration_type == "cdc" and not self.cdc_start_position:
            self._mover_error = (
                "a cdc task needs CdcStartPosition (the RecoveryCheckpoint of an earlier task of the table); "
                "the task was started without one"
            )
            return
        try:
            moved = self.lifecycle.mover(run)
        except Exception as error:  # any mover failure is the task's failure, as in DMS
            self._mover_error = f"{type(error).__name__}: {error}"
            return
        if isinstance(moved, MoverResult):
            self.table_statistics = list(moved.tables)
            self.recovery_checkpoint = moved.recovery_checkpoint
        else:
            self.table_statistics = list(moved)

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
            TablesLoaded=len(loaded),
            TablesErrored=len(self.table_statistics) - len(loaded),
            FullLoadProgressPercent=100 if load_done else 0,
        )
        positions = {
            "CdcStartPosition": self.cdc_start_position,
            "CdcStopPosition": self.cdc_stop_position,
            "RecoveryCheckpoint": self.recovery_checkpoint,
        }
        described.update({name: value for name, value in positions.items() if value})
        if self.stop_reason:
            described["StopReason"] = self.stop_reason
        if self.last_failure_message:
            described["LastFailureMessage"] = self.last_failure_message
        return described


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
