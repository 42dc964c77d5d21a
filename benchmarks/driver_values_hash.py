"""What storing the values hash costs a merge on the driver: the same driver merge with and without it.

In ONE Spark process (``local[2]``): a silver table of ``--rows`` rows loaded by icetide's job (a
key and six value columns: text with characters JSON escapes, a decimal, a timestamp, a double, a
string that is often null, a boolean), then one CDC batch of ``--changes`` changes (half updates
of scattered keys, half of them re-reading their row unchanged, half inserts), merged on the
driver (``--merge_plan driver``) ``--rounds`` times per variant, the order alternating each round,
silver and its tombstone table rolled back to the same snapshots after each merge:

- ``hash``: the job as it is (the rows it writes store the hash, icetide_glue.driver.values_hash);
- ``none``: the same merge with ``values_hash_types`` answering None, so the driver writes no hash
  (the driver path before it stored the hash).

It prints, per variant, the minimum and median seconds of the driver merge
(``icetide_glue.driver.merge.merge_on_driver``) and the ratio, and the seconds the hash itself took
(``values_hash`` over the rows written). Run::

    .venv/bin/python benchmarks/driver_values_hash.py [--rows 200000] [--changes 20000] [--rounds 5]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
from pyspark.sql import SparkSession
from pyspark.sql import functions as F

from icetide_glue.arguments import JobArguments
from icetide_glue.driver import merge as driver_merge
from icetide_glue.iceberg_tables import iceberg_table
from icetide_glue.job import run_job
from icetide_glue.silver import SilverTable, tombstone_table
from icetide_local.spark import local_spark_session

CATALOG = "driver_hash_bench"
DATABASE = "bench"
TABLE = SilverTable(CATALOG, DATABASE, "orders")
KEY = "id"
VARIANTS = ("hash", "none")
COLUMNS = ("id", "name", "amount", "updated_at", "score", "status", "flag")


def _options(run_id: str, bronze: Path, **more: str) -> JobArguments:
    options = {
        "target_table": f"{DATABASE}.{TABLE.name}",
        "run_id": run_id,
        "bronze_uri": str(bronze),
        "primary_keys": KEY,
        "load_mode": "merge",
        "catalog": CATALOG,
        "timestamp_column": "dms_timestamp",
        **more,
    }
    return JobArguments.from_options(options)


def build_silver(spark: SparkSession, workspace: Path, rows: int) -> None:
    """A DMS full load of ``rows`` rows loaded by icetide's job."""
    files = workspace / "load" / "bench" / "orders"
    ids = F.col(KEY)
    spark.range(0, rows, 1, numPartitions=1).select(
        F.lit("2026-11-21 06:00:00.000000").alias("dms_timestamp"),
        ids.alias(KEY),
        F.concat(F.lit('name "'), ids.cast("string"), F.lit("\t\u00e9")).alias("name"),
        (ids % 100_000 / 1000).cast("decimal(12,3)").alias("amount"),
        F.timestamp_seconds(F.lit(1_700_000_000) + ids).alias("updated_at"),
        (ids / 7).cast("double").alias("score"),
        F.when(ids % 3 == 0, F.lit(None)).otherwise(F.lit("active")).alias("status"),
        (ids % 2 == 0).alias("flag"),
    ).write.parquet(str(files))
    (part,) = sorted(files.glob("part-*.parquet"))
    part.rename(part.with_name("LOAD00000001.parquet"))
    run_job(spark, _options("load", workspace / "load", expected_rows=str(rows)))


def write_batch(spark: SparkSession, folder: Path, rows: int, changes: int, seconds: int) -> Path:
    """One CDC file of ``changes`` changes: scattered updates (every other one unchanged), inserts."""
    silver = spark.table(TABLE.sql_name)
    updates = changes // 2
    step = max(1, rows // updates)
    current = {
        row[KEY]: row
        for row in silver.where((F.col(KEY) % step == 0) & (F.col(KEY) < updates * step)).collect()
    }
    time_text = f"2026-11-21 07:{seconds // 60:02d}:{seconds % 60:02d}.000000"
    records: list[dict[str, Any]] = []
    for key in sorted(current)[:updates]:
        row = current[key].asDict()
        changed = key % (2 * step) == 0
        records.append(
            {
                "Op": "U",
                "dms_timestamp": time_text,
                **{
                    name: row[name]
                    for name in ("id", "name", "amount", "updated_at", "score", "status", "flag")
                },
                **({"name": row["name"] + "!"} if changed else {}),
            }
        )
    for key in range(rows, rows + changes - len(records)):
        records.append(
            {
                "Op": "I",
                "dms_timestamp": time_text,
                "id": key,
                "name": f"new {key}",
                "amount": None,
                "updated_at": None,
                "score": key / 3,
                "status": "new",
                "flag": True,
            }
        )
    schema = pa.schema(
        [
            ("Op", pa.string()),
            ("dms_timestamp", pa.string()),
            ("id", pa.int64()),
            ("name", pa.string()),
            ("amount", pa.decimal128(12, 3)),
            ("updated_at", pa.timestamp("us", tz="UTC")),
            ("score", pa.float64()),
            ("status", pa.string()),
            ("flag", pa.bool_()),
        ]
    )
    target = folder / "bench" / "orders"
    target.mkdir(parents=True, exist_ok=True)
    pq.write_table(pa.Table.from_pylist(records, schema), target / "20261121-070000000.parquet")
    return folder


def _snapshot(spark: SparkSession, table: SilverTable) -> int:
    return int(iceberg_table(spark, table.sql_name, refreshed=True).currentSnapshot().snapshotId())


def _timed(record: list[float], function: Callable[..., Any]) -> Callable[..., Any]:
    def timed(*args: Any, **kwargs: Any) -> Any:
        started = time.perf_counter()
        try:
            return function(*args, **kwargs)
        finally:
            record.append(time.perf_counter() - started)

    return timed


def measure(spark: SparkSession, workspace: Path, rows: int, changes: int, rounds: int) -> dict[str, Any]:
    build_silver(spark, workspace, rows)
    # A first driver merge creates the tombstone table and gives it a snapshot to roll back to.
    warm = write_batch(spark, workspace / "warm", rows, changes, 0)
    run_job(spark, _options("warm", warm, merge_plan="driver"))
    batch = write_batch(spark, workspace / "batch", rows + changes, changes, 60)
    bases = {table: _snapshot(spark, table) for table in (TABLE, tombstone_table(TABLE))}
    merge_seconds: dict[str, list[float]] = {variant: [] for variant in VARIANTS}
    hash_seconds: list[float] = []
    real_merge, real_types, real_hash = (
        driver_merge.merge_on_driver,
        driver_merge.values_hash_types,
        driver_merge.values_hash,
    )
    driver_merge.values_hash = _timed(hash_seconds, real_hash)
    try:
        for number in range(rounds):
            order = VARIANTS if number % 2 == 0 else VARIANTS[::-1]
            for variant in order:
                driver_merge.merge_on_driver = _timed(merge_seconds[variant], real_merge)
                driver_merge.values_hash_types = real_types if variant == "hash" else (lambda *_, **__: None)
                manifest = run_job(spark, _options(f"{variant}-{number}", batch, merge_plan="driver"))
                if manifest["rowsInserted"] + manifest["rowsUpdated"] == 0:
                    raise RuntimeError(f"round {number} {variant}: nothing merged")
                for table, snapshot in bases.items():
                    name = f"{table.database}.{table.name}"
                    spark.sql(f"CALL {CATALOG}.system.rollback_to_snapshot('{name}', {snapshot})")
    finally:
        driver_merge.merge_on_driver, driver_merge.values_hash_types, driver_merge.values_hash = (
            real_merge,
            real_types,
            real_hash,
        )
    best = {variant: min(times) for variant, times in merge_seconds.items()}
    middle = {variant: statistics.median(times) for variant, times in merge_seconds.items()}
    return {
        "rows": rows,
        "changes": changes,
        "rounds": rounds,
        "min_seconds": best,
        "median_seconds": middle,
        "hash_over_none": (best["hash"] / best["none"], middle["hash"] / middle["none"]),
        "values_hash_seconds": (min(hash_seconds), statistics.median(hash_seconds)),
    }


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=200_000)
    parser.add_argument("--changes", type=int, default=20_000)
    parser.add_argument("--rounds", type=int, default=5)
    arguments = parser.parse_args(sys.argv[1:] if argv is None else argv)
    with tempfile.TemporaryDirectory(prefix="driver-hash-") as scratch:
        workspace = Path(scratch)
        spark = local_spark_session(workspace / "warehouse", catalog=CATALOG, app_name="driver-hash-bench")
        try:
            result = measure(spark, workspace, arguments.rows, arguments.changes, arguments.rounds)
        finally:
            spark.stop()
    best, middle = result["min_seconds"], result["median_seconds"]
    print(f"{result['rows']} rows, {result['changes']} changes, {result['rounds']} rounds (min / median)")
    for variant in VARIANTS:
        print(f"  driver merge, {variant:4}: {best[variant]:.3f} / {middle[variant]:.3f} s")
    print("  hash / none: {:.3f} / {:.3f}".format(*result["hash_over_none"]))
    print("  values_hash alone: {:.4f} / {:.4f} s".format(*result["values_hash_seconds"]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
