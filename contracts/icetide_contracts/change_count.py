"""A continuous table's change count (docs/contracts.md, "Change count"): what bounds the CDC rows its
runs merge by the changes its long-lived DMS task counted.

DMS's ``Inserts``/``Updates``/``Deletes`` of a table (DescribeTableStatistics) count the change
"actions performed on a table"; each row of a CDC file is one, so the CDC rows a task's files hold
never exceed what the task counted. A long-lived task's counters are cumulative, but whether they
start again from zero when the stopped or failed task is resumed is not documented (docs/aws-facts.md,
``dms-counters-on-resume``). So the count is kept per task start (``ReplicationTaskStats.StartDate``,
"started either with a fresh start or a resume"): ``counted`` is the last reading of this start's
counters, ``carried`` what the starts before it had counted when they ended (their closing readings,
added up), and ``merged`` the CDC rows merged since the count began. Every CDC row merged so far was
counted under this start or an earlier one, so under either reading

    merged + this run's CDC rows <= carried + counted now

(if the counters restart, the earlier starts' counts are in ``carried``; if they do not, ``counted``
alone already holds them and ``carried`` only loosens the bound). ``carried`` is None when a start
ended without icetide reading its counters (DMS's own recovery, an operator's resume): the bound is
then unknown, and the table's runs are unchecked until one run has merged every file listed after
that start was seen, when the count begins again (icetide.run.change_count).

Built by select_bronze_files (``after`` the run, in the bronze file selection), read by acquire_lock
from the control item (``cdcChangeCount``) into the run plan, stored by commit_watermark with the
file checkpoint, in the run's final conditional write.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any

from icetide_contracts.json_fields import (
    json_key,
    optional,
    read_object,
    text,
    whole_number,
    write_object,
)


@dataclass(frozen=True, kw_only=True)
class ChangeCount:
    """The changes a continuous task counted against the CDC rows its table's runs merged."""

    # ReplicationTaskStats.StartDate of the start whose counters `counted` read (ISO 8601, as read).
    task_start: str = field(metadata=json_key("taskStart", text(min_length=1)))
    # Inserts + Updates + Deletes of the table under this start, as last read.
    counted: int = field(metadata=json_key("counted", whole_number(minimum=0)))
    # What the earlier starts had counted when they ended; None: not known (the bound is lifted).
    carried: int | None = field(metadata=json_key("carried", optional(whole_number(minimum=0))))
    # CDC rows merged since the count began.
    merged: int = field(metadata=json_key("merged", whole_number(minimum=0)))

    @property
    def bound(self) -> int | None:
        """At most how many CDC rows may have been merged in all (None: not known)."""
        return None if self.carried is None else self.carried + self.counted

    def to_json(self) -> dict[str, Any]:
        """The count as the contract spells it."""
        return write_object(self)

    @classmethod
    def from_json(cls, data: object) -> ChangeCount:
        """The count from its JSON object; ContractViolation names every attribute that breaks it."""
        return read_object(cls, data, "change count")

    @classmethod
    def from_stored(cls, stored: Any) -> ChangeCount:
        """The count as the control item holds it (DynamoDB gives numbers as Decimal)."""
        if isinstance(stored, dict):
            stored = {
                key: int(value) if isinstance(value, Decimal) and value == int(value) else value
                for key, value in stored.items()
            }
        return cls.from_json(stored)


@dataclass(frozen=True, kw_only=True)
class ClosedStart:
    """A start of the task that ended (stopped or failed) and what its counters held then: read by
    the run that resumed the task, before resuming it, and kept on the control item's
    ``lastTaskResume`` so that a later run can carry it even if the resuming run failed."""

    task_start: str = field(metadata=json_key("taskStart", text(min_length=1)))
    counted: int = field(metadata=json_key("counted", whole_number(minimum=0)))

    def to_json(self) -> dict[str, Any]:
        """The closed start as the contract spells it."""
        return write_object(self)

    @classmethod
    def from_json(cls, data: object) -> ClosedStart:
        """The closed start from its JSON object (numbers as DynamoDB gives them, too)."""
        if isinstance(data, dict):
            data = {key: int(value) if isinstance(value, Decimal) else value for key, value in data.items()}
        return read_object(cls, data, "closed start")
