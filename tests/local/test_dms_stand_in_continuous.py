"""The DMS stand-in's continuous task: started without a stop position, it keeps running, and each
catch-up writes the source's changes since its RecoveryCheckpoint as CDC files, as DMS would have.

Driven through boto3 against moto, as EnsureContinuousTask drives DMS: a ``full-load-and-cdc`` task
started without ``CdcStopPosition``; then ``DmsLifecycle.catch_up_running_tasks`` (what the local stack
calls before each cycle), stops, failures and ``resume-processing`` / ``reload-target`` starts.
"""

from __future__ import annotations

import datetime as dt
import json
import re
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import boto3
import pytest
import sqlalchemy as sa
from moto import mock_aws

from icetide_contracts.bronze_files import dms_file_order
from icetide_local.standins.dms.data_mover import replicator_mover
from icetide_local.standins.dms.lifecycle import (
    FATAL_ERROR,
    STOPPED_BY_USER,
    DmsLifecycle,
    ReplicationTaskRun,
    StatisticsOnResume,
)
from icetide_local.standins.dms.replicator import run_replication
from local.dms_cdc import DmsCdcDriver, cdc_mapping, drop_slot, execute, stop_at_next_second

CDC_FILE = re.compile(r"\d{8}-\d{9}\.parquet")
ROW = ("Op", "id", "item", "qty")
# moto's default account; the Region of the test's session.
TASK_ARN_START = "arn:aws:dms:eu-west-1:123456789012:task:"


class FlakyMover:
    """The replicator, failing its next call once armed (the source goes away for a moment)."""

    def __init__(self, source_url: str) -> None:
        self.replicate = replicator_mover(source_url)
        self.fail_next = False

    def __call__(self, run: ReplicationTaskRun) -> Any:
        if self.fail_next:
            self.fail_next = False
            raise ConnectionError("the source went away")
        return self.replicate(run)


@dataclass
class Continuous:
    """One continuous task of ``orders`` (the first task, so its folder is ``bronze/run-1``)."""

    dms: DmsCdcDriver
    lifecycle: DmsLifecycle
    mover: FlakyMover
    arn: str = ""

    def start(self, schema: str) -> dict[str, Any]:
        started = self.dms.run("full-load-and-cdc", cdc_mapping(schema, "orders"))
        self.arn = started.described["ReplicationTaskArn"]
        return started.described

    def describe(self) -> dict[str, Any]:
        return self.dms.describe(self.arn)

    def names(self) -> list[str]:
        """The task's files of ``orders``, in DMS's order (LOAD files first, then CDC files by name)."""
        files = self.dms._files("bronze/run-1").get("orders", [])
        return sorted((name for name, _ in files), key=dms_file_order)

    def rows(self, names: list[str], columns: tuple[str, ...] = ROW) -> list[tuple[Any, ...]]:
        files = dict(self.dms._files("bronze/run-1")["orders"])
        return [tuple(row[c] for c in columns) for name in names for row in files[name].to_pylist()]

    def catch_up(self) -> list[str]:
        """Catch up; the names of the files it wrote (there are no others: nothing else runs)."""
        before = set(self.names())
        self.lifecycle.catch_up_running_tasks()
        return [name for name in self.names() if name not in before]

    def start_again(self, start_type: str) -> dict[str, Any]:
        self.dms.dms.start_replication_task(ReplicationTaskArn=self.arn, StartReplicationTaskType=start_type)
        return self.describe()  # starting -> running: the data moves

    def counts(self) -> tuple[int, int, int, int]:
        [entry] = self.dms.dms.describe_table_statistics(ReplicationTaskArn=self.arn)["TableStatistics"]
        return entry["FullLoadRows"], entry["Inserts"], entry["Updates"], entry["Deletes"]


@pytest.fixture
def continuous(source_db, monkeypatch, request) -> Iterator[Continuous]:
    # What a resume does to the table statistics (StatisticsOnResume): the stand-in's default unless
    # a test asks for both readings.
    reading = getattr(request, "param", StatisticsOnResume.RESET)
    monkeypatch.setenv("AWS_DEFAULT_REGION", "eu-west-1")
    slot = f"icetide_{source_db.schema}"
    mover = FlakyMover(source_db.url)
    source_db.create_table("other", sa.Column("id", sa.Integer, primary_key=True), sa.Column("note", sa.Text))
    source_db.create_table(
        "orders", sa.Column("id", sa.Integer, primary_key=True), sa.Column("item", sa.String(20)),
        sa.Column("qty", sa.Integer),
        rows=[{"id": 1, "item": "tea", "qty": 1}, {"id": 2, "item": "cake", "qty": 2}],
    )  # fmt: skip
    with mock_aws(), DmsLifecycle(mover=mover, statistics_on_resume=reading).install() as lifecycle:
        driver = DmsCdcDriver(boto3.Session(region_name="eu-west-1"), source_db.url, slot)
        yield Continuous(driver, lifecycle, mover)
    drop_slot(source_db, slot)


def migration_types(lifecycle: DmsLifecycle) -> list[str]:
    return [run.migration_type for run in lifecycle.started_runs]


def test_each_catch_up_writes_the_changes_since_the_checkpoint_in_increasing_files(source_db, continuous):
    started = continuous.start(source_db.schema)
    nothing_yet = continuous.catch_up()
    after_nothing = continuous.describe()
    execute(
        source_db,
        "INSERT INTO {schema}.orders VALUES (3, 'jam', 3)",
        "UPDATE {schema}.orders SET qty = 10 WHERE id = 1",
    )
    first = continuous.catch_up()
    after_first = continuous.describe()
    execute(
        source_db,
        "DELETE FROM {schema}.orders WHERE id = 2",
        "INSERT INTO {schema}.other VALUES (1, 'not selected')",
    )
    second = continuous.catch_up()
    after_second = continuous.describe()
    execute(source_db, "INSERT INTO {schema}.other VALUES (2, 'still not selected')")
    only_other_tables = continuous.catch_up()
    execute(source_db, "UPDATE {schema}.orders SET item = 'bun' WHERE id = 3")
    third = continuous.catch_up()

    assert started["Status"] == "running"
    assert continuous.names() == ["LOAD00000001.parquet", *first, *second, *third]
    assert nothing_yet == [] and only_other_tables == []
    assert [len(first), len(second), len(third)] == [1, 1, 1]
    assert all(CDC_FILE.fullmatch(name) for name in first + second + third)
    assert first[0] < second[0] < third[0]
    assert continuous.rows(first) == [("I", 3, "jam", 3), ("U", 1, "tea", 10)]
    # PostgreSQL's default replica identity puts only the key into a D row.
    key_only = source_db.dialect == "postgresql"
    assert continuous.rows(second) == [("D", 2, None if key_only else "cake", None if key_only else 2)]
    assert continuous.rows(third) == [("U", 3, "bun", 3)]
    sequences = [s for (s,) in continuous.rows(first + second + third, ("AR_H_CHANGE_SEQ",))]
    assert sequences == sorted(sequences)

    checkpoints = [
        described["RecoveryCheckpoint"]
        for described in (started, after_first, after_second, continuous.describe())
    ]
    assert all(c.startswith("checkpoint:V1#icetide#") for c in checkpoints)
    assert len(set(checkpoints)) == len(checkpoints)
    assert continuous.describe()["Status"] == "running"
    assert continuous.counts() == (2, 1, 2, 1)
    assert migration_types(continuous.lifecycle) == ["full-load-and-cdc", *["cdc"] * 5]
    catch_ups = continuous.lifecycle.started_runs[1:]
    assert catch_ups[0].cdc_start_position == started["RecoveryCheckpoint"]
    assert catch_ups[1].cdc_start_position == after_nothing["RecoveryCheckpoint"]
    assert catch_ups[2].cdc_start_position == after_first["RecoveryCheckpoint"]
    assert catch_ups[3].last_cdc_file == second[0]


@pytest.mark.parametrize("continuous", list(StatisticsOnResume), indirect=True)
def test_a_stopped_task_writes_nothing_and_resumes_from_its_checkpoint_without_a_full_load(
    source_db, continuous
):
    started = continuous.start(source_db.schema)
    execute(source_db, "INSERT INTO {schema}.orders VALUES (3, 'jam', 3)")
    before_stop = continuous.catch_up()
    continuous.dms.dms.stop_replication_task(ReplicationTaskArn=continuous.arn)
    continuous.describe()  # stopping -> stopped
    stopped = continuous.describe()
    execute(source_db, "UPDATE {schema}.orders SET qty = 30 WHERE id = 3")
    while_stopped = continuous.catch_up()
    runs_while_stopped = len(continuous.lifecycle.started_runs)

    resumed = continuous.start_again("resume-processing")
    resumed_files = continuous.names()[len(before_stop) + 1 :]
    execute(source_db, "DELETE FROM {schema}.orders WHERE id = 1")
    after_resume = continuous.catch_up()

    assert (stopped["Status"], stopped["StopReason"]) == ("stopped", STOPPED_BY_USER)
    assert while_stopped == [] and runs_while_stopped == 2
    assert resumed["Status"] == "running" and "StopReason" not in resumed
    resume_run = continuous.lifecycle.started_runs[2]
    assert resume_run.migration_type == "cdc"  # no second full load
    assert resume_run.cdc_start_position == stopped["RecoveryCheckpoint"] != started["RecoveryCheckpoint"]
    assert continuous.names()[0] == "LOAD00000001.parquet"
    assert sum(name.startswith("LOAD") for name in continuous.names()) == 1
    assert continuous.rows(before_stop) == [("I", 3, "jam", 3)]
    assert continuous.rows(resumed_files) == [("U", 3, "jam", 30)]
    assert before_stop[0] < resumed_files[0] < after_resume[0]
    assert continuous.rows(after_resume, ("Op", "id")) == [("D", 1)]
    # Load 2, insert 1 before the stop; update 1, delete 1 after the resume: added up, or counted
    # from the resume only.
    kept = continuous.lifecycle.statistics_on_resume is StatisticsOnResume.KEPT
    assert continuous.counts() == ((2, 1, 1, 1) if kept else (0, 0, 1, 1))


def test_a_failed_task_writes_nothing_until_it_is_resumed(source_db, continuous):
    continuous.start(source_db.schema)
    continuous.lifecycle.fail_task(continuous.arn, "the replication instance ran out of memory")
    failed = continuous.describe()
    execute(source_db, "INSERT INTO {schema}.orders VALUES (3, 'jam', 3)")
    while_failed = continuous.catch_up()

    continuous.start_again("resume-processing")
    resumed_files = continuous.names()[1:]

    assert (failed["Status"], failed["StopReason"]) == ("failed", FATAL_ERROR)
    assert failed["LastFailureMessage"] == "the replication instance ran out of memory"
    assert while_failed == []
    assert continuous.rows(resumed_files) == [("I", 3, "jam", 3)]
    assert migration_types(continuous.lifecycle) == ["full-load-and-cdc", "cdc"]


def test_a_catch_up_that_fails_fails_the_task_which_resumes_from_the_same_checkpoint(source_db, continuous):
    started = continuous.start(source_db.schema)
    execute(source_db, "INSERT INTO {schema}.orders VALUES (3, 'jam', 3)")
    continuous.mover.fail_next = True
    failing = continuous.catch_up()
    failed = continuous.describe()

    resumed = continuous.start_again("resume-processing")

    assert failing == []
    assert (failed["Status"], failed["StopReason"]) == ("failed", FATAL_ERROR)
    assert "the source went away" in failed["LastFailureMessage"]
    assert failed["RecoveryCheckpoint"] == started["RecoveryCheckpoint"]
    assert resumed["Status"] == "running"
    assert continuous.rows(continuous.names()[1:]) == [("I", 3, "jam", 3)]


def test_reload_target_loads_again_and_later_cdc_files_still_sort_after_the_earlier_ones(
    source_db, continuous
):
    continuous.start(source_db.schema)
    execute(source_db, "INSERT INTO {schema}.orders VALUES (3, 'jam', 3)")
    [before] = continuous.catch_up()
    continuous.dms.dms.stop_replication_task(ReplicationTaskArn=continuous.arn)
    continuous.describe()
    continuous.describe()
    execute(source_db, "DELETE FROM {schema}.orders WHERE id = 2")

    continuous.start_again("reload-target")
    execute(source_db, "UPDATE {schema}.orders SET qty = 4 WHERE id = 3")
    [after] = continuous.catch_up()

    assert migration_types(continuous.lifecycle) == ["full-load-and-cdc", "cdc", "full-load-and-cdc", "cdc"]
    assert continuous.rows(["LOAD00000001.parquet"], ("Op", "id")) == [("I", 1), ("I", 3)]
    assert before < after
    assert continuous.rows([after]) == [("U", 3, "jam", 4)]
    assert continuous.counts() == (2, 0, 1, 0)


def test_only_running_tasks_without_a_stop_position_catch_up(source_db, continuous):
    windowed = continuous.dms.run(
        "full-load-and-cdc", cdc_mapping(source_db.schema, "orders"), stop=stop_at_next_second()
    )
    running = continuous.dms.run("full-load-and-cdc", cdc_mapping(source_db.schema, "orders"))

    caught_up = continuous.lifecycle.catch_up_running_tasks()

    assert windowed.described["Status"] == "stopped"
    assert caught_up == [running.described["ReplicationTaskArn"]]


def test_a_task_saved_by_one_process_goes_on_from_its_checkpoint_in_the_next(source_db, monkeypatch):
    """moto forgets everything with the process; ``icetide local run`` saves the continuous tasks."""
    monkeypatch.setenv("AWS_DEFAULT_REGION", "eu-west-1")
    slot = f"icetide_{source_db.schema}"
    source_db.create_table(
        "orders", sa.Column("id", sa.Integer, primary_key=True), sa.Column("qty", sa.Integer)
    )
    session = boto3.Session(region_name="eu-west-1")
    try:
        with mock_aws(), DmsLifecycle(mover=replicator_mover(source_db.url)).install() as first:
            driver = DmsCdcDriver(session, source_db.url, slot)
            started = driver.run(
                "full-load-and-cdc",
                cdc_mapping(source_db.schema, "orders"),
                task_resource_identifier="icetide51af3dc0-1b8f9d0ae414a71",
            ).described
            execute(source_db, "INSERT INTO {schema}.orders VALUES (1, 1)")
            first.catch_up_running_tasks()
            [(before, _)] = driver._files("bronze/run-1")["orders"]
            saved = json.loads(json.dumps(first.saved_continuous_tasks()))
            tags = driver.dms.list_tags_for_resource(ResourceArn=started["ReplicationTaskArn"])["TagList"]
        execute(source_db, "UPDATE {schema}.orders SET qty = 2 WHERE id = 1")  # while no process runs

        with mock_aws(), DmsLifecycle(mover=replicator_mover(source_db.url)).install() as second:
            driver = DmsCdcDriver(session, source_db.url, slot)  # the stack's source endpoint, again
            [restored] = second.restore_continuous_tasks(saved)
            described = driver.describe(restored)
            second.catch_up_running_tasks()
            [(after, changes)] = driver._files("bronze/run-1")["orders"]
            restored_tags = driver.dms.list_tags_for_resource(ResourceArn=restored)["TagList"]
            [counts] = driver.dms.describe_table_statistics(ReplicationTaskArn=restored)["TableStatistics"]
    finally:
        drop_slot(source_db, slot)

    # The ARN ends with the ResourceIdentifier it was created with, before and after the restore.
    assert restored == started["ReplicationTaskArn"] == f"{TASK_ARN_START}icetide51af3dc0-1b8f9d0ae414a71"
    assert described["Status"] == "running"
    assert described["TargetEndpointArn"] == started["TargetEndpointArn"]
    assert described["RecoveryCheckpoint"] == saved[0]["recoveryCheckpoint"]
    assert restored_tags == tags
    assert before < after
    assert [(row["Op"], row["id"], row["qty"]) for row in changes.to_pylist()] == [("U", 1, 2)]
    assert (counts["Inserts"], counts["Updates"]) == (1, 1)


def test_cdc_files_sort_after_the_tasks_earlier_files_even_when_the_clock_is_behind(
    sqlite_source, bronze, s3_settings
):
    source_db = sqlite_source
    execute(source_db, "CREATE TABLE orders (id INTEGER PRIMARY KEY, qty INTEGER)")
    mapping = cdc_mapping("main", "orders")
    load = run_replication(
        mapping, s3_settings, source_db.url, bronze.sink, migration_type="full-load-and-cdc"
    )
    execute(source_db, "INSERT INTO orders VALUES (1, 1)")
    earlier = dt.datetime(2026, 11, 24, 12, 0, tzinfo=dt.UTC)
    changes = run_replication(
        mapping, s3_settings, source_db.url, bronze.sink, migration_type="cdc",
        cdc_start_position=load.recovery_checkpoint, cdc_files_after="20261124-120501123.parquet",
        clock=lambda: earlier,
    )  # fmt: skip

    assert changes.last_cdc_file == "20261124-120501124.parquet"
    assert bronze.file_names("main", "orders") == ["20261124-120501124.parquet"]
