"""The real ASL under moto with a continuous cdc table whose runs count their CDC rows against what
the long-lived task counted (icetide.run.change_count): a file DMS never counted fails the run
before any Glue job, naming the table, the counts and the file, and commits nothing; healthy runs
across a resume pass under both readings of what a resume does to the task's statistics
(StatisticsOnResume), including a resume icetide did not make.
"""

from __future__ import annotations

import pytest

from icetide_local.standins.dms.lifecycle import StatisticsOnResume
from statemachine.orders import PREVIOUS_WATERMARK, TABLE, StackFactory
from statemachine.test_continuous_runs import (
    FILES,
    STORED_CHECKPOINT,
    _continuous_stack,
    _deliver,
    _folder,
    _item,
    _tasks,
)


def test_a_forged_file_dms_never_counted_fails_the_run_naming_it_and_commits_nothing(
    make_stack: StackFactory,
) -> None:
    stack, job, _ = _continuous_stack(make_stack, cdcFileCheckpoint=STORED_CHECKPOINT)
    _deliver(stack, "20261121-060000000.parquet", rows=2)
    # In the table's own folder, named like DMS's files and before S3 received it: only its rows
    # tell it from DMS's.
    forged = "20261121-060500000.parquet"
    _deliver(stack, forged, rows=3, counted=False)

    report = stack.run(TABLE)

    assert report.status == "FAILED", report.render()
    item = _item(stack)
    error = item["lastRunError"]
    assert item["lastFailedState"] == "Select bronze files"
    assert "BronzeChangesNotCounted" in error and f"{TABLE}:" in error
    assert "hold 5 row(s)" in error and "at most 2 change(s)" in error
    assert f"{FILES}{forged} (3 rows)" in error
    assert (item["cdcFileCheckpoint"], item["watermark"]) == (STORED_CHECKPOINT, PREVIOUS_WATERMARK)
    assert job.selections == []  # no Glue run: silver untouched
    assert "lockHolder" not in item

    bucket, folder = _folder(stack)
    stack.client("s3").delete_object(Bucket=bucket, Key=f"{folder}{FILES}{forged}")  # the operator's removal
    _deliver(stack, "20261121-061000000.parquet", rows=1)
    recovered = stack.run(TABLE)

    assert recovered.status == "SUCCEEDED", recovered.render()
    assert job.selections == [[f"{FILES}20261121-060000000.parquet", f"{FILES}20261121-061000000.parquet"]]
    assert _item(stack)["cdcChangeCount"]["merged"] == 3


@pytest.mark.parametrize("reading", list(StatisticsOnResume))
def test_healthy_runs_across_a_resume_pass_under_either_reading_of_the_counters(
    make_stack: StackFactory, reading: StatisticsOnResume
) -> None:
    stack, job, _ = _continuous_stack(make_stack, statistics_on_resume=reading)
    (task,) = _tasks(stack)
    _deliver(stack, "20261121-060000000.parquet", rows=2)
    first = stack.run(TABLE)
    _deliver(stack, "20261121-061000000.parquet", rows=3)  # written before the task stopped
    stack.client("dms").stop_replication_task(ReplicationTaskArn=task["ReplicationTaskArn"])
    _tasks(stack)  # the stand-in's task moves one step per describe: stopped

    resuming = stack.run(TABLE)  # resumes the task: its counters restart, or go on
    _deliver(stack, "20261121-062000000.parquet", rows=1)
    after = stack.run(TABLE)

    assert [first.status, resuming.status, after.status] == ["SUCCEEDED"] * 3, after.render()
    assert "Notify continuous task resumed" in resuming.states_entered
    assert job.selections == [
        [f"{FILES}20261121-060000000.parquet"],
        [f"{FILES}20261121-061000000.parquet"],
        [f"{FILES}20261121-062000000.parquet"],
    ]
    count = _item(stack)["cdcChangeCount"]
    # The start that ended had counted 5 when the run resumed it; the new one counts the last change
    # alone, or all six if a resume keeps the counters.
    expected_counted = 1 if reading is StatisticsOnResume.RESET else 6
    assert (count["carried"], count["counted"], count["merged"]) == (5, expected_counted, 6)


def test_after_a_resume_icetide_did_not_make_runs_pass_unchecked_until_the_folder_is_drained(
    make_stack: StackFactory,
) -> None:
    stack, job, _ = _continuous_stack(make_stack)
    (task,) = _tasks(stack)
    arn = task["ReplicationTaskArn"]
    _deliver(stack, "20261121-060000000.parquet", rows=2)  # counted before the stop, then reset
    stack.client("dms").stop_replication_task(ReplicationTaskArn=arn)
    _tasks(stack)
    stack.client("dms").start_replication_task(
        ReplicationTaskArn=arn, StartReplicationTaskType="resume-processing"
    )
    _tasks(stack), _tasks(stack)  # starting, running

    unknown = stack.run(TABLE)  # the start that ended is not known: the file is merged unchecked
    drained = stack.run(TABLE)  # nothing left from before the resume it saw: the count begins again
    _deliver(stack, "20261121-061500000.parquet", rows=4, counted=False)
    forged = stack.run(TABLE)

    assert [unknown.status, drained.status] == ["SUCCEEDED"] * 2, drained.render()
    assert job.selections[0] == [f"{FILES}20261121-060000000.parquet"]
    assert _item(stack)["cdcChangeCount"]["carried"] == 0
    assert forged.status == "FAILED", forged.render()
    assert "BronzeChangesNotCounted" in _item(stack)["lastRunError"]
