"""Which silver layout makes a run cost what the change costs? Measured side by side, in one run.

Each measured run is the job itself: ``icetide_glue.job.run_job`` on a folder of DMS-shaped bronze
files (parquet written with pyarrow, DMS's file name, ``Op`` and timestamp string), so the time
covers everything a run does on an existing table: the already-committed check, reading bronze,
the batch check, dedupe, the classification query (a join of the batch with silver) and the one
MERGE. Four layouts of the same table get the same base rows and the same change batches:

  unpartitioned copy-on-write   (Iceberg's defaults)
  unpartitioned merge-on-read
  bucketed copy-on-write        (bucket(16, id))
  bucketed merge-on-read        (bucket(16, id); what icetide_glue.silver created until issue 12)

Two base tables per size: keys written in key order (file statistics alone can skip files), and
keys scattered over every file (random keys such as UUIDs, or updates all over an old table).
For each: the median run time, the bytes the run read (Spark's stage input: bronze plus every read
of silver), the bytes and files its commit wrote, the files it rewrote, and a full scan after the
runs (merge-on-read moves cost to readers until compaction). Every figure is also shown as a ratio
to the layout icetide uses; compare ratios, not absolute times (the machine is shared). Run:

    .venv/bin/python benchmarks/merge_layouts.py [--rows 200000 1000000] [--changes 20] [--rounds 3]
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from decimal import Decimal
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from icetide_glue.arguments import JobArguments
from icetide_glue.job import run_job
from icetide_glue.table_sql import create_namespace_sql, create_table_sql, qualified_name, quote_identifier
from icetide_local.spark import local_spark_session

CATALOG = "bench"
DATABASE = "bench"
KEY = "id"
COLUMNS = [
    ("id", "bigint"),
    ("name", "string"),
    ("amount", "decimal(18,2)"),
    ("updated_at", "timestamp"),
    ("_icetide_change_ts", "timestamp"),
    ("_icetide_change_seq", "string"),
    ("_icetide_run_id", "string"),
]
# The bronze files of one run, as DMS writes them for this table (CDC: Op first, then the
# TimestampColumnName string, then the source columns).
BRONZE_SCHEMA = pa.schema(
    [
        ("Op", pa.string()),
        ("dms_timestamp", pa.string()),
        ("id", pa.int64()),
        ("name", pa.string()),
        ("amount", pa.decimal128(18, 2)),
        ("updated_at", pa.timestamp("us", tz="UTC")),
    ]
)
BASE_TIME = datetime(2026, 11, 21, 6, 0, tzinfo=UTC)
# The merge-on-read properties silver had when this benchmark chose its layout (Iceberg's default
# file and row-group sizes), pinned so its numbers stay comparable.
MERGE_ON_READ = {
    "format-version": "2",
    "write.delete.mode": "merge-on-read",
    "write.update.mode": "merge-on-read",
    "write.merge.mode": "merge-on-read",
}
COPY_ON_WRITE = {
    "format-version": "2",
    "write.delete.mode": "copy-on-write",
    "write.update.mode": "copy-on-write",
    "write.merge.mode": "copy-on-write",
}
# The bucket count icetide used for silver until it moved to a key-ordered layout (merge_cost.py).
BUCKETS = 16
# The base table is written as this many files in every layout, so only the layout differs.
BASE_FILES = BUCKETS


@dataclass(frozen=True)
class Layout:
    name: str
    bucketed: bool
    properties: dict[str, str]


LAYOUTS = (
    Layout("unpartitioned copy-on-write", False, COPY_ON_WRITE),
    Layout("unpartitioned merge-on-read", False, MERGE_ON_READ),
    Layout("bucketed copy-on-write", True, COPY_ON_WRITE),
    Layout("bucketed merge-on-read", True, MERGE_ON_READ),
)
CHOSEN = LAYOUTS[-1].name
SCENARIOS = {False: "keys written in key order", True: "keys scattered over every file"}


@dataclass
class Measurement:
    run_seconds: list[float] = field(default_factory=list)
    bytes_read: list[int] = field(default_factory=list)
    bytes_written: list[int] = field(default_factory=list)
    files_written: list[int] = field(default_factory=list)
    files_rewritten: list[int] = field(default_factory=list)
    scan_seconds: float = 0.0


@dataclass(frozen=True)
class Column:
    """One column of the report: its header, the figure per layout, and how it is printed."""

    header: str
    value: Callable[[Measurement], float]
    fmt: str


REPORT_COLUMNS = (
    Column("run s", lambda m: statistics.median(m.run_seconds), ".2f"),
    Column("MB read", lambda m: statistics.median(m.bytes_read) / 1e6, ".2f"),
    Column("MB written", lambda m: statistics.median(m.bytes_written) / 1e6, ".3f"),
    Column("files written", lambda m: statistics.median(m.files_written), ".0f"),
    Column("files rewritten", lambda m: statistics.median(m.files_rewritten), ".0f"),
    Column("scan s", lambda m: m.scan_seconds, ".2f"),
)
# Columns also shown as a ratio to the chosen layout (file counts are small integers: read as is).
RATIO_HEADERS = {"run s", "MB read", "MB written", "scan s"}


def base_rows(spark: SparkSession, rows: int) -> DataFrame:
    """Silver rows as an earlier run left them (written directly: the base load is not measured)."""
    return spark.range(rows).select(
        F.col("id"),
        F.concat(F.lit("name-"), F.col("id").cast("string")).alias("name"),
        (F.col("id") % 100000 / 100).cast("decimal(18,2)").alias("amount"),
        F.timestamp_seconds(F.lit(int(BASE_TIME.timestamp())) + F.col("id") % 3600).alias("updated_at"),
        F.timestamp_seconds(F.lit(int(BASE_TIME.timestamp()))).alias("_icetide_change_ts"),
        F.lit(None).cast("string").alias("_icetide_change_seq"),
        F.lit("base").alias("_icetide_run_id"),
    )


def write_change_batch(folder: Path, rows: int, changes: int, round_number: int) -> Path:
    """One run's CDC file: ``changes`` keys spread over the key range, 70% U, 20% D, 10% I.

    A D row carries the row as it was before deletion, as DMS writes it.
    """
    stride = max(rows // changes, 1)
    offset = 7919 * (round_number + 1)
    changed_at = BASE_TIME + timedelta(hours=3, minutes=round_number)
    stamp = changed_at.strftime("%Y-%m-%d %H:%M:%S.%f")
    records = []
    for i in range(changes):
        op = "U" if i % 10 < 7 else "D" if i % 10 < 9 else "I"
        key = rows + round_number * changes + i if op == "I" else (i * stride + offset) % rows
        if op == "D":
            name, amount = f"name-{key}", Decimal(key % 100000) / 100
        else:
            name, amount = f"changed in round {round_number}", Decimal("1.00")
        records.append((op, stamp, key, name, amount.quantize(Decimal("0.01")), changed_at))
    table = pa.table({f.name: pa.array([r[i] for r in records], f.type) for i, f in enumerate(BRONZE_SCHEMA)})
    target = folder / f"round-{round_number}" / "bench" / "source_table"
    target.mkdir(parents=True)
    # DMS names CDC files by time: yyyyMMdd-HHmmssSSS.
    pq.write_table(table, target / f"{changed_at.strftime('%Y%m%d-%H%M%S%f')[:-3]}.parquet")
    return target.parent.parent


def input_bytes_so_far(spark: SparkSession) -> int:
    """Bytes every completed stage has read so far, from Spark's status store (no UI needed)."""
    context = spark.sparkContext._jsc.sc()  # Spark exposes no Python API for stage input
    context.listenerBus().waitUntilEmpty()
    gateway = spark.sparkContext._gateway
    no_quantiles = gateway.new_array(gateway.jvm.double, 0)
    # stageList(statuses, details, withSummaries, unsortedQuantiles, taskStatus): all stages.
    stages = context.statusStore().stageList(None, False, False, no_quantiles, None)
    return sum(stages.apply(i).inputBytes() for i in range(stages.size()))  # a Scala Seq


def last_snapshot_summary(spark: SparkSession, table: str) -> dict[str, str]:
    # table is a name built by qualified_name, not input.
    row = spark.sql(f"SELECT summary FROM {table}.snapshots ORDER BY committed_at DESC LIMIT 1").first()  # noqa: S608
    if row is None:
        raise RuntimeError(f"{table} has no snapshot after a run that should have committed")
    return dict(row["summary"])


def create_base_table(spark: SparkSession, layout: Layout, name: str, scattered: bool, rows: int) -> str:
    table = qualified_name(CATALOG, DATABASE, name)
    spark.sql(f"DROP TABLE IF EXISTS {table}")
    spark.sql(create_table_sql(table, COLUMNS, layout.properties))
    if layout.bucketed:
        # A layout icetide never creates: partitioned here, for the comparison only.
        spark.sql(f"ALTER TABLE {table} ADD PARTITION FIELD bucket({BUCKETS}, {quote_identifier(KEY)})")
    base = base_rows(spark, rows)
    # The same number of base files everywhere (bucketed tables get one per bucket from Iceberg).
    base = base.repartition(BASE_FILES) if scattered else base.repartitionByRange(BASE_FILES, KEY)
    # Adaptive execution would coalesce the tiny shuffle partitions into a few files.
    spark.conf.set("spark.sql.adaptive.coalescePartitions.enabled", "false")
    base.writeTo(table).append()
    spark.conf.unset("spark.sql.adaptive.coalescePartitions.enabled")
    return table


def measure(
    spark: SparkSession,
    bronze: Path,
    layout: Layout,
    name: str,
    scattered: bool,
    rows: int,
    changes: int,
    rounds: int,
) -> Measurement:
    table = create_base_table(spark, layout, name, scattered, rows)
    result = Measurement()
    for round_number in range(rounds):
        batch = write_change_batch(bronze / name, rows, changes, round_number)
        arguments = JobArguments(
            target_table=f"{DATABASE}.{name}",
            run_id=f"{name}-round-{round_number}",
            bronze_uri=str(batch),
            primary_keys=(KEY,),
            watermark_column="updated_at",
            catalog=CATALOG,
        )
        read_before = input_bytes_so_far(spark)
        started = time.perf_counter()
        manifest = run_job(spark, arguments)
        result.run_seconds.append(time.perf_counter() - started)
        result.bytes_read.append(input_bytes_so_far(spark) - read_before)
        if manifest["snapshotId"] is None:
            raise RuntimeError(f"{name} round {round_number} committed nothing: {manifest}")
        summary = last_snapshot_summary(spark, table)
        result.bytes_written.append(int(summary.get("added-files-size", 0)))
        result.files_written.append(
            int(summary.get("added-data-files", 0)) + int(summary.get("added-delete-files", 0))
        )
        result.files_rewritten.append(int(summary.get("deleted-data-files", 0)))
    started = time.perf_counter()
    spark.table(table).agg(F.sum("amount")).collect()
    result.scan_seconds = time.perf_counter() - started
    return result


def report(results: dict[str, Measurement]) -> None:
    chosen = results[CHOSEN]
    headers = [f"{'layout':<30}"]
    for column in REPORT_COLUMNS:
        headers.append(f"{column.header:>{max(len(column.header), 8)}}")
        if column.header in RATIO_HEADERS:
            headers.append(f"{'x chosen':>9}")
    header = " ".join(headers)
    print()
    print(header)
    print("-" * len(header))
    for name, measurement in results.items():
        cells = [f"{name:<30}"]
        for column in REPORT_COLUMNS:
            value = column.value(measurement)
            cells.append(f"{value:>{max(len(column.header), 8)}{column.fmt}}")
            if column.header in RATIO_HEADERS:
                reference = column.value(chosen)
                cells.append(f"{value / reference:>9.1f}" if reference else f"{'-':>9}")
        print(" ".join(cells))


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument(
        "--rows", type=int, nargs="+", default=[200_000, 1_000_000], help="base table sizes, one table each"
    )
    parser.add_argument("--changes", type=int, default=20, help="changed keys per run")
    parser.add_argument("--rounds", type=int, default=3, help="runs per layout (the median is shown)")
    args = parser.parse_args()
    if min(args.rows) < args.changes or args.changes < 10 or args.rounds < 1:
        parser.error("need --changes >= 10 (one insert per ten changes), --rows >= --changes, --rounds >= 1")
    with tempfile.TemporaryDirectory(prefix="icetide-bench-") as workspace:
        warehouse, bronze = Path(workspace) / "warehouse", Path(workspace) / "bronze"
        spark = local_spark_session(warehouse, catalog=CATALOG, app_name="icetide-bench-merge-layouts")
        spark.sql(create_namespace_sql(CATALOG, DATABASE))
        # A first, untimed pass warms the JVM so the first layout is not charged for it.
        measure(spark, bronze, LAYOUTS[-1], "warm_up", False, 10_000, args.changes, 1)
        tables = {}
        for rows in args.rows:
            for scattered in (False, True):
                results = {}
                for index, layout in enumerate(LAYOUTS):
                    print(f"measuring {layout.name}, {rows} rows, {SCENARIOS[scattered]} ...", flush=True)
                    name = f"layout_{index}_{rows}_{'scattered' if scattered else 'ordered'}"
                    results[layout.name] = measure(
                        spark, bronze, layout, name, scattered, rows, args.changes, args.rounds
                    )
                tables[(rows, scattered)] = results
        for (rows, scattered), results in tables.items():
            print(
                f"\n{rows} rows in {BASE_FILES} files, {SCENARIOS[scattered]}; {args.changes} changed "
                f"keys per run; median of {args.rounds} runs of run_job; ratios relative to {CHOSEN!r}"
            )
            report(results)
        spark.stop()


if __name__ == "__main__":
    main()
