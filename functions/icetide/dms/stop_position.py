"""Where a windowed cdc run's DMS task stops: a ``server_time:`` set when the task is started.

The DMS API reference (StartReplicationTask, CdcStopPosition) says only that the value "can be
either server time or commit time"; the user guide ("Creating tasks for ongoing replication", Stopping
a task at a commit or server time point) says a server time is "a server time on the replication
instance", a commit time "a commit time on the source". What a stop position already past when the
task starts does is not documented. Read strictly, a ``server_time:`` in the past stops the task at
once, having read nothing, and a ``commit_time:`` might never be reached on a quiet source (no later
commit to see it by). So icetide gives the task a ``server_time:`` in the future, set by the state
that starts it: its start plus ``CDC_STOP_AFTER_SECONDS`` (whole seconds, rounded up; DMS takes no
fraction). Under every reading the task then reads from its start position onwards and stops by
itself once the replication instance's clock passes the stop; what it read is what its
RecoveryCheckpoint says, where the next run starts. How far that is in source commit time is not
documented (it depends on the task's latency), so a windowed run's freshness is not taken from the
stop position (icetide.run.freshness).
"""

from __future__ import annotations

from datetime import datetime, timedelta

SERVER_TIME = "server_time:"
# Long enough for a started task to begin reading (DMS takes a while to start one) and to read an
# hour's backlog; short enough that a run does not idle long on a quiet source.
DEFAULT_STOP_AFTER_SECONDS = 300


def stop_position(started_at: datetime, stop_after_seconds: int) -> str:
    """``server_time:YYYY-MM-DDThh:mm:ss`` (UTC) ``stop_after_seconds`` after ``started_at``, rounded up
    to a whole second."""
    if stop_after_seconds < 1:
        raise ValueError(f"a stop position must lie after the start, got {stop_after_seconds} seconds")
    stop = started_at + timedelta(seconds=stop_after_seconds)
    if stop.microsecond:
        stop = stop.replace(microsecond=0) + timedelta(seconds=1)
    return f"{SERVER_TIME}{stop.strftime('%Y-%m-%dT%H:%M:%S')}"
