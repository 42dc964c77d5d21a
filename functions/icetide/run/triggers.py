"""Which table an S3 "Object Created" event starts a run for, and under which execution name.

A continuous table's long-lived DMS task writes files below the table's fixed folder all the time
(``continuous_bronze_folder``); EventBridge forwards every new object of the raw bucket below
``<bronze>/_continuous/``. The event names the object, not the table: the table is the active,
valid continuous control item whose folder holds the key. Its run is named after the table and the
event's slot (``EVENT_SLOT_MINUTES``), so a burst of files in one slot starts one execution, and
the table lock keeps a run of the next slot from overlapping one still going.

While a live run holds the table's lock, an event starts nothing: the execution would only fail at
the lock (raising the failed-runs alarm) and use up its slot's name, so that a file arriving later
in the slot, after the lock is released, could not start the run it needs.

The events reach StartOnNewFiles in batches through an SQS queue (one record per event, the event
as the record's body). A batch needs one control-table scan, and starts at most one run per table:
the run of the slot of the table's latest event in the batch, which lists every file of the table's
folder past its checkpoint, the earlier events' files included.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime

from pydantic import BaseModel, ConfigDict, Field

from icetide.control.model import ControlItem
from icetide.dms.identifiers import run_id, schedule_slot
from icetide.run import scheduling
from icetide.run.locking import live_lock_holder
from icetide.run.plan import CONTINUOUS_FOLDER, continuous_bronze_folder


class _EventPart(BaseModel):
    # Like the handlers' inputs: EventBridge's own keys are the aliases, anything else is ignored.
    model_config = ConfigDict(populate_by_name=True, extra="ignore", frozen=True)


class S3Bucket(_EventPart):
    name: str = Field(min_length=3)


class S3Object(_EventPart):
    key: str = Field(min_length=1)


class ObjectCreatedDetail(_EventPart):
    bucket: S3Bucket
    object: S3Object


class ObjectCreatedEvent(_EventPart):
    """An EventBridge "Object Created" event of Amazon S3 (only the bucket, the key and the time matter)."""

    time: datetime
    detail: ObjectCreatedDetail

    @property
    def bucket(self) -> str:
        return self.detail.bucket.name

    @property
    def key(self) -> str:
        return self.detail.object.key


class QueuedRecord(_EventPart):
    """One SQS record of the queue the events rule feeds: its id, and the event as its body."""

    message_id: str = Field(alias="messageId", min_length=1)
    body: str


class QueuedEvents(_EventPart):
    """A batch of SQS records, as Lambda's event source mapping hands it to the function."""

    records: list[QueuedRecord] = Field(alias="Records")


class UnreadableRecord(ValueError):
    """A record whose body is no JSON object (the events rule puts the whole event there)."""


def record_event(record: QueuedRecord) -> dict[str, object]:
    """The EventBridge event a record carries, not yet validated (raises UnreadableRecord)."""
    try:
        event = json.loads(record.body)
    except json.JSONDecodeError as error:
        raise UnreadableRecord(f"record {record.message_id}: body is not JSON: {error}") from None
    if not isinstance(event, dict):
        raise UnreadableRecord(f"record {record.message_id}: body is not a JSON object")
    return event


@dataclass(frozen=True)
class EventRun:
    """The run an event starts: the table, the run id (its execution name) and the event's time."""

    target_table_name: str
    run_id: str
    event_time: datetime
    # The run holding the table's lock, when one does and its lock is not stale: start nothing now.
    locked_by: str | None = None

    def execution_input(self) -> dict[str, str]:
        """The execution's input, the same shape StartWorkflow gives a scheduled run."""
        return scheduling.execution_input(self.target_table_name, self.run_id, self.event_time)


@dataclass(frozen=True)
class Ignored:
    """An event that starts nothing, and why (not an error: the rule may match more than icetide's files)."""

    reason: str


def continuous_prefix(bronze_prefix: str) -> str:
    """The key prefix below which every continuous table's folder lies (the events rule's filter)."""
    return f"{bronze_prefix.strip('/')}/{CONTINUOUS_FOLDER}/"


def table_of_key(key: str, runnable: Iterable[ControlItem], bronze_prefix: str) -> ControlItem | None:
    """The continuous item among ``runnable`` whose folder holds ``key``, or None.

    Folders end in "/", so ``orders`` never claims ``orders_archive``'s files, and items whose
    folders nest are invalid (:mod:`icetide.control.conflicts`), so at most one folder holds a key.
    """
    return next(
        (
            item
            for item in runnable
            if item.is_continuous and key.startswith(continuous_bronze_folder(bronze_prefix, item))
        ),
        None,
    )


def outside_continuous_folders(
    event: ObjectCreatedEvent, *, raw_bucket: str, bronze_prefix: str
) -> Ignored | None:
    """Why ``event`` cannot be a continuous task's file whatever the control items say, or None.

    Checked before the control table is read: a rule widened by hand must not cost a scan per object.
    """
    if event.bucket != raw_bucket:
        return Ignored(f"bucket {event.bucket} is not the raw bucket {raw_bucket}")
    if not event.key.startswith(continuous_prefix(bronze_prefix)):
        return Ignored(f"{event.key} is not below {continuous_prefix(bronze_prefix)}")
    return None


def route_event(
    event: ObjectCreatedEvent,
    runnable: Iterable[ControlItem],
    *,
    raw_bucket: str,
    bronze_prefix: str,
    slot_minutes: int,
    now: datetime,
    stale_after_seconds: int,
) -> EventRun | Ignored:
    """The run ``event`` starts, or why it starts none; ``runnable`` are the active, valid items."""
    misdirected = outside_continuous_folders(event, raw_bucket=raw_bucket, bronze_prefix=bronze_prefix)
    if misdirected is not None:
        return misdirected
    item = table_of_key(event.key, runnable, bronze_prefix)
    if item is None:
        return Ignored(f"no active continuous table's folder holds {event.key}")
    slot_start = schedule_slot(event.time, slot_minutes)
    return EventRun(
        item.target_table_name,
        run_id(item.target_table_name, slot_start),
        event.time,
        locked_by=live_lock_holder(item, now, stale_after_seconds),
    )


@dataclass(frozen=True)
class TableStart:
    """The one run a batch starts for a table, and the records (message ids) whose events led to it."""

    run: EventRun
    message_ids: tuple[str, ...]


def one_run_per_table(routed: Sequence[tuple[str, EventRun]]) -> list[TableStart]:
    """Per table, the run of its latest event among ``routed`` (message id, run), with every
    message id of the table; tables in the order of their first record.

    The latest event's slot is the newest, and its run lists all of the folder's files past the
    checkpoint: a run of an earlier slot started now would only hold the table's lock against it.
    """
    latest: dict[str, EventRun] = {}
    ids: dict[str, list[str]] = {}
    for message_id, run in routed:
        table = run.target_table_name
        if table not in latest or run.event_time > latest[table].event_time:
            latest[table] = run
        ids.setdefault(table, []).append(message_id)
    return [TableStart(latest[table], tuple(message_ids)) for table, message_ids in ids.items()]
