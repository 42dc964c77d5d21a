"""Where in silver a batch's keys can be: a few closed ranges of the first key column.

Silver merge tables are written in key order (silver.py), so each data file holds a narrow band of
keys and Iceberg keeps each file's lowest and highest key. A batch of recent changes (the newest
keys, plus new ones) then lies in the last few files; Iceberg plans the classification's read of
silver (the run's only read of its rows) with those ranges and skips every other file
(icetide_glue.merge.planned_scan). A join condition alone never skips a file.

The ranges are exact, not estimated: they are cut from the batch's own distinct keys at the widest
gaps between neighbours, so every key of the batch is inside one (the ranges may never hide a
match: a hidden match would become a second row for its key). A handful of old keys among many
recent ones become ranges of their own instead of widening one range over the whole table.
Only whole-number keys get ranges (the common auto-increment case, where recency means locality);
for any other type, and for batches too large to sort cheaply on the driver's side, there are no
ranges and every file of silver is read.
"""

from __future__ import annotations

import heapq
from collections.abc import Sequence
from itertools import pairwise
from typing import Any

import numpy as np
from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F

from icetide_glue.changes.normalize import column, is_whole_number_type

# More ranges skip more files; Iceberg tests each file's (and row group's) key bounds against them
# while it plans and reads, never each row (icetide_glue.merge.planned_scan), so a few dozen is cheap.
MAX_KEY_RANGES = 32
_INT64_MIN, _INT64_MAX = -(2**63), 2**63 - 1
# Past this many keys the batch is a large share of any table it can skip files in, and its
# sorted keys (held on the driver) would cost more than the skipped files save.
MAX_KEYS_FOR_RANGES = 2_000_000

# The batch's distinct first-key values, sorted (an aggregate's column).
SORTED_KEYS = "_icetide_sorted_keys"


def batch_key_ranges(
    changes: DataFrame, key: str, key_count: int, max_ranges: int = MAX_KEY_RANGES, unique: bool = False
) -> list[tuple[int, int]]:
    """Closed ranges of ``key`` covering every value in ``changes`` ([] = no filter: read all).

    ``key_count`` bounds the number of distinct keys without counting them (the job passes the
    bronze rows it read): an empty batch needs no filter, and a huge one is not worth sorting.
    The distinct keys come to the driver as one sorted array (one small Spark job; a sorted
    window over them ran on a single task and took seconds for 200,000 keys), and the gaps are
    measured there. A merge's deduplication collects the same array in its summary instead
    (:func:`sorted_keys_aggregate`, then :func:`ranges_of_sorted_keys`), saving that job.
    """
    aggregate = sorted_keys_aggregate(changes, key, key_count, unique)
    if aggregate is None:
        return []
    row = changes.agg(aggregate).first()
    return ranges_of_sorted_keys(row[SORTED_KEYS] if row is not None else None, max_ranges)


def sorted_keys_aggregate(
    changes: DataFrame, key: str, key_count: int, unique: bool = False
) -> Column | None:
    """The aggregate that collects ``key``'s distinct values, sorted, as ``SORTED_KEYS``
    (:func:`ranges_of_sorted_keys` cuts them); None when the batch gets no ranges (``key_count``
    rows: none, or more than ``MAX_KEYS_FOR_RANGES``; or a key that is not a whole number).

    ``unique`` says no value repeats in ``changes`` (the one key column of a deduplicated batch):
    the values are then collected as a list, which hashes none of them (a set hashes every value
    to drop repeats there are none of). The first column of a longer key
    repeats, maybe a few values over the whole batch, which a set keeps small."""
    if not 0 < key_count <= MAX_KEYS_FOR_RANGES or not is_whole_number_type(changes.schema[key].dataType):
        return None
    values = column(key)
    keys = F.sort_array(F.collect_list(values) if unique else F.collect_set(values))
    # More keys than DMS's count of rows (a wrong count, which the run then refuses) send the
    # driver nothing. The tasks still collect them all, so the count must come before the read.
    return F.when(F.count(F.lit(1)) <= key_count, keys).alias(SORTED_KEYS)


def ranges_of_sorted_keys(
    sorted_keys: Sequence[Any] | np.ndarray | None, max_ranges: int = MAX_KEY_RANGES
) -> list[tuple[int, int]]:
    """At most ``max_ranges`` closed ranges covering every one of ``sorted_keys`` (ascending,
    distinct), cut at the widest gaps between neighbours (of equal ones, the one ending at the
    lower key); [] for no keys.

    The gaps are measured and ranked with numpy when the keys fit in 64 bits (a Python loop over
    a batch's keys is a visible share of a run merged on the driver); wider keys (a ``decimal(38,0)``) are
    ranked the same way over Python's integers."""
    if max_ranges < 1:
        raise ValueError(f"at least one key range is needed, got {max_ranges}")
    if sorted_keys is None or len(sorted_keys) == 0:
        return []
    low, high = int(sorted_keys[0]), int(sorted_keys[-1])
    if low >= _INT64_MIN and high <= _INT64_MAX and high - low <= _INT64_MAX:
        ordered = np.asarray(sorted_keys, dtype=np.int64)
        widths = np.diff(ordered)
        # Widest first, then the lower gap: lexsort's last key is its first.
        widest = np.lexsort((np.arange(len(widths)), -widths))[: max_ranges - 1]
        cuts = [(int(ordered[i]), int(ordered[i + 1])) for i in widest if widths[i] > 1]
        return _ranges(low, high, cuts)
    keys = [int(value) for value in sorted_keys]
    gaps = [after - before for before, after in pairwise(keys)]
    # Gap i lies between keys[i] and keys[i + 1]; the widest first, then the lower one.
    chosen = heapq.nlargest(max_ranges - 1, range(len(gaps)), key=lambda i: (gaps[i], -i))
    return _ranges(low, high, [(keys[i], keys[i + 1]) for i in chosen if gaps[i] > 1])


def _ranges(low: int, high: int, cuts: list[tuple[int, int]]) -> list[tuple[int, int]]:
    """[low, high] split at each cut (the keys on either side of a gap), in key order."""
    ranges = []
    start = low
    for before, after in sorted(cuts):
        ranges.append((start, before))
        start = after
    ranges.append((start, high))
    return ranges
