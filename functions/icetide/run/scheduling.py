"""Which tables a schedule event starts, and the summary it reports.

Every control item is validated; an invalid one is reported with its problems and skipped, never
stopping the others. Each active, valid table gets one run per schedule slot, whose id is also the
execution name, so a repeated event for the same slot starts nothing new.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from icetide.clock import stored_time
from icetide.control.conflicts import find_conflicts
from icetide.control.model import ControlItem
from icetide.dms.identifiers import SLOT_FORMAT
from icetide.errors import IcetideError, InvalidControlItem


class ExecutionStartFailed(IcetideError):
    """Step Functions refused to start some tables' runs (the others were started).

    Raised after every table was tried, so one table's failure never holds back another's run;
    invoking again is safe, because runs already started are reported as already started.
    """


@dataclass
class Triage:
    """Control items sorted into runnable ones, inactive table names and invalid items."""

    runnable: list[ControlItem] = field(default_factory=list)
    inactive: list[str] = field(default_factory=list)
    invalid: list[dict[str, Any]] = field(default_factory=list)
    # Inactive continuous cdc tables: their long-lived tasks are stopped and deleted.
    retiring: list[ControlItem] = field(default_factory=list)


def triage(raw_items: Iterable[Mapping[str, Any]]) -> Triage:
    """Validate every item; runnable tables come back sorted by name, for a stable start order.

    Items valid alone but clashing with another (`find_conflicts`) are invalid too, as in
    `icetide tables validate`.
    """
    result = Triage()
    valid: list[ControlItem] = []
    for raw in raw_items:
        try:
            valid.append(ControlItem.parse(raw))
        except InvalidControlItem as problem:
            name = raw.get("targetTableName")
            result.invalid.append(
                {"targetTableName": name if isinstance(name, str) else repr(name), "errors": problem.errors}
            )
    conflicts = find_conflicts(valid)
    for position, item in enumerate(valid):
        if position in conflicts:
            result.invalid.append(
                {"targetTableName": item.target_table_name, "errors": [conflicts[position]]}
            )
        elif item.is_active:
            result.runnable.append(item)
        else:
            result.inactive.append(item.target_table_name)
            if item.is_continuous:
                result.retiring.append(item)
    result.runnable.sort(key=lambda item: item.target_table_name)
    result.inactive.sort()
    result.invalid.sort(key=lambda entry: str(entry["targetTableName"]))
    return result


def execution_input(target_table_name: str, run_id: str, scheduled_time: datetime) -> dict[str, str]:
    """The input of one table-run execution (docs/contracts.md)."""
    return {
        "targetTableName": target_table_name,
        "runId": run_id,
        "scheduledTime": stored_time(scheduled_time),
    }


@dataclass
class ScheduleSummary:
    """What one schedule event did, table by table."""

    slot_start: datetime
    started: list[str] = field(default_factory=list)
    already_started: list[str] = field(default_factory=list)
    failed: dict[str, str] = field(default_factory=dict)
    # Continuous tables not started because a live run holds their lock: table -> that run.
    locked: dict[str, str] = field(default_factory=dict)

    def finish(self, triaged: Triage) -> dict[str, Any]:
        """The handler's output; raises ExecutionStartFailed if any start failed."""
        if self.failed:
            reasons = "; ".join(f"{run}: {reason}" for run, reason in sorted(self.failed.items()))
            raise ExecutionStartFailed(f"could not start {len(self.failed)} run(s): {reasons}")
        return {
            "slot": self.slot_start.strftime(SLOT_FORMAT),
            "started": self.started,
            "alreadyStarted": self.already_started,
            "locked": self.locked,
            "inactive": triaged.inactive,
            "invalid": triaged.invalid,
        }
