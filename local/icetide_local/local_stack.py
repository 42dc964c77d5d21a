"""The local stack: the whole of icetide on this machine, moving data from a real database to Iceberg.

:class:`LocalStack` extends the state-machine test harness
(:class:`icetide_local.stepfunctions.TableRunHarness`) with real data movement: the DMS stand-in's
tasks run the replicator against a real source database, the Glue stand-in's job runs are the real
Spark job on a local Iceberg warehouse, and a cycle starts the way it does in AWS, with an
EventBridge scheduled event sent to the real StartWorkflow Lambda. ``icetide local run`` and the
demo use it through :mod:`icetide_local.workspace_cycle`.

DMS's continuous tasks write change files all the time; the stand-in's write them when a cycle
starts (:meth:`LocalStack.start_workflow`), before any of the cycle's executions.
"""

from __future__ import annotations

import json
import logging
import os
import uuid
from collections.abc import Mapping
from dataclasses import replace
from datetime import datetime
from pathlib import Path
from typing import Any, TextIO
from unittest import mock

from icetide.adapters.stepfunctions import execution_arn
from icetide.clock import stored_time
from icetide.control.codec import from_typed_json
from icetide_local.cycle_report import CycleReport, TableRun
from icetide_local.execution_progress import ExecutionWatcher
from icetide_local.progress import SILENT, RunProgress
from icetide_local.spark_progress import SparkProgressRunner
from icetide_local.standins.dms.cdc import DEFAULT_SLOT_NAME
from icetide_local.standins.dms.data_mover import replicator_mover, source_endpoint_settings
from icetide_local.standins.dms.lifecycle import DmsLifecycle
from icetide_local.standins.glue_spark import SparkGlueJob, SparkMaintenanceJob
from icetide_local.stepfunctions import RunReport, TableRunHarness

# Waits and bounds of the state machine (DefinitionSubstitutions). The DMS stand-in moves a task one
# status per describe, so polling without waiting finishes a full load in a few polls, and a windowed
# cdc task too: it stops at the describe after it read its window (DmsLifecycle's
# windows_end_once_read). The bound on polls is a backstop for a task that would not stop.
FAST_WAITS = {
    "PollSeconds": "0",
    "MaxPollWaitSeconds": "1",
    "MaxPolls": "600",
    "InstanceCheckSeconds": "0",
    "MaxInstanceChecks": "5",
}
LOCAL_ENVIRONMENT = {
    # Local cycles come faster than hourly; one-minute slots keep their run ids apart.
    "SCHEDULE_SLOT_MINUTES": "1",
    # Powertools would print a metrics document per invocation; nobody collects them locally.
    "POWERTOOLS_METRICS_DISABLED": "true",
}
START_WORKFLOW = "start_workflow"
START_MAINTENANCE = "start_maintenance"
# What a deployer names as ContinuousReplicationInstanceArn: the long-lived instance continuous
# tables' tasks run on. Recreated under the same identifier (so the same ARN) by every process,
# which is what the saved continuous tasks refer to.
CONTINUOUS_INSTANCE = "icetide-local-continuous"
DEFAULT_EXECUTION_TIMEOUT_SECONDS = 1800.0


class StartWorkflowFailed(RuntimeError):
    """The StartWorkflow (or StartMaintenance) Lambda returned a function error; no cycle ran (or
    only part of one)."""


class LocalStack(TableRunHarness):
    """The table-run harness with real data movement, plus the StartWorkflow function that starts cycles.

    ``source_url`` is the source database (SQLAlchemy URL); silver tables go to ``warehouse``.
    ``handler_log`` receives the handlers' Powertools log lines (default: standard output);
    ``progress`` what the stack does while it runs (each table's state, Spark's progress).
    ``windows_end_once_read`` (the default): a windowed cdc task stops once it has read its window
    (:class:`~icetide_local.standins.dms.lifecycle.DmsLifecycle`); False: when the instance's clock
    reaches its stop position, as on AWS (the acceptance dry run).
    """

    def __init__(
        self,
        *,
        source_url: str,
        warehouse: Path,
        progress: RunProgress = SILENT,
        handler_log: TextIO | None = None,
        substitutions: Mapping[str, str] | None = None,
        windows_end_once_read: bool = True,
    ) -> None:
        self.progress = progress
        self.glue_job = SparkGlueJob(warehouse, progress=progress.message)
        super().__init__(
            substitutions={**FAST_WAITS, **(substitutions or {})},
            glue_runner=SparkProgressRunner(self.glue_job, progress),
            maintenance_runner=SparkProgressRunner(
                SparkMaintenanceJob(warehouse, progress=progress.message), progress
            ),
            # A windowed task's wait after it read is a wait in which nothing happens here.
            dms=DmsLifecycle(mover=replicator_mover(source_url), windows_end_once_read=windows_end_once_read),
            # A PostgreSQL source endpoint names the replication slot CDC tasks read, as on AWS.
            source_endpoint_settings=source_endpoint_settings(source_url, slot_name=DEFAULT_SLOT_NAME),
            environment=LOCAL_ENVIRONMENT,
            # No time_scale: these runs wait on real work (the replicator, Spark), which shorter
            # pauses would only poll more.
        )
        self.start_workflow_function = ""
        self.start_maintenance_function = ""
        self._handler_log = handler_log
        self._interpreter_log = logging.getLogger("moto.stepfunctions.parser")
        self._interpreter_log_level = self._interpreter_log.level
        self._region_environment = mock.patch.dict(
            os.environ,
            # Local Spark listens on loopback only (and stops warning about the host's address).
            {
                "AWS_DEFAULT_REGION": self.names.region,
                "SPARK_LOCAL_IP": os.environ.get("SPARK_LOCAL_IP", "127.0.0.1"),
            },
        )

    def _provision(self) -> None:
        arn = self.client("dms").create_replication_instance(
            ReplicationInstanceIdentifier=CONTINUOUS_INSTANCE,
            ReplicationInstanceClass="dms.t3.medium",
            PubliclyAccessible=False,
        )["ReplicationInstance"]["ReplicationInstanceArn"]
        self._environment_overrides["CONTINUOUS_REPLICATION_INSTANCE_ARN"] = arn
        super()._provision()

    def __enter__(self) -> LocalStack:
        # The replicator and the Glue job make their own boto3 clients; they need the stack's region
        # even when the user's shell names none.
        self._region_environment.start()
        # moto's Step Functions interpreter logs every failed state as a repr of its internals; the
        # failure reaches the user through the control item and the cycle report instead.
        self._interpreter_log.setLevel(logging.CRITICAL)
        previous_log = self._redirect_handler_log()
        try:
            super().__enter__()
            self.start_workflow_function = self._create_function(START_WORKFLOW)
            self.start_maintenance_function = self._create_function(START_MAINTENANCE)
            # The harness sets each function's variables around its invocation and removes them after.
            # Other threads (Spark starting its JVM, botocore) copy os.environ meanwhile, and a key
            # vanishing mid-copy raises KeyError there. Set for the stack's whole life, the variables
            # only ever change value; the patch above removes them again at exit.
            os.environ.update(self.lambda_environment())
        except BaseException:
            self._restore(previous_log)
            raise
        self._previous_log = previous_log
        return self

    def __exit__(self, *exc_info: Any) -> None:
        try:
            super().__exit__(*exc_info)
        finally:
            self._restore(self._previous_log)

    def _redirect_handler_log(self) -> TextIO | None:
        if self._handler_log is None:
            return None
        return _swap_stream(self._handler_log)

    def _restore(self, previous_log: TextIO | None) -> None:
        if previous_log is not None:
            _swap_stream(previous_log)
        self._interpreter_log.setLevel(self._interpreter_log_level)
        self._region_environment.stop()

    # -- control items -------------------------------------------------------------------------------

    def put_typed_items(self, items: list[dict[str, Any]]) -> None:
        """Write control items given in DynamoDB typed JSON (as a workspace saves them)."""
        dynamodb = self.client("dynamodb")
        for item in items:
            dynamodb.put_item(TableName=self.names.control_table, Item=item)

    def typed_items(self) -> list[dict[str, Any]]:
        """Every control item, in DynamoDB typed JSON."""
        pages = (
            self.client("dynamodb")
            .get_paginator("scan")
            .paginate(TableName=self.names.control_table, ConsistentRead=True)
        )
        return [item for page in pages for item in page["Items"]]

    def plain_items(self) -> dict[str, dict[str, Any]]:
        """Every control item as plain values, by table name."""
        plain = (from_typed_json(item) for item in self.typed_items())
        return {str(item["targetTableName"]): item for item in plain}

    # -- cycles --------------------------------------------------------------------------------------

    def run_cycle(
        self, scheduled_time: datetime, timeout_seconds: float = DEFAULT_EXECUTION_TIMEOUT_SECONDS
    ) -> CycleReport:
        """One schedule event: StartWorkflow starts a run per active table; wait for every run."""
        before = self.plain_items()
        summary = self.start_workflow(scheduled_time)
        names = [*summary["started"], *summary["alreadyStarted"]]
        self.progress.message(
            f"cycle {summary['slot']}: {len(names)} run(s) started: {', '.join(names) or 'none'}"
        )
        arns = [execution_arn(self.state_machine_arn, name) for name in names]
        reports = self.wait_watched(arns, timeout_seconds)
        runs = [self._finished_run(report, before) for report in reports]
        after = self.plain_items()
        return CycleReport(
            slot=summary["slot"],
            runs=tuple(replace(run, item_after=after.get(run.target_table_name, {})) for run in runs),
            inactive=tuple(summary["inactive"]),
            invalid=tuple(summary["invalid"]),
        )

    def start_workflow(self, scheduled_time: datetime) -> dict[str, Any]:
        """Invoke StartWorkflow as the hourly EventBridge rule does; its output.

        First every running continuous DMS task writes the CDC files of the source's changes since
        its last position, as DMS would have written them while no cycle ran: the only place the
        local stack makes them catch up.
        """
        caught_up = self.dms.catch_up_running_tasks()
        if caught_up:
            self.progress.message(f"DMS stand-in: {len(caught_up)} continuous task(s) caught up")
        return self._invoke_scheduled(self.start_workflow_function, "StartWorkflow", scheduled_time)

    def start_maintenance_schedule(self, scheduled_time: datetime) -> dict[str, Any]:
        """Invoke StartMaintenance as the daily EventBridge rule does; its output (what it started)."""
        return self._invoke_scheduled(self.start_maintenance_function, "StartMaintenance", scheduled_time)

    def _invoke_scheduled(self, function: str, name: str, scheduled_time: datetime) -> dict[str, Any]:
        response = self.client("lambda").invoke(
            FunctionName=function, Payload=json.dumps(self._scheduled_event(scheduled_time)).encode()
        )
        payload = json.loads(response["Payload"].read() or b"null")
        if response.get("FunctionError"):
            error = f"{payload.get('errorType')}: {payload.get('errorMessage')}"
            raise StartWorkflowFailed(f"{name} failed: {error}")
        return dict(payload)

    def _scheduled_event(self, scheduled_time: datetime) -> dict[str, Any]:
        account = self.state_machine_arn.split(":")[4]
        region = self.names.region
        return {
            "version": "0",
            "id": str(uuid.uuid4()),
            "detail-type": "Scheduled Event",
            "source": "aws.events",
            "account": account,
            "time": stored_time(scheduled_time),
            "region": region,
            "resources": [f"arn:aws:events:{region}:{account}:rule/icetide-local-schedule"],
            "detail": {},
        }

    def wait_watched(self, execution_arns: list[str], timeout_seconds: float) -> list[RunReport]:
        """Wait for each execution in turn (up to ``timeout_seconds`` each); their reports.

        Meanwhile every table's state goes to ``progress`` as its execution moves, all tables at once,
        read from the executions' histories (icetide_local.execution_progress).
        """
        watcher = ExecutionWatcher(self.client("stepfunctions"), self.progress)
        for arn in execution_arns:
            watcher.watch(arn)
        reports = []
        for arn in execution_arns:
            reports.append(self.wait(arn, timeout_seconds, watch=watcher.poll))
            watcher.poll(force=True)  # the end of this one, whenever the last poll came
        return reports

    def _finished_run(self, report: RunReport, before: Mapping[str, dict[str, Any]]) -> TableRun:
        """The run's outcome; its item after the run is filled in once every run has finished."""
        described = self.client("stepfunctions").describe_execution(executionArn=report.execution_arn)
        table = json.loads(described["input"])["targetTableName"]
        started, stopped = described["startDate"], described.get("stopDate")
        return TableRun(
            target_table_name=table,
            run_id=described["name"],
            status=report.status,
            started=started,
            stopped=stopped,
            error=report.error,
            cause=report.cause,
            item_before=before.get(table, {}),
            item_after={},
        )


def _swap_stream(stream: TextIO) -> TextIO:
    """Point the handlers' Powertools log handler at `stream`; the stream it had.

    Not ``setStream``: that flushes the old stream first, which fails when it is a stream someone
    has closed since (pytest's captured stdout of an earlier test, for one).
    """
    from icetide.observability import logger  # the handlers' one logger

    handler = logger.registered_handler
    if not isinstance(handler, logging.StreamHandler):
        raise TypeError(f"the Powertools logger writes through a {type(handler).__name__}, not a stream")
    handler.acquire()
    try:
        previous, handler.stream = handler.stream, stream
    finally:
        handler.release()
    return previous
