"""A continuous run's CDC rows against the changes its long-lived DMS task counted.

The bound and why it holds under every reading AWS's documentation allows are in
icetide_contracts.change_count; this module moves the count along one run, without calling AWS:

1. :func:`count_before_run`: the stored count with this run's reading of the task's counters. The
   reading is taken after the run listed its files: if DMS counts a change no later than it writes
   the file holding it (the order is not documented, docs/aws-facts.md ``dms-counters-before-files``),
   every listed change is counted by then. A reading under a new start (another ``StartDate``, or
   counters that went down) closes the stored start: what it had counted is carried when this run
   resumed the task itself and read its counters once it had stopped (:class:`ClosedStart`), and is
   unknown otherwise.
2. :func:`allowance`: how many CDC rows the run may merge (None: unknown, the run is not checked).
3. :func:`count_after_run`: the count the commit stores once the run's rows are merged. While the
   bound is unknown, a run that merges every file listed under a start that an earlier run already
   saw begins the count again: no file of an earlier start is left to merge.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from typing import Any

from icetide.dms.replication_status import change_actions
from icetide.errors import IcetideError
from icetide_contracts.change_count import ChangeCount, ClosedStart

# What a reading's start is called when DMS describes the task without a StartDate.
UNREPORTED_START = "not reported"
# Files an error message names, at most.
_NAMED_FILES = 5


class BronzeChangesNotCounted(IcetideError):
    """A continuous run's files hold more CDC rows than the table's DMS task counted: a file in the
    task's folder that DMS did not write (or not for these changes).

    Not retried: nothing is merged and the file checkpoint and watermark stay until the file is
    removed (only a principal the bronze bucket's policy lets write there can have put it).
    """


@dataclass(frozen=True)
class CounterReading:
    """The task's counters for the table as one run read them: Inserts + Updates + Deletes, and the
    ``StartDate`` of the start they count under. ``straddled``: the task was described under two
    different starts around the read, or without a start, so which start counted is not known.
    ``fresh``: that start is the task's fresh start (``StartDate`` equals ``FreshStartDate``, "started
    either with a fresh start or a target reload"): no resume came before it."""

    task_start: str
    counted: int
    straddled: bool = False
    fresh: bool = False


def task_start(described: Mapping[str, Any] | None, date: str = "StartDate") -> str:
    """The ``ReplicationTaskStats.StartDate`` (or another of its dates) of a described task as text
    (UTC, ISO 8601), or :data:`UNREPORTED_START`. DMS documents it as the date "the replication task
    was started either with a fresh start or a resume", so a resume changes it."""
    started = ((described or {}).get("ReplicationTaskStats") or {}).get(date)
    if isinstance(started, datetime):
        return (started if started.tzinfo else started.replace(tzinfo=UTC)).astimezone(UTC).isoformat()
    return str(started) if started else UNREPORTED_START


def table_changes(statistics: Sequence[Mapping[str, Any]], schema: str, table: str) -> int:
    """Inserts + Updates + Deletes of ``schema.table`` (0 when DMS lists no line for it: it counted
    nothing for the table yet)."""
    return sum(
        change_actions(line)
        for line in statistics
        if line.get("SchemaName") == schema and line.get("TableName") == table
    )


def reading(
    before: Mapping[str, Any] | None, changes: int, after: Mapping[str, Any] | None
) -> CounterReading:
    """The reading of ``changes`` taken between two describes of the task."""
    start_before, start_after = task_start(before), task_start(after)
    straddled = start_before != start_after or start_after == UNREPORTED_START
    fresh = not straddled and start_after == task_start(after, "FreshStartDate")
    return CounterReading(task_start=start_after, counted=changes, straddled=straddled, fresh=fresh)


def count_before_run(
    stored: ChangeCount | None, read: CounterReading, *, closed: ClosedStart | None = None
) -> ChangeCount:
    """The count with this run's reading (see the module docstring); ``closed``: the latest start
    icetide saw end (this run's resume, else the latest one recorded), carried when it is the
    stored start: an earlier one would leave the starts between unknown."""
    if stored is None:
        # Counted for the first time: since its fresh start every change the task counted is in the
        # counters (a new task's folder holds nothing older); after a resume, what came before is unknown.
        carried = 0 if read.fresh else None
        return ChangeCount(task_start=read.task_start, counted=read.counted, carried=carried, merged=0)
    if not read.straddled and read.task_start == stored.task_start and read.counted >= stored.counted:
        return replace(stored, counted=read.counted)
    carried = None
    if (
        stored.carried is not None
        and closed is not None
        and closed.task_start == stored.task_start
        and not read.straddled
    ):
        carried = stored.carried + max(closed.counted, stored.counted)
    return ChangeCount(
        task_start=read.task_start, counted=read.counted, carried=carried, merged=stored.merged
    )


def allowance(count: ChangeCount) -> int | None:
    """How many CDC rows the run may merge under ``count`` (from :func:`count_before_run`); None: the
    bound is unknown."""
    bound = count.bound
    return None if bound is None else bound - count.merged


def count_after_run(
    stored: ChangeCount | None, before_run: ChangeCount, rows: int, *, drained: bool
) -> ChangeCount:
    """The count once the run's ``rows`` CDC rows are merged. ``drained``: the run took every file it
    listed."""
    seen_before = (
        stored is not None
        and stored.carried is None
        and stored.task_start == before_run.task_start
        and before_run.merged == stored.merged
        and before_run.counted >= stored.counted
    )
    if before_run.carried is None and drained and seen_before:
        return ChangeCount(task_start=before_run.task_start, counted=before_run.counted, carried=0, merged=0)
    return replace(before_run, merged=before_run.merged + rows)


def refuse_uncounted(table: str, count: ChangeCount, rows: int, file_rows: list[tuple[str, int]]) -> None:
    """Raise :class:`BronzeChangesNotCounted` when ``rows`` (the run's CDC rows, ``file_rows`` per
    file) exceed what ``count`` allows; a run that merges no CDC row is never refused."""
    allowed = allowance(count)
    if allowed is None or rows == 0 or rows <= allowed:
        return
    largest = sorted(file_rows, key=lambda pair: (-pair[1], pair[0]))[:_NAMED_FILES]
    named = ", ".join(f"{key} ({count_} rows)" for key, count_ in largest)
    more = f" and {len(file_rows) - len(largest)} more" if len(file_rows) > len(largest) else ""
    raise BronzeChangesNotCounted(
        f"{table}: the run's {len(file_rows)} CDC file(s) hold {rows} row(s), but its DMS task counted "
        f"at most {allowed} change(s) not merged yet (Inserts + Updates + Deletes: {count.counted} under "
        f"the start of {count.task_start}, {count.carried} under earlier starts; {count.merged} merged "
        f"before): a file in the task's folder holds changes DMS never counted ({named}{more}); nothing "
        "was merged, the file checkpoint and watermark stay; remove the file(s) DMS did not write"
    )
