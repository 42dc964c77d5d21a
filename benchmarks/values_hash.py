"""What the stored values hash saves: a run's classification comparing hashes against comparing values.

A hard-delete merge table stores ``_icetide_values_hash`` with each row,
and the classification (``icetide_glue.merge.sql.classify_changes_sql``) compares the batch's hash with
silver's instead of reading every value column of silver (docs/glue-job.md, "Unchanged rows: the
values hash"). This benchmark, in ONE Spark process (``local[2]``), per table width:

1. builds a silver table of ``--rows`` rows with icetide's own job (a DMS full-load folder
   through ``icetide_glue.job.run_job``): ``narrow`` is shaped like merge_cost.py's source (a key
   and three value columns: a name, a decimal(12,2), a timestamp; its decimal repeats more), ``wide``
   adds 13 more (strings, integers, doubles and a mostly repeated status), as an OLTP table has;
2. takes a batch of ``--fraction`` of the keys, scattered, as updates, half of them changing a
   value and half re-reading the row unchanged, aligned to silver as a run aligns it;
3. compares, per key, the labels of both statements below (the run exits 1 when one differs),
   and the unchanged count with the batch's odd keys;
4. times the classification statement side by side, same table, same batch, the whole table read
   (a scattered batch's key ranges skip no file) and the batch's keys broadcast, the order
   alternating each round: ``hash`` (the
   job's statement, without the tombstone table's join: this table has no deletes; one read of
   silver, as the job reads a table whose rows all store a hash) and ``values`` (the same
   statement comparing every value column, as before the hash); each checkpointed, as the job
   checkpoints it.

It prints, per width, the minimum and median seconds over ``--rounds`` rounds, values / hash for
both, and the table's size. Run (``BENCH_ARGS`` are these options)::

    .venv/bin/python benchmarks/values_hash.py [--rows 5000000] [--rounds 6] [--fraction 0.01]
        [--widths narrow wide] [--workspace DIR] [--json FILE]
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import sys
import tempfile
import time
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql import functions as F

from icetide_glue.arguments import JobArguments
from icetide_glue.changes.normalize import align_to_silver
from icetide_glue.columns import ACTION, CHANGE_SEQ, CHANGE_TS, OP, is_metadata_column
from icetide_glue.job import run_job
from icetide_glue.merge.apply import values_hash_types, with_values_hash
from icetide_glue.merge.sql import classify_changes_sql
from icetide_glue.silver import SilverTable, tombstone_table
from icetide_local.spark import local_spark_session, spark_running

CATALOG = "values_hash_bench"
DATABASE = "bench"
KEY = "id"
ROWS_PER_LOAD_FILE = 1_000_000
WIDTHS = ("narrow", "wide")


def source_columns(width: str) -> list[Column]:
    """The source table's columns (DMS's load-time column first)."""
    ids = F.col(KEY)
    columns = [
        F.lit("2026-11-21 06:00:00.000000").alias("dms_timestamp"),
        ids.alias(KEY),
        F.concat(F.lit("name-"), ids.cast("string")).alias("name"),
        (ids % 100_000 / 100).cast("decimal(12,2)").alias("amount"),
        F.timestamp_seconds(F.lit(1_700_000_000) + ids).alias("updated_at"),
    ]
    if width == "wide":
        for i in range(4):
            columns += [
                F.sha2(F.concat(F.lit(str(i)), ids.cast("string")), 256).substr(1, 24).alias(f"text_{i}"),
                (F.hash(ids, F.lit(i)) % 1_000_000).alias(f"number_{i}"),
                (F.rand(i) * 1000).alias(f"measure_{i}"),
            ]
        columns.append(F.when(ids % 3 == 0, F.lit(None)).otherwise(F.lit("active")).alias("status"))
    return columns


def build_silver(spark: SparkSession, workspace: Path, width: str, rows: int) -> SilverTable:
    """A DMS full load of ``rows`` rows, loaded by icetide's job into a new table."""
    table = SilverTable(CATALOG, DATABASE, width)
    # A reused workspace or session: start afresh (the table and its tombstone table).
    for dropped in (table, tombstone_table(table)):
        spark.sql(f"DROP TABLE IF EXISTS {dropped.sql_name} PURGE")
    folder = workspace / f"bronze-{width}"
    shutil.rmtree(folder, ignore_errors=True)
    files = folder / "bench" / "source_table"
    partitions = max(1, rows // ROWS_PER_LOAD_FILE)
    spark.range(0, rows, 1, numPartitions=partitions).select(*source_columns(width)).write.parquet(str(files))
    for number, part in enumerate(sorted(files.glob("part-*.parquet")), start=1):
        part.rename(part.with_name(f"LOAD{number:08d}.parquet"))
    options = {
        "target_table": f"{DATABASE}.{width}",
        "run_id": f"{width}-load",
        "bronze_uri": str(folder),
        "primary_keys": KEY,
        "load_mode": "merge",
        "catalog": CATALOG,
        "timestamp_column": "dms_timestamp",
        "expected_rows": str(rows),
    }
    run_job(spark, JobArguments.from_options(options))
    return table


def scattered_updates(silver: DataFrame, fraction: float) -> DataFrame:
    """``fraction`` of silver's keys as updates, aligned to silver: even keys change their name,
    odd keys re-read their row unchanged (what a ``gte`` watermark's boundary produces)."""
    source = [name for name in silver.columns if not is_metadata_column(name)]
    renamed = F.when(F.col(KEY) % 2 == 0, F.concat(F.col("name"), F.lit("!"))).otherwise(F.col("name"))
    batch = (
        silver.sample(fraction, seed=7)
        .select(*source)
        .withColumn("name", renamed)
        .withColumn(OP, F.lit("U"))
        .withColumn(CHANGE_TS, F.current_timestamp())
        .withColumn(CHANGE_SEQ, F.lit(None).cast("string"))
    )
    return align_to_silver(batch, silver.schema).localCheckpoint(eager=True)


def statements(spark: SparkSession, table: SilverTable, batch: DataFrame) -> dict[str, str]:
    """The classification with the hash (the job's) and with every value column (before it)."""
    silver = spark.table(table.sql_name)
    value_columns = [name for name in silver.columns if not is_metadata_column(name)]
    types = values_hash_types(silver.schema, value_columns, [KEY], soft_delete=False)
    if types is None:
        raise RuntimeError(f"{table} does not store the values hash")
    with_values_hash(batch, types).createOrReplaceTempView("hashed")
    batch.createOrReplaceTempView("valued")
    # As the job asks it: every row of a table its job built stores a hash, so silver is read once.
    shared: dict[str, Any] = {"broadcast_changes": True}
    sql_name = table.sql_name
    return {
        "hash": classify_changes_sql(sql_name, "hashed", [KEY], value_columns, compare_hashes=True, **shared),
        "values": classify_changes_sql(sql_name, "valued", [KEY], value_columns, **shared),
    }


def labels(spark: SparkSession, statement: str) -> dict[str, int]:
    rows = spark.sql(statement).groupBy(ACTION).count().collect()
    return {row[ACTION]: int(row["count"]) for row in rows}


def differing_labels(spark: SparkSession, named: dict[str, str]) -> int:
    """Changes the two statements label differently (per key: each side's rows the other lacks)."""
    hashed, valued = (spark.sql(named[name]).select(KEY, ACTION) for name in ("hash", "values"))
    return hashed.exceptAll(valued).count() + valued.exceptAll(hashed).count()


def time_rounds(spark: SparkSession, named: dict[str, str], rounds: int) -> dict[str, list[float]]:
    """Seconds of each statement, checkpointed as the job does, order alternating per round."""
    order = list(named)
    seconds: dict[str, list[float]] = {name: [] for name in order}
    for round_number in range(rounds):
        for name in order if round_number % 2 == 0 else order[::-1]:
            started = time.perf_counter()
            spark.sql(named[name]).localCheckpoint(eager=True)
            seconds[name].append(time.perf_counter() - started)
    return seconds


def table_megabytes(spark: SparkSession, table: SilverTable) -> float:
    files = f"{table.sql_name}.files"
    row = spark.sql(f"SELECT sum(file_size_in_bytes) AS bytes FROM {files}").first()  # noqa: S608
    return float(row["bytes"] or 0) / 1e6 if row is not None else 0.0


def measure_width(
    spark: SparkSession, workspace: Path, width: str, rows: int, fraction: float, rounds: int
) -> dict[str, Any]:
    table = build_silver(spark, workspace, width, rows)
    batch = scattered_updates(spark.table(table.sql_name), fraction)
    named = statements(spark, table, batch)
    found = {name: labels(spark, statement) for name, statement in named.items()}
    differing = differing_labels(spark, named)
    seconds = time_rounds(spark, named, rounds)
    best = {name: min(times) for name, times in seconds.items()}
    middle = {name: statistics.median(times) for name, times in seconds.items()}
    return {
        "width": width,
        "columns": len(spark.table(table.sql_name).columns),
        "table_mb": round(table_megabytes(spark, table), 1),
        "changes": batch.count(),
        # What the batch was made of (scattered_updates): odd keys re-read unchanged.
        "odd_keys": batch.where(F.col(KEY) % 2 == 1).count(),
        "labels": found,
        "differing_labels": differing,
        "same_labels": differing == 0,
        "seconds": seconds,
        "min_seconds": best,
        "median_seconds": middle,
        "values_over_hash": best["values"] / best["hash"],
        "median_values_over_hash": middle["values"] / middle["hash"],
    }


def parse_arguments(argv: Sequence[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--rows", type=int, default=5_000_000, help="rows of each silver table")
    parser.add_argument("--rounds", type=int, default=6, help="timed rounds per width (minimum taken)")
    parser.add_argument("--fraction", type=float, default=0.01, help="share of the keys in the batch")
    parser.add_argument("--widths", nargs="+", choices=WIDTHS, default=list(WIDTHS), help="tables to measure")
    parser.add_argument(
        "--workspace", type=Path, help="where bronze and the warehouse go (default: a temp dir)"
    )
    parser.add_argument("--json", type=Path, help="also write the results here")
    arguments = parser.parse_args(argv)
    if arguments.rows < 1 or arguments.rounds < 1 or not 0 < arguments.fraction <= 1:
        parser.error("--rows and --rounds must be positive, --fraction in (0, 1]")
    return arguments


def main(argv: Sequence[str] | None = None) -> int:
    """Measure every width; 1 when the two classifications label a change differently."""
    argv = list(sys.argv[1:] if argv is None else argv)
    arguments = parse_arguments(argv)
    # A caller's session (the tests') is reused and left running; one started here is stopped.
    own_session = not spark_running()
    with tempfile.TemporaryDirectory(prefix="values-hash-") as scratch:
        workspace = arguments.workspace or Path(scratch)
        spark = local_spark_session(workspace / "warehouse", catalog=CATALOG, app_name="values-hash-bench")
        spark_version = spark.version
        try:
            results = [
                measure_width(spark, workspace, width, arguments.rows, arguments.fraction, arguments.rounds)
                for width in arguments.widths
            ]
        finally:
            if own_session:
                spark.stop()
    print_report(results)
    if arguments.json is not None:
        document = {
            "command": ["benchmarks/values_hash.py", *argv],
            "finished_at": datetime.now(UTC).isoformat(timespec="seconds"),
            "spark": spark_version,
            "results": results,
        }
        arguments.json.write_text(json.dumps(document, indent=2) + "\n", encoding="utf-8")
    return 0 if all(result["same_labels"] for result in results) else 1


def print_report(results: Sequence[dict[str, Any]]) -> None:
    line = "{:8} {:>7} {:>9} {:>8} {:>13} {:>13} {:>13}"
    print(line.format("width", "columns", "table MB", "changes", "hash s", "values s", "values/hash"))
    print(line.format("", "", "", "", *["min / median"] * 3))
    for result in results:
        best, middle = result["min_seconds"], result["median_seconds"]
        figures = [
            f"{best['hash']:.2f} / {middle['hash']:.2f}",
            f"{best['values']:.2f} / {middle['values']:.2f}",
            f"{result['values_over_hash']:.2f} / {result['median_values_over_hash']:.2f}",
        ]
        print(
            line.format(result["width"], result["columns"], result["table_mb"], result["changes"], *figures)
        )
        if not result["same_labels"]:
            differing = result["differing_labels"]
            print(f"{result['width']}: labels differ for {differing} change(s): {result['labels']}")


if __name__ == "__main__":
    sys.exit(main())
