"""StartWorkflow: on each schedule event, start one table-run execution per active, valid table.

Input: an EventBridge scheduled event (its ``time`` picks the slot) or ``{}`` (now). Output:
``{"slot", "started", "alreadyStarted", "locked", "inactive", "invalid", "retired"}`` (docs/contracts.md).
A table whose lock a live run holds is not started but listed under ``locked`` (its run would only
fail at the lock) when that run is a maintenance run, or when the table is continuous (an
event-started run merges what this one would); a delta or windowed cdc table held by another merge
run is started, and refused at the lock, as before. An inactive continuous cdc table's
long-lived task is taken one step further towards deleted (stop, delete the task, delete its
endpoint): ``retired`` says which step, per table.
Each event also publishes every active table's ``LagSeconds`` (table dimension) and the largest as
``MaxLagSeconds`` (the stack's freshness alarm; icetide.run.freshness), and ``InvalidControlItems``.
"""

from __future__ import annotations

import functools
from typing import Any

from aws_lambda_powertools.utilities.typing import LambdaContext

from icetide.adapters import stepfunctions
from icetide.clock import utc_now
from icetide.control.model import ControlItem
from icetide.dms.identifiers import is_maintenance_run_id, run_id, schedule_slot
from icetide.observability import MetricUnit, logger, metrics, observed, publish_table_metrics
from icetide.run import freshness, scheduling
from icetide.run.handler_inputs import ScheduleEvent, parse_input
from icetide.run.locking import live_lock_holder
from icetide.run.retire import retire_step
from icetide.run.starts import PlannedRun, start_runs, triaged_control_items
from icetide.settings import load_settings


def _waits_for(item: ControlItem, holder: str) -> bool:
    """True when this slot's run of ``item`` is better not started while ``holder`` runs.

    Event-started runs of a continuous table come every few minutes: the one going on merges what
    this run would. A maintenance run holds the lock for minutes to hours, by schedule: the merge
    run would only fail at the lock (a failed execution, an alarm); the next slot merges instead.
    """
    return item.is_continuous or is_maintenance_run_id(holder)


def _publish_lags(items: list[ControlItem]) -> None:
    """Each table's lag, and the largest for the stack: an alarm cannot iterate tables, so this
    hourly look at every item is where a table that stopped loading shows."""
    now = utc_now()
    caught_up = {item.target_table_name: freshness.item_caught_up_time(item) for item in items}
    for table, moment in caught_up.items():
        freshness.warn_if_ahead_of_clock(table, moment, now)
    lags = {table: freshness.lag_from(now, moment) for table, moment in caught_up.items()}
    known = {table: lag for table, lag in lags.items() if lag is not None}
    for table, lag in known.items():
        publish_table_metrics(table, [("LagSeconds", MetricUnit.Seconds, lag)])
    if known:
        metrics.add_metric(name="MaxLagSeconds", unit=MetricUnit.Seconds, value=max(known.values()))
    unknown = sorted(table for table, lag in lags.items() if lag is None)
    if unknown:
        logger.info("lag unknown: no timestamp watermark and no successful run", extra={"tables": unknown})


@observed(correlation_id_path=None)
def handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    settings = load_settings()
    state_machine_arn = settings.require("state_machine_arn")
    scheduled_time = parse_input(ScheduleEvent, event).time or utc_now()
    slot_start = schedule_slot(scheduled_time, settings.schedule_slot_minutes)

    triaged = triaged_control_items(settings.control_table_name)
    for item in triaged.runnable:
        if item.notes:  # values the item sets that no run uses: worth fixing, not worth skipping the table
            logger.warning(
                "control item values ignored",
                extra={"targetTableName": item.target_table_name, "notes": list(item.notes)},
            )

    retired: dict[str, str] = {}
    for item in triaged.retiring:  # turned off: one step towards no task, whatever the others do
        try:
            retired[item.target_table_name] = retire_step(
                settings.require("stack_name"), item.target_table_name
            )
        except Exception as error:
            logger.exception(
                "could not turn off the continuous task", extra={"table": item.target_table_name}
            )
            retired[item.target_table_name] = f"error: {error}"
    if retired:
        logger.info("continuous tasks of inactive tables", extra={"retired": retired})

    _publish_lags(triaged.runnable)

    summary = scheduling.ScheduleSummary(slot_start=slot_start)
    now = utc_now()
    runs = []
    for item in triaged.runnable:
        run = run_id(item.target_table_name, slot_start)
        holder = live_lock_holder(item, now, settings.lock_stale_after_seconds)
        runs.append(
            PlannedRun(
                item.target_table_name,
                run,
                scheduling.execution_input(item.target_table_name, run, scheduled_time),
                locked_by=holder if holder is not None and _waits_for(item, holder) else None,
            )
        )
    start_runs(runs, functools.partial(stepfunctions.start_execution_once, state_machine_arn), summary)
    for run, reason in summary.failed.items():
        logger.error("could not start run", extra={"runId": run, "reason": reason})

    logger.info(
        "schedule event handled",
        extra={
            "started": summary.started,
            "alreadyStarted": summary.already_started,
            "failed": summary.failed,
        },
    )
    metrics.add_metric(name="RunsStarted", unit=MetricUnit.Count, value=len(summary.started))
    metrics.add_metric(name="InvalidControlItems", unit=MetricUnit.Count, value=len(triaged.invalid))
    return summary.finish(triaged) | {"retired": retired}
