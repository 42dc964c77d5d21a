"""How far a table's silver data is behind now: the lag the dashboard shows and the freshness alarm watches.

Silver is known to hold every source change up to the table's *caught-up time*, the latest of:

- the committed watermark, when it is a timestamp: every row changed up to it is merged;
- for a delta table, the moment its last successful run read the source: a filtered full load
  reads the source after the run took the lock;
- for a cdc table, the newest change time it merged (``lastChangeTime``, the run manifest's
  ``newestChangeTime``): the source's commit time of the latest CDC change, so its task had read
  the source's log at least that far.

A cdc table's successful run claims nothing more. A windowed run's task stops at a ``server_time:``
on the replication instance's clock (icetide.dms.stop_position), and how far it had read the
source's log by then depends on its latency, which DMS does not report on the task: reaching the
stop position says nothing about source commit time. A continuous run merges a bounded selection
of the long-lived task's files and may leave a backlog. So a cdc table whose source is quiet falls
behind from its newest change, as far as icetide can tell (FreshnessAlarmHours must be longer than
a table's quiet spells). Full-load rows do not count: their time is when DMS transferred the row,
on the replication instance's clock.

The lag is now minus the caught-up time, and is unknown (None) when no part of it is known: a
number or text watermark (or none), for a delta table no successful run known, for a cdc table no
change merged. A caught-up time more than ``FUTURE_ALLOWANCE`` ahead of now is not believed: the
table is reported stale, its lag being how far ahead the time is, and a warning names it. A
watermark or a change time from the future (a forged CDC row with a ``dms_timestamp`` of 9999, a
source clock hours off) would otherwise make the table look caught up for as long as it stays
ahead, and the freshness alarm would never see it fall behind.

Taking the latest keeps a quiet delta table (a source where nothing changed for hours, so its
timestamp watermark stands still) from looking stale while its runs succeed.
"""

from __future__ import annotations

from datetime import datetime, timedelta

from icetide.clock import parse_time, stored_time
from icetide.control import watermark as wm
from icetide.control.model import CaptureMode, ControlItem, RunStatus
from icetide.observability import logger

# How far ahead of the Lambda's clock a caught-up time may be and still count as caught up. Source
# commit times come from the source database's clock: a few minutes of skew between it and AWS's
# clocks are ordinary, and must not fire the freshness alarm. Beyond this the time cannot be right.
FUTURE_ALLOWANCE = timedelta(minutes=15)


def watermark_time(watermark: wm.Watermark | None) -> datetime | None:
    """The watermark as a UTC instant when it is a timestamp; None for numbers, text or no watermark."""
    if watermark is None or wm.kind(watermark) is not wm.WatermarkKind.TIMESTAMP:
        return None
    assert isinstance(watermark, str)  # kind() said so
    return wm.parse_timestamp(watermark)


def caught_up_time(
    watermark: wm.Watermark | None, source_read_at: datetime | None, newest_change: datetime | None = None
) -> datetime | None:
    """The latest of the watermark's time, ``source_read_at`` and ``newest_change``; None: none known."""
    known = [
        moment for moment in (watermark_time(watermark), source_read_at, newest_change) if moment is not None
    ]
    return max(known) if known else None


def is_ahead_of_clock(caught_up: datetime | None, now: datetime) -> bool:
    """True when ``caught_up`` is more than FUTURE_ALLOWANCE after ``now``: it is not believed."""
    return caught_up is not None and caught_up - now > FUTURE_ALLOWANCE


def lag_from(now: datetime, caught_up: datetime | None) -> float | None:
    """Seconds from ``caught_up`` to ``now`` (None: unknown). Zero while ``caught_up`` is at most
    FUTURE_ALLOWANCE ahead of ``now``; beyond that, how far ahead it is: the table is stale."""
    if caught_up is None:
        return None
    if is_ahead_of_clock(caught_up, now):
        return (caught_up - now).total_seconds()
    return max(0.0, (now - caught_up).total_seconds())


def lag_seconds(
    now: datetime,
    watermark: wm.Watermark | None,
    source_read_at: datetime | None,
    newest_change: datetime | None = None,
) -> float | None:
    """:func:`lag_from` the :func:`caught_up_time` of the watermark, the read and the newest change."""
    return lag_from(now, caught_up_time(watermark, source_read_at, newest_change))


def warn_if_ahead_of_clock(table: str, caught_up: datetime | None, now: datetime) -> None:
    """A warning naming ``table`` and its caught-up time, when that is ahead of the clock.

    The Lambdas that publish LagSeconds call it; the computations here log nothing, so the CLI's
    output (``icetide status --json``) carries no log line.
    """
    if caught_up is not None and is_ahead_of_clock(caught_up, now):
        logger.warning(
            f"table {table} is reported stale: its caught-up time {stored_time(caught_up)} is ahead of "
            "the clock (a forged change or a source clock that is wrong)",
            extra={"table": table, "caughtUpTime": stored_time(caught_up), "now": stored_time(now)},
        )


def item_lag_seconds(item: ControlItem, now: datetime) -> float | None:
    """The lag of a table as its control item tells it between runs (:func:`item_caught_up_time`)."""
    return lag_from(now, item_caught_up_time(item))


def item_caught_up_time(item: ControlItem) -> datetime | None:
    """The caught-up time of a table as its control item tells it between runs.

    ``lastSuccessTime`` is when the last successful run committed (a little after it read the
    source); a commit writes it and nothing else removes it, so a delta table whose runs keep
    failing falls behind from there, and the freshness alarm sees it. An item last committed before
    that attribute existed has ``lastRunTime`` instead, which counts only while ``lastRunStatus`` is
    SUCCEEDED (a failed run overwrites it). A cdc table counts ``lastChangeTime``.
    """
    source_read_at = None
    newest_change = None
    if item.capture_mode is CaptureMode.DELTA:
        if item.last_success_time:
            source_read_at = parse_time(item.last_success_time)
        elif item.last_run_status is RunStatus.SUCCEEDED and item.last_run_time:
            source_read_at = parse_time(item.last_run_time)
    elif item.last_change_time:
        newest_change = parse_time(item.last_change_time)
    return caught_up_time(item.watermark, source_read_at, newest_change)
