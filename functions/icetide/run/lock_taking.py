"""Taking a table's lock for a run: the one conditional write, its meaning, and a broken stale lock noted.

Merge runs (acquire_lock) and maintenance runs (acquire_maintenance_lock) take the same lock the
same way, which is what keeps the two from ever working on one table at once; this is that way.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from icetide.adapters.control_table import ControlTable
from icetide.clock import stored_time
from icetide.observability import MetricUnit, logger, metrics
from icetide.run import locking


def take_table_lock(
    table: ControlTable,
    target_table_name: str,
    run_id: str,
    *,
    now: datetime,
    stale_after_seconds: int,
    merge_run: bool = True,
) -> dict[str, Any]:
    """Take the lock for ``run_id`` (TableLocked, ControlItemNotFound when it cannot); the item as
    it was just before. Breaking a stale lock is logged and counted (``StaleLocksBroken``)."""
    write = table.take_lock(
        target_table_name,
        run_id,
        now=stored_time(now),
        stale_before=locking.stale_before(now, stale_after_seconds),
        merge_run=merge_run,
    )
    taken = locking.lock_result(
        target_table_name,
        run_id,
        written=write.written,
        before=write.item,
        stale_after_seconds=stale_after_seconds,
    )
    if taken.broken_holder:
        logger.warning(
            "broke a stale lock",
            extra={"brokenHolder": taken.broken_holder, "lockedSince": taken.broken_since},
        )
        metrics.add_metric(name="StaleLocksBroken", unit=MetricUnit.Count, value=1)
    return write.item or {}
