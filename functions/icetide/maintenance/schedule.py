"""Which tables a maintenance schedule event starts.

The same triage as the merge schedule (``icetide.run.scheduling``): invalid items are reported and
skipped, inactive tables are left alone. Of the runnable tables, those whose item turns maintenance
off (``maintenance.enabled`` false) are listed, not started: a run would only be refused at its lock.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

from icetide.control.model import ControlItem


@dataclass(frozen=True)
class MaintenanceTriage:
    """Runnable tables split into those due for maintenance and those that turn it off."""

    due: list[ControlItem] = field(default_factory=list)
    disabled: list[str] = field(default_factory=list)


def maintenance_due(runnable: Iterable[ControlItem]) -> MaintenanceTriage:
    """Split ``runnable`` (active, valid items) by their policy's ``enabled``, keeping their order."""
    triage = MaintenanceTriage()
    for item in runnable:
        if item.maintenance_policy.enabled:
            triage.due.append(item)
        else:
            triage.disabled.append(item.target_table_name)
    return triage
