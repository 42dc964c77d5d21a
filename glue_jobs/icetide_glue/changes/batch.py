"""One pass over a run's changes before anything is written: what was read, and can it be applied?

Every check runs before the silver table is created or altered, so a batch that cannot be
applied leaves silver exactly as it was. It is also the first action on the bronze rows: a file
whose pages Spark cannot decode fails here, as :class:`UnreadableBronzeFile` naming the file.

A merge's pass is its deduplication (:func:`deduplicate_batch`): each key's tallies of the checks
ride along with its latest change, which is kept, so the bronze files are read once. An append
checks its rows as they are (:func:`inspect_batch`).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from functools import reduce

from pyspark.sql import Column, DataFrame, Row
from pyspark.sql import functions as F
from pyspark.sql.types import DataType, MapType, TimestampType

from icetide_contracts.watermark_text import WatermarkJson, format_epoch_micros
from icetide_glue.arguments import DEFAULT_CHANGE_SEQUENCE_COLUMN
from icetide_glue.bronze.read import file_rank, translate_unreadable_file
from icetide_glue.changes.key_ranges import SORTED_KEYS, ranges_of_sorted_keys, sorted_keys_aggregate
from icetide_glue.changes.normalize import column, keep_latest_image, latest_change_per_key, whole_key_window
from icetide_glue.changes.watermark import check_watermark_type, watermark_aggregate, watermark_json
from icetide_glue.columns import (
    CDC_PHASE,
    CHANGE_PHASE,
    CHANGE_SEQ,
    CHANGE_TS,
    DELETE,
    FILE_RANK,
    INSERT,
    OP,
    RESERVED_PREFIX,
    ROW_INDEX,
    UPDATE,
)
from icetide_glue.errors import InvalidChangeData

# How many offending values an error message quotes.
_SAMPLE_SIZE = 5
# What the change sequence must be once normalised: digits (DMS's AR_H_CHANGE_SEQ string, or a
# whole number padded to one width), compared as text. A blank one sorts like a missing one.
_SEQUENCE_DIGITS = r"^[0-9]*$"
# The deduplicated batch's working columns: each key's rows, rows failing a check, and largest
# watermark value.
_TALLY_PREFIX = f"{RESERVED_PREFIX}tally_"
_ROWS, _FAILING, _WATERMARK, _FULL_LOAD = "rows", "failing", "watermark", "full_load"
_NEWEST_CHANGE = "newest_change"


@dataclass(frozen=True)
class BatchSummary:
    """What a run read: its row count and the largest watermark-column value (None if no column);
    with key ranges asked for, the closed ranges of the first key that hold every key (None: not
    asked, or not whole numbers, or too many; icetide_glue.changes.key_ranges). ``full_load_rows``: how
    many of the rows came from full-load files (icetide_glue.changes.row_count compares them with DMS's).
    ``newest_change_time``: the manifest's ``newestChangeTime``, the latest change time among the
    CDC-phase rows (None: none), spelt as a timestamp watermark."""

    rows_read: int
    new_watermark: WatermarkJson
    key_ranges: list[tuple[int, int]] | None = None
    full_load_rows: int = 0
    newest_change_time: str | None = None


@dataclass(frozen=True)
class DeduplicatedBatch:
    """A merge's batch, checked: its latest change per key (computed once and kept, with working
    columns ``align_to_silver`` leaves out) and what the check found."""

    latest: DataFrame
    summary: BatchSummary


def full_load_row() -> Column:
    """True for a bronze row read from a full-load file: its file rank starts as every LOAD file's
    rank starts (icetide_glue.bronze.read.file_rank)."""
    return F.col(FILE_RANK).startswith(F.substring(file_rank(F.lit("LOAD00000001.parquet")), 1, 1))


def cdc_change_time() -> Column:
    """A row's change time when it came from a CDC file (the source's commit time), else null: a
    full-load row's time is when DMS transferred it, on the replication instance's clock."""
    return F.when(F.col(CHANGE_PHASE) == F.lit(CDC_PHASE), F.col(CHANGE_TS))


def _either(conditions: Iterable[Column]) -> Column:
    """True when any of ``conditions`` is (at least one must be given)."""
    return reduce(lambda left, right: left | right, conditions)


def _row_checks(keys: Sequence[str]) -> dict[str, Column]:
    """Each check, as a condition on one row that is true when the row fails it."""
    return {
        "unknown_ops": ~F.col(OP).isin(INSERT, UPDATE, DELETE),
        "unreadable_times": F.col(CHANGE_TS).isNull(),
        "bad_sequences": F.col(CHANGE_SEQ).isNotNull() & ~F.col(CHANGE_SEQ).rlike(_SEQUENCE_DIGITS),
        "null_keys": _either(column(key).isNull() for key in keys) if keys else F.lit(False),
    }


def inspect_batch(
    changes: DataFrame,
    keys: Sequence[str],
    watermark_column: str | None,
    timestamp_column: str,
    change_sequence_column: str = DEFAULT_CHANGE_SEQUENCE_COLUMN,
) -> BatchSummary:
    """Count the rows, find the new watermark, and reject rows that cannot be ordered or applied.

    ``changes`` is the output of :func:`icetide_glue.changes.normalize.normalize_changes`; ``keys`` and
    ``watermark_column`` are spelled as in its columns. A sequence that is not digits would sort
    as text against every later sequence of the key ("9" after "10"), so it is refused too.
    """
    watermark_type = _watermark_type(changes, watermark_column)
    aggregates = [
        F.count(F.lit(1)).alias(_ROWS),
        F.count_if(full_load_row()).alias(_FULL_LOAD),
        *[F.count_if(failed).alias(name) for name, failed in _row_checks(keys).items()],
        _every_value(changes).alias("every_value"),
        watermark_aggregate(cdc_change_time(), TimestampType()).alias(_NEWEST_CHANGE),
    ]
    if watermark_column is not None and watermark_type is not None:  # (both, for mypy)
        aggregates.append(watermark_aggregate(column(watermark_column), watermark_type).alias(_WATERMARK))
    with translate_unreadable_file():
        totals = changes.agg(*aggregates).first()
    assert totals is not None  # a global aggregate always returns one row
    return _summary(changes, keys, totals, watermark_type, timestamp_column, change_sequence_column)


def deduplicate_batch(
    changes: DataFrame,
    keys: Sequence[str],
    watermark_column: str | None,
    timestamp_column: str,
    change_sequence_column: str = DEFAULT_CHANGE_SEQUENCE_COLUMN,
    range_key_count: int | None = None,
) -> DeduplicatedBatch:
    """A merge's batch reduced to its latest change per key (:func:`keep_latest_image`, then
    :func:`latest_change_per_key`) and checked as :func:`inspect_batch` checks, in ONE read of the
    bronze files: each key's rows, rows failing a check and largest watermark value ride in the
    deduplication's window, and the summary adds them up from the kept result (a batch with a
    failing row is read again by :func:`inspect_batch`, for the error that names them).

    The deduplication decodes every column of every row (the latest rows keep them all), so a page
    Spark cannot decode fails here, before any DDL. With ``range_key_count`` (DMS's row count,
    which bounds the keys before they are read) the summary carries the first key's ranges too.
    A batch the check refuses pays for the deduplication first (a shuffle and sort of its rows,
    rows with a null key in one task): refusals are rare, every accepted run reads once less.
    """
    watermark_type = _watermark_type(changes, watermark_column)
    window = whole_key_window(keys)
    failing = _either(_row_checks(keys).values())
    tallies = {
        _ROWS: F.count(F.lit(1)).over(window),
        _FAILING: F.count_if(failing).over(window),
        _FULL_LOAD: F.count_if(full_load_row()).over(window),
        _NEWEST_CHANGE: F.max(cdc_change_time()).over(window),
    }
    if watermark_column is not None:
        tallies[_WATERMARK] = F.max(column(watermark_column)).over(window)
    tallied = changes.withColumns({_TALLY_PREFIX + name: value for name, value in tallies.items()})
    # The file rank and row index only order a key's changes: the kept result need not hold them.
    deduplicated = latest_change_per_key(keep_latest_image(tallied, keys), keys).drop(FILE_RANK, ROW_INDEX)
    with translate_unreadable_file():
        latest = deduplicated.localCheckpoint(eager=True)
    aggregates = [
        F.coalesce(F.sum(_TALLY_PREFIX + name), F.lit(0)).alias(name)
        for name in (_ROWS, _FAILING, _FULL_LOAD)
    ]
    aggregates.append(
        watermark_aggregate(F.col(_TALLY_PREFIX + _NEWEST_CHANGE), TimestampType()).alias(_NEWEST_CHANGE)
    )
    if watermark_type is not None:
        largest = watermark_aggregate(F.col(_TALLY_PREFIX + _WATERMARK), watermark_type)
        aggregates.append(largest.alias(_WATERMARK))
    gaps = (
        sorted_keys_aggregate(latest, keys[0], range_key_count, unique=len(keys) == 1)
        if range_key_count is not None
        else None
    )
    if gaps is not None:
        aggregates.append(gaps)
    totals = latest.agg(*aggregates).first()
    assert totals is not None  # a global aggregate always returns one row
    if totals[_FAILING]:
        inspect_batch(changes, keys, watermark_column, timestamp_column, change_sequence_column)
        raise InvalidChangeData(
            f"the bronze batch cannot be applied: {totals[_FAILING]} row(s) failed a check on the first "
            "read and none on the second: its files changed while the run read them"
        )
    summary = BatchSummary(
        rows_read=int(totals[_ROWS]),
        new_watermark=_new_watermark(totals, watermark_type),
        key_ranges=ranges_of_sorted_keys(totals[SORTED_KEYS]) if gaps is not None else None,
        full_load_rows=int(totals[_FULL_LOAD]),
        newest_change_time=_newest_change_time(totals),
    )
    return DeduplicatedBatch(latest, summary)


def _watermark_type(changes: DataFrame, watermark_column: str | None) -> DataType | None:
    if watermark_column is None:
        return None
    watermark_type = changes.schema[watermark_column].dataType
    check_watermark_type(watermark_column, watermark_type)
    return watermark_type


def _summary(
    changes: DataFrame,
    keys: Sequence[str],
    totals: Row,
    watermark_type: DataType | None,
    timestamp_column: str,
    change_sequence_column: str,
) -> BatchSummary:
    """The summary of a batch whose checks found ``totals``, or :class:`InvalidChangeData` naming
    every check it fails (with a few offending values, read from ``changes`` again)."""
    checks = _row_checks(keys)
    problems = []
    if totals["unknown_ops"]:
        examples = _examples(changes, checks["unknown_ops"], OP)
        problems.append(f"{totals['unknown_ops']} row(s) have an Op other than I, U or D (e.g. {examples})")
    if totals["unreadable_times"]:
        problems.append(
            f"{totals['unreadable_times']} row(s) have a {timestamp_column} that is not a "
            "'yyyy-MM-dd HH:mm:ss[.SSSSSS]' time, so their changes cannot be ordered"
        )
    if totals["bad_sequences"]:
        examples = _examples(changes, checks["bad_sequences"], CHANGE_SEQ)
        problems.append(
            f"{totals['bad_sequences']} row(s) have a {change_sequence_column} that is not a string of "
            f"digits (e.g. {examples}), so their changes cannot be ordered"
        )
    if totals["null_keys"]:
        problems.append(f"{totals['null_keys']} row(s) have a null primary key ({', '.join(keys)})")
    if problems:
        raise InvalidChangeData("the bronze batch cannot be applied: " + "; ".join(problems))
    return BatchSummary(
        rows_read=int(totals[_ROWS]),
        new_watermark=_new_watermark(totals, watermark_type),
        full_load_rows=int(totals[_FULL_LOAD]),
        newest_change_time=_newest_change_time(totals),
    )


def _newest_change_time(totals: Row) -> str | None:
    """The newest CDC change time the totals hold (microseconds since the epoch) as text; None: none."""
    micros = totals[_NEWEST_CHANGE]
    return format_epoch_micros(int(micros)) if micros is not None else None


def _new_watermark(totals: Row, watermark_type: DataType | None) -> WatermarkJson:
    """The largest watermark value the totals hold, as the manifest's JSON value (None: no column)."""
    return watermark_json(totals[_WATERMARK], watermark_type) if watermark_type is not None else None


def _every_value(changes: DataFrame) -> Column:
    """An aggregate of every column's values (a hash), so that the check decodes every page of the
    batch: a page Spark cannot decode must fail here, before any DDL, not in a later read of the
    batch (maps cannot be hashed; DMS writes none)."""
    hashable = [
        column(field.name) for field in changes.schema.fields if not isinstance(field.dataType, MapType)
    ]
    return F.max(F.xxhash64(*hashable)) if hashable else F.lit(0)


def _examples(changes: DataFrame, condition: Column, name: str) -> str:
    """A few distinct offending values, quoted, for an error message."""
    rows = changes.where(condition).select(name).distinct().limit(_SAMPLE_SIZE).collect()
    return ", ".join(repr(row[0]) for row in rows)
