"""One pass over a run's changes before anything is written: what was read, and can it be applied?

Every check runs before the silver table is created or altered, so a batch that cannot be
applied leaves silver exactly as it was. It is also the first action on the bronze rows: a file
whose pages Spark cannot decode fails here, as :class:`UnreadableBronzeFile` naming the file.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from functools import reduce
from typing import Any

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F
from pyspark.sql.types import MapType

from icetide_contracts.watermark_text import WatermarkJson
from icetide_glue.arguments import DEFAULT_CHANGE_SEQUENCE_COLUMN
from icetide_glue.bronze import translate_unreadable_file
from icetide_glue.changes import column
from icetide_glue.columns import CHANGE_SEQ, CHANGE_TS, DELETE, INSERT, OP, UPDATE
from icetide_glue.errors import InvalidChangeData
from icetide_glue.key_ranges import SORTED_KEYS
from icetide_glue.watermark import check_watermark_type, watermark_aggregate, watermark_json

# How many offending values an error message quotes.
_SAMPLE_SIZE = 5
# What the change sequence must be once normalised: digits (DMS's AR_H_CHANGE_SEQ string, or a
# whole number padded to one width), compared as text. A blank one sorts like a missing one.
_SEQUENCE_DIGITS = r"^[0-9]*$"


@dataclass(frozen=True)
class BatchSummary:
    """What a run read: its row count and the largest watermark-column value (None if no column);
    with ``sorted_keys`` asked for, the batch's distinct first-key values too (None: not asked)."""

    rows_read: int
    new_watermark: WatermarkJson
    sorted_keys: Sequence[Any] | None = None


def _any_null(keys: Sequence[str]) -> Column:
    return reduce(lambda left, right: left | right, [column(key).isNull() for key in keys])


def inspect_batch(
    changes: DataFrame,
    keys: Sequence[str],
    watermark_column: str | None,
    timestamp_column: str,
    change_sequence_column: str = DEFAULT_CHANGE_SEQUENCE_COLUMN,
    sorted_keys: Column | None = None,
) -> BatchSummary:
    """Count the rows, find the new watermark, and reject rows that cannot be ordered or applied.

    ``changes`` is the output of :func:`icetide_glue.changes.normalize_changes`; ``keys`` and
    ``watermark_column`` are spelled as in its columns. A sequence that is not digits would sort
    as text against every later sequence of the key ("9" after "10"), so it is refused too.
    ``sorted_keys`` (:func:`icetide_glue.key_ranges.sorted_keys_aggregate`) is computed in the
    same pass, which saves the key ranges a Spark job of their own.
    """
    unknown_op = ~F.col(OP).isin(INSERT, UPDATE, DELETE)
    bad_sequence = F.col(CHANGE_SEQ).isNotNull() & ~F.col(CHANGE_SEQ).rlike(_SEQUENCE_DIGITS)
    aggregates = [
        F.count(F.lit(1)).alias("rows"),
        F.count_if(unknown_op).alias("unknown_ops"),
        F.count_if(F.col(CHANGE_TS).isNull()).alias("unreadable_times"),
        F.count_if(bad_sequence).alias("bad_sequences"),
        (F.count_if(_any_null(keys)) if keys else F.lit(0)).alias("null_keys"),
        _every_value(changes).alias("every_value"),
    ]
    watermark_type = None
    if watermark_column is not None:
        watermark_type = changes.schema[watermark_column].dataType
        check_watermark_type(watermark_column, watermark_type)
        aggregates.append(watermark_aggregate(column(watermark_column), watermark_type).alias("watermark"))
    if sorted_keys is not None:
        aggregates.append(sorted_keys)
    with translate_unreadable_file():
        totals = changes.agg(*aggregates).first()
    assert totals is not None  # a global aggregate always returns one row

    problems = []
    if totals["unknown_ops"]:
        examples = _examples(changes, unknown_op, OP)
        problems.append(f"{totals['unknown_ops']} row(s) have an Op other than I, U or D (e.g. {examples})")
    if totals["unreadable_times"]:
        problems.append(
            f"{totals['unreadable_times']} row(s) have a {timestamp_column} that is not a "
            "'yyyy-MM-dd HH:mm:ss[.SSSSSS]' time, so their changes cannot be ordered"
        )
    if totals["bad_sequences"]:
        examples = _examples(changes, bad_sequence, CHANGE_SEQ)
        problems.append(
            f"{totals['bad_sequences']} row(s) have a {change_sequence_column} that is not a string of "
            f"digits (e.g. {examples}), so their changes cannot be ordered"
        )
    if totals["null_keys"]:
        problems.append(f"{totals['null_keys']} row(s) have a null primary key ({', '.join(keys)})")
    if problems:
        raise InvalidChangeData("the bronze batch cannot be applied: " + "; ".join(problems))

    new_watermark = (
        watermark_json(totals["watermark"], watermark_type) if watermark_type is not None else None
    )
    return BatchSummary(
        rows_read=int(totals["rows"]),
        new_watermark=new_watermark,
        sorted_keys=totals[SORTED_KEYS] if sorted_keys is not None else None,
    )


def _every_value(changes: DataFrame) -> Column:
    """An aggregate of every column's values (a hash), so that the check decodes every page of the
    batch: a merge does not cache it, and a page Spark cannot decode must fail here, before any
    DDL, not in the deduplication after it (maps cannot be hashed; DMS writes none)."""
    hashable = [
        column(field.name) for field in changes.schema.fields if not isinstance(field.dataType, MapType)
    ]
    return F.max(F.xxhash64(*hashable)) if hashable else F.lit(0)


def _examples(changes: DataFrame, condition: Column, name: str) -> str:
    """A few distinct offending values, quoted, for an error message."""
    rows = changes.where(condition).select(name).distinct().limit(_SAMPLE_SIZE).collect()
    return ", ".join(repr(row[0]) for row in rows)
