"""The key ranges silver is read in: every batch key inside one, split at the widest gaps.

Checked against a small independent oracle on seeded random key sets: the ranges the job filters
silver with may never leave a batch key out (that key's silver row would go unmatched and be
inserted a second time), and they should cover as few keys as the allowed number of ranges can.
"""

from __future__ import annotations

import random
from itertools import pairwise

import pytest
from pyspark.sql import SparkSession

from icetide_glue.key_ranges import MAX_KEYS_FOR_RANGES, batch_key_ranges


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


@pytest.mark.parametrize("seed", range(6))
def test_ranges_cover_every_key_and_cut_at_the_widest_gaps(spark: SparkSession, seed: int) -> None:
    rng = random.Random(seed)
    # Recent keys in a dense band, a few old ones scattered, sometimes negative or beyond 2**62.
    base = rng.choice([0, -(10**6), 2**62])
    keys = {base + rng.randrange(10**6 - 500, 10**6) for _ in range(rng.randrange(1, 300))}
    keys |= {base + rng.randrange(0, 10**6) for _ in range(rng.randrange(0, 8))}
    max_ranges = rng.choice([1, 2, 4, 32])
    frame = spark.createDataFrame([(key, "v") for key in keys], "id bigint, note string")

    ranges = batch_key_ranges(frame, "id", len(keys), max_ranges=max_ranges)

    assert ranges == widest_gap_ranges(keys, max_ranges)
    assert all(any(low <= key <= high for low, high in ranges) for key in keys)


def test_an_int_key_and_a_whole_decimal_key_get_ranges(spark: SparkSession) -> None:
    ints = spark.createDataFrame([(1,), (2,), (3,), (90,)], "k int")
    assert batch_key_ranges(ints, "k", 4, max_ranges=2) == [(1, 3), (90, 90)]
    decimals = spark.createDataFrame([(5,), (6,)], "k int").selectExpr("CAST(k AS DECIMAL(20, 0)) AS k")
    assert batch_key_ranges(decimals, "k", 2) == [(5, 6)]


def test_no_ranges_where_they_cannot_be_exact_or_would_not_pay(spark: SparkSession) -> None:
    strings = spark.createDataFrame([("a",), ("b",)], "k string")
    assert batch_key_ranges(strings, "k", 2) == []
    fractions = spark.createDataFrame([(1.5,)], "k double")
    assert batch_key_ranges(fractions, "k", 1) == []
    ints = spark.createDataFrame([(1,)], "k int")
    assert batch_key_ranges(ints, "k", 0) == []
    assert batch_key_ranges(ints, "k", MAX_KEYS_FOR_RANGES + 1) == []
