"""A continuous table's change count over random histories of its long-lived task, against a small
independent oracle (icetide.run.change_count).

Each seeded history interleaves what DMS does (counts changes as it captures them, writes some of
them to a CDC file later, leaves some out of every file as a filter would), what happens to the
task (icetide resumes a stopped or failed task and reads its counters first; now and then someone
else resumes it), forged files (rows nobody counted) and runs. A run lists the files after the
checkpoint, takes at most a few, reads the counters after the listing, and goes through
count_before_run / refuse_uncounted / count_after_run exactly as select_bronze_files does; a refused
run commits nothing.

The oracle knows the truth of the simulation: which rows are real, and what each start of the task
counted. Under either reading of the counters (StatisticsOnResume) it requires that

- a run whose files DMS wrote is never refused, unless forged rows were merged before (they fitted
  within changes DMS counted but did not write, as a filter leaves out, and took their place);
- a run whose rows would take the CDC rows merged past every change DMS's counters ever reported
  (the closing reading of each ended start plus the current one) is refused, as long as every start
  that ended was closed by icetide's own resume, one per committed run (otherwise the bound is
  unknown for a while and the oracle only requires healthy runs to pass).
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field

import pytest

from icetide.run.bronze_selection import ListedFile, takes_every_file
from icetide.run.change_count import (
    BronzeChangesNotCounted,
    CounterReading,
    count_after_run,
    count_before_run,
    refuse_uncounted,
)
from icetide_contracts.change_count import ChangeCount, ClosedStart
from icetide_local.standins.dms.lifecycle import StatisticsOnResume

SEEDS = range(40)
STEPS = 60
MAX_FILES_PER_RUN = 3
FOLDER = "dbo/orders/"
EVENTS = ["changes", "write", "write", "run", "run", "stop", "forge", "filtered"]


@dataclass
class File:
    name: str
    rows: int
    real: bool


@dataclass
class Task:
    """DMS's side: what its counters report under the reading, and what the oracle knows."""

    reading: StatisticsOnResume
    start: int = 0
    running: bool = True
    reported: int = 0  # what DescribeTableStatistics says now
    closed_reports: list[int] = field(default_factory=list)  # each ended start's last report
    captured_unwritten: int = 0  # counted, not yet in a file

    def start_name(self) -> str:
        return f"2026-11-21T00:00:{self.start:02d}+00:00"

    def count(self, changes: int) -> None:
        self.reported += changes

    def resume(self) -> None:
        self.closed_reports.append(self.reported)
        self.start += 1
        self.running = True
        if self.reading is StatisticsOnResume.RESET:
            self.reported = 0


@dataclass
class Table:
    """icetide's side: the committed checkpoint and change count, and the rows merged."""

    files: list[File] = field(default_factory=list)
    checkpoint: int = 0  # files[:checkpoint] are merged
    count: ChangeCount | None = None
    merged_rows: int = 0
    merged_forged: int = 0  # forged rows that fit within what DMS counted but did not write
    # The oracle stops requiring refusals once a start ended without icetide reading its counters,
    # or two starts ended between two committed runs (only the latest resume is kept).
    bound_unknowable: bool = False
    resumes_since_commit: int = 0


def _run(task: Task, table: Table, closed: ClosedStart | None) -> tuple[bool, int]:
    """One run; (refused, its CDC rows)."""
    listed = [ListedFile(FOLDER + file.name, 1) for file in table.files[table.checkpoint :]]
    after = FOLDER + table.files[table.checkpoint - 1].name if table.checkpoint else None
    taken = table.files[table.checkpoint : table.checkpoint + MAX_FILES_PER_RUN]
    rows = sum(file.rows for file in taken)
    # Read after the listing; the task's first start is its fresh start (FreshStartDate).
    read = CounterReading(task_start=task.start_name(), counted=task.reported, fresh=task.start == 0)
    before_run = count_before_run(table.count, read, closed=closed)
    try:
        refuse_uncounted("dbo_orders", before_run, rows, [(file.name, file.rows) for file in taken])
    except BronzeChangesNotCounted:
        return True, rows
    drained = takes_every_file(listed, after, [ListedFile(FOLDER + file.name, 1) for file in taken])
    table.count = count_after_run(table.count, before_run, rows, drained=drained)
    table.checkpoint += len(taken)
    table.merged_rows += rows
    table.merged_forged += sum(file.rows for file in taken if not file.real)
    return False, rows


def _history(seed: int, reading: StatisticsOnResume, *, unseen_resumes: bool) -> tuple[list[str], int]:
    """Play one seeded history; the oracle's complaints (empty: none) and how many runs were refused."""
    rng = random.Random(seed)
    task, table = Task(reading), Table()
    complaints: list[str] = []
    refusals = 0
    name = 0
    recorded: ClosedStart | None = None  # lastTaskResume.closedStart: kept whatever the run does
    for step in range(STEPS):
        # The table's first run creates and starts the task: before it, DMS has done nothing.
        event = "run" if step == 0 else rng.choice(EVENTS)
        if event == "changes" and task.running:
            changes = rng.randint(1, 5)
            task.count(changes)
            task.captured_unwritten += changes
        elif event == "filtered" and task.running:
            task.count(rng.randint(1, 3))  # counted, never written (a filter, CdcInsertsOnly)
        elif event == "write" and task.running and task.captured_unwritten:
            rows = rng.randint(1, task.captured_unwritten)
            task.captured_unwritten -= rows
            name += 1
            table.files.append(File(f"20261121-{name:09d}.parquet", rows, real=True))
        elif event == "forge":
            name += 1
            table.files.append(File(f"20261121-{name:09d}.parquet", rng.randint(1, 6), real=False))
        elif event == "stop" and task.running:
            if task.captured_unwritten:  # what it captured is in its files once it stopped
                name += 1
                table.files.append(File(f"20261121-{name:09d}.parquet", task.captured_unwritten, real=True))
                task.captured_unwritten = 0
            task.running = False
            if unseen_resumes and rng.random() < 0.3:
                task.resume()  # someone else resumed it: icetide never read its counters stopped
                table.bound_unknowable = True
        elif event == "run":
            resumed = None
            if not task.running:  # EnsureContinuousTask: read the stopped task's counters, resume
                resumed = ClosedStart(task_start=task.start_name(), counted=task.reported)
                task.resume()
                table.resumes_since_commit += 1
                table.bound_unknowable |= table.resumes_since_commit > 1
            taken = table.files[table.checkpoint : table.checkpoint + MAX_FILES_PER_RUN]
            # Forged rows merged earlier used up counts real files need: a later refusal finds them.
            healthy = all(file.real for file in taken) and not table.merged_forged
            merged_before = table.merged_rows
            refused, rows = _run(task, table, resumed or recorded)
            recorded = resumed or recorded
            ever_reported = sum(task.closed_reports) + task.reported
            if refused and healthy:
                complaints.append(f"step {step}: a healthy run of {rows} row(s) was refused")
            if not refused:
                table.resumes_since_commit = 0
            if not refused and not table.bound_unknowable and rows and merged_before + rows > ever_reported:
                complaints.append(
                    f"step {step}: {merged_before + rows} rows merged in all, "
                    f"but DMS only ever reported {ever_reported} changes"
                )
            if refused:
                refusals += 1
                # The operator removes what DMS did not write; the next run goes on.
                table.files[table.checkpoint :] = [f for f in table.files[table.checkpoint :] if f.real]
    return complaints, refusals


@pytest.mark.parametrize("reading", list(StatisticsOnResume))
@pytest.mark.parametrize("unseen_resumes", [False, True], ids=["icetide-resumes", "unseen-resumes-too"])
def test_no_healthy_run_is_refused_and_no_uncounted_excess_is_merged(
    reading: StatisticsOnResume, unseen_resumes: bool
) -> None:
    complaints = {
        seed: found for seed in SEEDS if (found := _history(seed, reading, unseen_resumes=unseen_resumes)[0])
    }

    assert complaints == {}


def test_the_histories_do_refuse_forged_files() -> None:
    # Without refusals the property above could hold by never checking anything.
    refusals = sum(_history(seed, StatisticsOnResume.RESET, unseen_resumes=False)[1] for seed in SEEDS)

    assert refusals > len(SEEDS)


def test_a_naive_bound_of_the_latest_start_alone_would_refuse_a_healthy_run_after_a_resume() -> None:
    # The reading that makes the per-start count necessary: counters restart at the resume, and a
    # file written before the stop is merged after it.
    stored = ChangeCount(task_start="start-1", counted=5, carried=0, merged=0)
    read = CounterReading(task_start="start-2", counted=0)

    carried = count_before_run(stored, read, closed=ClosedStart(task_start="start-1", counted=5))
    unknown = count_before_run(stored, read)

    refuse_uncounted("dbo_orders", carried, 5, [("a.parquet", 5)])  # not refused: 5 carried
    with pytest.raises(BronzeChangesNotCounted, match="hold 6 row"):
        refuse_uncounted("dbo_orders", carried, 6, [("a.parquet", 6)])
    assert unknown.carried is None  # a start that ended unseen: not checked, never refused
    refuse_uncounted("dbo_orders", unknown, 500, [("a.parquet", 500)])
