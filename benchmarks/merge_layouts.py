"""Which silver layout makes a MERGE cost what the change costs? Measured side by side, in one run.

Four layouts of the same table get the same base rows and then the same small change batches,
applied with the job's own MERGE text (icetide_glue.sql.merge_sql, order guard included):

  unpartitioned copy-on-write   (Iceberg's defaults)
  unpartitioned merge-on-read
  bucketed copy-on-write        (bucket(16, id))
  bucketed merge-on-read        (bucket(16, id); what icetide_glue.silver creates)

Two base tables: keys written in key order (file statistics alone can skip files), and keys
scattered over every file (random keys such as UUIDs, or updates all over an old table). For
each: the median MERGE time, the bytes the MERGE wrote, the files it wrote and rewrote, and the
time of a full scan after the merges (merge-on-read moves cost to readers until compaction).
Ratios are relative to the layout icetide uses. Run:

    .venv/bin/python benchmarks/merge_layouts.py [--rows 1000000] [--changes 20] [--rounds 3]
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from icetide_glue.silver import MERGE_TABLE_PROPERTIES, SILVER_BUCKETS
from icetide_glue.sql import create_table_sql, merge_sql, qualified_name
from icetide_local.spark import local_spark_session

CATALOG = "bench"
DATABASE = "bench"
COLUMNS = [
    ("id", "bigint"),
    ("name", "string"),
    ("amount", "decimal(18,2)"),
    ("updated_at", "timestamp"),
    ("_icetide_change_ts", "timestamp"),
    ("_icetide_change_seq", "string"),
    ("_icetide_run_id", "string"),
]
COPY_ON_WRITE = {
    "format-version": "2",
    "write.delete.mode": "copy-on-write",
    "write.update.mode": "copy-on-write",
    "write.merge.mode": "copy-on-write",
}
# The base table is written as this many files in every layout, so only the layout differs.
BASE_FILES = SILVER_BUCKETS


@dataclass(frozen=True)
class Layout:
    name: str
    bucketed: bool
    properties: dict[str, str]


LAYOUTS = (
    Layout("unpartitioned copy-on-write", False, COPY_ON_WRITE),
    Layout("unpartitioned merge-on-read", False, MERGE_TABLE_PROPERTIES),
    Layout("bucketed copy-on-write", True, COPY_ON_WRITE),
    Layout("bucketed merge-on-read", True, MERGE_TABLE_PROPERTIES),
)
CHOSEN = LAYOUTS[-1].name
SCENARIOS = {False: "keys written in key order", True: "keys scattered over every file"}


@dataclass
class Measurement:
    merge_seconds: list[float]
    bytes_written: list[int]
    files_written: list[int]
    files_rewritten: list[int]
    scan_seconds: float = 0.0


def base_rows(spark: SparkSession, rows: int) -> DataFrame:
    return spark.range(rows).select(
        F.col("id"),
        F.concat(F.lit("name-"), F.col("id").cast("string")).alias("name"),
        (F.col("id") % 100000 / 100).cast("decimal(18,2)").alias("amount"),
        F.timestamp_seconds(F.lit(1_795_240_000) + F.col("id") % 3600).alias("updated_at"),
        F.timestamp_seconds(F.lit(1_795_240_000)).alias("_icetide_change_ts"),
        F.lit(None).cast("string").alias("_icetide_change_seq"),
        F.lit("base").alias("_icetide_run_id"),
    )


def change_batch(spark: SparkSession, rows: int, changes: int, round_number: int) -> DataFrame:
    """``changes`` keys spread over the whole key range: 70% updates, 20% deletes, 10% inserts."""
    stride = max(rows // changes, 1)
    offset = 7919 * (round_number + 1)
    batch = spark.range(changes).select(
        ((F.col("id") * stride + offset) % rows).alias("existing"),
        (F.lit(rows + round_number * changes) + F.col("id")).alias("new_id"),
        (F.col("id") % 10).alias("bucket"),
    )
    op = F.when(F.col("bucket") < 7, "U").when(F.col("bucket") < 9, "D").otherwise("I")
    return batch.select(
        F.when(op == "I", F.col("new_id")).otherwise(F.col("existing")).alias("id"),
        F.lit(f"changed in round {round_number}").alias("name"),
        F.lit(1).cast("decimal(18,2)").alias("amount"),
        F.timestamp_seconds(F.lit(1_795_250_000 + round_number)).alias("updated_at"),
        F.timestamp_seconds(F.lit(1_795_250_000 + round_number)).alias("_icetide_change_ts"),
        F.lit(None).cast("string").alias("_icetide_change_seq"),
        F.lit(f"round-{round_number}").alias("_icetide_run_id"),
        op.alias("_icetide_op"),
    )


def last_snapshot_summary(spark: SparkSession, table: str) -> dict[str, str]:
    # table is a name built by qualified_name, not input.
    row = spark.sql(f"SELECT summary FROM {table}.snapshots ORDER BY committed_at DESC LIMIT 1").first()  # noqa: S608
    assert row is not None
    return dict(row["summary"])


def measure(
    spark: SparkSession, layout: Layout, name: str, scattered: bool, rows: int, changes: int, rounds: int
) -> Measurement:
    table = qualified_name(CATALOG, DATABASE, name)
    spark.sql(f"DROP TABLE IF EXISTS {table}")
    spark.sql(
        create_table_sql(
            table,
            COLUMNS,
            layout.properties,
            bucket_column="id" if layout.bucketed else None,
            buckets=SILVER_BUCKETS,
        )
    )
    base = base_rows(spark, rows)
    # The same number of base files everywhere (bucketed tables get one per bucket from Iceberg).
    base = base.repartition(BASE_FILES) if scattered else base.repartitionByRange(BASE_FILES, "id")
    # Adaptive execution would coalesce the tiny shuffle partitions into a few files.
    spark.conf.set("spark.sql.adaptive.coalescePartitions.enabled", "false")
    base.writeTo(table).append()
    spark.conf.unset("spark.sql.adaptive.coalescePartitions.enabled")
    result = Measurement([], [], [], [])
    for round_number in range(rounds):
        change_batch(spark, rows, changes, round_number).createOrReplaceTempView("bench_changes")
        statement = merge_sql(table, "bench_changes", ["id"], [name for name, _ in COLUMNS])
        started = time.perf_counter()
        spark.sql(statement)
        result.merge_seconds.append(time.perf_counter() - started)
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
    chosen_time = statistics.median(chosen.merge_seconds)
    chosen_bytes = statistics.median(chosen.bytes_written)
    print()
    header = (
        f"{'layout':<30} {'merge s':>8} {'x chosen':>9} {'MB written':>11} {'x chosen':>9} "
        f"{'files written':>14} {'files rewritten':>16} {'scan s':>7} {'x chosen':>9}"
    )
    print(header)
    print("-" * len(header))
    for name, m in results.items():
        merge_time = statistics.median(m.merge_seconds)
        written = statistics.median(m.bytes_written)
        print(
            f"{name:<30} {merge_time:>8.2f} {merge_time / chosen_time:>9.1f} {written / 1e6:>11.2f} "
            f"{written / chosen_bytes:>9.1f} {statistics.median(m.files_written):>14.0f} "
            f"{statistics.median(m.files_rewritten):>16.0f} "
            f"{m.scan_seconds:>7.2f} {m.scan_seconds / chosen.scan_seconds:>9.1f}"
        )


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--rows", type=int, default=1_000_000, help="rows in the base table")
    parser.add_argument("--changes", type=int, default=20, help="changed keys per merge")
    parser.add_argument("--rounds", type=int, default=3, help="merges per layout (the median is shown)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="icetide-bench-") as warehouse:
        spark = local_spark_session(Path(warehouse), catalog=CATALOG, app_name="icetide-bench-merge-layouts")
        # A first, untimed pass warms the JVM so the first layout is not charged for it.
        measure(spark, LAYOUTS[0], "warm_up", False, 10_000, 10, 1)
        tables = {}
        for scattered in (False, True):
            results = {}
            for index, layout in enumerate(LAYOUTS):
                print(f"measuring {layout.name}, {SCENARIOS[scattered]} ...", flush=True)
                name = f"layout_{index}_{'scattered' if scattered else 'ordered'}"
                results[layout.name] = measure(
                    spark, layout, name, scattered, args.rows, args.changes, args.rounds
                )
            tables[scattered] = results
        for scattered, results in tables.items():
            print(
                f"\n{SCENARIOS[scattered]}: {args.rows} rows in {BASE_FILES} files; "
                f"{args.changes} changed keys per merge; median of {args.rounds} merges; "
                f"ratios relative to {CHOSEN!r}"
            )
            report(results)
        spark.stop()


if __name__ == "__main__":
    main()
