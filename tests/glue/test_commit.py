"""Commits carry the run's snapshot properties, also when runs of two tables commit in parallel."""

from __future__ import annotations

import threading
from pathlib import Path

import pyarrow as pa
import pytest
from pyspark.sql import SparkSession
from pyspark.sql import functions as F

from glue.dms_files import write_dms_file
from glue.silver_tables import CATALOG, load_into_silver, silver_table
from icetide_glue.commit import commit_with_properties
from icetide_local.spark import hadoop_catalog_conf

pytestmark = pytest.mark.spark

BRONZE = pa.schema([("Op", pa.string()), ("dms_timestamp", pa.string()), ("id", pa.int64())])


def test_the_actions_own_error_comes_back(spark: SparkSession) -> None:
    def failing_merge() -> None:
        raise LookupError("the MERGE failed")

    with pytest.raises(LookupError, match="the MERGE failed"):
        commit_with_properties(spark, {"icetide.run-id": "r"}, failing_merge)


def test_parallel_runs_of_two_tables_each_record_their_own_run_id(
    spark: SparkSession, warehouse: Path, tmp_path: Path
) -> None:
    tables = ("parallel_a", "parallel_b")
    for table in tables:
        write_dms_file(tmp_path / table, "LOAD00000001.parquet", BRONZE, [("I", "2026-11-21 06:00:00", 1)])
    errors: list[BaseException] = []

    def run(table: str) -> None:
        try:
            # One session per run, as the local stack's Glue stand-in does.
            session = spark.newSession()
            for key, value in hadoop_catalog_conf(CATALOG, warehouse).items():
                session.conf.set(key, value)
            load_into_silver(session, table, f"{table}-run", tmp_path / table)
        except BaseException as error:  # reported by the main thread
            errors.append(error)

    threads = [threading.Thread(target=run, args=(table,)) for table in tables]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == [], [str(e)[:500] for e in errors]
    for table in tables:
        recorded = spark.table(f"{silver_table(table)}.snapshots").select(F.col("summary")["icetide.run-id"])
        assert [row[0] for row in recorded.collect()] == [f"{table}-run"]
