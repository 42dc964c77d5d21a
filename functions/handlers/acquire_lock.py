"""AcquireLock: take the table's lock for this run and fix the run's plan.

Input: ``{"targetTableName", "runId", "execution"?: {"input", "startTime"}}`` (the execution's
input and start time: a scheduled run's ``scheduledTime`` fixes its slot, hence a cdc run's stop
position and whether it reconciles; without it the run is timed by its start).
Output: ``{"plan": RunPlan}``. Raises ControlItemNotFound,
InvalidControlItem (checked before the lock is taken, so a broken item never holds its table),
TableLocked (another live run holds the lock; the message names it and since when) and its kind
TableUnderMaintenance; either refusal is counted as ``RunsRefused`` of the table, never as a failure.
"""

from __future__ import annotations

from typing import Any

from aws_lambda_powertools.utilities.typing import LambdaContext

from icetide.adapters.control_table import ControlTable
from icetide.clock import utc_now
from icetide.control.model import ControlItem
from icetide.errors import TableLocked
from icetide.observability import MetricUnit, observed, publish_table_metrics
from icetide.run import locking
from icetide.run.handler_inputs import LockInput, parse_input
from icetide.run.lock_taking import take_table_lock
from icetide.run.plan import RunTiming, build_run_plan
from icetide.settings import Settings, load_settings
from icetide_contracts.run_plan import RunPlan


def _plan(item: ControlItem, run_id: str, settings: Settings, timing: RunTiming) -> RunPlan:
    return build_run_plan(
        item,
        run_id,
        raw_bucket=settings.require("raw_bucket"),
        bronze_prefix=settings.bronze_prefix,
        manifest_prefix=settings.manifest_prefix,
        glue_database=settings.require("glue_database"),
        timestamp_column=settings.dms_timestamp_column,
        timing=timing,
        stack_instance_arn=settings.replication_instance_arn,
        continuous_instance_arn=settings.continuous_replication_instance_arn,
    )


@observed()
def handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    settings = load_settings()
    run = parse_input(LockInput, event)
    table = ControlTable(settings.control_table_name)
    now = utc_now()
    timing = RunTiming(
        scheduled_time=(run.execution.scheduled_time if run.execution else None) or now,
        locked_at=now,
        slot_minutes=settings.schedule_slot_minutes,
    )

    raw = table.get_item(run.target_table_name)
    if raw is None:
        raise locking.missing_item(run.target_table_name)
    item = ControlItem.parse(raw)
    plan = _plan(item, run.run_id, settings, timing)

    try:
        locked = take_table_lock(
            table,
            run.target_table_name,
            run.run_id,
            now=now,
            stale_after_seconds=settings.lock_stale_after_seconds,
            # A verify run holds the lock but leaves lastRun* (the last merge's) alone: it commits nothing.
            merge_run=not plan.verify,
        )
    except TableLocked:  # TableUnderMaintenance too: the table is busy, nothing went wrong
        publish_table_metrics(run.target_table_name, [("RunsRefused", MetricUnit.Count, 1)])
        raise

    # The plan must describe the item as it was when the lock was taken; it differs from the
    # item read above only if someone wrote to it in between.
    locked_item = ControlItem.parse(locked)
    if locked_item != item:
        plan = _plan(locked_item, run.run_id, settings, timing)
    return {"plan": plan.to_json()}
