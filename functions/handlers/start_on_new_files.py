"""StartOnNewFiles: an S3 "Object Created" event below a continuous table's folder starts its run.

Input: an EventBridge event of Amazon S3 (``detail.bucket.name``, ``detail.object.key``, ``time``).
Output: ``{"targetTableName", "runId", "started"}`` (``started`` false: this slot's execution
exists already, as it does after the first event of a burst; or, with ``"lockedBy": run``, a live
run holds the table's lock and the file waits for the next event or the hourly run), or
``{"ignored": reason}`` for an object no active continuous table owns. Raises InvalidHandlerInput
for an event of another shape.
"""

from __future__ import annotations

from typing import Any

from aws_lambda_powertools.utilities.typing import LambdaContext

from icetide.adapters import stepfunctions
from icetide.clock import utc_now
from icetide.observability import MetricUnit, logger, metrics, observed
from icetide.run import triggers
from icetide.run.handler_inputs import parse_input
from icetide.run.starts import triaged_control_items
from icetide.settings import Settings, load_settings


def _route(created: triggers.ObjectCreatedEvent, settings: Settings) -> triggers.EventRun | triggers.Ignored:
    raw_bucket = settings.require("raw_bucket")
    misdirected = triggers.outside_continuous_folders(
        created, raw_bucket=raw_bucket, bronze_prefix=settings.bronze_prefix
    )
    if misdirected is not None:  # decided without reading the control table
        return misdirected
    triaged = triaged_control_items(settings.control_table_name)
    metrics.add_metric(name="InvalidControlItems", unit=MetricUnit.Count, value=len(triaged.invalid))
    return triggers.route_event(
        created,
        triaged.runnable,
        raw_bucket=raw_bucket,
        bronze_prefix=settings.bronze_prefix,
        slot_minutes=settings.event_slot_minutes,
        now=utc_now(),
        stale_after_seconds=settings.lock_stale_after_seconds,
    )


@observed(correlation_id_path=None)
def handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    settings = load_settings()
    state_machine_arn = settings.require("state_machine_arn")
    created = parse_input(triggers.ObjectCreatedEvent, event)

    outcome = _route(created, settings)
    if isinstance(outcome, triggers.Ignored):
        logger.info("object event ignored", extra={"key": created.key, "reason": outcome.reason})
        metrics.add_metric(name="ObjectEventsIgnored", unit=MetricUnit.Count, value=1)
        return {"ignored": outcome.reason}

    if outcome.locked_by is not None:
        logger.info(
            "table locked by a run: nothing started",
            extra={"key": created.key, "runId": outcome.run_id, "lockedBy": outcome.locked_by},
        )
        metrics.add_metric(name="RunsStarted", unit=MetricUnit.Count, value=0)
        return {
            "targetTableName": outcome.target_table_name,
            "runId": outcome.run_id,
            "started": False,
            "lockedBy": outcome.locked_by,
        }

    started = stepfunctions.start_execution_once(state_machine_arn, outcome.run_id, outcome.execution_input())
    logger.info(
        "object event handled",
        extra={"key": created.key, "runId": outcome.run_id, "started": started},
    )
    metrics.add_metric(name="RunsStarted", unit=MetricUnit.Count, value=int(started))
    return {"targetTableName": outcome.target_table_name, "runId": outcome.run_id, "started": started}
