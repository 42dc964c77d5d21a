"""Seeded random full-load-and-cdc tasks with changes committed DURING their full load, checked
against a small oracle that applies what DMS delivers in DMS's own order.

DMS stamps a full-load row with when it transferred the row, on the replication instance's clock,
and a CDC row with its commit time at the source (AWS DMS API reference,
``S3Settings.TimestampColumnName``). Changes committed while the full load runs are cached and
applied after it (user guide, "Full-load task settings", ``StopTaskCachedChangesApplied``). So
here each task's full load reads the source's keys one after another while changes commit in
between, stamping each row with its read instant plus the instance clock's skew (ahead of or
behind the source's clock), and CDC delivers every change committed since the task started, with
its commit time.

Runs are windows of commit time: the first run holds the task's LOAD files (sometimes split over
the first two runs, as a continuous table's bounded runs take them) and the changes committed up
to its stop, which may fall before the full load ends: the changes after it arrive in later
folders. Some workloads end with a reload: a new task (another instance, another skew) after
changes the old task never delivered; its full load replaces silver's rows, its CDC follows it.
Hard and soft deletes; every run's merge path is chosen at random (the driver's where it may).

The oracle: silver after a run is what applying every delivered row in arrival order gives,
each task's full-load rows first (put the row), then its changes by commit time (I and U put the
row, D removes it, or with soft deletes marks it deleted at its commit time, keeping its values).
It never looks at a timestamp of a full-load row.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from pyspark.sql import SparkSession

from glue.dms_files import CHANGES_WITH_SEQUENCE, write_dms_file
from glue.silver_tables import load_into_silver, merge_path, silver_table
from icetide_glue.arguments import DeleteMode

pytestmark = pytest.mark.spark

KEYS = range(1, 9)
BASE = datetime(2026, 11, 21, 7, 0, tzinfo=UTC)
CDC_SCHEMA = CHANGES_WITH_SEQUENCE
# A full-load file as DMS writes it without IncludeOpForFullLoad: no Op, no sequence.
LOAD_SCHEMA = pa.schema([f for f in CDC_SCHEMA if f.name not in ("Op", "AR_H_CHANGE_SEQ")])
Values = tuple[str, int]


def stamp(seconds: float) -> str:
    return (BASE + timedelta(seconds=seconds)).strftime("%Y-%m-%d %H:%M:%S.%f")


@dataclass(frozen=True)
class Change:
    """A change committed at the source at ``seconds`` (the source's clock)."""

    key: int
    op: str
    seconds: float
    seq: int
    values: Values  # a D carries the row as it was (DMS's before-image)


@dataclass(frozen=True)
class LoadRow:
    """A row the full load read at ``read_at`` (real time) and stamped on the instance's clock."""

    key: int
    values: Values
    stamped: float


@dataclass
class Task:
    """One full-load-and-cdc task: its LOAD files' rows and the changes it captured."""

    load_files: list[list[LoadRow]]
    changes: list[Change]  # every change committed since the task started, in commit order


@dataclass
class Run:
    """What one run's folder holds, in the order DMS delivered it: LOAD files by their number in
    the task, then changes."""

    load_files: dict[int, list[LoadRow]] = field(default_factory=dict)
    changes: list[Change] = field(default_factory=list)


class Source:
    """The source table and its commit clock."""

    def __init__(self, rng: random.Random) -> None:
        self.rng = rng
        self.rows: dict[int, Values] = {k: self.values() for k in KEYS if rng.random() < 0.7}
        self.seq = 0

    def values(self) -> Values:
        return (self.rng.choice("abc"), self.rng.randint(0, 2))

    def commit(self, seconds: float) -> Change:
        """A random valid change of a random key, committed at ``seconds``."""
        key = self.rng.choice(KEYS)
        self.seq += 1
        before = self.rows.get(key)
        if before is None:
            self.rows[key] = self.values()
            return Change(key, "I", seconds, self.seq, self.rows[key])
        if self.rng.random() < 0.4:
            del self.rows[key]
            return Change(key, "D", seconds, self.seq, before)
        self.rows[key] = self.values()
        return Change(key, "U", seconds, self.seq, self.rows[key])


def full_load_and_cdc(rng: random.Random, source: Source, start: float, skew: float, tail: int) -> Task:
    """A task started at ``start``: its full load reads the keys in order, one per second, with
    0-2 changes committed before each read (so during the load), then ``tail`` changes after it."""
    rows: list[LoadRow] = []
    changes: list[Change] = []
    now = start
    for key in KEYS:
        for _ in range(rng.choice((0, 0, 1, 2))):
            now += 0.25
            changes.append(source.commit(now))
        now += 0.25
        if key in source.rows:
            rows.append(LoadRow(key, source.rows[key], now + skew))
    for _ in range(tail):
        now += 0.5
        changes.append(source.commit(now))
    cut = rng.randint(1, len(rows) - 1) if len(rows) > 1 and rng.random() < 0.5 else len(rows)
    files = [rows[:cut], rows[cut:]] if cut < len(rows) else [rows]
    return Task(files, changes)


@dataclass
class Workload:
    soft: bool
    runs: list[Run]
    skews: list[float]


def windows(rng: random.Random, task: Task, count: int) -> list[Run]:
    """``count`` runs of ``task``: each LOAD file in the first runs, the changes cut at random
    stops (the first may fall inside the full load)."""
    runs = [Run() for _ in range(count)]
    for number, load in enumerate(task.load_files, start=1):
        # A second LOAD file goes to the next run, before any change (a bounded continuous run).
        runs[min(number - 1, 1)].load_files[number] = load
    first_cdc = len(task.load_files) - 1
    cuts = rng.choices(range(len(task.changes) + 1), k=count - 1 - first_cdc)
    stops = [*sorted(cuts), len(task.changes)]
    taken = 0
    for number, stop in enumerate(stops, start=first_cdc):
        runs[number].changes = task.changes[taken:stop]
        taken = stop
    return runs


def make_workload(rng: random.Random) -> Workload:
    source = Source(rng)
    skew = rng.choice((-40.0, -3.0, 0.0, 3.0, 40.0))
    task = full_load_and_cdc(rng, source, 0.0, skew, tail=rng.randint(2, 5))
    runs = windows(rng, task, rng.randint(3, 4))
    skews = [skew]
    if rng.random() < 0.5:
        # Changes the first task never delivered (what a reload repairs), then the reload's task.
        end = task.changes[-1].seconds if task.changes else 10.0
        for lost in range(rng.randint(1, 3)):
            source.commit(end + 1 + lost)
        reload_skew = rng.choice((-40.0, 0.0, 40.0))
        reload = full_load_and_cdc(rng, source, end + 10, reload_skew, tail=rng.randint(0, 3))
        runs += windows(rng, reload, 2)
        skews.append(reload_skew)
    return Workload(soft=rng.random() < 0.3, runs=runs, skews=skews)


class Oracle:
    """Silver as applying every delivered row in arrival order leaves it."""

    def __init__(self, soft: bool) -> None:
        self.soft = soft
        self.rows: dict[int, tuple[Values, float | None]] = {}  # values, deleted at (soft)

    def deliver(self, run: Run) -> None:
        for _, load in sorted(run.load_files.items()):
            for row in load:
                self.rows[row.key] = (row.values, None)
        for change in sorted(run.changes, key=lambda c: (c.seconds, c.seq)):
            if change.op != "D":
                self.rows[change.key] = (change.values, None)
            elif self.soft:
                self.rows[change.key] = (change.values, change.seconds)
            else:
                self.rows.pop(change.key, None)

    def expected(self) -> set[tuple[Any, ...]]:
        if self.soft:
            return {
                (k, name, v, None if deleted is None else BASE + timedelta(seconds=deleted))
                for k, ((name, v), deleted) in self.rows.items()
            }
        return {(k, name, v) for k, ((name, v), _) in self.rows.items()}


def write_run(run: Run, folder: Path) -> None:
    """The run's folder as DMS writes it."""
    for number, load in run.load_files.items():
        name = f"LOAD{number:08X}.parquet"
        write_dms_file(folder, name, LOAD_SCHEMA, [(stamp(r.stamped), r.key, *r.values) for r in load])
    # CDC files named by the time DMS wrote them, a few changes each.
    for start in range(0, len(run.changes), 3):
        chunk = run.changes[start : start + 3]
        written = BASE + timedelta(seconds=chunk[-1].seconds + 0.5)
        name = written.strftime("%Y%m%d-%H%M%S") + f"{written.microsecond // 1000:03d}.parquet"
        rows = [(c.op, stamp(c.seconds), f"{c.seq:035d}", c.key, *c.values) for c in chunk]
        write_dms_file(folder, name, CDC_SCHEMA, rows)


def silver_rows(spark: SparkSession, table: str, soft: bool) -> set[tuple[Any, ...]]:
    if not spark.catalog.tableExists(silver_table(table)):
        return set()
    columns = ["id", "name", "v", *(["_icetide_deleted_at"] if soft else [])]
    return {
        tuple(value.replace(tzinfo=UTC) if isinstance(value, datetime) else value for value in row)
        for row in spark.table(silver_table(table)).select(*columns).collect()
    }


def test_full_load_rows_come_before_the_task_s_changes_whatever_the_clocks(
    spark: SparkSession, tmp_path: Path
) -> None:
    mismatches: list[str] = []
    paths: set[str] = set()
    # Seeds picked to cover: skew ahead, none and behind, a window ending inside the full load,
    # LOAD files over two runs (4), reloads with hard deletes (4) and soft ones (6).
    for seed in (4, 6):
        rng = random.Random(seed)
        workload = make_workload(rng)
        table = f"full_load_order_{seed}"
        oracle = Oracle(workload.soft)
        mode = DeleteMode.SOFT if workload.soft else DeleteMode.HARD
        for number, run in enumerate(workload.runs):
            if not run.load_files and not run.changes:
                continue  # DMS writes no folder for a window without rows
            bronze = tmp_path / table / f"run{number}"
            write_run(run, bronze)
            # Each run forces its merge plan: the driver's where it may (a hard-delete merge into
            # an existing table), or Spark's.
            exists = spark.catalog.tableExists(silver_table(table))
            plan = "driver" if not workload.soft and exists and rng.random() < 0.6 else "spark"
            manifest = load_into_silver(
                spark, table, f"{table}-{number}", bronze, delete_mode=mode, merge_plan=plan
            )
            oracle.deliver(run)
            if manifest["snapshotId"] is not None:
                path = str(merge_path(spark, table, manifest["snapshotId"]))
                paths.add(path)
                if path != plan:
                    mismatches.append(f"seed {seed} run {number}: committed by {path}, forced {plan}")
            actual, expected = silver_rows(spark, table, workload.soft), oracle.expected()
            if actual != expected:
                mismatches.append(
                    f"seed {seed} run {number} (skews {workload.skews}, soft {workload.soft}): "
                    f"silver {sorted(actual, key=repr)} != oracle {sorted(expected, key=repr)}"
                )
    assert mismatches == [], "\n".join(mismatches)
    assert paths == {"driver", "spark"}, paths
