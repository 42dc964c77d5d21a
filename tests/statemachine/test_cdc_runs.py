"""The real ASL under moto with a cdc table (issue 11): three runs move the checkpoint run by run,
each task starting where the previous run's commit left it; a failure at any state leaves the
checkpoint (and the watermark) as they were.

The DMS stand-in's mover reports a new RecoveryCheckpoint per task run and records the start and
stop positions each task was started with, which is what these tests check against literals.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from icetide_local.standins.dms.lifecycle import (
    DmsLifecycle,
    MoverResult,
    ReplicationTaskRun,
    TableStatistics,
)
from icetide_local.standins.glue import failing_job
from icetide_local.stepfunctions import TableRunHarness
from statemachine.orders import PREVIOUS_WATERMARK, TABLE, StackFactory, orders_item
from statemachine.test_table_run import GLUE_JOB, INJECTED, TASK_FAILURES, _make_fail

CDC_ITEM = {"captureMode": "cdc", "filtercolumn": None, "filteroperator": None, "startvalue": None}
STORED_CHECKPOINT = "checkpoint:V1#icetide#sqlite#41"


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


# A windowed task stops CDC_STOP_AFTER_SECONDS (the harness's 2) after its start, once the clock has
# passed it: the polls wait a second each, for up to ten.
CDC_POLLS = {"PollSeconds": "1", "MaxPollWaitSeconds": "1", "MaxPolls": "10"}


def _cdc_stack(make_stack: StackFactory, **options: Any) -> tuple[TableRunHarness, CheckpointingMover]:
    """A stack whose DMS stand-in reads a ``server_time:`` stop position strictly (its default): one
    already past when the task starts stops it at once, having read nothing."""
    mover = CheckpointingMover()
    return make_stack(substitutions=CDC_POLLS, dms=DmsLifecycle(mover=mover), **options), mover


def test_three_cdc_runs_each_start_at_the_checkpoint_the_previous_one_committed(
    make_stack: StackFactory,
) -> None:
    stack, mover = _cdc_stack(make_stack)
    item = orders_item(**CDC_ITEM)
    stack.put_control_item({name: value for name, value in item.items() if value is not None})

    reports = [stack.run(TABLE) for _ in range(3)]

    assert [report.status for report in reports] == ["SUCCEEDED"] * 3, reports[-1].render()
    assert [(run.migration_type, run.cdc_start_position) for run in mover.runs] == [
        ("full-load-and-cdc", None),
        ("cdc", "checkpoint:V1#icetide#sqlite#101"),
        ("cdc", "checkpoint:V1#icetide#sqlite#102"),
    ]
    assert all(
        run.cdc_stop_position and run.cdc_stop_position.startswith("server_time:") for run in mover.runs
    )
    rules = [json.dumps(run.table_mappings) for run in mover.runs]
    assert all('"expression": "$AR_H_CHANGE_SEQ"' in rule for rule in rules)
    stored = stack.control_item(TABLE)
    assert stored is not None
    assert stored["cdcCheckpoint"] == "checkpoint:V1#icetide#sqlite#103"


@pytest.mark.parametrize(("failed_state", "target", "error"), TASK_FAILURES)
def test_a_failed_cdc_run_leaves_the_checkpoint(
    make_stack: StackFactory, failed_state: str, target: str, error: str
) -> None:
    options = {"glue_runner": failing_job(INJECTED)} if target == GLUE_JOB else {}
    stack, _ = _cdc_stack(make_stack, **options)
    item = orders_item(**CDC_ITEM, cdcCheckpoint=STORED_CHECKPOINT)
    stack.put_control_item({name: value for name, value in item.items() if value is not None})
    _make_fail(stack, target)

    report = stack.run(TABLE)

    assert report.status == "FAILED", report.render()
    stored = stack.control_item(TABLE)
    assert stored is not None
    assert (stored["cdcCheckpoint"], stored["watermark"]) == (STORED_CHECKPOINT, PREVIOUS_WATERMARK)
    assert stored["lastFailedState"] == failed_state
