"""What the row count check compares (icetide_glue.row_count), without Spark: a seeded random
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
from icetide_glue.errors import BronzeRowCountMismatch
from icetide_glue.row_count import BronzeRows, check_bronze_rows, is_full_load_file

RUNS = 2000


@dataclass(frozen=True)
class DmsRun:
    """A healthy run: the rows DMS wrote, and the changes it counted (at least those written: a
    filter, CdcInsertsOnly, ... leave counted changes out of the files)."""

    full_load_rows: int
    change_rows: int
    counted_changes: int


def _refused(run: DmsRun, rows: BronzeRows) -> bool:
    arguments = JobArguments(
        target_table="silver.orders",
        run_id="orders-1",
        bronze_uri="s3://raw/bronze/orders/orders-1/",
        primary_keys=("id",),
        expected_rows=run.full_load_rows,
        max_change_rows=run.counted_changes,
    )
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
        assert not _refused(run, BronzeRows(run.full_load_rows, run.change_rows)), run
        stray = rng.randint(1, 30)
        # A stray or a missing full-load file: always refused.
        assert _refused(run, BronzeRows(run.full_load_rows + stray, run.change_rows)), run
        if run.full_load_rows:
            lost = rng.randint(1, run.full_load_rows)
            assert _refused(run, BronzeRows(run.full_load_rows - lost, run.change_rows)), run
            caught["LOAD"] += 1
        # A stray CDC file: refused exactly when it takes the rows past the changes DMS counted.
        beyond = run.change_rows + stray > run.counted_changes
        assert _refused(run, BronzeRows(run.full_load_rows, run.change_rows + stray)) is beyond, run
        caught["CDC"] += beyond
    # The generator made both kinds of case often (the asserts above are not vacuous).
    assert min(caught.values()) > RUNS // 4, caught


def test_without_dms_s_counts_nothing_is_counted_or_refused() -> None:
    arguments = JobArguments(
        target_table="silver.orders", run_id="orders-1", bronze_uri="b", primary_keys=("id",)
    )

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
