"""Spark's progress under a table, from a real local Spark: a job run long enough shows its stage and
tasks, one that ends quickly shows nothing, and another run's Spark jobs never count."""

from __future__ import annotations

import re
import threading
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from icetide_local.spark import local_spark_session
from icetide_local.spark_progress import SparkProgressRunner

pytestmark = pytest.mark.spark

CATALOG = "progress_tests"
# One stage of {tasks} tasks (one per partition), each sleeping {ms} ms in the JVM.
SLEEPING_STAGE = (
    "SELECT reflect('java.lang.Thread', 'sleep', bigint({ms})) FROM range(0, {tasks}, 1, {tasks})"
)


@dataclass
class SleepingJob:
    """A job runner on the local session whose one Spark stage has ``tasks`` tasks of ``ms`` each."""

    warehouse: Path
    tasks: int
    ms: int
    catalog: str = CATALOG

    def __call__(self, arguments: Mapping[str, str]) -> None:
        spark = local_spark_session(self.warehouse, catalog=self.catalog)
        spark.sql(SLEEPING_STAGE.format(ms=self.ms, tasks=self.tasks)).collect()


@dataclass
class RecordedDetails:
    """A RunProgress that keeps the details it is given (Spark's lines), by table."""

    details: list[tuple[str, str]] = field(default_factory=list)

    def message(self, text: str) -> None:
        return None

    def table_state(self, table: str, state: str) -> None:
        return None

    def table_detail(self, table: str, detail: str) -> None:
        self.details.append((table, detail))

    def table_done(self, table: str, outcome: str) -> None:
        return None


def _run_in_own_thread(runner: SparkProgressRunner, table: str) -> None:
    # As the Glue stand-in runs each job run: in a thread of its own.
    arguments = {"--target_table": table, "--run_id": f"{table}-20261121T0700Z"}
    thread = threading.Thread(target=runner, args=(arguments,))
    thread.start()
    thread.join(timeout=180)
    assert not thread.is_alive(), "the job run did not end"


def test_a_long_run_shows_its_own_stage_and_tasks_and_not_another_runs(tmp_path: Path) -> None:
    warehouse = tmp_path / "warehouse"
    local_spark_session(warehouse, catalog=CATALOG)  # started before: its start-up is no part of the run
    recorded = RecordedDetails()
    runner = SparkProgressRunner(
        # Four tasks on local[2]: two waves, so the stage is seen part done.
        SleepingJob(warehouse, tasks=4, ms=1500),
        recorded,
        first_after_seconds=0.5,
        every_seconds=0.2,
    )
    # Another table's Spark job, two tasks, running at the same time without the run's job group.
    other = threading.Thread(target=SleepingJob(warehouse, tasks=2, ms=1500), args=({},))

    other.start()
    _run_in_own_thread(runner, "orders")
    other.join(timeout=180)

    assert recorded.details, "no Spark progress was reported for a run of several seconds"
    assert {table for table, _ in recorded.details} == {"orders"}
    for _, detail in recorded.details:
        # 4/4 too: the last task can finish between the read of the active stages and the stage's.
        assert re.fullmatch(r"Spark stage 1/1, tasks [0-4]/4", detail), detail
    assert any(not detail.endswith(" 4/4") for _, detail in recorded.details), recorded.details


def test_a_run_that_ends_within_the_quiet_first_seconds_shows_nothing(tmp_path: Path) -> None:
    warehouse = tmp_path / "warehouse"
    recorded = RecordedDetails()
    runner = SparkProgressRunner(SleepingJob(warehouse, tasks=1, ms=1), recorded, first_after_seconds=5)

    _run_in_own_thread(runner, "customers")

    assert recorded.details == []
