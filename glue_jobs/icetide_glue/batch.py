"""One pass over a run's changes before anything is written: what was read, and can it be applied?

Every check runs before the silver table is created or altered, so a batch that cannot be
applied leaves silver exactly as it was.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from functools import reduce

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F

from icetide_glue.changes import column
from icetide_glue.columns import CHANGE_TS, DELETE, INSERT, OP, UPDATE
from icetide_glue.errors import InvalidChangeData
from icetide_glue.watermark import WatermarkValue, check_watermark_type, watermark_aggregate, watermark_json

# How many offending values an error message quotes.
_SAMPLE_SIZE = 5


@dataclass(frozen=True)
class BatchSummary:
    """What a run read: its row count and the largest watermark-column value (None if no column)."""

    rows_read: int
    new_watermark: WatermarkValue


def _any_null(keys: Sequence[str]) -> Column:
    return reduce(lambda left, right: left | right, [column(key).isNull() for key in keys])


def inspect_batch(
    changes: DataFrame, keys: Sequence[str], watermark_column: str | None, timestamp_column: str
) -> BatchSummary:
    """Count the rows, find the new watermark, and reject rows that cannot be ordered or applied.

    ``changes`` is the output of :func:`icetide_glue.changes.normalize_changes`; ``keys`` and
    ``watermark_column`` are spelled as in its columns.
    """
    unknown_op = ~F.col(OP).isin(INSERT, UPDATE, DELETE)
    aggregates = [
        F.count(F.lit(1)).alias("rows"),
        F.count_if(unknown_op).alias("unknown_ops"),
        F.count_if(F.col(CHANGE_TS).isNull()).alias("unreadable_times"),
        (F.count_if(_any_null(keys)) if keys else F.lit(0)).alias("null_keys"),
    ]
    watermark_type = None
    if watermark_column is not None:
        watermark_type = changes.schema[watermark_column].dataType
        check_watermark_type(watermark_column, watermark_type)
        aggregates.append(watermark_aggregate(column(watermark_column), watermark_type).alias("watermark"))
    totals = changes.agg(*aggregates).first()
    assert totals is not None  # a global aggregate always returns one row

    problems = []
    if totals["unknown_ops"]:
        values = [
            row[0] for row in changes.where(unknown_op).select(OP).distinct().limit(_SAMPLE_SIZE).collect()
        ]
        examples = ", ".join(map(repr, values))
        problems.append(f"{totals['unknown_ops']} row(s) have an Op other than I, U or D (e.g. {examples})")
    if totals["unreadable_times"]:
        problems.append(
            f"{totals['unreadable_times']} row(s) have a {timestamp_column} that is not a "
            "'yyyy-MM-dd HH:mm:ss[.SSSSSS]' time, so their changes cannot be ordered"
        )
    if totals["null_keys"]:
        problems.append(f"{totals['null_keys']} row(s) have a null primary key ({', '.join(keys)})")
    if problems:
        raise InvalidChangeData("the bronze batch cannot be applied: " + "; ".join(problems))

    new_watermark = (
        watermark_json(totals["watermark"], watermark_type) if watermark_type is not None else None
    )
    return BatchSummary(rows_read=int(totals["rows"]), new_watermark=new_watermark)
