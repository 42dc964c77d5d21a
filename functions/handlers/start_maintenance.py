"""StartMaintenance: on each maintenance schedule event, start one maintenance execution per table.

Input: an EventBridge scheduled event (its ``time`` picks the maintenance slot,
``MAINTENANCE_SLOT_MINUTES``, a day by default) or ``{}`` (now). Output: ``{"slot", "started",
"alreadyStarted", "locked", "disabled", "inactive", "invalid", "failed"}`` (docs/contracts.md).
Each active, valid table whose item leaves maintenance on gets one execution of the maintenance
state machine, named ``<table>-maintain-<slot>``, so a repeated event starts nothing new. A table
whose lock a live run holds is listed under ``locked`` with that run, not started: a refusal, not a
failure; the next slot maintains it. One table's failed start is listed under ``failed`` (and
counted in ``MaintenanceStartFailures``) and never holds back the others.
"""

from __future__ import annotations

import dataclasses
import functools
from typing import Any

from aws_lambda_powertools.utilities.typing import LambdaContext

from icetide.adapters import stepfunctions
from icetide.clock import utc_now
from icetide.dms.identifiers import maintenance_run_id, schedule_slot
from icetide.maintenance.schedule import maintenance_due
from icetide.observability import MetricUnit, logger, metrics, observed
from icetide.run import scheduling
from icetide.run.handler_inputs import ScheduleEvent, parse_input
from icetide.run.locking import live_lock_holder
from icetide.run.starts import PlannedRun, start_runs, triaged_control_items
from icetide.settings import load_settings


@observed(correlation_id_path=None)
def handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    settings = load_settings()
    state_machine_arn = settings.require("maintenance_state_machine_arn")
    scheduled_time = parse_input(ScheduleEvent, event).time or utc_now()
    slot_start = schedule_slot(scheduled_time, settings.maintenance_slot_minutes)

    triaged = triaged_control_items(settings.control_table_name)
    due = maintenance_due(triaged.runnable)

    now = utc_now()
    runs = []
    for item in due.due:
        run = maintenance_run_id(item.target_table_name, slot_start)
        runs.append(
            PlannedRun(
                item.target_table_name,
                run,
                scheduling.execution_input(item.target_table_name, run, scheduled_time),
                locked_by=live_lock_holder(item, now, settings.lock_stale_after_seconds),
            )
        )
    summary = scheduling.ScheduleSummary(slot_start=slot_start)
    start_runs(runs, functools.partial(stepfunctions.start_execution_once, state_machine_arn), summary)

    for run, reason in summary.failed.items():
        logger.error("could not start maintenance run", extra={"runId": run, "reason": reason})
    if summary.locked:
        logger.info("tables held by a live run: maintained next slot", extra={"locked": summary.locked})
    metrics.add_metric(name="MaintenanceRunsStarted", unit=MetricUnit.Count, value=len(summary.started))
    metrics.add_metric(name="MaintenanceStartFailures", unit=MetricUnit.Count, value=len(summary.failed))
    # The failures are reported in the output, not raised: the others were started, and the next
    # slot tries again (a retried invocation would start nothing new anyway).
    reported = dataclasses.replace(summary, failed={}).finish(triaged)
    return reported | {"disabled": due.disabled, "failed": summary.failed}
