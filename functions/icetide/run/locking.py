"""The table lock: one run per table at a time, and when a dead run's lock may be broken.

The lock is two attributes of the control item (``lockHolder`` = run id, ``lockTime``), taken by
one conditional write. A lock older than LOCK_STALE_AFTER_SECONDS belongs to a run that died
without releasing it (a killed execution skips its Catch), so a new run may take it over. This
module holds those rules; the conditional write itself is in ``icetide.adapters.control_table``.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from icetide.clock import parse_time, stored_time
from icetide.control.model import ControlItem
from icetide.dms.identifiers import is_maintenance_run_id
from icetide.errors import ControlItemNotFound, TableLocked, TableUnderMaintenance


@dataclass(frozen=True)
class LockTaken:
    """A granted lock; ``broken_holder`` names the run whose stale lock was taken over, if any."""

    broken_holder: str | None = None
    broken_since: str | None = None


def stale_before(now: datetime, stale_after_seconds: int) -> str:
    """The stored time before which a lock counts as stale (locks taken earlier may be broken)."""
    return stored_time(now - timedelta(seconds=stale_after_seconds))


def missing_item(target_table_name: str) -> ControlItemNotFound:
    """The error for a run of a table that has no control item."""
    return ControlItemNotFound(f"the control table has no item with targetTableName {target_table_name!r}")


def lock_result(
    target_table_name: str,
    run_id: str,
    *,
    written: bool,
    before: Mapping[str, Any] | None,
    stale_after_seconds: int,
) -> LockTaken:
    """Interpret the conditional lock write: the lock taken, or the named error why not.

    ``before`` is the item as it was before the write (or None when there is no item).
    """
    if before is None:
        raise missing_item(target_table_name)
    holder = before.get("lockHolder")
    since = before.get("lockTime")
    if not written:
        message = _locked_message(target_table_name, run_id, holder, since, stale_after_seconds)
        if isinstance(holder, str) and is_maintenance_run_id(holder) and not is_maintenance_run_id(run_id):
            raise TableUnderMaintenance(message)
        raise TableLocked(message)
    if holder and holder != run_id:
        return LockTaken(broken_holder=str(holder), broken_since=str(since) if since else None)
    return LockTaken()


def _locked_message(
    target_table_name: str, run_id: str, holder: object, since: object, stale_after_seconds: int
) -> str:
    message = f"table {target_table_name} is locked by run {holder} since {since}; run {run_id} was refused"
    try:
        breakable = stored_time(parse_time(str(since)) + timedelta(seconds=stale_after_seconds))
    except ValueError:
        return message
    return f"{message} (the lock counts as stale, and may be taken over, after {breakable})"


def live_lock_holder(item: ControlItem, now: datetime, stale_after_seconds: int) -> str | None:
    """The run holding ``item``'s lock, unless there is none or its lock is stale (the next run may
    take it over, as acquire_lock would). A lock without a time cannot be taken over: it is live."""
    if not item.lock_holder:
        return None
    if item.lock_time is not None and item.lock_time < stale_before(now, stale_after_seconds):
        return None
    return item.lock_holder
