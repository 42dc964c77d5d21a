"""Live progress of local runs, without AWS or Spark: a history's steps as text, the console that
shows them (appended lines in a log, a redrawn block on a terminal), Spark's progress line."""

from __future__ import annotations

import io
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from icetide_local.execution_progress import StateChange, state_changes
from icetide_local.progress import SILENT, ProgressConsole, command_progress
from icetide_local.spark_progress import JobProgress, StageProgress, spark_progress_line

STARTED = datetime(2026, 11, 21, 7, 0, 0, tzinfo=UTC)


def _event(kind: str, seconds: float, **details: Any) -> dict[str, Any]:
    return {"type": kind, "timestamp": STARTED + timedelta(seconds=seconds), **details}


def _entered(kind: str, name: str, seconds: float) -> dict[str, Any]:
    return _event(f"{kind}StateEntered", seconds, stateEnteredEventDetails={"name": name, "input": "{}"})


def _exited(kind: str, name: str, seconds: float) -> dict[str, Any]:
    return _event(f"{kind}StateExited", seconds, stateExitedEventDetails={"name": name, "output": "{}"})


# A run whose replication task fails on its second poll, as GetExecutionHistory returns it.
FAILED_RUN = [
    _event("ExecutionStarted", 0, executionStartedEventDetails={"input": '{"targetTableName": "orders"}'}),
    _entered("Pass", "Prepare run", 0),
    _exited("Pass", "Prepare run", 0.01),
    _entered("Task", "Acquire table lock", 0.04),
    _event("TaskScheduled", 0.05, taskScheduledEventDetails={"resource": "invoke"}),
    _event("TaskSucceeded", 0.3, taskSucceededEventDetails={"output": "{}"}),
    _exited("Task", "Acquire table lock", 0.31),
    _entered("Wait", "Wait for replication task", 0.4),
    _entered("Task", "Poll replication task", 1.4),
    _entered("Choice", "Replication task finished?", 1.5),
    _entered("Wait", "Wait for replication task", 1.6),
    _entered("Task", "Poll replication task", 3.7),
    _entered("Choice", "Replication task finished?", 3.8),
    _entered("Task", "Record failure", 4.0),
    _entered("Fail", "Run failed", 4.5),
    _event(
        "ExecutionFailed",
        4.56,
        executionFailedEventDetails={"error": "TableRunFailed", "cause": "the replication task failed"},
    ),
]


def test_a_history_becomes_one_step_per_state_entered_and_one_for_the_end() -> None:
    assert state_changes(FAILED_RUN) == [
        StateChange("Prepare run (+0.0 s)"),
        StateChange("Acquire table lock (+0.0 s)"),
        StateChange("Wait for replication task (+0.4 s)"),
        StateChange("Poll replication task (+1.4 s)"),
        StateChange("Wait for replication task #2 (+1.6 s)"),
        StateChange("Poll replication task #2 (+3.7 s)"),
        StateChange("Record failure (+4.0 s)"),
        StateChange("Run failed (+4.5 s)"),
        StateChange("FAILED: TableRunFailed (+4.6 s)", final=True),
    ]


def test_a_history_so_far_has_no_end_and_a_succeeded_one_names_no_error() -> None:
    running = FAILED_RUN[:4]
    succeeded = [*FAILED_RUN[:7], _event("ExecutionSucceeded", 12.25, executionSucceededEventDetails={})]

    assert state_changes(running) == [
        StateChange("Prepare run (+0.0 s)"),
        StateChange("Acquire table lock (+0.0 s)"),
    ]
    assert state_changes(succeeded)[-1] == StateChange("SUCCEEDED (+12.2 s)", final=True)


def test_in_a_log_every_message_state_detail_and_end_is_a_line_of_its_own() -> None:
    stream = io.StringIO()
    console = ProgressConsole(stream, live=False)

    console.message("cycle 20261121T0700Z: 2 run(s) started")
    console.table_state("orders", "Run Glue job (+3.1 s)")
    console.table_state("customers", "Poll replication task (+0.4 s)")
    console.table_detail("orders", "Spark stage 2/4, tasks 3/8")
    console.table_done("orders", "SUCCEEDED (+9.0 s)")
    console.close()

    assert stream.getvalue() == (
        "... cycle 20261121T0700Z: 2 run(s) started\n"
        "... orders: Run Glue job (+3.1 s)\n"
        "... customers: Poll replication task (+0.4 s)\n"
        "... orders: Spark stage 2/4, tasks 3/8\n"
        "... orders: SUCCEEDED (+9.0 s)\n"
    )


def test_on_a_terminal_each_running_table_has_a_line_redrawn_below_the_messages(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("COLUMNS", "43")  # lines are cut at 42 characters: never wrapped
    stream = io.StringIO()
    console = ProgressConsole(stream, live=True)
    up_and_clear = "\x1b[{}A\r\x1b[J"

    console.table_state("orders", "Run Glue job (+3.1 s)")
    console.table_state("customers", "Poll replication task (+0.4 s)")
    console.table_detail("orders", "Spark stage 2/4, tasks 3/8")
    console.message("DMS stand-in: 1 continuous task(s) caught up")
    console.table_done("orders", "SUCCEEDED (+9.0 s)")
    console.close()

    assert stream.getvalue() == (
        "  orders: Run Glue job (+3.1 s)\n"
        + up_and_clear.format(1)
        + "  orders: Run Glue job (+3.1 s)\n"
        + "  customers: Poll replication task (+0.4 s\n"
        + up_and_clear.format(2)
        + "  orders: Run Glue job (+3.1 s) | Spark st\n"
        + "  customers: Poll replication task (+0.4 s\n"
        + up_and_clear.format(2)
        + "... DMS stand-in: 1 continuous task(s) caught up\n"
        + "  orders: Run Glue job (+3.1 s) | Spark st\n"
        + "  customers: Poll replication task (+0.4 s\n"
        + up_and_clear.format(2)
        + "... orders: SUCCEEDED (+9.0 s)\n"
        + "  customers: Poll replication task (+0.4 s\n"
        + up_and_clear.format(1)
    )


def test_quiet_shows_nothing_and_a_command_without_it_writes_on_the_stream_it_names() -> None:
    stream = io.StringIO()

    with command_progress(stream, quiet=True) as quiet:
        quiet.message("starting the local stack")
        quiet.table_state("orders", "Run Glue job (+3.1 s)")
        quiet.table_detail("orders", "Spark stage 2/4, tasks 3/8")
        quiet.table_done("orders", "SUCCEEDED (+9.0 s)")
    with command_progress(stream, quiet=False) as shown:  # a StringIO is no terminal: lines
        shown.table_done("orders", "SUCCEEDED (+9.0 s)")

    assert quiet is SILENT
    assert stream.getvalue() == "... orders: SUCCEEDED (+9.0 s)\n"


def test_spark_progress_counts_the_stages_so_far_and_the_running_stages_tasks() -> None:
    jobs = [
        # An ended job: its first stage ran, its second was skipped (a shuffle reused).
        JobProgress(ended=True, stages=(StageProgress(4, 4), StageProgress(4, 0))),
        # The running job: one stage done, one running, one not submitted yet.
        JobProgress(
            ended=False,
            stages=(StageProgress(8, 8), StageProgress(200, 120, running=True), StageProgress(0, 0)),
        ),
    ]

    assert spark_progress_line(jobs) == "Spark stage 3/4, tasks 120/200"


def test_spark_progress_sums_stages_running_side_by_side_and_says_nothing_between_stages() -> None:
    side_by_side = [
        JobProgress(ended=False, stages=(StageProgress(4, 1, running=True), StageProgress(2, 2))),
        JobProgress(ended=False, stages=(StageProgress(6, 3, running=True),)),
    ]
    between = [JobProgress(ended=True, stages=(StageProgress(4, 4),))]

    assert spark_progress_line(side_by_side) == "Spark stage 2/3, tasks 4/10"
    assert spark_progress_line(between) is None
    assert spark_progress_line([]) is None
