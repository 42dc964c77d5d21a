"""Exactly once: a rerun of a committed run changes nothing and hands back the same manifest."""

from __future__ import annotations

import shutil
from pathlib import Path

import pyarrow as pa
import pytest
from pyspark.sql import SparkSession
from pyspark.sql import functions as F

from glue.conftest import LoadRun
from glue.dms_files import write_dms_file
from glue.silver_tables import silver_table, snapshot_ids

pytestmark = pytest.mark.spark

BRONZE = pa.schema(
    [("Op", pa.string()), ("dms_timestamp", pa.string()), ("id", pa.int64()), ("v", pa.int64())]
)


def test_same_run_id_twice_leaves_one_snapshot(
    spark: SparkSession, load_run: LoadRun, tmp_path: Path
) -> None:
    first_bronze, second_bronze = tmp_path / "first", tmp_path / "second"
    write_dms_file(first_bronze, "LOAD00000001.parquet", BRONZE, [("I", "2026-11-21 06:00:00", 1, 10)])
    load_run("once", "once-1", first_bronze, watermark_column="v")
    write_dms_file(
        second_bronze,
        "20261121-070000000.parquet",
        BRONZE,
        [("U", "2026-11-21 07:00:00", 1, 11), ("I", "2026-11-21 07:00:00", 2, 20)],
    )
    first = load_run("once", "once-2", second_bronze, watermark_column="v")
    # The rerun must not even need the bronze files: they may already be archived.
    shutil.rmtree(second_bronze)
    again = load_run("once", "once-2", second_bronze, watermark_column="v")

    assert again == {**first, "alreadyCommitted": True}
    assert (again["rowsInserted"], again["rowsUpdated"], again["newWatermark"]) == (1, 1, 20)
    tagged = (
        spark.table(f"{silver_table('once')}.snapshots")
        .where(F.col("summary")["icetide.run-id"] == "once-2")
        .select("snapshot_id")
        .collect()
    )
    assert [row[0] for row in tagged] == [first["snapshotId"]]
    assert snapshot_ids(spark, "once")[-1] == first["snapshotId"]
