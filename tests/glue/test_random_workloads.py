"""Seeded random CDC workloads against a small, independent oracle written in plain Python.

Each workload is one table and 3-5 runs of tiny batches cut from one source history (per key:
I, then U or D, a D followed by an I): several changes per key per batch, equal commit times (with
a change sequence, or without one inside one file), late batches (a file delivered in a later run
than its time), re-delivered files (the same file in two runs), reruns of a committed run id,
deletes followed by older changes arriving later, D rows whose non-key columns are null
(PostgreSQL's default before-image), hard and soft deletes.

The oracle: per key, the newest change by (commit time, sequence, file, position) among
everything ever delivered; a delete means absent (hard) or present with the D row's values and
``_icetide_deleted_at`` = its time (soft). Silver is read back after every run; the manifest's
counts are checked against the oracle's own counts. Every mismatch is collected; there must be none.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from pyspark.sql import SparkSession

from glue.dms_files import write_dms_file
from glue.silver_tables import load_into_silver, silver_table
from icetide_glue.arguments import DeleteMode

pytestmark = pytest.mark.spark

KEYS = range(1, 7)
BASE = datetime(2026, 11, 21, 7, 0, tzinfo=UTC)
WITH_SEQ = pa.schema(
    [
        ("Op", pa.string()),
        ("dms_timestamp", pa.string()),
        ("AR_H_CHANGE_SEQ", pa.string()),
        ("id", pa.int32()),
        ("name", pa.string()),
        ("v", pa.int32()),
    ]
)
WITHOUT_SEQ = pa.schema([f for f in WITH_SEQ if f.name != "AR_H_CHANGE_SEQ"])


@dataclass(frozen=True)
class Change:
    key: int
    op: str
    seconds: int
    seq: str | None
    name: str | None
    v: int | None
    chunk: int = -1
    position: int = -1

    @property
    def ts(self) -> datetime:
        return BASE + timedelta(seconds=self.seconds)

    def order(self) -> tuple[datetime, str, int, int]:
        return (self.ts, self.seq or "", self.chunk, self.position)

    def row(self, has_seq: bool) -> tuple[Any, ...]:
        text = self.ts.strftime("%Y-%m-%d %H:%M:%S.%f")
        seq = (self.seq,) if has_seq else ()
        return (self.op, text, *seq, self.key, self.name, self.v)


@dataclass(frozen=True)
class Workload:
    soft: bool
    has_seq: bool
    null_images: bool
    chunks: list[list[Change]]
    runs: list[list[int]]  # chunk numbers delivered in each run


def source_history(rng: random.Random, has_seq: bool, null_images: bool) -> list[Change]:
    """A valid history: a key starts with I; after I/U comes U or D; after D comes I."""
    state: dict[int, tuple[str, int] | None] = {}
    seconds, changes = 0, []
    for index in range(rng.randint(14, 24)):
        key = rng.choice(KEYS)
        current = state.get(key)
        op = "I" if current is None else rng.choice("UUD")
        seconds += rng.choice((0, 0, 1, 2))  # equal commit times, across keys and within one key
        if op == "D":
            assert current is not None
            name, v = (None, None) if null_images else current
            state[key] = None
        else:
            # A small value domain: some updates set exactly the values the row already has.
            name, v = rng.choice("ab"), rng.choice((0, 1))
            state[key] = (name, v)
        seq = f"{index:020d}" if has_seq else None
        changes.append(Change(key, op, seconds, seq, name, v))
    return changes


def cut_into_chunks(rng: random.Random, history: list[Change], has_seq: bool) -> list[list[Change]]:
    """Consecutive changes per file. Without a sequence, equal commit times stay in one file, where
    the position orders them (across runs nothing could)."""
    chunks: list[list[Change]] = []
    current: list[Change] = []
    size = rng.randint(1, 4)
    for change in history:
        tie = bool(current) and not has_seq and current[-1].seconds == change.seconds
        if current and len(current) >= size and not tie:
            chunks.append(current)
            current, size = [], rng.randint(1, 4)
        current.append(change)
    chunks.append(current)
    return [
        [Change(c.key, c.op, c.seconds, c.seq, c.name, c.v, chunk=n, position=p) for p, c in enumerate(chunk)]
        for n, chunk in enumerate(chunks)
    ]


def make_workload(rng: random.Random, soft: bool) -> Workload:
    has_seq = rng.random() < 0.5
    null_images = rng.random() < 0.5 and not soft
    chunks = cut_into_chunks(rng, source_history(rng, has_seq, null_images), has_seq)
    run_count = rng.randint(3, 5)
    runs: list[list[int]] = [[] for _ in range(run_count)]
    for n in range(len(chunks)):
        run = n * run_count // len(chunks)
        if run < run_count - 1 and rng.random() < 0.3:
            run = rng.randint(run + 1, run_count - 1)  # a late file
        runs[run].append(n)
        if run < run_count - 1 and rng.random() < 0.2:
            runs[rng.randint(run + 1, run_count - 1)].append(n)  # delivered again
    return Workload(soft, has_seq, null_images, chunks, runs)


class Oracle:
    """What silver must hold: per key the newest change ever delivered."""

    def __init__(self, soft: bool) -> None:
        self.soft = soft
        self.newest: dict[int, Change] = {}

    def deliver(self, batch: Sequence[Change]) -> dict[str, int]:
        """Take a run's changes; return the counts the manifest must show."""
        winners: dict[int, Change] = {}
        for change in batch:
            if change.key not in winners or change.order() > winners[change.key].order():
                winners[change.key] = change
        counts = {"rowsInserted": 0, "rowsUpdated": 0, "rowsDeleted": 0, "rowsUnchanged": 0}
        for key, won in winners.items():
            before = self.newest.get(key)
            if before is not None and won.order() <= before.order():
                counts["rowsUnchanged"] += 1
                continue
            self.newest[key] = won
            in_silver = before is not None and (self.soft or before.op != "D")
            if won.op == "D":
                counts["rowsDeleted" if in_silver or self.soft else "rowsUnchanged"] += 1
            elif not in_silver:
                counts["rowsInserted"] += 1
            elif before is not None and before.op != "D" and (before.name, before.v) == (won.name, won.v):
                counts["rowsUnchanged"] += 1
            else:
                counts["rowsUpdated"] += 1
        return counts

    def rows(self) -> set[tuple[Any, ...]]:
        if self.soft:
            return {(k, c.name, c.v, c.ts if c.op == "D" else None) for k, c in self.newest.items()}
        return {(k, c.name, c.v) for k, c in self.newest.items() if c.op != "D"}


def silver_rows(spark: SparkSession, table: str, soft: bool) -> set[tuple[Any, ...]]:
    if not spark.catalog.tableExists(silver_table(table)):
        return set()
    columns = ["id", "name", "v", *(["_icetide_deleted_at"] if soft else [])]
    rows = spark.table(silver_table(table)).select(*columns).collect()
    # PySpark hands timestamps back as naive local (UTC session) datetimes.
    return {
        tuple(value.replace(tzinfo=UTC) if isinstance(value, datetime) else value for value in row)
        for row in rows
    }


COUNTS = ("rowsInserted", "rowsUpdated", "rowsDeleted", "rowsUnchanged")


def run_workload(
    spark: SparkSession, rng: random.Random, workload: Workload, table: str, folder: Path
) -> list[str]:
    """Load every run of the workload; return its mismatches (none expected)."""
    schema = WITH_SEQ if workload.has_seq else WITHOUT_SEQ
    mode = DeleteMode.SOFT if workload.soft else DeleteMode.HARD
    oracle, mismatches = Oracle(workload.soft), []
    for number, chunk_numbers in enumerate(workload.runs):
        bronze = folder / f"run{number}"
        for n in chunk_numbers:
            rows = [c.row(workload.has_seq) for c in workload.chunks[n]]
            write_dms_file(bronze, f"20261121-07{n:04d}000.parquet", schema, rows)
        run_id = f"{table}-{number}"
        batch = [c for n in chunk_numbers for c in workload.chunks[n]]
        manifest = load_into_silver(spark, table, run_id, bronze, delete_mode=mode)
        expected = oracle.deliver(batch)
        where = f"{table} run {number} ({workload}):"
        got = {k: manifest[k] for k in COUNTS}
        if manifest["rowsRead"] != len(batch) or got != expected:
            mismatches.append(
                f"{where} counts {got} read {manifest['rowsRead']}, oracle {expected} read {len(batch)}"
            )
        actual = silver_rows(spark, table, workload.soft)
        if actual != oracle.rows():
            mismatches.append(
                f"{where} silver {sorted(actual, key=repr)} != oracle {sorted(oracle.rows(), key=repr)}"
            )
        if rng.random() < 0.3:
            again = load_into_silver(spark, table, run_id, bronze, delete_mode=mode)
            wanted = {**manifest, "alreadyCommitted": manifest["snapshotId"] is not None}
            if again != wanted:
                mismatches.append(f"{where} rerun manifest {again} != {wanted}")
            if silver_rows(spark, table, workload.soft) != oracle.rows():
                mismatches.append(f"{where} rerun changed silver")
    return mismatches


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_random_workloads_match_the_oracle(spark: SparkSession, tmp_path: Path, seed: int) -> None:
    rng = random.Random(seed)
    mismatches: list[str] = []
    for number in range(2):
        workload = make_workload(rng, soft=number % 2 == 1)
        table = f"random_{seed}_{number}"
        mismatches += run_workload(spark, rng, workload, table, tmp_path / table)
    assert mismatches == [], "\n".join(mismatches)
