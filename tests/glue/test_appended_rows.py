"""The rows a run appends to silver: a small write is one task's, one data file sorted by key
(icetide_glue.merge.apply.append_changes); a larger one keeps Spark's range distribution."""

from __future__ import annotations

import random
from itertools import pairwise
from pathlib import Path

import pyarrow as pa
import pytest
from pyspark.sql import SparkSession
from pyspark.sql import functions as F

import icetide_glue.merge.apply as apply_module
from glue.conftest import LoadRun
from glue.dms_files import write_dms_file
from glue.silver_tables import silver_table, tagged_snapshots
from icetide_glue.session import session_settings

pytestmark = pytest.mark.spark
# The Spark path's writes (a small batch, a first load too, is otherwise merged on the driver).
MERGE_PLAN = "spark"

BRONZE = pa.schema(
    [("Op", pa.string()), ("dms_timestamp", pa.string()), ("id", pa.int64()), ("v", pa.string())]
)
KEYS = 3000
# Without it Spark's adaptive execution merges a test's few rows into one range partition, and a
# ranged write would be one file too.
UNMERGED_PARTITIONS = {"spark.sql.adaptive.coalescePartitions.enabled": "false"}


def _run_files(spark: SparkSession, table: str, run_id: str) -> list[list[int]]:
    """The ids of each data file the run's commit added, in file order."""
    (snapshot,) = tagged_snapshots(spark, table, run_id)
    snapshot_id = snapshot["snapshot_id"]
    added = (
        spark.read.option("snapshot-id", str(snapshot_id))
        .table(f"{silver_table(table)}.entries")
        .where(
            (F.col("status") == 1) & (F.col("snapshot_id") == snapshot_id) & (F.col("data_file.content") == 0)
        )
        .select("data_file.file_path")
        .collect()
    )
    return [[row[0] for row in spark.read.parquet(path[0]).select("id").collect()] for path in added]


def _load_two_runs(load_run: LoadRun, tmp_path: Path, table: str) -> None:
    rng = random.Random(12)
    keys = list(range(1, KEYS + 1))
    rng.shuffle(keys)
    full_load = [("I", "2026-11-21 06:00:00", key, f"v{key}") for key in keys]
    write_dms_file(tmp_path / "run1", "LOAD00000001.parquet", BRONZE, full_load)
    load_run(table, f"{table}-1", tmp_path / "run1")
    changed = rng.sample(keys, 400)
    changes = [("U", "2026-11-21 07:00:00", key, f"u{key}") for key in changed[:300]]
    changes += [("D", "2026-11-21 07:00:00", key, "") for key in changed[300:]]
    changes += [("I", "2026-11-21 07:00:00", key, f"v{key}") for key in range(KEYS + 1, KEYS + 201)]
    rng.shuffle(changes)
    write_dms_file(tmp_path / "run2", "20261121-070000000.parquet", BRONZE, changes)
    load_run(table, f"{table}-2", tmp_path / "run2")


def test_a_small_run_appends_one_data_file_in_key_order(
    spark: SparkSession, load_run: LoadRun, tmp_path: Path
) -> None:
    with session_settings(spark, UNMERGED_PARTITIONS):
        _load_two_runs(load_run, tmp_path, "one_file")

    for run_id, rows in (("one_file-1", KEYS), ("one_file-2", 500)):
        files = _run_files(spark, "one_file", run_id)
        assert [len(ids) for ids in files] == [rows]
        assert files[0] == sorted(files[0])


def test_a_write_above_the_limit_keeps_the_range_distribution(
    spark: SparkSession, load_run: LoadRun, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(apply_module, "ONE_TASK_WRITE_ROWS", 100)
    with session_settings(spark, UNMERGED_PARTITIONS):
        _load_two_runs(load_run, tmp_path, "ranged_files")

    files = _run_files(spark, "ranged_files", "ranged_files-1")
    assert len(files) > 1
    assert sum(len(ids) for ids in files) == KEYS
    # Each file holds one band of keys, sorted: the bands do not overlap.
    bands = sorted((ids[0], ids[-1]) for ids in files)
    assert all(ids == sorted(ids) for ids in files)
    assert all(high < low for (_, high), (low, _) in pairwise(bands))
