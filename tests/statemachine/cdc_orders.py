"""dbo_orders as a windowed cdc table, and a DMS stand-in mover whose task runs each reach the next
checkpoint: what the state-machine tests of cdc runs share.

The mover reports a new RecoveryCheckpoint per task run and records the start and stop positions
each task was started with, which is what those tests check against literals.
"""

from __future__ import annotations

from typing import Any

from icetide_local.standins.dms.lifecycle import (
    DmsLifecycle,
    MoverResult,
    ReplicationTaskRun,
    TableStatistics,
)
from icetide_local.stepfunctions import TableRunHarness
from statemachine.orders import StackFactory, orders_item

CDC_ITEM = {"captureMode": "cdc", "filtercolumn": None, "filteroperator": None, "startvalue": None}
STORED_CHECKPOINT = "checkpoint:V1#icetide#sqlite#41"
# A windowed task stops CDC_STOP_AFTER_SECONDS (the harness's 2) after its start, once the stand-in's
# real clock has passed it: the polls wait a declared second each, CDC_TIME_SCALE of it in real time,
# for up to ten real seconds. A smaller scale would spend those seconds on more polls.
CDC_POLLS = {"PollSeconds": "1", "MaxPollWaitSeconds": "1", "MaxPolls": "40"}
CDC_TIME_SCALE = 0.25


class CheckpointingMover:
    """Moves nothing; each task run reaches the next checkpoint, `checkpoint:V1#icetide#sqlite#<n>`."""

    def __init__(self) -> None:
        self.runs: list[ReplicationTaskRun] = []

    def __call__(self, run: ReplicationTaskRun) -> MoverResult:
        self.runs.append(run)
        reached = f"checkpoint:V1#icetide#sqlite#{100 + len(self.runs)}"
        return MoverResult(
            tables=(TableStatistics(schema="dbo", table="orders"),), recovery_checkpoint=reached
        )


def cdc_orders_item(**attributes: Any) -> dict[str, Any]:
    """The control item of dbo_orders as a windowed cdc table (no filter)."""
    item = orders_item(**CDC_ITEM, **attributes)
    return {name: value for name, value in item.items() if value is not None}


def cdc_stack(make_stack: StackFactory, **options: Any) -> tuple[TableRunHarness, CheckpointingMover]:
    """A stack whose DMS stand-in reads a ``server_time:`` stop position strictly (its default): one
    already past when the task starts stops it at once, having read nothing."""
    mover = CheckpointingMover()
    options.setdefault("time_scale", CDC_TIME_SCALE)
    return make_stack(substitutions=CDC_POLLS, dms=DmsLifecycle(mover=mover), **options), mover
