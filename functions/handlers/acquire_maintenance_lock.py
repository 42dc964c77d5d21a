"""AcquireMaintenanceLock: take the table's lock for a maintenance run and fix the run's plan.

Input: ``{"targetTableName", "runId"}``. Output: ``{"plan": MaintenancePlan}`` (docs/contracts.md,
"Maintenance plan"). The lock is the merge runs' lock, taken by the same conditional write and the
same stale-lock rule, so a maintenance run and a merge run of one table never overlap; the
maintenance run leaves ``lastRun*`` (the last merge's) alone. Raises ControlItemNotFound,
InvalidControlItem and MaintenanceDisabled (both before the lock is taken: a broken or opted-out
item never holds its table), TableLocked (a live run holds the lock; the message names it).
"""

from __future__ import annotations

from typing import Any

from aws_lambda_powertools.utilities.typing import LambdaContext

from icetide.adapters.control_table import ControlTable
from icetide.clock import utc_now
from icetide.control.model import ControlItem
from icetide.errors import MaintenanceDisabled
from icetide.maintenance.plan import MaintenancePlan, build_maintenance_plan
from icetide.observability import observed
from icetide.run import locking
from icetide.run.handler_inputs import RunInput, parse_input
from icetide.run.lock_taking import take_table_lock
from icetide.settings import Settings, load_settings


def _refuse_if_disabled(item: ControlItem, run_id: str) -> None:
    if not item.maintenance_policy.enabled:
        raise MaintenanceDisabled(
            f"maintenance of table {item.target_table_name} is turned off (maintenance.enabled false); "
            f"run {run_id} changed nothing"
        )


def _plan(item: ControlItem, run_id: str, settings: Settings) -> MaintenancePlan:
    return build_maintenance_plan(
        item,
        run_id,
        raw_bucket=settings.require("raw_bucket"),
        manifest_prefix=settings.manifest_prefix,
        glue_database=settings.require("glue_database"),
    )


@observed()
def handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    settings = load_settings()
    run = parse_input(RunInput, event)
    table = ControlTable(settings.control_table_name)
    now = utc_now()

    raw = table.get_item(run.target_table_name)
    if raw is None:
        raise locking.missing_item(run.target_table_name)
    item = ControlItem.parse(raw)
    _refuse_if_disabled(item, run.run_id)
    _plan(item, run.run_id, settings)  # a plan that cannot be built fails before the lock is taken

    locked = take_table_lock(
        table,
        run.target_table_name,
        run.run_id,
        now=now,
        stale_after_seconds=settings.lock_stale_after_seconds,
        merge_run=False,
    )
    # The policy is the item's as it was when the lock was taken (someone may have edited it since
    # it was read above); once the lock is held the run goes on, even if maintenance was just turned off.
    return {"plan": _plan(ControlItem.parse(locked), run.run_id, settings).to_json()}
