"""The real ASL under moto with a cdc table (issue 11): three runs move the checkpoint run by run,
each task starting where the previous run's commit left it. That a failure at any state leaves the
checkpoint (and the watermark) as they were is test_table_run's failed-state test, whose cdc runs
use the same stack (statemachine.cdc_orders).
"""

from __future__ import annotations

import json

from statemachine.cdc_orders import cdc_orders_item, cdc_stack
from statemachine.orders import TABLE, StackFactory


def test_three_cdc_runs_each_start_at_the_checkpoint_the_previous_one_committed(
    make_stack: StackFactory,
) -> None:
    stack, mover = cdc_stack(make_stack)
    stack.put_control_item(cdc_orders_item())

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
