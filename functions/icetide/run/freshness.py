"""How far a table's silver data is behind now: the lag the dashboard shows and the freshness alarm watches.

Silver is known to hold every source change up to the table's *caught-up time*, the later of:

- the committed watermark, when it is a timestamp: every row changed up to it is merged;
- for a delta table, the moment its last successful run read the source: a filtered full load
  reads the source after the run took the lock.

A cdc table counts its watermark only. A windowed run's task stops at a ``server_time:`` on the
replication instance's clock (icetide.dms.stop_position), and how far it had read the source's log
by then depends on its latency, which DMS does not report on the task: reaching the stop position
says nothing about source commit time. A continuous run merges a bounded selection of the
long-lived task's files and may leave a backlog. The lag is now minus the caught-up time, and is
unknown (None) when neither is known: a number or text watermark (or none), and for a delta table
no successful run known.

Taking the later of the two keeps a quiet delta table (a source where nothing changed for hours, so
its timestamp watermark stands still) from looking stale while its runs succeed.
"""

from __future__ import annotations

from datetime import datetime

from icetide.clock import parse_time
from icetide.control import watermark as wm
from icetide.control.model import CaptureMode, ControlItem, RunStatus


def watermark_time(watermark: wm.Watermark | None) -> datetime | None:
    """The watermark as a UTC instant when it is a timestamp; None for numbers, text or no watermark."""
    if watermark is None or wm.kind(watermark) is not wm.WatermarkKind.TIMESTAMP:
        return None
    assert isinstance(watermark, str)  # kind() said so
    return wm.parse_timestamp(watermark)


def lag_seconds(
    now: datetime, watermark: wm.Watermark | None, source_read_at: datetime | None
) -> float | None:
    """Seconds from the caught-up time (the later of the watermark's time and ``source_read_at``) to
    ``now``; never negative (a watermark ahead of the clock counts as caught up). None when unknown."""
    known = [moment for moment in (watermark_time(watermark), source_read_at) if moment is not None]
    if not known:
        return None
    return max(0.0, (now - max(known)).total_seconds())


def item_lag_seconds(item: ControlItem, now: datetime) -> float | None:
    """The lag of a table as its control item tells it between runs (a cdc table's: its watermark's).

    ``lastSuccessTime`` is when the last successful run committed (a little after it read the
    source); a commit writes it and nothing else removes it, so a table whose runs keep failing
    falls behind from there, and the freshness alarm sees it. An item last committed before that
    attribute existed has ``lastRunTime`` instead, which counts only while ``lastRunStatus`` is
    SUCCEEDED (a failed run overwrites it).
    """
    source_read_at = None
    if item.capture_mode is CaptureMode.DELTA:
        if item.last_success_time:
            source_read_at = parse_time(item.last_success_time)
        elif item.last_run_status is RunStatus.SUCCEEDED and item.last_run_time:
            source_read_at = parse_time(item.last_run_time)
    return lag_seconds(now, item.watermark, source_read_at)
