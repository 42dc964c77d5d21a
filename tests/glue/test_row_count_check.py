"""The job refuses to commit when its bronze files hold another number of rows than DMS reported.

DMS's ``FullLoadRows`` reaches the job as ``--expected_rows``, compared exactly with the rows of the
run's LOAD files; the changes DMS counted (Inserts + Updates + Deletes) as ``--max_change_rows``,
which the CDC files' rows must not exceed. A file lost or added between the DMS task and the job
makes the counts differ; merging what is there would put a wrong picture of the
source into silver and move the watermark past rows that never arrived. The refusal comes before
any DDL or commit: silver keeps its snapshot, schema and rows.
"""

from __future__ import annotations

import logging
import re
import shutil
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from pyspark.sql import SparkSession
from pyspark.sql.types import LongType, StringType, StructField, StructType

import icetide_glue.job as job_module
from glue.dms_files import write_dms_file
from glue.frames import assert_frame_equal
from glue.silver_tables import (
    CATALOG,
    SILVER_DATABASE,
    LoadedTable,
    load_into_silver,
    silver_table,
    snapshot_ids,
)
from glue.sql_plans import plans_of
from icetide_cli.main import main as icetide
from icetide_glue.arguments import JobArguments, LoadMode
from icetide_glue.errors import BronzeRowCountMismatch
from icetide_glue.job import run_job

# These tests are of the Spark path's commit mechanics (the driver's: test_driver_merge.py).
pytestmark = pytest.mark.spark

BRONZE = pa.schema(
    [("Op", pa.string()), ("dms_timestamp", pa.string()), ("id", pa.int64()), ("v", pa.string())]
)
# The second run's files also carry a new source column: its ALTER TABLE must not happen either.
BRONZE_WITH_NOTE = pa.schema([*BRONZE, ("note", pa.string())])
ID_AND_V = StructType([StructField("id", LongType()), StructField("v", StringType())])


def _run(
    spark: SparkSession,
    table: str,
    run_id: str,
    bronze: Path,
    expected_rows: int | None,
    max_change_rows: int | None = None,
    expected_files: int | None = None,
) -> dict[str, Any]:
    arguments = JobArguments(
        target_table=f"{SILVER_DATABASE}.{table}",
        run_id=run_id,
        bronze_uri=str(bronze),
        primary_keys=("id",),
        watermark_column="id",
        catalog=CATALOG,
        expected_rows=expected_rows,
        max_change_rows=max_change_rows,
        expected_files=expected_files,
    )
    return run_job(spark, arguments)


def _two_rows(bronze: Path) -> Path:
    """DMS's one full-load file of rows 1 'a' and 2 'b'."""
    write_dms_file(
        bronze,
        "LOAD00000001.parquet",
        BRONZE,
        [("I", "2026-11-21 06:00:00", 1, "a"), ("I", "2026-11-21 06:00:00", 2, "b")],
    )
    return bronze


def _first_load(spark: SparkSession, table: str, tmp_path: Path) -> dict[str, Any]:
    bronze = _two_rows(tmp_path / "first")
    return _run(spark, table, f"{table}-1", bronze, expected_rows=2)


@pytest.fixture(scope="module")
def loaded(spark: SparkSession, tmp_path_factory: pytest.TempPathFactory) -> tuple[str, dict[str, Any]]:
    """One table after its first run, and that run's manifest, for the refused second runs: each
    asserts the table left as it was, so the next finds it as loaded."""
    table = "lost_or_added_file"
    return table, _first_load(spark, table, tmp_path_factory.mktemp(table))


@pytest.mark.parametrize(
    ("files", "rows_in_files"),
    [
        # DMS wrote LOAD00000001 (2 rows) and LOAD00000002 (1 row); the second is gone.
        pytest.param(["LOAD00000001.parquet"], 2, id="lost_file"),
        # A stray copy of LOAD00000001 sits beside DMS's two files.
        pytest.param(
            ["LOAD00000001.parquet", "LOAD00000002.parquet", "LOAD00000003.parquet"], 5, id="added_file"
        ),
    ],
)
def test_a_lost_or_added_file_is_refused_before_any_ddl_or_commit(
    spark: SparkSession,
    tmp_path: Path,
    loaded: tuple[str, dict[str, Any]],
    files: list[str],
    rows_in_files: int,
) -> None:
    table, first = loaded
    snapshots_before = snapshot_ids(spark, table)
    columns_before = spark.table(silver_table(table)).columns
    content = {
        "LOAD00000001.parquet": [
            ("U", "2026-11-21 07:00:00", 2, "B", "x"),
            ("I", "2026-11-21 07:00:00", 3, "c", "y"),
        ],
        "LOAD00000002.parquet": [("I", "2026-11-21 07:00:00", 4, "d", "z")],
        "LOAD00000003.parquet": [
            ("U", "2026-11-21 07:00:00", 2, "B", "x"),
            ("I", "2026-11-21 07:00:00", 3, "c", "y"),
        ],
    }
    bronze = tmp_path / "second"
    for name in files:
        write_dms_file(bronze, name, BRONZE_WITH_NOTE, content[name])

    message = f"the full-load (LOAD) files hold {rows_in_files} row(s) but DMS reported 3 (--expected_rows"
    with pytest.raises(BronzeRowCountMismatch, match=re.escape(message)):
        _run(spark, table, f"{table}-2", bronze, expected_rows=3)

    assert first["snapshotId"] == snapshots_before[-1]
    assert snapshot_ids(spark, table) == snapshots_before
    assert spark.table(silver_table(table)).columns == columns_before
    assert "note" not in columns_before
    assert_frame_equal(spark.table(silver_table(table)).select("id", "v"), [(1, "a"), (2, "b")], ID_AND_V)


def test_a_bronze_folder_gone_missing_is_not_an_empty_run(spark: SparkSession, tmp_path: Path) -> None:
    with pytest.raises(BronzeRowCountMismatch, match=re.escape("hold 0 row(s) but DMS reported 4")):
        _run(spark, "missing_folder", "missing_folder-1", tmp_path / "never_written", expected_rows=4)

    assert not spark.catalog.tableExists(silver_table("missing_folder"))


def test_no_folder_and_no_rows_reported_is_an_empty_run(spark: SparkSession, tmp_path: Path) -> None:
    # DMS writes no folder for a table without rows, and reports 0 for it.
    manifest = _run(spark, "nothing_new", "nothing_new-1", tmp_path / "never_written", expected_rows=0)

    assert (manifest["rowsRead"], manifest["snapshotId"]) == (0, None)


def test_a_rerun_of_a_committed_run_hands_back_its_manifest_without_counting(
    spark: SparkSession, tmp_path: Path
) -> None:
    first = _first_load(spark, "rerun_counted", tmp_path)
    # Its files are archived after the commit: a rerun finds none, and must not count them.
    shutil.rmtree(tmp_path / "first")

    again = _run(spark, "rerun_counted", "rerun_counted-1", tmp_path / "first", expected_rows=2)

    assert again == {**first, "alreadyCommitted": True}
    assert snapshot_ids(spark, "rerun_counted") == [first["snapshotId"]]


def test_without_a_count_the_job_loads_and_says_it_did_not_check(
    spark: SparkSession, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    bronze = tmp_path / "by_hand"
    write_dms_file(bronze, "LOAD00000001.parquet", BRONZE, [("I", "2026-11-21 06:00:00", 1, "a")])

    with caplog.at_level(logging.WARNING, logger="icetide_glue.changes.row_count"):
        manifest = _run(spark, "uncounted", "uncounted-1", bronze, expected_rows=None)

    assert (manifest["rowsRead"], manifest["rowsInserted"]) == (1, 1)
    assert [record.getMessage() for record in caplog.records] == [
        f"no --expected_rows: the rows in {bronze} are not checked against DMS's count"
    ]


def test_icetide_job_run_takes_the_count_and_refuses_in_one_line(
    spark: SparkSession, warehouse: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    bronze = _two_rows(tmp_path / "by_cli")
    arguments = ["job", "run", "--bronze", str(bronze), "--warehouse", str(warehouse),
                 "--table", "silver.cli_counted", "--keys", "id", "--run-id", "cli-counted-1"]  # fmt: skip

    refused = icetide([*arguments, "--expected-rows", "3"])
    error_lines = capsys.readouterr().err.strip().splitlines()
    loaded = icetide([*arguments, "--expected-rows", "2"])

    assert refused == 1
    assert error_lines[-1].startswith(
        "error: BronzeRowCountMismatch: the full-load (LOAD) files hold 2 row(s) but DMS reported 3 "
        "(--expected_rows"
    ), error_lines
    assert loaded == 0


@pytest.mark.parametrize("load_mode", [LoadMode.MERGE, LoadMode.APPEND], ids=["merge", "append"])
def test_a_file_that_lands_after_the_batch_check_waits_for_the_next_run(
    spark: SparkSession, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, load_mode: LoadMode
) -> None:
    """An append reads its files again after the check (its filter and copy), a merge only uses
    what its check kept: every read must see the files listed when the batch was opened, or a file
    DMS writes meanwhile would reach silver unchecked and uncounted."""
    table = f"late_file_{load_mode.value}"
    bronze = tmp_path / "bronze"
    write_dms_file(bronze, "20261121-060000000.parquet", BRONZE, [("I", "2026-11-21 06:00:00", 1, "a")])
    check = "deduplicate_batch" if load_mode is LoadMode.MERGE else "inspect_batch"
    real = getattr(job_module, check)

    def check_then_dms_writes(*args: Any, **kwargs: Any) -> Any:
        summary = real(*args, **kwargs)
        write_dms_file(bronze, "20261121-070000000.parquet", BRONZE, [("I", "2026-11-21 07:00:00", 2, "b")])
        return summary

    monkeypatch.setattr(job_module, check, check_then_dms_writes)
    # The Spark path's reads are what this test watches.
    manifest = load_into_silver(spark, table, "late-1", bronze, load_mode=load_mode, merge_plan="spark")
    assert (manifest["rowsRead"], manifest["rowsInserted"]) == (1, 1)
    assert sorted(row["id"] for row in spark.table(silver_table(table)).collect()) == [1]
    monkeypatch.undo()
    load_into_silver(spark, table, "late-2", bronze, load_mode=load_mode, merge_plan="spark")
    assert sorted(row["id"] for row in spark.table(silver_table(table)).collect()) == [1, 2]


@pytest.fixture(scope="module")
def forty_loaded(spark: SparkSession, tmp_path_factory: pytest.TempPathFactory) -> LoadedTable:
    """Keys 1 to 40, loaded once for the tests of the run after it (LoadedTable.restore)."""
    first = tmp_path_factory.mktemp("read_once")
    rows = [("I", "2026-11-21 06:00:00", k, f"v{k}") for k in range(1, 41)]
    write_dms_file(first, "20261121-060000000.parquet", BRONZE, rows)
    return LoadedTable.load(spark, "read_once", first)


@pytest.mark.parametrize("counted", [True, False], ids=["dms-count", "no-count"])
def test_a_merge_reads_its_bronze_files_once(
    spark: SparkSession, tmp_path: Path, forty_loaded: LoadedTable, counted: bool
) -> None:
    """The check rides in the deduplication, whose result is kept: the classification, the key
    ranges and the commit read that, not the files (a second read would cost a pass over bronze
    and could see a file changed between the two)."""
    table = forty_loaded.restore()
    run_id = f"read-once-{'counted' if counted else 'uncounted'}"
    second = tmp_path / "second"
    changes: list[tuple[str, str, int, str | None]] = [
        ("U", "2026-11-21 07:00:00", k, f"w{k}") for k in (2, 3, 39)
    ]
    changes.append(("D", "2026-11-21 08:00:00", 3, None))
    write_dms_file(second, "20261121-080000000.parquet", BRONZE, changes)
    counts = {"expected_rows": 0, "max_change_rows": 4} if counted else {}
    manifest, plans = plans_of(
        spark, lambda: load_into_silver(spark, table, run_id, second, **counts, merge_plan="spark")
    )
    assert sum(str(second) in plan for plan in plans) == 1, [p[:300] for p in plans if str(second) in p]
    assert (manifest["rowsRead"], manifest["rowsUpdated"], manifest["rowsDeleted"]) == (4, 2, 1)
    silver = {row["id"]: row["v"] for row in spark.table(silver_table(table)).collect()}
    assert silver == {k: {2: "w2", 39: "w39"}.get(k, f"v{k}") for k in range(1, 41) if k != 3}


def test_the_cdc_files_rows_are_bounded_by_the_changes_dms_counted(
    spark: SparkSession, tmp_path: Path
) -> None:
    """A stray CDC file's rows beside DMS's: more rows than the changes DMS counted. (Fewer rows
    than counted, a filter's, is healthy: tests/e2e/test_bronze_row_count.py commits such a run.)"""
    table = "stray_cdc_file"
    bronze = _two_rows(tmp_path / "first")  # a full-load-and-cdc task's LOAD file ...
    cdc_rows = [("U", "2026-11-21 07:00:00", 2, "B"), ("I", "2026-11-21 07:00:01", 3, "c")] * 2
    write_dms_file(bronze, "20261121-070000000.parquet", BRONZE, cdc_rows)  # ... and its CDC file

    message = "the CDC files hold 4 row(s), more than the 3 change(s) DMS counted (--max_change_rows"
    with pytest.raises(BronzeRowCountMismatch, match=re.escape(message)):
        _run(spark, table, f"{table}-1", bronze, expected_rows=2, max_change_rows=3)
    assert not spark.catalog.tableExists(silver_table(table))
