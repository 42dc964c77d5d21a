"""The key ranges silver is read in: every batch key inside one, split at the widest gaps.

Checked against a small independent oracle on seeded random key sets: the ranges the job filters
silver with may never leave a batch key out (that key's silver row would go unmatched and be
inserted a second time), and they should cover as few keys as the allowed number of ranges can.
"""

from __future__ import annotations

import random
from itertools import pairwise
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from pyspark.sql import SparkSession

import icetide_glue.job as job_module
from glue.dms_files import write_dms_file
from glue.silver_tables import LoadedTable, load_into_silver, silver_table
from icetide_glue.changes.key_ranges import (
    MAX_KEY_RANGES,
    MAX_KEYS_FOR_RANGES,
    SORTED_KEYS,
    batch_key_ranges,
    ranges_of_sorted_keys,
    sorted_keys_aggregate,
)
from seeds import EachSeed

BRONZE = pa.schema(
    [("Op", pa.string()), ("dms_timestamp", pa.string()), ("id", pa.int64()), ("v", pa.int64())]
)


def widest_gap_ranges(keys: set[int], max_ranges: int) -> list[tuple[int, int]]:
    """The oracle: sort, cut at the max_ranges - 1 widest gaps (ties: the lower key first)."""
    ordered = sorted(keys)
    gaps = sorted(
        ((after - before, before, after) for before, after in pairwise(ordered)),
        key=lambda gap: (-gap[0], gap[2]),
    )
    cuts = sorted((before, after) for width, before, after in gaps[: max_ranges - 1] if width > 1)
    ranges, start = [], ordered[0]
    for before, after in cuts:
        ranges.append((start, before))
        start = after
    return [*ranges, (start, ordered[-1])]


@pytest.mark.spark
def test_ranges_cover_every_key_and_cut_at_the_widest_gaps(
    spark: SparkSession,
    each_seed: EachSeed,
) -> None:
    def check(seed: int) -> None:
        _ranges_cover_every_key_and_cut_at_the_widest_gaps(seed=seed, spark=spark)

    each_seed(range(6), check)


def _ranges_cover_every_key_and_cut_at_the_widest_gaps(
    spark: SparkSession,
    seed: int,
) -> None:
    rng = random.Random(seed)
    # Recent keys in a dense band, a few old ones scattered, sometimes negative or beyond 2**62.
    base = rng.choice([0, -(10**6), 2**62])
    keys = {base + rng.randrange(10**6 - 500, 10**6) for _ in range(rng.randrange(1, 300))}
    keys |= {base + rng.randrange(0, 10**6) for _ in range(rng.randrange(0, 8))}
    max_ranges = rng.choice([1, 2, 4, 32])
    frame = spark.createDataFrame([(key, "v") for key in keys], "id bigint, note string")

    ranges = batch_key_ranges(frame, "id", len(keys), max_ranges=max_ranges, unique=True)

    assert ranges == widest_gap_ranges(keys, max_ranges)
    assert all(any(low <= key <= high for low, high in ranges) for key in keys)


def test_ranges_of_many_keys_near_and_beyond_64_bits_match_the_oracle(
    each_seed: EachSeed,
) -> None:
    """Both ways of ranking the gaps (numpy's for keys that fit in 64 bits, Python's beyond: a
    decimal(38,0) key), many keys and many equal gaps (ties), as the driver's batches bring them."""

    def check(seed: int) -> None:
        _ranges_of_many_keys_near_and_beyond_64_bits_match_the_oracle(seed=seed)

    each_seed(range(20), check)


def _ranges_of_many_keys_near_and_beyond_64_bits_match_the_oracle(
    seed: int,
) -> None:
    rng = random.Random(seed)
    base = rng.choice([0, -(2**63), 2**63 - 2 * 10**5, 10**30, -(10**37)])
    step = rng.choice([1, 2, 3])
    keys = {base + step * rng.randrange(0, 10**5) for _ in range(rng.randrange(1, 5000))}
    keys |= {base + rng.randrange(0, 2 * 10**5) for _ in range(rng.randrange(0, 40))}
    max_ranges = rng.choice([1, 2, 5, 32])

    assert ranges_of_sorted_keys(sorted(keys), max_ranges) == widest_gap_ranges(keys, max_ranges)


@pytest.mark.spark
def test_the_first_column_of_a_longer_key_repeats_and_gets_the_same_ranges(
    spark: SparkSession,
    each_seed: EachSeed,
) -> None:
    def check(seed: int) -> None:
        _the_first_column_of_a_longer_key_repeats_and_gets_the_same_ranges(seed=seed, spark=spark)

    each_seed(range(3), check)


def _the_first_column_of_a_longer_key_repeats_and_gets_the_same_ranges(
    spark: SparkSession,
    seed: int,
) -> None:
    rng = random.Random(seed)
    keys = {rng.randrange(0, 10**6) for _ in range(rng.randrange(1, 200))}
    # Each first-column value with one to three second-column values, as a deduplicated batch of
    # a two-column key holds them.
    rows = [(key, second) for key in keys for second in range(rng.randrange(1, 4))]
    frame = spark.createDataFrame(rows, "id bigint, part bigint")
    max_ranges = rng.choice([2, 4, 32])

    ranges = batch_key_ranges(frame, "id", len(rows), max_ranges=max_ranges)

    assert ranges == widest_gap_ranges(keys, max_ranges)
    assert all(any(low <= key <= high for low, high in ranges) for key in keys)
    # Collected as a set: the driver gets each first-column value once, however often it repeats.
    aggregate = sorted_keys_aggregate(frame, "id", len(rows))
    assert aggregate is not None
    collected = frame.agg(aggregate).first()
    assert collected is not None  # a global aggregate always returns one row
    assert collected[SORTED_KEYS] == sorted(keys)


def test_no_range_at_all_is_refused() -> None:
    with pytest.raises(ValueError, match="at least one key range"):
        ranges_of_sorted_keys([1, 5], max_ranges=0)


@pytest.mark.spark
def test_an_int_key_and_a_whole_decimal_key_get_ranges(spark: SparkSession) -> None:
    ints = spark.createDataFrame([(1,), (2,), (3,), (90,)], "k int")
    assert batch_key_ranges(ints, "k", 4, max_ranges=2) == [(1, 3), (90, 90)]
    decimals = spark.createDataFrame([(5,), (6,)], "k int").selectExpr("CAST(k AS DECIMAL(20, 0)) AS k")
    assert batch_key_ranges(decimals, "k", 2) == [(5, 6)]


@pytest.mark.spark
def test_no_ranges_where_they_cannot_be_exact_or_would_not_pay(spark: SparkSession) -> None:
    strings = spark.createDataFrame([("a",), ("b",)], "k string")
    assert batch_key_ranges(strings, "k", 2) == []
    fractions = spark.createDataFrame([(1.5,)], "k double")
    assert batch_key_ranges(fractions, "k", 1) == []
    ints = spark.createDataFrame([(1,)], "k int")
    assert batch_key_ranges(ints, "k", 0) == []
    assert batch_key_ranges(ints, "k", MAX_KEYS_FOR_RANGES + 1) == []


@pytest.mark.spark
def test_a_run_with_dms_s_row_count_takes_its_key_ranges_from_the_batch_check(
    spark: SparkSession, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """With ``--expected_rows`` the check's own pass collects the keys: no job of their own, and
    the classification gets the oracle's ranges of the batch's keys (old keys cut off as ranges of
    their own). Without it, the separate job still gives the same ranges."""
    rng = random.Random(77)
    silver_keys = list(range(1, 2001))
    batch_keys = {*rng.sample(silver_keys[-200:], 60), *rng.sample(silver_keys[:100], 3), 2001, 2002}
    first_load = [("I", "2026-11-21 06:00:00", k, k) for k in silver_keys]
    write_dms_file(tmp_path / "first", "LOAD00000001.parquet", BRONZE, first_load)
    rows = [("U" if k <= 2000 else "I", "2026-11-21 07:00:00", k, -k) for k in sorted(batch_keys)]
    write_dms_file(tmp_path / "second", "20261121-070000000.parquet", BRONZE, rows)
    seen: list[list[tuple[int, int]]] = []
    real_classify = job_module.classify_changes

    def classify(*args: Any, **kwargs: Any) -> Any:
        seen.append(list(kwargs["key_ranges"]))
        return real_classify(*args, **kwargs)

    loaded = LoadedTable.load(spark, "ranges", tmp_path / "first")
    monkeypatch.setattr(job_module, "classify_changes", classify)
    for counted in (False, True):
        table = loaded.restore()
        if counted:
            monkeypatch.setattr(job_module, "batch_key_ranges", _no_separate_job)
        # The Spark path's classification (a small batch would be merged on the driver).
        manifest = load_into_silver(
            spark,
            table,
            "second-counted" if counted else "second",
            tmp_path / "second",
            # DMS's counts: no full-load row, len(rows) changes, which bound the batch's keys.
            expected_rows=0 if counted else None,
            max_change_rows=len(rows) if counted else None,
            merge_plan="spark",
        )
        assert (manifest["rowsUpdated"], manifest["rowsInserted"]) == (63, 2)
        assert spark.table(silver_table(table)).where("v < 0").count() == 65
    assert seen[0] == seen[1] == widest_gap_ranges(batch_keys, MAX_KEY_RANGES)


def _no_separate_job(*args: Any, **kwargs: Any) -> list[tuple[int, int]]:
    raise AssertionError("the key ranges ran a job of their own although the batch check had the keys")
