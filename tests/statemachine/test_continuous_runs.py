"""The real ASL under moto with a continuous cdc table (issue 13): the first run creates the table's
long-lived task and no run deletes it; each run merges the files after the committed file
checkpoint, in DMS's order and bounded; the checkpoint moves only with the commit.

Files are put into the task's folder by the tests, as DMS would write them; the Glue stand-in
records the bronze file selection each job run was given (read from S3, as the real job reads it).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import boto3
import pytest

from bronze_parquet import dms_parquet
from icetide_contracts.bronze_files import BronzeFiles
from icetide_local.standins.dms.lifecycle import (
    DmsLifecycle,
    MoverResult,
    ReplicationTaskRun,
    StatisticsOnResume,
    TableStatistics,
)
from icetide_local.standins.glue import failing_job, manifest_writer
from icetide_local.stepfunctions import TableRunHarness
from icetide_local.stepfunctions.faults import Fault
from statemachine.orders import (
    PREVIOUS_WATERMARK,
    TABLE,
    StackFactory,
    create_shared_instance,
    orders_item,
)
from statemachine.test_table_run import GLUE_JOB, INJECTED, SNS_PUBLISH

CONTINUOUS_ITEM = {
    "captureMode": "cdc",
    "cdcTask": "continuous",
    "filtercolumn": None,
    "filteroperator": None,
    "startvalue": None,
}
FILES = "dbo/orders/"  # DMS writes <folder>/<schema>/<table>/<file>
STORED_CHECKPOINT = "dbo/orders/20261121-050000000.parquet"


class RecordingJob:
    """The Glue stand-in's runner: records each run's selection, then writes a manifest."""

    def __init__(self) -> None:
        self.selections: list[list[str]] = []
        self._manifest = manifest_writer(rowsRead=3, rowsInserted=1, rowsUpdated=1, rowsDeleted=1)

    def __call__(self, arguments: Mapping[str, str]) -> None:
        bucket, _, key = arguments["--bronze_files_uri"].removeprefix("s3://").partition("/")
        body = boto3.client("s3").get_object(Bucket=bucket, Key=key)["Body"].read()
        selection = BronzeFiles.from_text(body)
        assert selection.bronze_uri == arguments["--bronze_uri"]
        self.selections.append(selection.files)
        self._manifest(arguments)


class TaskStarts:
    """The DMS stand-in's mover: moves nothing, records how the task was started."""

    def __init__(self) -> None:
        self.runs: list[ReplicationTaskRun] = []

    def __call__(self, run: ReplicationTaskRun) -> MoverResult:
        self.runs.append(run)
        # A checkpoint to resume from, as DMS keeps one: a resume goes on, it does not load again.
        return MoverResult(
            tables=(TableStatistics(schema="dbo", table="orders"),), recovery_checkpoint="stand-in"
        )


def _continuous_stack(
    make_stack: StackFactory, *, created: bool = True, **item: Any
) -> tuple[TableRunHarness, RecordingJob, TaskStarts]:
    """A stack with the continuous dbo_orders item; ``created``: its first run has created the task
    (DMS writes files only once the task exists), and then ``cdcFileCheckpoint`` is set if given."""
    job, starts = RecordingJob(), TaskStarts()
    glue_runner = item.pop("glue_runner", job)
    checkpoint = item.pop("cdcFileCheckpoint", None)
    reading = item.pop("statistics_on_resume", StatisticsOnResume.RESET)
    stack = make_stack(glue_runner=glue_runner, dms=DmsLifecycle(mover=starts, statistics_on_resume=reading))
    attributes = {**CONTINUOUS_ITEM, "replicationInstanceArn": create_shared_instance(stack), **item}
    stack.put_control_item(
        {name: value for name, value in orders_item(**attributes).items() if value is not None}
    )
    if created:
        first = stack.run(TABLE)
        assert first.status == "SUCCEEDED", first.render()
    if checkpoint is not None:
        stack.put_control_item({**_item(stack), "cdcFileCheckpoint": checkpoint})
    return stack, job, starts


def _folder(stack: TableRunHarness) -> tuple[str, str]:
    return stack.names.raw_bucket, f"bronze/_continuous/{TABLE}/"


def _deliver(stack: TableRunHarness, *names: str, rows: int = 1, counted: bool = True) -> None:
    """DMS writes files of ``rows`` rows into the task's folder and, while its task runs, counts
    their changes (``counted``: False for a file DMS never wrote)."""
    bucket, folder = _folder(stack)
    running = [task["ReplicationTaskArn"] for task in _tasks(stack) if task["Status"] == "running"]
    for name in names:
        stack.client("s3").put_object(Bucket=bucket, Key=f"{folder}{FILES}{name}", Body=dms_parquet(rows))
        if counted and running and not name.startswith("LOAD"):
            stack.dms.count_changes(running[0], TableStatistics(schema="dbo", table="orders", inserts=rows))


def _item(stack: TableRunHarness) -> dict[str, Any]:
    item = stack.control_item(TABLE)
    assert item is not None
    return item


def _tasks(stack: TableRunHarness) -> list[dict[str, Any]]:
    return list(stack.client("dms").describe_replication_tasks()["ReplicationTasks"])


def test_the_first_run_creates_the_long_lived_task_later_runs_create_nothing_and_none_deletes_it(
    make_stack: StackFactory,
) -> None:
    stack, job, starts = _continuous_stack(make_stack, created=False)

    first = stack.run(TABLE)  # creates and starts the task; DMS has written nothing yet
    created = stack.dms_inventory()
    _deliver(stack, "LOAD00000001.parquet", "LOAD00000002.parquet")
    second = stack.run(TABLE)
    _deliver(stack, "20261121-070000000.parquet")
    third = stack.run(TABLE)
    fourth = stack.run(TABLE)  # no new file

    reports = (first, second, third, fourth)
    assert [report.status for report in reports] == ["SUCCEEDED"] * 4, fourth.render()
    assert len(created.tasks) == 1
    assert len(created.target_endpoints) == 1
    assert stack.dms_inventory() == created  # later runs created nothing, no run deleted anything
    assert [task["Status"] for task in _tasks(stack)] == ["running"]
    assert [(run.migration_type, run.cdc_stop_position) for run in starts.runs] == [
        ("full-load-and-cdc", None)
    ]
    assert job.selections == [
        [f"{FILES}LOAD00000001.parquet", f"{FILES}LOAD00000002.parquet"],
        [f"{FILES}20261121-070000000.parquet"],
    ]
    assert _item(stack)["cdcFileCheckpoint"] == f"{FILES}20261121-070000000.parquet"
    assert not any("Create replication task" in report.states_entered for report in reports)
    assert [report.entered("Run Glue job") for report in reports] == [0, 1, 1, 0]


def test_a_table_whose_task_is_gone_but_whose_files_remain_is_refused_until_cleaned(
    make_stack: StackFactory,
) -> None:
    stack, _, _ = _continuous_stack(make_stack)
    _deliver(stack, "LOAD00000001.parquet")
    assert stack.run(TABLE).status == "SUCCEEDED"
    (task,) = _tasks(stack)
    dms = stack.client("dms")
    dms.stop_replication_task(ReplicationTaskArn=task["ReplicationTaskArn"])
    assert [described["Status"] for described in _tasks(stack)] == ["stopped"]
    dms.delete_replication_task(ReplicationTaskArn=task["ReplicationTaskArn"])  # by hand

    report = stack.run(TABLE)

    assert report.status == "FAILED", report.render()
    assert "ContinuousFolderInUse" in _item(stack)["lastRunError"]
    assert _tasks(stack) == []
    assert _item(stack)["cdcFileCheckpoint"] == f"{FILES}LOAD00000001.parquet"


def test_files_after_the_checkpoint_are_merged_in_dms_order(make_stack: StackFactory) -> None:
    stack, job, _ = _continuous_stack(make_stack, cdcFileCheckpoint=STORED_CHECKPOINT)
    _deliver(
        stack,
        "20261121-040000000.parquet",  # before the checkpoint: merged by an earlier run
        "20261121-050000000.parquet",  # the checkpoint itself
        "20261121-060000000.parquet",
        "20261121-055959999.parquet",
        "LOAD0000000A.parquet",  # full-load files sort before every CDC file: all merged before it
    )

    report = stack.run(TABLE)

    assert report.status == "SUCCEEDED", report.render()
    assert job.selections == [[f"{FILES}20261121-055959999.parquet", f"{FILES}20261121-060000000.parquet"]]
    assert _item(stack)["cdcFileCheckpoint"] == f"{FILES}20261121-060000000.parquet"
    assert _item(stack)["lastRunStats"]["filesMerged"] == 2


def test_a_full_load_is_merged_in_hexadecimal_order_before_the_cdc_files(make_stack: StackFactory) -> None:
    stack, job, _ = _continuous_stack(make_stack)
    _deliver(
        stack,
        "20261121-060000000.parquet",
        "LOAD0000000A.parquet",
        "LOAD00000009.parquet",
        "LOAD00000010.parquet",
    )

    report = stack.run(TABLE)

    assert report.status == "SUCCEEDED", report.render()
    assert job.selections == [
        [
            f"{FILES}LOAD00000009.parquet",
            f"{FILES}LOAD0000000A.parquet",
            f"{FILES}LOAD00000010.parquet",
            f"{FILES}20261121-060000000.parquet",
        ]
    ]


def test_a_backlog_is_consumed_over_bounded_runs_in_order(make_stack: StackFactory) -> None:
    one_row = len(dms_parquet(1))  # two such files fit the byte bound, three do not
    stack, job, _ = _continuous_stack(make_stack, maxFilesPerRun=2, maxBytesPerRun=one_row * 5 // 2)
    _deliver(stack, *(f"20261121-0{hour}0000000.parquet" for hour in range(1, 6)))
    _deliver(stack, "20261121-060000000.parquet", rows=500)  # larger than the byte bound: taken alone

    reports = [stack.run(TABLE) for _ in range(5)]

    assert [report.status for report in reports] == ["SUCCEEDED"] * 5, reports[-1].render()
    assert job.selections == [
        [f"{FILES}20261121-010000000.parquet", f"{FILES}20261121-020000000.parquet"],
        [f"{FILES}20261121-030000000.parquet", f"{FILES}20261121-040000000.parquet"],
        [f"{FILES}20261121-050000000.parquet"],  # with the next file it would pass the bound
        [f"{FILES}20261121-060000000.parquet"],
    ]
    assert "Run Glue job" not in reports[-1].states_entered
    assert _item(stack)["cdcFileCheckpoint"] == f"{FILES}20261121-060000000.parquet"


def test_a_run_without_new_files_succeeds_without_a_job_or_a_snapshot(make_stack: StackFactory) -> None:
    stack, job, _ = _continuous_stack(make_stack, cdcFileCheckpoint=STORED_CHECKPOINT)
    _deliver(stack, "20261121-050000000.parquet")

    report = stack.run(TABLE)

    assert report.status == "SUCCEEDED", report.render()
    assert "Run Glue job" not in report.states_entered
    assert job.selections == []
    assert stack.glue.runs == []
    item = _item(stack)
    assert (item["cdcFileCheckpoint"], item["watermark"]) == (STORED_CHECKPOINT, PREVIOUS_WATERMARK)
    assert item["lastRunStatus"] == "SUCCEEDED"
    assert item["lastRunStats"] == {
        "rowsRead": 0,
        "rowsInserted": 0,
        "rowsUpdated": 0,
        "rowsDeleted": 0,
        "rowsUnchanged": 0,
        "filesMerged": 0,
    }
    assert "lockHolder" not in item
    assert [note.attributes["status"] for note in stack.notifications()] == []


@pytest.mark.parametrize("was", ["stopped", "failed"])
def test_a_stopped_or_failed_task_is_resumed_recorded_and_notified(
    make_stack: StackFactory, was: str
) -> None:
    stack, job, starts = _continuous_stack(make_stack)
    (task,) = _tasks(stack)
    _deliver(stack, "20261121-070000000.parquet")  # written before the task stopped
    if was == "stopped":
        stack.client("dms").stop_replication_task(ReplicationTaskArn=task["ReplicationTaskArn"])
    else:
        stack.dms.fail_task(task["ReplicationTaskArn"], "the source went away")
    assert [described["Status"] for described in _tasks(stack)] == [was]
    stack.notifications()

    report = stack.run(TABLE)

    assert report.status == "SUCCEEDED", report.render()
    assert "Notify continuous task resumed" in report.states_entered
    assert [described["Status"] for described in _tasks(stack)] == ["running"]
    assert stack.dms_inventory().tasks == [task["ReplicationTaskArn"]]
    resumed = stack.notifications()[0]
    assert resumed.attributes == {"status": "TASK_RESUMED", "targetTableName": TABLE}
    assert resumed.message["resumedFrom"].startswith(f"was {was}")
    assert _item(stack)["lastTaskResume"]["was"] == resumed.message["resumedFrom"]
    assert len(starts.runs) == 2  # started once, resumed once
    assert job.selections[-1] == [f"{FILES}20261121-070000000.parquet"]


# Every state of a continuous run that can fail, and the fault that makes it fail.
CONTINUOUS_FAILURES = [
    pytest.param("Acquire table lock", "acquire_lock", id="acquire-lock"),
    pytest.param("Ensure replication instance", "ensure_replication_instance", id="ensure-instance"),
    pytest.param("Ensure continuous task", "ensure_continuous_task", id="ensure-task"),
    pytest.param("Select bronze files", "select_bronze_files", id="select"),
    pytest.param("Run Glue job", GLUE_JOB, id="glue-job"),
    pytest.param("Delete DMS resources", "delete_dms_resources", id="delete"),
    pytest.param("Notify success", SNS_PUBLISH, id="notify"),
    pytest.param("Commit watermark", "commit_watermark", id="commit"),
]


@pytest.mark.parametrize(("failed_state", "target"), CONTINUOUS_FAILURES)
def test_a_failed_run_leaves_the_checkpoint_keeps_the_task_and_unlocks(
    make_stack: StackFactory, failed_state: str, target: str
) -> None:
    job = RecordingJob()
    failing = failing_job(INJECTED)
    glue_runs: list[Mapping[str, str]] = []

    def fails_once(arguments: Mapping[str, str]) -> None:
        glue_runs.append(arguments)
        (failing if target == GLUE_JOB and len(glue_runs) == 1 else job)(arguments)

    stack, _, _ = _continuous_stack(make_stack, cdcFileCheckpoint=STORED_CHECKPOINT, glue_runner=fails_once)
    tasks = stack.dms_inventory().tasks
    _deliver(stack, "20261121-060000000.parquet")
    if target == SNS_PUBLISH:
        stack.faults.inject(target, Fault("InvalidParameter", INJECTED, times=1))
    elif target != GLUE_JOB:
        stack.faults.inject(target, Fault("InjectedFailure", INJECTED, times=1))

    report = stack.run(TABLE)

    assert report.status == "FAILED", report.render()
    assert f"{failed_state} failed" in report.states_entered
    item = _item(stack)
    assert (item["cdcFileCheckpoint"], item["watermark"]) == (STORED_CHECKPOINT, PREVIOUS_WATERMARK)
    assert item["lastFailedState"] == failed_state
    assert "lockHolder" not in item
    assert stack.dms_inventory().tasks == tasks  # the failure cleanup never deletes the task

    recovered = stack.run(TABLE)  # the next run merges the same file again and moves on

    assert recovered.status == "SUCCEEDED", recovered.render()
    assert _item(stack)["cdcFileCheckpoint"] == f"{FILES}20261121-060000000.parquet"


def test_a_continuous_table_without_a_long_lived_instance_fails_with_a_clear_reason(
    make_stack: StackFactory,
) -> None:
    stack, _, _ = _continuous_stack(make_stack, created=False)
    stack.put_control_item(
        {
            name: value
            for name, value in orders_item(**CONTINUOUS_ITEM).items()
            if value is not None and name != "replicationInstanceArn"
        }
    )

    report = stack.run(TABLE)

    assert report.status == "FAILED", report.render()
    assert "cdcTask: continuous needs a long-lived replication instance" in _item(stack)["lastRunError"]
    assert stack.dms_inventory().tasks == []


def test_a_forged_far_future_file_fails_the_run_naming_it_and_the_next_real_file_is_merged(
    make_stack: StackFactory,
) -> None:
    stack, job, _ = _continuous_stack(make_stack, cdcFileCheckpoint=STORED_CHECKPOINT)
    forged = "99991231-235959999.parquet"
    _deliver(stack, "20261121-060000000.parquet")
    _deliver(stack, forged, counted=False)

    report = stack.run(TABLE)

    assert report.status == "FAILED", report.render()
    item = _item(stack)
    assert "BronzeFileNotFromDms" in item["lastRunError"]
    assert f"{FILES}{forged} is named 9999-12-31 23:59:59 UTC" in item["lastRunError"]
    assert (item["cdcFileCheckpoint"], item["watermark"]) == (STORED_CHECKPOINT, PREVIOUS_WATERMARK)
    assert job.selections == []  # no Glue run: silver untouched
    assert "lockHolder" not in item

    bucket, folder = _folder(stack)
    stack.client("s3").delete_object(Bucket=bucket, Key=f"{folder}{FILES}{forged}")  # the operator's removal
    _deliver(stack, "20261121-061000000.parquet")
    recovered = stack.run(TABLE)

    assert recovered.status == "SUCCEEDED", recovered.render()
    assert job.selections == [[f"{FILES}20261121-060000000.parquet", f"{FILES}20261121-061000000.parquet"]]
    assert _item(stack)["cdcFileCheckpoint"] == f"{FILES}20261121-061000000.parquet"
