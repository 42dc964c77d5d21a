"""Does one maintenance pass give a day of hourly merges back the read speed of a fresh table?

Issue 14: hourly merge-on-read merges leave small data files, position-delete files and
snapshots behind, and every full read pays for them. This benchmark, in ONE Spark process
(``local[2]``):

1. builds a silver table of ``--rows`` rows with icetide's own job (``icetide_glue.job.run_job``
   on a DMS full-load folder), then applies ``--merges`` merges, each a DMS CDC folder of
   ``--batch-fraction`` of the table (70 % updates, 20 % inserts, 10 % deletes; updated and
   deleted keys drawn uniformly from all live keys, so every data file is touched), each its own
   run id, one hour apart on the source's clock: one snapshot per merge (it updates and
   inserts: a removal by position and an append, in one commit);
2. writes two fresh tables, the layout a table has when nothing has been merged into it:
   - FRESH: the same final source rows through the same job (a first load of a DMS full load of
     the final source). Its icetide columns record one run at one time;
   - FRESH COPY: the merged table's rows, every column included (25 run ids, each row's own change
     time), written once into a new table created as icetide creates silver (same properties,
     sorted on the key) by the same append a first load uses, in the fresh table's number of
     even files (:func:`write_fresh_copy`). It holds exactly the merged table's rows in the
     fresh table's layout;
3. measures the merged table before maintenance: live data and delete files, snapshots kept
   (``icetide_glue.maintenance.maintain.measure_table``) and a full scan reading every column
   (``SELECT sum(hash(*))``), timed side by side with both fresh tables in the same rounds (the
   order rotated each round). Each timed sample is the mean of ``--scan-repeats`` scans in a row
   (a 2M-row scan takes about half a second, as long as the machine's hiccups). A table's time
   against a reference is the median over rounds of the ratio of its scan to the reference's in
   the same round (:func:`round_ratio`): the machine is shared;
4. runs one maintenance pass (``icetide_glue.maintenance.maintain.maintain_table``) with a policy fitting
   the benchmark's clock: the merges were committed minutes ago, so ``snapshot_retention_hours=0``
   makes every snapshot older than the retention and expiry keeps the ``--min-snapshots`` newest;
5. measures again, and reads the merged table before and after maintenance, and the fresh tables,
   back with pyiceberg (straight from the Iceberg metadata, not through Spark or icetide): the rows
   must be identical before and after (every column), equal to the fresh copy's (every column) and
   to the fresh table's (source columns; icetide's own columns record different runs), and the
   fresh table must hold exactly the rows the benchmark generated.

Targets (issue 14): after maintenance the full scan takes at most 1.10 x the fresh copy's AND at
most 1.10 x the fresh table's; at most as many data files as the layout produces for these rows,
i.e. the fresh table's data-file count (silver's layout: unpartitioned, sorted on the key, 64 MB
target files); no delete file; at most ``--min-snapshots`` + the snapshots maintenance itself
committed (its rewrites are newer than the ``now`` it expires against, so they stay). Exit code:
2 when rows differ, else 1 when a target is missed (each miss is printed), else 0. Run
(``make bench-maintenance``; ``BENCH_ARGS="--rows 20000"`` for a quick run):

    .venv/bin/python benchmarks/table_maintenance.py [--rows 2000000] [--merges 24] [--rounds 9]
        [--scan-repeats 5] [--json docs/benchmarks/table_maintenance.json]
"""

from __future__ import annotations

import argparse
import json
import math
import statistics
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime, timedelta
from decimal import Decimal
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
from pyiceberg.table import StaticTable
from pyspark.sql import SparkSession
from pyspark.sql.types import StructType

from icetide_contracts.maintenance import MaintenancePolicy
from icetide_contracts.run_plan import LoadMode
from icetide_glue.arguments import JobArguments
from icetide_glue.columns import is_metadata_column
from icetide_glue.commit.run_ledger import run_ledger
from icetide_glue.job import run_job
from icetide_glue.maintenance.maintain import even_range_bounds, maintain_table, measure_table
from icetide_glue.session import session_settings
from icetide_glue.silver import SilverTable, create_silver_table, tombstone_table
from icetide_local.spark import local_spark_session, runtime_versions, spark_running

CATALOG = "bench"
DATABASE = "table_maintenance"
KEY = "id"
SOURCE_NAMES = ("id", "name", "amount", "updated_at")
TIMESTAMP_COLUMN = "dms_timestamp"
DMS_TIME_FORMAT = "%Y-%m-%d %H:%M:%S.%f"
# The source's rows were last changed at BASE_TIME + id seconds; the full load ran an hour after
# the newest, and merge m (1, 2, ...) carries the changes of the m-th hour after the load.
BASE_TIME = datetime(2026, 1, 1, tzinfo=UTC)
UPDATE_SHARE, INSERT_SHARE = 0.7, 0.2  # the rest (10 %) are deletes
ROWS_PER_LOAD_FILE = 1_000_000  # DMS splits a full load into LOADnnnnnnnn files
SEED = 14
SCAN_SQL = "SELECT sum(hash(*)) FROM {table}"  # reads every column of every live row
SCAN_TARGET = 1.10
DEFAULT_MIN_SNAPSHOTS = 4
DEFAULT_ROUNDS = 9
DEFAULT_SCAN_REPEATS = 5
MISMATCH_EXAMPLES = 5
_MICROS = 1_000_000
FULL_LOAD_SCHEMA = pa.schema(
    [
        (TIMESTAMP_COLUMN, pa.string()),
        ("id", pa.int64()),
        ("name", pa.string()),
        ("amount", pa.decimal128(18, 2)),
        ("updated_at", pa.timestamp("us", tz="UTC")),
    ]
)
CDC_SCHEMA = pa.schema([("Op", pa.string()), *FULL_LOAD_SCHEMA])

Progress = Callable[[str], None]
AfterMaintenance = Callable[[SparkSession, str], None]


def progress_to_stderr(message: str) -> None:
    print(f"[table_maintenance {datetime.now():%H:%M:%S}] {message}", file=sys.stderr, flush=True)


# --- the source and its DMS files -----------------------------------------------------------------


def load_time(rows: int) -> datetime:
    return BASE_TIME + timedelta(seconds=rows, hours=1)


def change_time(rows: int, merge: int) -> datetime:
    return load_time(rows) + timedelta(hours=merge)


@dataclass(frozen=True)
class Mix:
    updates: int
    inserts: int
    deletes: int

    @classmethod
    def of(cls, changes: int) -> Mix:
        updates, inserts = round(changes * UPDATE_SHARE), round(changes * INSERT_SHARE)
        return cls(updates, inserts, changes - updates - inserts)

    @property
    def total(self) -> int:
        return self.updates + self.inserts + self.deletes


class Source:
    """The source table's state: per key, the merge that last wrote it (0: the full load, -1: no
    such row). A row's values follow from its key and that number, so the batches' rows, the
    deletes' before-images and the final rows are all generated from it."""

    def __init__(self, rows: int, merges: int, mix: Mix) -> None:
        self.rows = rows
        self.version = np.full(rows + merges * mix.inserts, -1, dtype=np.int32)
        self.version[:rows] = 0
        self.next_id = rows
        self.random = np.random.default_rng(SEED)

    def live_ids(self) -> np.ndarray:
        return np.flatnonzero(self.version >= 0)

    def values(self, ids: np.ndarray, versions: np.ndarray) -> dict[str, pa.Array]:
        """The source columns of keys ``ids`` as written by merges ``versions``."""
        prefixes = np.array(["name-", *(f"merge-{m} " for m in range(1, int(versions.max(initial=0)) + 1))])
        name = pc.binary_join_element_wise(
            pa.array(prefixes[versions]), pc.cast(pa.array(ids), pa.string()), ""
        )
        cents = (ids.astype(np.int64) * 7919 + versions.astype(np.int64) * 104_729) % 10_000_000
        amount = pc.multiply(
            pa.array(cents).cast(pa.decimal128(19, 0)), pa.scalar(Decimal("0.01"), pa.decimal128(3, 2))
        ).cast(pa.decimal128(18, 2))
        base = int(BASE_TIME.timestamp()) * _MICROS
        change_micros = np.array(
            [
                int(change_time(self.rows, m).timestamp()) * _MICROS
                for m in range(int(versions.max(initial=0)) + 1)
            ]
        )
        micros = np.where(versions == 0, base + ids.astype(np.int64) * _MICROS, change_micros[versions])
        return {
            "id": pa.array(ids.astype(np.int64)),
            "name": name,
            "amount": amount,
            "updated_at": pa.array(micros, pa.timestamp("us", tz="UTC")),
        }

    def current_rows(self) -> pa.Table:
        """The live rows, in key order."""
        ids = self.live_ids()
        return pa.table(self.values(ids, self.version[ids]))

    def next_batch(self, merge: int, mix: Mix) -> pa.Table:
        """Merge ``merge``'s CDC rows (Op first, a delete carrying the row as it was), applied to
        the state; keys drawn uniformly from the live keys, rows in random order."""
        changed = self.random.choice(self.live_ids(), mix.updates + mix.deletes, replace=False)
        deleted, updated = changed[: mix.deletes], changed[mix.deletes :]
        inserted = np.arange(self.next_id, self.next_id + mix.inserts)
        self.next_id += mix.inserts
        before_images = self.values(deleted, self.version[deleted])
        self.version[deleted] = -1
        written = np.concatenate([updated, inserted])
        self.version[written] = merge
        after_images = self.values(written, self.version[written])
        ops = ["D"] * len(deleted) + ["U"] * len(updated) + ["I"] * len(inserted)
        stamp = change_time(self.rows, merge).strftime(DMS_TIME_FORMAT)
        columns = {
            "Op": pa.array(ops),
            TIMESTAMP_COLUMN: pa.array([stamp] * len(ops)),
            **{name: pa.concat_arrays([before_images[name], after_images[name]]) for name in SOURCE_NAMES},
        }
        table = pa.table(columns, schema=CDC_SCHEMA)
        return table.take(self.random.permutation(table.num_rows))


def write_full_load(rows: pa.Table, folder: Path, loaded_at: datetime) -> Path:
    """A DMS full-load folder (folder/schema/table/LOADnnnnnnnn.parquet, numbered in hexadecimal)
    holding ``rows``; returns the run's bronze folder."""
    files = folder / "bench" / "source_table"
    files.mkdir(parents=True)
    stamp = pa.array([loaded_at.strftime(DMS_TIME_FORMAT)] * rows.num_rows)
    table = pa.table({TIMESTAMP_COLUMN: stamp, **{n: rows[n] for n in SOURCE_NAMES}}, schema=FULL_LOAD_SCHEMA)
    for number, start in enumerate(range(0, max(table.num_rows, 1), ROWS_PER_LOAD_FILE), start=1):
        pq.write_table(table.slice(start, ROWS_PER_LOAD_FILE), files / f"LOAD{number:08X}.parquet")
    return folder


def write_cdc(batch: pa.Table, folder: Path, changed_at: datetime) -> Path:
    """A DMS CDC folder holding ``batch`` in one file named by its time (yyyyMMdd-HHmmssSSS)."""
    files = folder / "bench" / "source_table"
    files.mkdir(parents=True)
    pq.write_table(batch, files / f"{changed_at.strftime('%Y%m%d-%H%M%S%f')[:-3]}.parquet")
    return folder


# --- the job, measuring, reading back ---------------------------------------------------------------


def run_icetide(
    spark: SparkSession,
    catalog: str,
    table: str,
    run_id: str,
    bronze: Path,
    *,
    full_load_rows: int = 0,
    changes: int = 0,
) -> None:
    """One run of icetide's job, with the arguments the state machine passes, DMS's counts too: the
    rows of the LOAD files (``--expected_rows``) and the changes of the CDC files
    (``--max_change_rows``), as this benchmark wrote them."""
    arguments = JobArguments.from_options(
        {
            "target_table": f"{DATABASE}.{table}",
            "run_id": run_id,
            "bronze_uri": str(bronze),
            "primary_keys": KEY,
            "load_mode": "merge",
            "watermark_column": "updated_at",
            "timestamp_column": TIMESTAMP_COLUMN,
            "catalog": catalog,
            "expected_rows": str(full_load_rows),
            "max_change_rows": str(changes),
        }
    )
    manifest = run_job(spark, arguments)
    if manifest.get("snapshotId") is None:
        raise RuntimeError(f"run {run_id} committed nothing into {table}: {manifest}")


def snapshot_ids(spark: SparkSession, table: SilverTable) -> set[int]:
    return {int(row[0]) for row in spark.sql(f"SELECT snapshot_id FROM {table.sql_name}.snapshots").collect()}  # noqa: S608


def target_file_size(spark: SparkSession, table: SilverTable) -> int | None:
    rows = spark.sql(f"SHOW TBLPROPERTIES {table.sql_name} ('write.target-file-size-bytes')").collect()
    value = rows[0]["value"] if rows else ""
    return int(value) if value.isdigit() else None


def write_fresh_copy(spark: SparkSession, merged: SilverTable, copy: SilverTable, files: int) -> None:
    """``copy``: the merged table's rows, every column, in a table created as icetide creates
    silver and written by one append, in ``files`` files (the fresh table's count; module text,
    step 2).

    The append cuts its rows by key ranges into as many files as it has shuffle partitions, so
    these are set to ``files`` (not coalesced), and the range bounds come from the large sample
    maintenance's rewrite uses. Left to the session's settings, the same append cut these rows
    into 3 files (5.1, 5.2 and 10.0 MB), a layout that is not the fresh table's."""
    rows = spark.table(merged.sql_name)
    source = StructType([column for column in rows.schema.fields if not is_metadata_column(column.name)])
    create_silver_table(spark, copy, source, (KEY,), LoadMode.MERGE)
    partitions = {
        "spark.sql.shuffle.partitions": str(files),
        "spark.sql.adaptive.coalescePartitions.enabled": "false",
    }
    with even_range_bounds(spark), session_settings(spark, partitions):
        rows.select(*spark.table(copy.sql_name).columns).writeTo(copy.sql_name).append()


def time_scans(
    spark: SparkSession, tables: dict[str, SilverTable], rounds: int, repeats: int = 1
) -> dict[str, list[float]]:
    """Seconds of a full scan of each table per round, the mean of ``repeats`` scans in a row; the
    order rotates each round so that no table always runs first (or right after another's scan
    warmed the caches)."""
    names = list(tables)
    seconds: dict[str, list[float]] = {name: [] for name in names}
    for round_number in range(rounds):
        turn = round_number % len(names)
        for name in names[turn:] + names[:turn]:
            started = time.perf_counter()
            for _ in range(repeats):
                spark.sql(SCAN_SQL.format(table=tables[name].sql_name)).collect()
            seconds[name].append((time.perf_counter() - started) / repeats)
    return seconds


def read_back(warehouse: Path, table: SilverTable, columns: Sequence[str] | None = None) -> pa.Table:
    """The table's current rows as pyiceberg reads them from the Hadoop catalog's metadata files,
    in key order (the same reader for every side of a comparison)."""
    location = warehouse / table.database / table.name
    iceberg = StaticTable.from_metadata(str(location))
    scan = iceberg.scan(selected_fields=tuple(columns)) if columns else iceberg.scan()
    rows = scan.to_arrow()
    return rows.sort_by([(KEY, "ascending"), *((c, "ascending") for c in rows.column_names if c != KEY)])


@dataclass(frozen=True)
class Check:
    what: str
    left_rows: int
    right_rows: int
    equal: bool


def compare(what: str, left: pa.Table, right: pa.Table, print_: Callable[[str], None] = print) -> Check:
    """Both tables sorted alike (read_back), compared column by column; on a difference print
    some rows each side lacks."""
    equal = left.schema == right.schema and left.equals(right)
    if not equal:
        print_(f"MISMATCH {what}: {left.num_rows:,} vs {right.num_rows:,} rows")
        if left.schema != right.schema:
            print_(f"  schemas differ:\n{left.schema}\n  vs\n{right.schema}")
        else:
            sides = what.split(" vs ")
            lefts = set(zip(*(left[c].to_pylist() for c in left.column_names), strict=True))
            rights = set(zip(*(right[c].to_pylist() for c in right.column_names), strict=True))
            for side, extra in ((sides[0], lefts - rights), (sides[-1], rights - lefts)):
                print_(
                    f"  rows only in {side} (up to {MISMATCH_EXAMPLES}): {sorted(extra)[:MISMATCH_EXAMPLES]}"
                )
    return Check(what, left.num_rows, right.num_rows, equal)


def as_read(expected: pa.Table, read: pa.Table) -> pa.Table:
    """The generated rows in the types pyiceberg reads them as, sorted as read_back sorts."""
    typed = expected.select(read.column_names).cast(read.schema)
    return typed.sort_by([(KEY, "ascending"), *((c, "ascending") for c in typed.column_names if c != KEY)])


# --- verdicts and report ----------------------------------------------------------------------------


@dataclass(frozen=True)
class Verdict:
    what: str
    value: str
    target: str
    passed: bool


@dataclass
class Results:
    rows: int
    merges: int
    mix: Mix
    rounds: int
    policy: dict[str, Any]
    build_seconds: float = 0.0
    merge_seconds: list[float] = field(default_factory=list)
    fresh_seconds: float = 0.0
    fresh_copy_seconds: float = 0.0
    scan_repeats: int = 1
    maintenance_seconds: float = 0.0
    files: dict[str, dict[str, int]] = field(default_factory=dict)
    scans: dict[str, list[float]] = field(default_factory=dict)
    maintenance_commits: int = 0
    target_file_size_bytes: int | None = None
    report: dict[str, Any] = field(default_factory=dict)
    checks: list[Check] = field(default_factory=list)
    verdicts: list[Verdict] = field(default_factory=list)

    @property
    def rows_equal(self) -> bool:
        return bool(self.checks) and all(check.equal for check in self.checks)

    @property
    def targets_met(self) -> bool:
        return all(verdict.passed for verdict in self.verdicts)

    def exit_code(self) -> int:
        return 2 if not self.rows_equal else 1 if not self.targets_met else 0


def round_ratio(scans: Sequence[float], reference: Sequence[float]) -> float:
    """The median over rounds of a table's scan time over the reference's in the same round.

    Paired by round, so a slow spell of the machine slows both sides of a ratio; the median, so
    one lucky or unlucky sample moves nothing. The ratio of each side's minimum rests on one
    sample of each side: one unusually fast round of the reference moves it past the target while
    the per-round ratios stay well within it."""
    return statistics.median(scan / base for scan, base in zip(scans, reference, strict=True))


def judge(results: Results, min_snapshots: int) -> list[Verdict]:
    after, fresh = results.files["merged after"], results.files["fresh"]
    allowed = min_snapshots + results.maintenance_commits
    scans = [
        Verdict(
            f"scan after / {reference} (median)",
            f"{ratio:.2f}",
            f"<= {SCAN_TARGET:.2f}",
            ratio <= SCAN_TARGET,
        )
        for reference in ("fresh copy", "fresh")
        for ratio in [round_ratio(results.scans["merged after"], results.scans[f"{reference} (after)"])]
    ]
    return [
        *scans,
        Verdict(
            "data files after",
            str(after["data_files"]),
            f"<= {fresh['data_files']} (fresh table's)",
            after["data_files"] <= fresh["data_files"],
        ),
        Verdict("delete files after", str(after["delete_files"]), "0", after["delete_files"] == 0),
        Verdict(
            "snapshots after",
            str(after["snapshots"]),
            f"<= {allowed} ({min_snapshots} kept + {results.maintenance_commits} by maintenance)",
            after["snapshots"] <= allowed,
        ),
    ]


FILE_COLUMNS = (
    ("data files", "data_files"),
    ("delete files", "delete_files"),
    ("snapshots", "snapshots"),
)


def print_report(results: Results, print_: Callable[[str], None] = print) -> None:
    mix = results.mix
    merges = results.merge_seconds
    print_("")
    print_(
        f"silver: {results.rows:,} rows built by run_job (DMS full load) in {results.build_seconds:.1f} s; "
        f"{results.merges} merges by run_job of {mix.total:,} changes each ({mix.updates:,} U + "
        f"{mix.inserts:,} I + {mix.deletes:,} D, keys uniform over the live keys), "
        f"{min(merges):.1f}-{max(merges):.1f} s each (median {statistics.median(merges):.1f})"
        if merges
        else f"silver: {results.rows:,} rows, no merges"
    )
    print_(f"fresh:  the same final rows, first load by run_job in {results.fresh_seconds:.1f} s")
    print_(
        f"fresh copy: the merged table's rows (every column) written into a new silver table in "
        f"{results.fresh_copy_seconds:.1f} s"
    )
    policy = ", ".join(f"{key}={value}" for key, value in results.policy.items())
    print_(f"maintenance: {results.maintenance_seconds:.1f} s; policy {policy}")
    print_(
        f"  (retention 0 h: every snapshot is older than the retention, expiry keeps the "
        f"{results.policy['min_snapshots']} newest; maintenance committed {results.maintenance_commits} "
        "snapshot(s) itself)"
    )
    header = f"{'table':<24}" + "".join(f" {title:>12}" for title, _ in FILE_COLUMNS)
    header += f" {'MB':>9} {'scan s':>8} {'x copy':>7} {'x fresh':>8}   scan s per round"
    print_("")
    print_(header)
    print_("-" * len(header))
    order = ("merged before", "merged after", "fresh copy", "fresh", "tombstones before", "tombstones after")
    for name in order:
        files = results.files[name]
        cells = "".join(f" {files[key]:>12}" for _, key in FILE_COLUMNS)
        phase = "before" if name == "merged before" else "after"
        scans = results.scans.get(name) or results.scans.get(f"{name} ({phase})") or []
        if scans:
            copy, fresh = (
                round_ratio(scans, results.scans[f"{reference} ({phase})"])
                for reference in ("fresh copy", "fresh")
            )
            timing = f"{statistics.median(scans):>8.2f} {copy:>7.2f} {fresh:>8.2f}"
        else:
            timing = f"{'':>8} {'':>7} {'':>8}"
        listed = " ".join(f"{s:.2f}" for s in scans)
        print_(f"{name:<24}{cells} {files['total_bytes'] / 1e6:>9.1f} {timing}   {listed}")
    print_(
        f"(scan s: median over {results.rounds} round(s), order rotated, each sample the mean of "
        f"{results.scan_repeats} scan(s) in a row of {SCAN_SQL.format(table='<table>')}; x copy, x fresh: "
        "median over the rounds of the ratio to that table's scan in the same round)"
    )
    after = min(results.scans["merged after"])
    print_(
        "(minimum over rounds, for comparison: merged after / fresh copy "
        f"{after / min(results.scans['fresh copy (after)']):.2f}, merged after / fresh "
        f"{after / min(results.scans['fresh (after)']):.2f})"
    )
    copy_files, fresh_files = (results.files[name]["data_files"] for name in ("fresh copy", "fresh"))
    print_(
        f"fresh copy layout: {copy_files} data file(s), the fresh table {fresh_files}"
        + (
            ""
            if copy_files == fresh_files
            else " (DIFFERENT: the scan reference's layout is not the fresh one)"
        )
    )
    size = results.target_file_size_bytes
    if size:
        needed = math.ceil(results.files["fresh"]["total_bytes"] / size)
        print_(
            f"layout target: the fresh table's data-file count ({results.files['fresh']['data_files']}); "
            f"for reference, its {results.files['fresh']['total_bytes'] / 1e6:.1f} MB over the "
            f"{size / 2**20:.0f} MiB target file size is {needed} file(s)"
        )
    print_("")
    print_("targets:")
    for verdict in results.verdicts:
        outcome = "PASS" if verdict.passed else "MISS"
        print_(f"  {verdict.what:<32} {verdict.value:>6}   target {verdict.target:<40} {outcome}")
    print_("")
    print_("rows (read back with pyiceberg):")
    for check in results.checks:
        outcome = "equal" if check.equal else "DIFFER"
        print_(f"  {check.what:<58} {check.left_rows:>10,} vs {check.right_rows:>10,} rows   {outcome}")
    missed = [verdict.what for verdict in results.verdicts if not verdict.passed]
    if not results.rows_equal:
        print_("\nresult: ROWS DIFFER (exit 2)")
    elif missed:
        print_(f"\nresult: rows equal; target(s) missed: {', '.join(missed)} (exit 1)")
    else:
        print_("\nresult: rows equal; every target met (exit 0)")


def write_json(path: Path, spark: SparkSession, results: Results, argv: Sequence[str]) -> None:
    document = {
        "command": ["benchmarks/table_maintenance.py", *argv],
        "finished_at": datetime.now(UTC).isoformat(timespec="seconds"),
        "versions": runtime_versions(spark),
        **{key: value for key, value in asdict(results).items() if key not in ("checks", "verdicts")},
        "checks": [asdict(check) for check in results.checks],
        "verdicts": [asdict(verdict) for verdict in results.verdicts],
        "rows_equal": results.rows_equal,
        "targets_met": results.targets_met,
        "exit_code": results.exit_code(),
    }
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(document, indent=2, default=str) + "\n", encoding="utf-8")


# --- the benchmark ------------------------------------------------------------------------------------


def run_benchmark(
    spark: SparkSession,
    args: argparse.Namespace,
    workspace: Path,
    progress: Progress = progress_to_stderr,
    after_maintenance: AfterMaintenance | None = None,
) -> Results:
    """Build, merge, write the fresh table, measure, maintain, measure, read back (module text).

    ``after_maintenance`` runs right after the maintenance pass (a test spoils the table there to
    see the comparison fail)."""
    warehouse, bronze = workspace / "warehouse", workspace / "bronze"
    suffix = str(args.rows)
    merged = SilverTable(args.catalog, DATABASE, f"merged_{suffix}")
    fresh = SilverTable(args.catalog, DATABASE, f"fresh_{suffix}")
    copy = SilverTable(args.catalog, DATABASE, f"fresh_copy_{suffix}")
    for table in (merged, fresh, copy):
        for companion in (table, tombstone_table(table), run_ledger(table)):
            spark.sql(f"DROP TABLE IF EXISTS {companion.sql_name} PURGE")
    mix = Mix.of(max(1, round(args.rows * args.batch_fraction)))
    policy = MaintenancePolicy(snapshot_retention_hours=0, min_snapshots=args.min_snapshots)
    results = Results(
        rows=args.rows,
        merges=args.merges,
        mix=mix,
        rounds=args.rounds,
        scan_repeats=args.scan_repeats,
        policy={
            "snapshot_retention_hours": policy.snapshot_retention_hours,
            "min_snapshots": policy.min_snapshots,
            "orphan_age_hours": policy.orphan_age_hours,
            "min_input_files": policy.min_input_files,
            "delete_file_threshold": policy.delete_file_threshold,
        },
    )
    source = Source(args.rows, args.merges, mix)

    progress(f"building {args.rows:,} rows with run_job")
    full_load = write_full_load(source.current_rows(), bronze / "full-load", load_time(args.rows))
    started = time.perf_counter()
    run_icetide(spark, args.catalog, merged.name, "full-load", full_load, full_load_rows=args.rows)
    results.build_seconds = time.perf_counter() - started

    for merge in range(1, args.merges + 1):
        batch = source.next_batch(merge, mix)
        folder = write_cdc(batch, bronze / f"merge-{merge}", change_time(args.rows, merge))
        started = time.perf_counter()
        run_icetide(spark, args.catalog, merged.name, f"merge-{merge}", folder, changes=batch.num_rows)
        results.merge_seconds.append(time.perf_counter() - started)
        progress(f"merge {merge}/{args.merges}: {results.merge_seconds[-1]:.1f} s")

    final_rows = source.current_rows()
    progress(f"writing the fresh table ({final_rows.num_rows:,} rows) with run_job")
    fresh_load = write_full_load(final_rows, bronze / "fresh-load", change_time(args.rows, args.merges + 1))
    started = time.perf_counter()
    run_icetide(spark, args.catalog, fresh.name, "fresh-load", fresh_load, full_load_rows=final_rows.num_rows)
    results.fresh_seconds = time.perf_counter() - started
    results.target_file_size_bytes = target_file_size(spark, fresh)
    fresh_files = measure_table(spark, fresh)
    progress("writing the fresh copy of the merged table's rows")
    started = time.perf_counter()
    write_fresh_copy(spark, merged, copy, fresh_files.data_files)
    results.fresh_copy_seconds = time.perf_counter() - started

    progress("measuring before maintenance; reading it back with pyiceberg")
    results.files["merged before"] = asdict(measure_table(spark, merged))
    results.files["tombstones before"] = asdict(measure_table(spark, tombstone_table(merged)))
    results.files["fresh"] = asdict(fresh_files)
    results.files["fresh copy"] = asdict(measure_table(spark, copy))
    before_scans = time_scans(
        spark,
        {"merged before": merged, "fresh copy (before)": copy, "fresh (before)": fresh},
        args.rounds,
        args.scan_repeats,
    )
    rows_before = read_back(warehouse, merged)

    progress("maintaining the merged table")
    snapshots_before = snapshot_ids(spark, merged)
    started = time.perf_counter()
    report = maintain_table(spark, merged, policy, datetime.now(UTC))
    results.maintenance_seconds = time.perf_counter() - started
    # What the pass reported for silver, its tombstone table and the policy (dataclasses all).
    results.report = asdict(report)
    results.maintenance_commits = len(snapshot_ids(spark, merged) - snapshots_before)
    if after_maintenance is not None:
        after_maintenance(spark, merged.sql_name)

    progress("measuring after maintenance; reading it back with pyiceberg")
    results.files["merged after"] = asdict(measure_table(spark, merged))
    results.files["tombstones after"] = asdict(measure_table(spark, tombstone_table(merged)))
    after_scans = time_scans(
        spark,
        {"merged after": merged, "fresh copy (after)": copy, "fresh (after)": fresh},
        args.rounds,
        args.scan_repeats,
    )
    results.scans = {**before_scans, **after_scans}
    rows_after = read_back(warehouse, merged)
    fresh_rows = read_back(warehouse, fresh, SOURCE_NAMES)
    results.checks = [
        compare("merged before vs merged after maintenance (every column)", rows_before, rows_after),
        compare(
            "merged after maintenance vs fresh copy (every column)", rows_after, read_back(warehouse, copy)
        ),
        compare(
            "merged after maintenance vs fresh (source columns)",
            rows_after.select(list(SOURCE_NAMES)),
            fresh_rows,
        ),
        compare("fresh vs the generated source rows", fresh_rows, as_read(final_rows, fresh_rows)),
    ]
    results.verdicts = judge(results, args.min_snapshots)
    return results


def parse_arguments(argv: Sequence[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--rows", type=int, default=2_000_000, help="rows of the table (default 2,000,000)")
    parser.add_argument(
        "--merges", type=int, default=24, help="hourly merges before maintenance (default 24)"
    )
    parser.add_argument(
        "--batch-fraction",
        type=float,
        default=0.01,
        help="changes per merge, as a share of --rows (default 0.01)",
    )
    parser.add_argument(
        "--rounds",
        type=int,
        default=DEFAULT_ROUNDS,
        help=f"rounds of scans per phase; a ratio is the median of the rounds' ratios (default "
        f"{DEFAULT_ROUNDS}, at least 3 for the scan target to mean something on a shared machine)",
    )
    parser.add_argument(
        "--scan-repeats",
        type=int,
        default=DEFAULT_SCAN_REPEATS,
        help=f"scans in a row per timed sample, their mean is the sample (default {DEFAULT_SCAN_REPEATS})",
    )
    parser.add_argument(
        "--min-snapshots",
        type=int,
        default=DEFAULT_MIN_SNAPSHOTS,
        help=f"the policy's min_snapshots: snapshots expiry keeps (default {DEFAULT_MIN_SNAPSHOTS})",
    )
    parser.add_argument("--json", type=Path, help="also write the results as JSON to this file")
    parser.add_argument("--workspace", type=Path, help="keep bronze and warehouse here (default: a temp dir)")
    parser.add_argument(
        "--catalog",
        default=CATALOG,
        help="Spark catalog name for the workspace's warehouse (one per warehouse)",
    )
    args = parser.parse_args(argv)
    if args.rows < 100 or min(args.merges, args.rounds, args.scan_repeats, args.min_snapshots) < 1:
        parser.error(
            "need --rows >= 100, --merges >= 1, --rounds >= 1, --scan-repeats >= 1, --min-snapshots >= 1"
        )
    if not 0 < args.batch_fraction <= 0.5 or round(args.rows * args.batch_fraction) < 10:
        parser.error("--batch-fraction must be in (0, 0.5] and give at least 10 changes per merge")
    return args


def main(argv: Sequence[str] | None = None, after_maintenance: AfterMaintenance | None = None) -> int:
    """Run the benchmark; the exit code: 2 rows differ, 1 a target missed, 0 all held.

    A caller that already has a Spark session (the tests) gets it reused, with the workspace's
    catalog added, and left running; a session this call starts is stopped at the end.
    """
    arguments = list(sys.argv[1:] if argv is None else argv)
    args = parse_arguments(arguments)
    own_session = not spark_running()
    with tempfile.TemporaryDirectory(prefix="icetide-table-maintenance-") as temporary:
        workspace = args.workspace or Path(temporary)
        spark = local_spark_session(
            workspace / "warehouse", catalog=args.catalog, app_name="icetide-bench-table-maintenance"
        )
        try:
            spark.sql(f"CREATE NAMESPACE IF NOT EXISTS {args.catalog}.{DATABASE}")
            results = run_benchmark(spark, args, workspace, after_maintenance=after_maintenance)
            print_report(results)
            if args.json:
                write_json(args.json, spark, results, arguments)
                progress_to_stderr(f"wrote {args.json}")
        finally:
            if own_session:
                spark.stop()
    return results.exit_code()


if __name__ == "__main__":
    sys.exit(main())
