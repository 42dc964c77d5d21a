"""`icetide reload TABLE --workspace DIR --source URL --tables FILE`: a full reload, locally.

The request (``reloadRequested``, icetide.run.reload) is written into the workspace's saved state
while the workspace is held, as the conditional write does in AWS while no run holds the table:
here no cycle can run meanwhile. Then, unless only the request is wanted, one cycle of that table
alone runs through the state machine: its plan is the reload's. The request is saved with the run
state, so a reload that fails is tried again by the table's next cycle.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from typing import Any

from icetide.clock import stored_time
from icetide.control.codec import encode_value, from_typed_json, is_typed_json, to_typed_json
from icetide.control.model import ControlItem
from icetide.errors import InvalidControlItem
from icetide.run.reload import reload_refusal, reload_request
from icetide_local.cycle_report import CycleReport
from icetide_local.workspace import Workspace, merge_run_state, table_name
from icetide_local.workspace_cycle import run_workspace_cycle


class ReloadRefused(Exception):
    """The table cannot be reloaded (not in the tables file, an invalid item, or a kind of table a
    reload cannot replace); nothing was written."""


def configured_item(raw_items: list[Any], target_table_name: str) -> dict[str, Any]:
    """The tables file's item of ``target_table_name`` (plain values)."""
    for raw in raw_items:
        plain = from_typed_json(raw) if is_typed_json(raw) else raw
        if isinstance(plain, Mapping) and plain.get("targetTableName") == target_table_name:
            return dict(plain)
    raise ReloadRefused(f"the tables file has no item for table {target_table_name!r}")


def request_reload(workspace: Workspace, configured: Mapping[str, Any], now: datetime) -> str:
    """Write ``reloadRequested`` (``now``) for the table of ``configured`` into the workspace's
    state; the stored time. The item the next cycle runs (the file's configuration with the saved
    run state) must be one a reload can replace."""
    requested = stored_time(now)
    with workspace.exclusive():
        saved = workspace.load_control_items()
        typed = to_typed_json(dict(configured))
        [merged] = merge_run_state([typed], saved)
        try:
            item = ControlItem.parse(from_typed_json(merged))
        except InvalidControlItem as invalid:
            raise ReloadRefused(f"{table_name(typed)}: invalid control item: {invalid}") from None
        refusal = reload_refusal(item)
        if refusal is not None:
            raise ReloadRefused(refusal)
        marked = {**merged, "reloadRequested": encode_value(reload_request(item, requested))}
        others = [entry for entry in saved if table_name(entry) != item.target_table_name]
        workspace.save_control_items([*others, marked])
    return requested


def reload_workspace_table(
    workspace: Workspace, source_url: str, configured: Mapping[str, Any], **cycle: Any
) -> CycleReport:
    """Run one cycle of the table of ``configured`` alone (its reload, once requested); ``cycle``
    goes to :func:`run_workspace_cycle` (progress, timeout)."""
    return run_workspace_cycle(workspace, source_url, [dict(configured)], **cycle)
