"""Spark's progress on a long load: "Spark stage 3/5, tasks 120/200" under the table's state.

Spark's own console bar (``spark.ui.showConsoleProgress``) is off in the local session: it names no
table, mixes the stages of parallel runs and draws with carriage returns into logs. Instead every
Glue job run gets a Spark job group of its own (job groups belong to the thread that sets them, and
the Glue stand-in runs each job run in a thread of its own), and a reporter thread reads the group's
jobs from ``SparkContext.statusTracker()``: nothing for a run that ends within a couple of seconds,
then one line whenever the progress changed, at most every few seconds.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

from icetide_local.progress import RunProgress
from icetide_local.spark import local_spark_session

if TYPE_CHECKING:
    from pyspark import SparkContext, StatusTracker

# A load that ends sooner shows no Spark line; one that runs longer shows one at most this often.
QUIET_FIRST_SECONDS = 2.0
REPORT_EVERY_SECONDS = 3.0


class LocalSparkJobRunner(Protocol):
    """A Glue job runner on the local Spark session of ``warehouse`` (``standins.glue_spark``'s jobs)."""

    warehouse: Path
    catalog: str

    def __call__(self, arguments: Mapping[str, str]) -> None: ...


@dataclass(frozen=True)
class StageProgress:
    """One stage of a Spark job: its tasks, how many finished, and whether it is running now."""

    tasks: int
    completed: int
    running: bool = False

    @property
    def done(self) -> bool:
        return not self.running and self.tasks > 0 and self.completed >= self.tasks


@dataclass(frozen=True)
class JobProgress:
    """One Spark job of a run: whether it has ended, and its stages."""

    ended: bool
    stages: tuple[StageProgress, ...]


def spark_progress_line(jobs: Sequence[JobProgress]) -> str | None:
    """``Spark stage D/N, tasks C/T`` for a run's jobs so far; None while no stage runs.

    N counts the stages the run has had so far (a MERGE runs several jobs one after another, so N
    grows), except those an ended job skipped (Spark reuses a shuffle it already has); D is the
    stage running now, counting the finished ones before it; C/T are its finished and total tasks
    (summed when stages run side by side).
    """
    stages = [stage for job in jobs for stage in job.stages if not job.ended or stage.done]
    running = [stage for stage in stages if stage.running]
    if not running:
        return None
    done = sum(1 for stage in stages if stage.done)
    completed = sum(stage.completed for stage in running)
    tasks = sum(stage.tasks for stage in running)
    return f"Spark stage {done + 1}/{len(stages)}, tasks {completed}/{tasks}"


def job_group_progress(tracker: StatusTracker, group: str) -> list[JobProgress]:
    """The jobs of Spark job group ``group``, as the status tracker knows them now."""
    active = set(tracker.getActiveStageIds())
    jobs = []
    for job_id in tracker.getJobIdsForGroup(group):
        job = tracker.getJobInfo(job_id)
        if job is None:  # forgotten already (Spark keeps a bounded number of jobs)
            continue
        stages = []
        for stage_id in job.stageIds:
            stage = tracker.getStageInfo(stage_id)
            if stage is None:  # not submitted yet
                stages.append(StageProgress(tasks=0, completed=0))
            else:
                stages.append(StageProgress(stage.numTasks, stage.numCompletedTasks, stage_id in active))
        jobs.append(JobProgress(ended=job.status != "RUNNING", stages=tuple(stages)))
    return jobs


@contextlib.contextmanager
def reporting_spark_progress(
    context: SparkContext,
    group: str,
    report: Callable[[str], None],
    *,
    first_after_seconds: float = QUIET_FIRST_SECONDS,
    every_seconds: float = REPORT_EVERY_SECONDS,
) -> Iterator[None]:
    """While the block runs, report job group ``group``'s progress line when it changes.

    Nothing before ``first_after_seconds``, then at most every ``every_seconds``; nothing after the
    block ends (it waits for the reporter thread).
    """
    stop = threading.Event()

    def follow() -> None:
        if stop.wait(first_after_seconds):
            return
        shown: str | None = None
        while True:
            try:
                line = spark_progress_line(job_group_progress(context.statusTracker(), group))
            except Exception:  # progress is a courtesy: a tracker that fails must not fail the load
                return
            if line is not None and line != shown:
                report(line)
                shown = line
            if stop.wait(every_seconds):
                return

    reporter = threading.Thread(target=follow, name=f"spark-progress-{group}", daemon=True)
    reporter.start()
    try:
        yield
    finally:
        stop.set()
        reporter.join()


@dataclass
class SparkProgressRunner:
    """A Glue stand-in job runner that runs ``job`` and reports its Spark progress under its table.

    The job group is the run id: set in the job run's thread before the job starts, it tags every
    Spark job the run starts, and only those.
    """

    job: LocalSparkJobRunner
    progress: RunProgress
    first_after_seconds: float = QUIET_FIRST_SECONDS
    every_seconds: float = REPORT_EVERY_SECONDS
    _context: SparkContext | None = field(default=None, init=False, repr=False)
    _context_lock: threading.Lock = field(default_factory=threading.Lock, init=False, repr=False)

    def __call__(self, arguments: Mapping[str, str]) -> None:
        table = arguments.get("--target_table") or "?"
        group = arguments.get("--run_id") or table
        context = self._spark_context()
        context.setJobGroup(group, f"icetide {table} {group}")
        with reporting_spark_progress(
            context,
            group,
            lambda line: self.progress.table_detail(table, line),
            first_after_seconds=self.first_after_seconds,
            every_seconds=self.every_seconds,
        ):
            self.job(arguments)

    def _spark_context(self) -> SparkContext:
        # The job builds the same session on first use; building it here, once, under a lock, keeps
        # two tables' first runs from starting it side by side.
        with self._context_lock:
            if self._context is None:
                session = local_spark_session(self.job.warehouse, catalog=self.job.catalog)
                self._context = session.sparkContext
            return self._context
