"""Batches that cannot be applied are refused before silver is created or changed."""

from __future__ import annotations

import re
from pathlib import Path
from types import ModuleType

import pyarrow as pa
import pytest
from pyspark.sql import SparkSession

import icetide_glue.changes.batch as batch_module
from glue.conftest import LoadRun
from glue.dms_files import write_dms_file
from glue.silver_tables import CATALOG, silver_table
from icetide_glue.changes.batch import BatchSummary
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
        (
            # Spark alone would read these as times; DMS writes "yyyy-MM-dd HH:mm:ss.SSSSSS" only.
            "not_dms_time_format",
            [("I", "2026-11-21T06:00:00", 1, "a"), ("I", "2026", 2, "b")],
            InvalidChangeData,
            "2 row(s) have a dms_timestamp that is not a 'yyyy-MM-dd HH:mm:ss[.SSSSSS]' time",
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


def test_a_batch_whose_second_read_finds_nothing_wrong_is_still_refused(
    spark: SparkSession, load_run: LoadRun, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A merge's check counts failing rows in its one read, and reads the batch again only to name
    them: if that second read finds nothing (files changed in between), the run still stops."""
    write_dms_file(tmp_path, "LOAD00000001.parquet", BRONZE, [("X", "2026-11-21 06:00:00", 1, "a")])
    monkeypatch.setattr(batch_module, "inspect_batch", lambda *args: BatchSummary(1, None))
    with pytest.raises(InvalidChangeData, match=r"1 row\(s\) failed a check on the first read and none"):
        load_run("changed_between_reads", "changed-1", tmp_path)
    assert not spark.catalog.tableExists(silver_table("changed_between_reads"))


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
        "newestChangeTime": None,
    }
    assert not spark.catalog.tableExists(silver_table("no_files"))


@pytest.mark.parametrize(
    ("table", "sequence_type", "sequences", "message"),
    [
        (
            "text_sequence",
            pa.string(),
            ["0001", "12a", " 7"],
            "2 row(s) have a AR_H_CHANGE_SEQ that is not a string of digits (e.g. ",
        ),
        (
            "negative_sequence",
            pa.int64(),
            [1, -5, None],
            "1 row(s) have a AR_H_CHANGE_SEQ that is not a string of digits (e.g. '-5')",
        ),
    ],
)
def test_change_sequences_that_do_not_sort_as_numbers_are_refused(
    spark: SparkSession,
    load_run: LoadRun,
    tmp_path: Path,
    table: str,
    sequence_type: pa.DataType,
    sequences: list[object],
    message: str,
) -> None:
    """A sequence compared as text must be digits, or "9" would sort after "10" in silver for good."""
    schema = pa.schema([*BRONZE, ("AR_H_CHANGE_SEQ", sequence_type)])
    rows = [("U", "2026-11-21 07:00:00", i, "v", seq) for i, seq in enumerate(sequences, start=1)]
    write_dms_file(tmp_path, "20261121-070000000.parquet", schema, rows)
    with pytest.raises(InvalidChangeData, match=re.escape(message)):
        load_run(table, f"{table}-1", tmp_path)
    assert not spark.catalog.tableExists(silver_table(table))


def test_the_glue_entrypoint_fails_with_one_line_that_starts_with_the_errors_name(
    spark: SparkSession, glue_entrypoint: ModuleType, tmp_path: Path
) -> None:
    """Glue shows the last exception's message as the run's ErrorMessage, and the failure record
    takes the error's name from its start."""
    schema = pa.schema([("Op", pa.string()), ("dms_timestamp", pa.int64()), ("id", pa.int64())])
    write_dms_file(tmp_path, "LOAD00000001.parquet", schema, [("I", 1_795_334_400_000_000, 1)])
    arguments = ["--target_table", "silver.glue_refusal", "--run_id", "glue-refusal-1"]
    arguments += ["--bronze_uri", str(tmp_path), "--primary_keys", "id", "--catalog", CATALOG]
    with pytest.raises(BronzeSchemaError) as raised:
        glue_entrypoint.main(arguments)
    assert str(raised.value) == (
        "BronzeSchemaError: the DMS timestamp column (--timestamp_column) 'dms_timestamp' is bigint, not a "
        "'yyyy-MM-dd HH:mm:ss[.SSSSSS]' string or a timestamp: these columns order the changes (in silver "
        "too, for every later run), so a mistyped one is refused; check the DMS endpoint's settings or the "
        "column names"
    )
    assert not spark.catalog.tableExists(silver_table("glue_refusal"))


def test_a_job_error_message_is_one_line() -> None:
    error = BronzeSchemaError("column qty:\n  int in one file,\tbigint in another")
    assert str(error) == "column qty: int in one file, bigint in another"
    assert error.summary() == "BronzeSchemaError: column qty: int in one file, bigint in another"
