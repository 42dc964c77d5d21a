"""How far a table's silver data is behind now: the lag the dashboard shows and the freshness alarm watches.

Silver is known to hold every source change up to the table's *caught-up time*, the later of:

- the committed watermark, when it is a timestamp: every row changed up to it is merged;
- the moment the last successful run read the source, for runs that read everything up to a
  moment: a delta run (a filtered full load) reads the source after it took the lock; a windowed
  cdc run reads changes up to its stop position (its slot's start).

A continuous table counts its watermark only: its run merges a bounded selection of the long-lived
task's files and may leave a backlog for the next run. The lag is now minus the caught-up time, and
is unknown (None) when neither is known: a number or text watermark, and no successful run known.

Taking the later of the two keeps a quiet table (a source where nothing changed for hours, so its
timestamp watermark stands still) from looking stale while its runs succeed.
"""

from __future__ import annotations

from datetime import datetime

from icetide.clock import parse_time
from icetide.control import watermark as wm
from icetide.control.model import ControlItem, RunStatus

# `server_time:YYYY-MM-DDThh:mm:ss` (UTC), the stop position of a windowed cdc run (run plan contract).
_SERVER_TIME = "server_time:"


def watermark_time(watermark: wm.Watermark | None) -> datetime | None:
    """The watermark as a UTC instant when it is a timestamp; None for numbers, text or no watermark."""
    if watermark is None or wm.kind(watermark) is not wm.WatermarkKind.TIMESTAMP:
        return None
    assert isinstance(watermark, str)  # kind() said so
    return wm.parse_timestamp(watermark)


def stop_position_time(cdc_stop_position: str) -> datetime:
    """A windowed cdc run's ``server_time:YYYY-MM-DDThh:mm:ss`` stop position as a UTC instant."""
    if not cdc_stop_position.startswith(_SERVER_TIME):
        raise ValueError(f"{cdc_stop_position!r} is not a server_time: stop position")
    return parse_time(cdc_stop_position.removeprefix(_SERVER_TIME))


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
    """The lag of a table as its control item tells it between runs.

    ``lastSuccessTime`` is when the last successful run committed (a little after it read the
    source); a commit writes it and nothing else removes it, so a table whose runs keep failing
    falls behind from there, and the freshness alarm sees it. An item last committed before that
    attribute existed has ``lastRunTime`` instead, which counts only while ``lastRunStatus`` is
    SUCCEEDED (a failed run overwrites it).
    """
    source_read_at = None
    if not item.is_continuous:
        if item.last_success_time:
            source_read_at = parse_time(item.last_success_time)
        elif item.last_run_status is RunStatus.SUCCEEDED and item.last_run_time:
            source_read_at = parse_time(item.last_run_time)
    return lag_seconds(now, item.watermark, source_read_at)
