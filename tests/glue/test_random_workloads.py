"""Seeded random CDC workloads against a small, independent oracle written in plain Python.

Each workload is one table and 3-5 runs of tiny batches cut from one source history (per key:
I, then U or D, a D followed by an I): several changes per key per batch, equal commit times (with
a change sequence, or without one inside one file), a full load's rows (no sequence, in a LOAD
file beside the CDC files of the first run), late batches (a file delivered in a later run than
its time), re-delivered files (the same file in two runs), reruns of a run id, deletes followed
by older changes arriving later, D rows whose non-key columns are null (PostgreSQL's default
before-image), hard and soft deletes, hard-delete tables losing their stored values hash before a
run (an earlier icetide's table, so rows with and without one meet), and reconcile runs (a key
extraction started at some time and reading the source's keys at or after it).

The oracle: per key, the newest change by (commit time, sequence, file, position) among
everything ever delivered; a delete means absent (hard) or a row marked ``_icetide_deleted_at`` =
its time (soft) holding the newest values known (the D's own, else the newest values of its
batch when newer than what was known, else the row's). A reconcile adds a delete at its start,
above every sequence, for each key not extracted whose newest change (this batch included) is a
live one at or before the start. Silver is read back after every run; the manifest's counts are
checked against the oracle's own counts, and every stored values hash against its own oracle
(glue.values_hash) or null. Every mismatch is collected; there must be none.
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

from glue.dms_files import CHANGES_WITH_SEQUENCE, write_dms_file
from glue.silver_tables import load_into_silver, merge_path, silver_table
from glue.values_hash import int_text, values_hash
from icetide_glue.arguments import DeleteMode
from icetide_glue.columns import VALUES_HASH
from seeds import EachSeed

pytestmark = pytest.mark.spark

KEYS = range(1, 7)
BASE = datetime(2026, 11, 21, 7, 0, tzinfo=UTC)
WITH_SEQ = CHANGES_WITH_SEQUENCE
WITHOUT_SEQ = pa.schema([f for f in WITH_SEQ if f.name != "AR_H_CHANGE_SEQ"])
# A full-load file without IncludeOpForFullLoad and without the sequence column.
BARE_LOAD = pa.schema([f for f in WITHOUT_SEQ if f.name != "Op"])
KEYS_ONLY = pa.schema([("Op", pa.string()), ("dms_timestamp", pa.string()), ("id", pa.int32())])
# What the job's reconcile deletes carry: the extraction's start, a sequence above any other.
RECONCILE_SEQ = "9" * 40


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

    @property
    def has_values(self) -> bool:
        return (self.name, self.v) != (None, None)

    def order(self) -> tuple[datetime, str, int, int]:
        return (self.ts, self.seq or "", self.chunk, self.position)

    def row(self, schema: pa.Schema) -> tuple[Any, ...]:
        values = {
            "Op": self.op,
            "dms_timestamp": self.ts.strftime("%Y-%m-%d %H:%M:%S.%f"),
            "AR_H_CHANGE_SEQ": self.seq,
            "id": self.key,
            "name": self.name,
            "v": self.v,
        }
        return tuple(values[name] for name in schema.names)


@dataclass(frozen=True)
class Reconcile:
    seconds: int  # the extraction's start
    keys: frozenset[int]  # the source's keys as the extraction read them, at or after the start

    @property
    def started_at(self) -> datetime:
        return BASE + timedelta(seconds=self.seconds)


@dataclass(frozen=True)
class Workload:
    soft: bool
    has_seq: bool
    null_images: bool
    load_schema: pa.Schema | None  # the first run's full-load file (None: no full load)
    load: list[Change]
    chunks: list[list[Change]]
    runs: list[list[int]]  # chunk numbers delivered in each run
    reconciles: dict[int, Reconcile]  # by run number


def source_history(rng: random.Random, has_seq: bool, null_images: bool, loaded: list[int]) -> list[Change]:
    """A valid history: a key starts with I (a full load's, at second 0, for ``loaded``); after I/U
    comes U or D; after D comes I."""
    state: dict[int, tuple[str, int] | None] = {}
    load = []
    for key in loaded:
        values = (rng.choice("ab"), rng.choice((0, 1)))
        state[key] = values
        load.append(Change(key, "I", 0, None, *values))  # a full-load row: no sequence
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
    return [*load, *changes]


def source_keys(history: Sequence[Change], seconds: int) -> frozenset[int]:
    """The keys the source holds once every change up to ``seconds`` is committed."""
    live: dict[int, bool] = {}
    for change in history:
        if change.seconds <= seconds:
            live[change.key] = change.op != "D"
    return frozenset(key for key, alive in live.items() if alive)


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
    null_images = rng.random() < 0.5
    # A full-load-and-cdc folder (LOAD rows without sequence beside CDC files) needs the sequence:
    # without one, equal times in different runs could not be ordered.
    loaded = sorted(rng.sample(KEYS, rng.randint(2, 4))) if has_seq and rng.random() < 0.6 else []
    history = source_history(rng, has_seq, null_images, loaded)
    load = [
        Change(c.key, c.op, c.seconds, c.seq, c.name, c.v, position=p)
        for p, c in enumerate(history[: len(loaded)])
    ]
    # A delta table's filtered loads never see deletes: only a reconcile can remove those keys.
    unseen = 0.5 if rng.random() < 0.5 else 0.0
    delivered = [c for c in history[len(loaded) :] if c.op != "D" or rng.random() >= unseen]
    chunks = cut_into_chunks(rng, delivered, has_seq)
    run_count = rng.randint(3, 5)
    runs: list[list[int]] = [[] for _ in range(run_count)]
    for n in range(len(chunks)):
        run = n * run_count // len(chunks)
        if run < run_count - 1 and rng.random() < 0.3:
            run = rng.randint(run + 1, run_count - 1)  # a late file
        runs[run].append(n)
        if run < run_count - 1 and rng.random() < 0.2:
            runs[rng.randint(run + 1, run_count - 1)].append(n)  # delivered again
    reconciles = {}
    for number in [rng.randint(1, run_count - 1)]:  # one reconcile run per workload
        # Started near the newest change this run delivers; read the source a little later.
        times = [c.seconds for n in runs[number] for c in chunks[n]] or [0]
        start = max(times) + rng.choice((-2, -1, 0, 0, 1))
        reconciles[number] = Reconcile(start, source_keys(history, start + rng.choice((0, 1, 2))))
    load_schema = rng.choice((WITH_SEQ, BARE_LOAD)) if loaded else None
    return Workload(soft, has_seq, null_images, load_schema, load, chunks, runs, reconciles)


class Oracle:
    """What silver must hold, from the changes delivered so far: per key the newest change, and the
    change whose values its row holds (soft deletes keep the newest values known, never nulls)."""

    def __init__(self, soft: bool) -> None:
        self.soft = soft
        self.newest: dict[int, Change] = {}
        self.values: dict[int, Change] = {}

    def deliver(self, batch: Sequence[Change], reconcile: Reconcile | None) -> dict[str, int]:
        """Take a run's changes; return the counts the manifest must show."""
        winners: dict[int, Change] = {}
        with_values: dict[int, Change] = {}
        for change in batch:
            for newest in (winners, *([with_values] if change.has_values else [])):
                if change.key not in newest or change.order() > newest[change.key].order():
                    newest[change.key] = change
        if reconcile is not None:
            # Keys live after this batch, unchanged since the extraction started, and not extracted.
            for key in set(self.newest) | set(winners):
                after = max(
                    (c for c in (self.newest.get(key), winners.get(key)) if c is not None), key=Change.order
                )
                if key not in reconcile.keys and after.op != "D" and after.seconds <= reconcile.seconds:
                    winners[key] = Change(key, "D", reconcile.seconds, RECONCILE_SEQ, None, None)
        counts = {"rowsInserted": 0, "rowsUpdated": 0, "rowsDeleted": 0, "rowsUnchanged": 0}
        for key, won in winners.items():
            counts[self._apply(key, won, with_values.get(key))] += 1
        return counts

    def _apply(self, key: int, won: Change, batch_values: Change | None) -> str:
        before, row = self.newest.get(key), self.values.get(key)
        if before is not None and won.order() <= before.order():
            return "rowsUnchanged"  # older than what is known: changes nothing
        self.newest[key] = won
        live = before is not None and before.op != "D"
        if won.op != "D":
            self.values[key] = won
            if row is None:
                return "rowsInserted"
            if not live:
                return "rowsUpdated"  # a soft-deleted row revived
            return "rowsUnchanged" if (row.name, row.v) == (won.name, won.v) else "rowsUpdated"
        if not self.soft:
            self.values.pop(key, None)
            return "rowsDeleted" if live else "rowsUnchanged"
        # The newest values known: the D's own, else the batch's newest if newer than the row's.
        if won.has_values:
            self.values[key] = won
        elif batch_values is not None and (
            row is None or before is None or batch_values.order() > before.order()
        ):
            self.values[key] = batch_values
        return "rowsDeleted" if key in self.values else "rowsUnchanged"

    def rows(self) -> set[tuple[Any, ...]]:
        if self.soft:
            return {
                (k, c.name, c.v, self.newest[k].ts if self.newest[k].op == "D" else None)
                for k, c in self.values.items()
            }
        return {(k, c.name, c.v) for k, c in self.values.items()}


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


def wrong_hashes(spark: SparkSession, table: str) -> list[str]:
    """Silver's rows whose stored values hash is not the oracle's (glue.values_hash): every row
    stores it, whichever path wrote it, and rows stored without one are filled by the next run."""
    if not spark.catalog.tableExists(silver_table(table)):
        return []
    columns = ("id", "name", "v", "_icetide_run_id", VALUES_HASH)
    wrong = []
    for row in spark.table(silver_table(table)).select(*columns).collect():
        stored, run = row[VALUES_HASH], int(row["_icetide_run_id"].rsplit("-", 1)[1])
        if stored != values_hash({"name": row["name"], "v": int_text(row["v"])}):
            wrong.append(f"key {row['id']} (run {run}) stores hash {stored} of {row['name']!r}, {row['v']!r}")
    return wrong


COUNTS = ("rowsInserted", "rowsUpdated", "rowsDeleted", "rowsUnchanged")


def write_run(workload: Workload, number: int, folder: Path) -> tuple[Path, list[Change], dict[str, Any]]:
    """The run's bronze folder, its changes, and its reconcile arguments (if it reconciles)."""
    schema = WITH_SEQ if workload.has_seq else WITHOUT_SEQ
    bronze = folder / f"run{number}"
    batch = []
    if number == 0 and workload.load_schema is not None:
        write_dms_file(
            bronze,
            "LOAD00000001.parquet",
            workload.load_schema,
            [c.row(workload.load_schema) for c in workload.load],
        )
        batch += workload.load
    for n in workload.runs[number]:
        write_dms_file(
            bronze, f"20261121-07{n:04d}000.parquet", schema, [c.row(schema) for c in workload.chunks[n]]
        )
        batch += workload.chunks[n]
    reconcile = workload.reconciles.get(number)
    if reconcile is None:
        return bronze, batch, {}
    keys = folder / f"keys{number}"
    if reconcile.keys:  # DMS writes no folder for an empty table
        rows = [
            ("I", reconcile.started_at.strftime("%Y-%m-%d %H:%M:%S.%f"), key)
            for key in sorted(reconcile.keys)
        ]
        write_dms_file(keys, "LOAD00000001.parquet", KEYS_ONLY, rows)
    arguments = {
        "reconcile": keys,
        "reconcile_expected_rows": len(reconcile.keys),
        "reconcile_started_at": reconcile.started_at,
    }
    return bronze, batch, arguments


def run_workload(
    spark: SparkSession,
    rng: random.Random,
    workload: Workload,
    table: str,
    folder: Path,
    taken: dict[str, int],
) -> list[str]:
    """Load every run of the workload; return its mismatches (none expected). ``taken`` counts
    the committed runs per merge path, of those either path may merge."""
    mode = DeleteMode.SOFT if workload.soft else DeleteMode.HARD
    oracle, mismatches = Oracle(workload.soft), []
    for number in range(len(workload.runs)):
        bronze, batch, reconcile = write_run(workload, number, folder)
        run_id = f"{table}-{number}"
        # As if an earlier icetide had written silver without the hash (its rows, or some rows
        # of its driver path): the run, Spark's, fills it before it classifies.
        unhashed = not workload.soft and number > 0 and rng.random() < 0.3
        if unhashed and number % 2:
            spark.sql(f"ALTER TABLE {silver_table(table)} DROP COLUMN {VALUES_HASH}")
        elif unhashed:
            nulls = f"SET {VALUES_HASH} = NULL WHERE id % 3 = {number % 3}"
            spark.sql(f"UPDATE {silver_table(table)} {nulls}")
        # Every other run with DMS's row count: its key ranges come from the batch check.
        loaded = len(workload.load) if number == 0 and workload.load_schema is not None else 0
        counted = {"expected_rows": loaded, "max_change_rows": len(batch) - loaded} if number % 2 else {}
        # Each run forces its merge plan (--merge_plan): the driver's where it may (a hard-delete
        # merge, its first load too, into a table with every metadata column, no reconcile), or
        # Spark's.
        qualifies = not workload.soft and not reconcile and not unhashed
        on_driver = rng.random() < 0.6
        plan = "driver" if qualifies and on_driver else "spark"
        manifest = load_into_silver(
            spark, table, run_id, bronze, delete_mode=mode, **reconcile, **counted, merge_plan=plan
        )
        expected = oracle.deliver(batch, workload.reconciles.get(number))
        where = f"{table} run {number} ({workload}):"
        if manifest["snapshotId"] is not None:
            path = merge_path(spark, table, manifest["snapshotId"])
            if path != plan:
                mismatches.append(f"{where} committed by the {path} merge path, forced {plan}")
            if qualifies:
                taken[path] = taken.get(path, 0) + 1
        got = {k: manifest[k] for k in COUNTS}
        if manifest["rowsRead"] != len(batch) or got != expected:
            mismatches.append(
                f"{where} counts {got} read {manifest['rowsRead']}, oracle {expected} read {len(batch)}"
            )
        if not workload.soft:
            mismatches += [f"{where} {wrong}" for wrong in wrong_hashes(spark, table)]
        actual = silver_rows(spark, table, workload.soft)
        if actual != oracle.rows():
            mismatches.append(
                f"{where} silver {sorted(actual, key=repr)} != oracle {sorted(oracle.rows(), key=repr)}"
            )
        if rng.random() < 0.3:
            again = load_into_silver(
                spark, table, run_id, bronze, delete_mode=mode, **reconcile, **counted, merge_plan=plan
            )
            committed = manifest["snapshotId"] is not None
            # A run that committed nothing runs again: its schema changes are made already.
            changes = manifest["schemaChanges"] if committed else []
            wanted = {**manifest, "alreadyCommitted": committed, "schemaChanges": changes}
            if again != wanted:
                mismatches.append(f"{where} rerun manifest {again} != {wanted}")
            if silver_rows(spark, table, workload.soft) != oracle.rows():
                mismatches.append(f"{where} rerun changed silver")
    return mismatches


# Seeds picked so that, between them, both tables meet every feature above at least once: with
# and without a sequence, null and full before-images, no full load and a bare one (hard deletes)
# or one with Op and sequence (soft), late, re-delivered and unseen-delete files, reruns, a
# reconcile of no keys, a dropped values hash; and in each, runs either merge path may merge land
# on both. (Not every seed makes a workload the harness can run: a forced driver merge before any
# run created silver, or a dropped hash column that an empty run does not add back.)
SEEDS = (1, 6, 9)


def test_random_workloads_match_the_oracle(spark: SparkSession, tmp_path: Path, each_seed: EachSeed) -> None:
    def check(seed: int) -> None:
        rng = random.Random(seed)
        mismatches: list[str] = []
        taken: dict[str, int] = {}
        for number in range(2):
            workload = make_workload(rng, soft=number % 2 == 1)
            table = f"random_{seed}_{number}"
            mismatches += run_workload(spark, rng, workload, table, tmp_path / table, taken)
        assert mismatches == [], "\n".join(mismatches)
        # Both merge paths committed runs either may merge (the seeds are picked so that they do).
        assert taken.get("driver", 0) >= 1 and taken.get("spark", 0) >= 1, taken

    each_seed(SEEDS, check)
