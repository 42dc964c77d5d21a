"""Full reloads: an operator's request that a table's next run loads the whole source again.

``icetide reload TABLE`` writes ``reloadRequested`` (:func:`reload_request`) on the control item,
refused while a run holds the table's lock, and may start a run at once. Every run whose plan is
fixed while the request is open is a reload (:func:`reload_due`):

- its filter starts from the item's ``startvalue``, not from the watermark: every row the filter
  selects is read again (a windowed cdc table's task is ``full-load-and-cdc`` again);
- it also extracts the source's keys, as a reconcile run does, and the Glue job deletes the keys
  silver holds that the source no longer has: silver's rows are replaced in the run's one MERGE
  commit (rows that did not change are counted unchanged and not rewritten), so a delta table
  loses the rows deleted at the source, which no filtered run can see;
- it commits like any run: the watermark moves to the largest value merged (never backwards), a
  cdc table's checkpoint to the new task's (replacing the stored one, which the plan names).

The request names the table's last run when it was written (``afterRun``; the lock was free, so
that run had ended) and is open until another run commits: ``lastRunStatus`` SUCCEEDED with another
``lastRunId``. That run locked the table after the request, so its plan was the reload's; a failed
reload leaves the request open for the next run (verify and maintenance runs leave ``lastRun*``
alone). No clock is compared, so an operator's clock cannot keep a request open or close it early.
The request stays on the item as the record of the last reload, and no commit has to clear it:
nothing but the plan needs to know about reloads.

Not reloadable: a table without primary keys (append-only: nothing to match the source's keys
with) and a continuous cdc table (its long-lived task's checkpoint is a file, not a position a new
full load could start the task's stream from): :func:`reload_refusal` says why.
"""

from __future__ import annotations

from datetime import UTC, datetime

from icetide.control.model import TARGET_TABLE_NAME_PATTERN, ControlItem, LoadMode, RunStatus
from icetide.dms.identifiers import EXECUTION_NAME_MAX_LENGTH, validate_execution_name
from icetide.errors import InvalidControlItem

RELOAD_MARKER = "-reload-"
RELOAD_TIME_FORMAT = "%Y%m%dT%H%M%SZ"


def reload_refusal(item: ControlItem) -> str | None:
    """Why ``item``'s table cannot be reloaded, or None when it can."""
    if item.load_mode is not LoadMode.MERGE or not item.primary_keys:
        return (
            f"{item.target_table_name} has no primaryKeys: a reload replaces silver's rows by key, and an "
            "append-only table has none"
        )
    if item.is_continuous:
        return (
            f"{item.target_table_name} is a continuous cdc table: its long-lived task's stream cannot "
            "restart with a full load (recreate the table's task instead, see docs/continuous-cdc.md)"
        )
    return None


def reload_due(item: ControlItem) -> bool:
    """True when a run of ``item`` planned now must be a full reload (``reloadRequested`` is open).

    InvalidControlItem when the table cannot be reloaded (it was changed since the request).
    """
    request = item.reload_requested
    if request is None:
        return False
    if item.last_run_status is RunStatus.SUCCEEDED and item.last_run_id != request.after_run:
        return False  # a run committed after the request: the reload is done
    refusal = reload_refusal(item)
    if refusal is not None:
        raise InvalidControlItem([f"reloadRequested: {refusal}; remove reloadRequested"])
    return True


def reload_request(item: ControlItem, requested_at: str) -> dict[str, str]:
    """The ``reloadRequested`` value an operator writes now (``requested_at``: the stored time), while
    no run holds the table: it names the table's last run, after which the reload is due."""
    return {"requestedAt": requested_at, **({"afterRun": item.last_run_id} if item.last_run_id else {})}


def reload_run_id(target_table_name: str, moment: datetime) -> str:
    """``<table>-reload-<YYYYMMDDTHHMMSSZ>``: the name of the run ``icetide reload`` starts (the
    request, not the name, makes it a reload; the name only tells it apart in a list of runs)."""
    if not TARGET_TABLE_NAME_PATTERN.match(target_table_name):
        raise ValueError(f"{target_table_name!r} is not a valid targetTableName")
    stamp = (moment.replace(tzinfo=UTC) if moment.tzinfo is None else moment.astimezone(UTC)).strftime(
        RELOAD_TIME_FORMAT
    )
    room = EXECUTION_NAME_MAX_LENGTH - len(RELOAD_MARKER) - len(stamp)
    return validate_execution_name(f"{target_table_name[:room]}{RELOAD_MARKER}{stamp}")
