"""StartOnNewFiles: S3 "Object Created" events below continuous tables' folders start their runs.

Input: a batch of SQS records (``Records``: ``messageId``, ``body``) from the queue the events rule
feeds, each body an EventBridge event of Amazon S3 (``detail.bucket.name``, ``detail.object.key``,
``time``). The batch costs one control-table scan (none when no event lies below the continuous
folders) and starts at most one run per table: the run of the slot of its latest event
(``icetide.run.triggers``). A table whose lock a live run holds starts nothing; its files wait for
the next event or the hourly run.

Output: ``{"batchItemFailures": [{"itemIdentifier": messageId}, ...]}`` (Lambda's partial batch
response): the records whose body is no S3 event, and those of a table whose run could not be
started, are retried alone and, after the queue's receive limit, land in the dead-letter queue.
Raises InvalidHandlerInput for an event that is no batch of records.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from aws_lambda_powertools.utilities.typing import LambdaContext
from botocore.exceptions import BotoCoreError, ClientError

from icetide.adapters import stepfunctions
from icetide.clock import utc_now
from icetide.observability import MetricUnit, logger, metrics, observed
from icetide.run import triggers
from icetide.run.handler_inputs import InvalidHandlerInput, parse_input
from icetide.run.starts import triaged_control_items
from icetide.settings import Settings, load_settings


def _readable(
    batch: triggers.QueuedEvents,
) -> tuple[list[tuple[str, triggers.ObjectCreatedEvent]], list[str]]:
    """The batch's S3 events by message id, and the ids of the records that hold none."""
    events: list[tuple[str, triggers.ObjectCreatedEvent]] = []
    unreadable: list[str] = []
    for record in batch.records:
        try:
            events.append(
                (record.message_id, parse_input(triggers.ObjectCreatedEvent, triggers.record_event(record)))
            )
        except (triggers.UnreadableRecord, InvalidHandlerInput) as error:
            logger.error(
                "object event record refused", extra={"messageId": record.message_id, "error": str(error)}
            )
            unreadable.append(record.message_id)
    return events, unreadable


def _route(
    events: Sequence[tuple[str, triggers.ObjectCreatedEvent]], settings: Settings
) -> list[tuple[str, triggers.EventRun]]:
    """Each event's run (message id, run); the others are logged as ignored. One scan at most."""
    raw_bucket = settings.require("raw_bucket")
    candidates = []
    for message_id, created in events:
        misdirected = triggers.outside_continuous_folders(
            created, raw_bucket=raw_bucket, bronze_prefix=settings.bronze_prefix
        )
        if misdirected is None:
            candidates.append((message_id, created))
        else:  # decided without reading the control table
            _ignored(created, misdirected)
    if not candidates:
        return []
    triaged = triaged_control_items(settings.control_table_name)
    metrics.add_metric(name="InvalidControlItems", unit=MetricUnit.Count, value=len(triaged.invalid))
    now = utc_now()
    routed = []
    for message_id, created in candidates:
        outcome = triggers.route_event(
            created,
            triaged.runnable,
            raw_bucket=raw_bucket,
            bronze_prefix=settings.bronze_prefix,
            slot_minutes=settings.event_slot_minutes,
            now=now,
            stale_after_seconds=settings.lock_stale_after_seconds,
        )
        if isinstance(outcome, triggers.Ignored):
            _ignored(created, outcome)
        else:
            routed.append((message_id, outcome))
    return routed


def _ignored(created: triggers.ObjectCreatedEvent, ignored: triggers.Ignored) -> None:
    logger.info("object event ignored", extra={"key": created.key, "reason": ignored.reason})
    metrics.add_metric(name="ObjectEventsIgnored", unit=MetricUnit.Count, value=1)


def _start(state_machine_arn: str, table_start: triggers.TableStart) -> bool:
    """Start the table's run unless a live run holds its lock; True when this call started it."""
    run = table_start.run
    if run.locked_by is not None:
        logger.info(
            "table locked by a run: nothing started",
            extra={"runId": run.run_id, "lockedBy": run.locked_by, "events": len(table_start.message_ids)},
        )
        return False
    started = stepfunctions.start_execution_once(state_machine_arn, run.run_id, run.execution_input())
    logger.info(
        "object events handled",
        extra={"runId": run.run_id, "started": started, "events": len(table_start.message_ids)},
    )
    return started


@observed(correlation_id_path=None)
def handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    settings = load_settings()
    state_machine_arn = settings.require("state_machine_arn")
    batch = parse_input(triggers.QueuedEvents, event)

    events, failed = _readable(batch)
    started = 0
    for table_start in triggers.one_run_per_table(_route(events, settings)):
        try:
            started += int(_start(state_machine_arn, table_start))
        except (ClientError, BotoCoreError) as error:
            # Its records come back (alone) after the queue's visibility timeout.
            logger.error(
                "run not started: its events are retried",
                extra={"runId": table_start.run.run_id, "error": str(error)},
            )
            failed.extend(table_start.message_ids)
    metrics.add_metric(name="RunsStarted", unit=MetricUnit.Count, value=started)
    return {"batchItemFailures": [{"itemIdentifier": message_id} for message_id in failed]}
