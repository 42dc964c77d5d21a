"""Where in silver a batch's keys can be: a few closed ranges of the first key column.

Silver merge tables are written in key order (silver.py), so each data file holds a narrow band of
keys and Iceberg keeps each file's lowest and highest key. A batch of recent changes (the newest
keys, plus new ones) then lies in the last few files; a filter on those ranges lets Iceberg skip
every other file, in the classification's read of silver and in the MERGE's. A join condition
alone never skips a file.

The ranges are exact, not estimated: they are cut from the batch's own distinct keys at the widest
gaps between neighbours, so every key of the batch is inside one (the filter may never hide a
match: a hidden match would become a second row for its key). A handful of old keys among many
recent ones become ranges of their own instead of widening one range over the whole table.
Only whole-number keys get ranges (the common auto-increment case, where recency means locality);
for any other type, and for batches too large to sort cheaply on the driver's side, there is no
filter and silver is read as before.
"""

from __future__ import annotations

from pyspark.sql import DataFrame, Window
from pyspark.sql import functions as F
from pyspark.sql.types import DecimalType

from icetide_glue.changes import column, is_whole_number_type

# More ranges skip more files, but every scanned row is tested against each: a few dozen is cheap.
MAX_KEY_RANGES = 32
# Past this many distinct keys the batch is a large share of any table it can skip files in:
# finding its gaps (one sorted pass on one task) would cost more than it saves.
MAX_KEYS_FOR_RANGES = 2_000_000

_PREVIOUS = "_icetide_previous_key"
_GAP = "_icetide_key_gap"
_KEY = "_icetide_key"
_NEXT = "_icetide_next_key"
_IS_CUT = "_icetide_gap_is_cut"


def batch_key_ranges(
    changes: DataFrame, key: str, key_count: int, max_ranges: int = MAX_KEY_RANGES
) -> list[tuple[int, int]]:
    """Closed ranges of ``key`` covering every value in ``changes`` ([] = no filter: read all).

    ``key_count`` bounds the number of distinct keys without counting them (the job passes the
    bronze rows it read): an empty batch needs no filter, and a huge one is not worth sorting.
    """
    if not 0 < key_count <= MAX_KEYS_FOR_RANGES or not is_whole_number_type(changes.schema[key].dataType):
        return []
    # Differences as decimals: a bigint difference could overflow.
    keys = changes.select(column(key).cast(DecimalType(38, 0)).alias(_KEY)).distinct()
    in_order = Window.orderBy(_KEY)
    with_gaps = keys.select(
        F.col(_KEY),
        F.lag(_KEY).over(in_order).alias(_PREVIOUS),
        F.lead(_KEY).over(in_order).alias(_NEXT),
    ).withColumn(_GAP, F.col(_KEY) - F.col(_PREVIOUS))
    widest_first = Window.orderBy(F.col(_GAP).desc_nulls_last(), F.col(_KEY))
    is_cut = (F.row_number().over(widest_first) < max_ranges) & (F.col(_GAP) > 1)
    ranked = with_gaps.withColumn(_IS_CUT, F.coalesce(is_cut, F.lit(False)))
    # One pass: the lowest key, the highest, and the keys after the widest gaps.
    rows = ranked.where(F.col(_PREVIOUS).isNull() | F.col(_NEXT).isNull() | F.col(_IS_CUT)).collect()
    low = next(int(row[_KEY]) for row in rows if row[_PREVIOUS] is None)
    high = next(int(row[_KEY]) for row in rows if row[_NEXT] is None)
    cuts = [(int(row[_PREVIOUS]), int(row[_KEY])) for row in rows if row[_IS_CUT]]
    return _ranges(low, high, cuts)


def _ranges(low: int, high: int, cuts: list[tuple[int, int]]) -> list[tuple[int, int]]:
    """[low, high] split at each cut (the keys on either side of a gap), in key order."""
    ranges = []
    start = low
    for before, after in sorted(cuts):
        ranges.append((start, before))
        start = after
    ranges.append((start, high))
    return ranges
