"""Batches that cannot be applied are refused before silver is created or changed."""

from __future__ import annotations

import re
from pathlib import Path

import pyarrow as pa
import pytest
from pyspark.sql import SparkSession

from glue.conftest import LoadRun
from glue.dms_files import write_dms_file
from glue.silver_tables import silver_table
from icetide_glue.errors import BronzeSchemaError, InvalidChangeData

pytestmark = pytest.mark.spark

BRONZE = pa.schema(
    [("Op", pa.string()), ("dms_timestamp", pa.string()), ("id", pa.int64()), ("v", pa.string())]
)


@pytest.mark.parametrize(
    ("table", "rows", "error", "message"),
    [
        (
            "bad_op",
            [("I", "2026-11-21 06:00:00", 1, "a"), ("X", "2026-11-21 06:00:00", 2, "b")],
            InvalidChangeData,
            "1 row(s) have an Op other than I, U or D (e.g. 'X')",
        ),
        (
            "bad_time",
            [("I", "21/11/2026 06:00", 1, "a")],
            InvalidChangeData,
            "1 row(s) have a dms_timestamp that is not a 'yyyy-MM-dd HH:mm:ss[.SSSSSS]' time",
        ),
        (
            "null_key",
            [("I", "2026-11-21 06:00:00", None, "a")],
            InvalidChangeData,
            "1 row(s) have a null primary key (id)",
        ),
    ],
)
def test_rows_that_cannot_be_applied(
    spark: SparkSession,
    load_run: LoadRun,
    tmp_path: Path,
    table: str,
    rows: list[tuple[object, ...]],
    error: type[Exception],
    message: str,
) -> None:
    write_dms_file(tmp_path, "LOAD00000001.parquet", BRONZE, rows)
    with pytest.raises(error, match=re.escape(message)):
        load_run(table, f"{table}-1", tmp_path)
    assert not spark.catalog.tableExists(silver_table(table))


@pytest.mark.parametrize(
    ("keys", "watermark", "message"),
    [
        (
            ("order_id",),
            None,
            "the primary key column (--primary_keys) 'order_id' is not in the bronze files "
            "(their columns: id, v)",
        ),
        (
            ("id",),
            "updated_at",
            "the watermark column (--watermark_column) 'updated_at' is not in the bronze files",
        ),
    ],
)
def test_columns_the_run_needs_must_be_in_the_files(
    spark: SparkSession,
    load_run: LoadRun,
    tmp_path: Path,
    keys: tuple[str, ...],
    watermark: str | None,
    message: str,
) -> None:
    write_dms_file(tmp_path, "LOAD00000001.parquet", BRONZE, [("I", "2026-11-21 06:00:00", 1, "a")])
    with pytest.raises(BronzeSchemaError, match=re.escape(message)):
        load_run("missing_column", "missing-1", tmp_path, keys=keys, watermark_column=watermark)
    assert not spark.catalog.tableExists(silver_table("missing_column"))


def test_a_run_without_files_commits_nothing(spark: SparkSession, load_run: LoadRun, tmp_path: Path) -> None:
    manifest = load_run("no_files", "no-files-1", tmp_path / "never-written", watermark_column="updated_at")
    assert manifest == {
        "runId": "no-files-1",
        "targetTable": "silver.no_files",
        "rowsRead": 0,
        "rowsInserted": 0,
        "rowsUpdated": 0,
        "rowsDeleted": 0,
        "rowsUnchanged": 0,
        "watermarkColumn": "updated_at",
        "newWatermark": None,
        "snapshotId": None,
        "alreadyCommitted": False,
        "schemaChanges": [],
    }
    assert not spark.catalog.tableExists(silver_table("no_files"))
