"""What the row count check compares (icetide_glue.changes.row_count), without Spark: a seeded random
healthy DMS run, read with the counters any way the documentation allows, is never refused; the
same run with a stray or a missing file is refused wherever the counts can tell.

The oracle is the rule as docs/glue-job.md states it: the LOAD files' rows equal FullLoadRows, the
CDC files' rows are at most the changes DMS counted.
"""

from __future__ import annotations

import random
from dataclasses import dataclass

import pytest

from icetide_glue.arguments import JobArguments
from icetide_glue.changes.row_count import BronzeRows, check_bronze_rows, is_full_load_file
from icetide_glue.errors import BronzeRowCountMismatch

RUNS = 2000
# The rows' cases ask nothing of the number of files (no --expected_files): any will do.
FILES = 1


@dataclass(frozen=True)
class DmsRun:
    """A healthy run: the rows DMS wrote, and the changes it counted (at least those written: a
    filter, CdcInsertsOnly, ... leave counted changes out of the files)."""

    full_load_rows: int
    change_rows: int
    counted_changes: int


def _arguments(**counts: int) -> JobArguments:
    """A run's arguments with DMS's ``counts`` (expected_rows, max_change_rows, expected_files)."""
    return JobArguments(
        target_table="silver.orders",
        run_id="orders-1",
        bronze_uri="s3://raw/bronze/orders/orders-1/",
        primary_keys=("id",),
        **counts,  # type: ignore[arg-type]
    )


def _refused(run: DmsRun, rows: BronzeRows) -> bool:
    arguments = _arguments(expected_rows=run.full_load_rows, max_change_rows=run.counted_changes)
    try:
        check_bronze_rows(arguments, lambda: rows)
    except BronzeRowCountMismatch:
        return True
    return False


def _healthy_run(rng: random.Random) -> DmsRun:
    change_rows = rng.choice([0, rng.randint(1, 50)])
    return DmsRun(rng.randint(0, 50), change_rows, change_rows + rng.choice([0, 0, rng.randint(1, 20)]))


def test_a_healthy_run_is_never_refused_and_a_stray_or_missing_file_is_wherever_counts_tell() -> None:
    rng = random.Random(46)
    caught = {"LOAD": 0, "CDC": 0}
    for _ in range(RUNS):
        run = _healthy_run(rng)
        assert not _refused(run, BronzeRows(run.full_load_rows, run.change_rows, FILES)), run
        stray = rng.randint(1, 30)
        # A stray or a missing full-load file: always refused.
        assert _refused(run, BronzeRows(run.full_load_rows + stray, run.change_rows, FILES)), run
        if run.full_load_rows:
            lost = rng.randint(1, run.full_load_rows)
            assert _refused(run, BronzeRows(run.full_load_rows - lost, run.change_rows, FILES)), run
            caught["LOAD"] += 1
        # A stray CDC file: refused exactly when it takes the rows past the changes DMS counted.
        beyond = run.change_rows + stray > run.counted_changes
        assert _refused(run, BronzeRows(run.full_load_rows, run.change_rows + stray, FILES)) is beyond, run
        caught["CDC"] += beyond
    # The generator made both kinds of case often (the asserts above are not vacuous).
    assert min(caught.values()) > RUNS // 4, caught


def test_without_dms_s_counts_nothing_is_counted_or_refused() -> None:
    arguments = _arguments()

    def count() -> BronzeRows:
        raise AssertionError("counted without a count to compare with")

    check_bronze_rows(arguments, count)


@pytest.mark.parametrize(
    ("name", "full_load"),
    [
        ("LOAD00000001.parquet", True),
        ("LOAD0000000A.parquet", True),
        ("20261121-070000000.parquet", False),
        ("LOAD00000001.csv", False),
        ("copy of LOAD00000001.parquet", False),
    ],
)
def test_full_load_files_are_told_by_dms_s_names(name: str, full_load: bool) -> None:
    assert is_full_load_file(name) is full_load


@pytest.mark.parametrize(
    ("files", "refused"), [(3, False), (2, True), (4, True)], ids=["same", "lost", "added"]
)
def test_the_folder_must_hold_the_files_it_held_when_the_task_stopped(files: int, refused: bool) -> None:
    # Rows within DMS's counts either way: only the number of files tells a lost CDC file.
    arguments = _arguments(expected_rows=5, max_change_rows=9, expected_files=3)
    rows = BronzeRows(5, 4, files)
    if refused:
        message = r"holds \d bronze file\(s\) but held 3 once its DMS task"
        with pytest.raises(BronzeRowCountMismatch, match=message):
            check_bronze_rows(arguments, lambda: rows)
    else:
        check_bronze_rows(arguments, lambda: rows)
