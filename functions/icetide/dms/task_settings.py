"""DMS replication task settings: icetide's defaults with the item's own settings merged over them.

A delta run is a full load of the rows the filter selects, a cdc run a change capture (the plan's
`migrationType`); either writes into a per-run S3 folder that nothing else writes, so the target
needs no preparation (`TargetTablePrepMode: DO_NOTHING`).
Logging is on because a failed task's CloudWatch log is the only account of why it failed.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Mapping
from typing import Any

from icetide.control.model import ControlItem

DEFAULT_TASK_SETTINGS: dict[str, Any] = {
    "FullLoadSettings": {"TargetTablePrepMode": "DO_NOTHING"},
    "Logging": {"EnableLogging": True},
}


def deep_merge(base: Mapping[str, Any], override: Mapping[str, Any]) -> dict[str, Any]:
    """`override` merged over `base`: maps merge key by key, anything else (lists too) is replaced."""
    merged = copy.deepcopy(dict(base))
    for key, value in override.items():
        if isinstance(value, Mapping) and isinstance(merged.get(key), Mapping):
            merged[key] = deep_merge(merged[key], value)
        else:
            merged[key] = copy.deepcopy(value)
    return merged


def task_settings(item: ControlItem) -> dict[str, Any]:
    """The task settings of a run of `item`: our defaults, then the item's `replication_task_settings`."""
    return deep_merge(DEFAULT_TASK_SETTINGS, item.task_settings)


def task_settings_json(item: ControlItem) -> str:
    """`task_settings` serialised, as `CreateReplicationTask`'s `ReplicationTaskSettings` wants it."""
    return json.dumps(task_settings(item))
