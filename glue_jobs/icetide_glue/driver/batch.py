"""A small merge batch read on the driver with pyarrow: the same latest change per key, checks and
summary as :func:`icetide_glue.changes.batch.deduplicate_batch`, without a Spark job.

Only batches whose every value this reading gives exactly as Spark's would are read here: DMS's
own column types (a timestamp string, an Op string, a string sequence), source columns whose
Arrow type is the very Spark type of the batch's merged schema (Spark's, or the one
icetide_glue.driver.bronze merges from the footers as Spark would), no time before 1900 (Spark may
rebase those), no float NaN in the watermark column. Anything else, and any row a check would
refuse, raises :class:`NotEligible`: the job then runs its Spark path, which loads the batch or
names what is wrong with it, exactly as before (icetide_glue.driver.merge).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import PurePosixPath

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
from pyspark.sql.types import DataType, StringType, StructType, TimestampNTZType, TimestampType

from icetide_contracts.watermark_text import WatermarkJson, format_epoch_micros
from icetide_glue.changes.batch import BatchSummary
from icetide_glue.changes.key_ranges import MAX_KEYS_FOR_RANGES, ranges_of_sorted_keys
from icetide_glue.changes.normalize import DMS_TIMESTAMP_PATTERN, find_column, is_whole_number_type
from icetide_glue.changes.watermark import watermark_json
from icetide_glue.columns import (
    CDC_PHASE,
    CHANGE_PHASE,
    CHANGE_SEQ,
    CHANGE_TS,
    DELETE,
    DMS_OP_COLUMN,
    FILE_RANK,
    FULL_LOAD_PHASE,
    INSERT,
    OP,
    ROW_INDEX,
    RUN_ID,
    UPDATE,
)
from icetide_glue.decision import LATEST_CHANGE_ORDER, micros
from icetide_glue.driver.arrow_types import NotEligible, spark_type_of
from icetide_glue.driver.files import open_input

# Spark reads a timestamp or date before this (in its files' calendar) through a rebase of the
# Julian calendar (or refuses it); pyarrow does not. Such batches take the Spark path.
EARLIEST_EXACT_TIME = datetime(1900, 1, 1, tzinfo=UTC)
_EARLIEST_MICROS = int(EARLIEST_EXACT_TIME.timestamp() * 1_000_000)
_EARLIEST_DAYS = (EARLIEST_EXACT_TIME.date() - datetime(1970, 1, 1).date()).days
_LOAD_FILE = re.compile(r"^LOAD([0-9A-Fa-f]+)")
# As icetide_glue.bronze.read.file_rank: LOAD numbers left-padded to 20 digits.
_LOAD_NUMBER_DIGITS = 20
_SEQUENCE_DIGITS = r"^[0-9]*$"


@dataclass(frozen=True)
class ArrowBatch:
    """A merge's batch on the driver: its latest change per key, with icetide's metadata columns
    (change time as microseconds since the epoch in UTC, sequence text, Op, run id), and what the
    check found (as the Spark path's :class:`BatchSummary`)."""

    latest: pa.Table
    summary: BatchSummary


def file_rank(file_name: str) -> str:
    """:func:`icetide_glue.bronze.read.file_rank` for one file name (a test holds both to one answer)."""
    load = _LOAD_FILE.match(file_name)
    if load is not None:
        return str(FULL_LOAD_PHASE) + str(int(load.group(1), 16)).rjust(_LOAD_NUMBER_DIGITS, "0")
    return str(CDC_PHASE) + file_name


def file_phase(file_name: str) -> int:
    """:func:`icetide_glue.bronze.read.rank_phase` of the file's rank: full load or CDC."""
    return int(file_rank(file_name)[0])


def _read_file(path: str, columns: StructType) -> pa.Table:
    """One bronze file as ``columns`` (a column it lacks is null), its types checked against Spark's."""
    try:
        with open_input(path) as source:
            parquet = pq.ParquetFile(source, coerce_int96_timestamp_unit="us")
            int96 = {
                parquet.schema.column(i).name
                for i in range(len(parquet.schema))
                if parquet.schema.column(i).physical_type == "INT96"
            }
            table = parquet.read()
    except (OSError, pa.ArrowException) as error:
        # Gone since the listing, or a page pyarrow cannot decode: Spark's read names it.
        raise NotEligible(f"bronze file {path} is not read here: {error}") from None
    by_name = {name.lower(): name for name in table.column_names}
    arrays = []
    for field in columns.fields:
        name = by_name.get(field.name.lower())
        if name is None:
            # Typed when the files are put together (pa.concat_tables promotes a null column).
            arrays.append(pa.nulls(len(table)))
            continue
        values = table.column(name)
        if spark_type_of(values.type, name in int96) != field.dataType:
            raise NotEligible(
                f"bronze column {name} reads as {values.type} here, "
                f"Spark reads {field.dataType.simpleString()}"
            )
        if pa.types.is_timestamp(values.type):
            values = values.cast(pa.timestamp("us", tz=values.type.tz))
        arrays.append(values)
    return pa.table(arrays, names=[field.name for field in columns.fields])


def _change_times(values: pa.ChunkedArray, data_type: DataType) -> pa.ChunkedArray:
    """:func:`icetide_glue.changes.normalize.change_time` in microseconds: a DMS string parsed only when it
    has DMS's form, else the batch is not eligible (the Spark path refuses the row)."""
    if isinstance(data_type, TimestampType | TimestampNTZType):
        return micros(values)
    text = pc.utf8_trim(values, characters=" ")
    if not pc.all(pc.match_substring_regex(text, DMS_TIMESTAMP_PATTERN)).as_py():
        raise NotEligible("a change time is not in DMS's form")
    try:
        return micros(pc.cast(text, pa.timestamp("us")))
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError) as error:
        raise NotEligible(f"a change time pyarrow does not read: {error}") from None


def _check_times(table: pa.Table) -> None:
    """No timestamp or date before :data:`EARLIEST_EXACT_TIME` (Spark's rebase)."""
    for values in table.columns:
        if pa.types.is_timestamp(values.type):
            lowest = pc.min(micros(values)).as_py()
        elif pa.types.is_date32(values.type):
            lowest = pc.min(pc.cast(values, pa.int32())).as_py()
        else:
            continue
        limit = _EARLIEST_MICROS if pa.types.is_timestamp(values.type) else _EARLIEST_DAYS
        if lowest is not None and lowest < limit:
            raise NotEligible("a time before 1900 (Spark may rebase it)")


def read_batch(
    files: Sequence[str],
    bronze_schema: StructType,
    keys: Sequence[str],
    watermark_column: str | None,
    timestamp_column: str,
    change_sequence_column: str,
    run_id: str,
) -> ArrowBatch:
    """The batch of ``files`` (the listing Spark made, ``bronze_schema`` its merged schema, without
    Spark's file-rank and row-index columns), each key's latest change kept as
    :func:`icetide_glue.changes.normalize.latest_change_per_key` keeps it, and its summary with the first
    key's ranges. ``keys`` and ``watermark_column`` are spelled as in ``bronze_schema``."""
    parts = []
    for path in files:
        table = _read_file(path, bronze_schema)
        name = PurePosixPath(path).name
        parts.append(
            table.append_column(FILE_RANK, pa.repeat(pa.scalar(file_rank(name), pa.string()), len(table)))
            .append_column(ROW_INDEX, pa.array(np.arange(len(table), dtype=np.int64)))
            .append_column(CHANGE_PHASE, pa.repeat(pa.scalar(file_phase(name), pa.int32()), len(table)))
        )
    if not parts:
        raise NotEligible("no bronze file")
    try:
        batch = pa.concat_tables(parts, promote_options="default")
    except pa.ArrowInvalid as error:
        raise NotEligible(f"the bronze files' columns do not line up: {error}") from None
    _check_times(batch)
    normalized = _normalize(batch, bronze_schema, timestamp_column, change_sequence_column, run_id)
    _check_rows(normalized, keys)
    latest = _latest_per_key(normalized, keys)
    ranges = None
    if (
        len(keys)
        and 0 < len(latest) <= MAX_KEYS_FOR_RANGES
        and is_whole_number_type(bronze_schema[keys[0]].dataType)
    ):
        first = latest.column(keys[0])
        distinct = first if len(keys) == 1 else pc.unique(first)
        ranges = ranges_of_sorted_keys(np.sort(distinct.to_numpy(zero_copy_only=False)))
    summary = BatchSummary(
        rows_read=len(batch),
        new_watermark=_new_watermark(batch, bronze_schema, watermark_column),
        key_ranges=ranges,
        full_load_rows=pc.sum(pc.equal(batch.column(CHANGE_PHASE), FULL_LOAD_PHASE)).as_py() or 0,
        newest_change_time=_newest_change_time(normalized),
    )
    return ArrowBatch(latest.drop_columns([FILE_RANK, ROW_INDEX]), summary)


def _normalize(
    batch: pa.Table, schema: StructType, timestamp_column: str, change_sequence_column: str, run_id: str
) -> pa.Table:
    """:func:`icetide_glue.changes.normalize.normalize_changes` for the types this module reads."""
    ts_name = find_column(batch.column_names, timestamp_column)
    op_name = find_column(batch.column_names, DMS_OP_COLUMN)
    seq_name = find_column(batch.column_names, change_sequence_column)
    if ts_name is None:
        raise NotEligible("no DMS timestamp column")
    if op_name is not None and not isinstance(schema[op_name].dataType, StringType):
        raise NotEligible("the Op column is not a string")
    if seq_name is not None and not isinstance(schema[seq_name].dataType, StringType):
        raise NotEligible("the change sequence is not a string")
    dms = {name for name in (ts_name, op_name, seq_name) if name is not None}
    working = (FILE_RANK, ROW_INDEX, CHANGE_PHASE)
    source = [name for name in batch.column_names if name not in dms and name not in working]
    rows = len(batch)
    op = pa.repeat(pa.scalar(INSERT, pa.string()), rows)
    if op_name is not None:
        trimmed = pc.utf8_trim(batch.column(op_name), characters=" ")
        op = pc.coalesce(pc.if_else(pc.equal(trimmed, ""), pa.scalar(None, pa.string()), trimmed), INSERT)
    sequence = batch.column(seq_name) if seq_name is not None else pa.nulls(rows, pa.string())
    return pa.table(
        {
            **{name: batch.column(name) for name in source},
            OP: op,
            CHANGE_TS: _change_times(batch.column(ts_name), schema[ts_name].dataType),
            CHANGE_SEQ: pc.cast(sequence, pa.string()),
            RUN_ID: pa.repeat(pa.scalar(run_id, pa.string()), rows),
            CHANGE_PHASE: batch.column(CHANGE_PHASE),
            FILE_RANK: batch.column(FILE_RANK),
            ROW_INDEX: batch.column(ROW_INDEX),
        }
    )


def _check_rows(changes: pa.Table, keys: Sequence[str]) -> None:
    """The checks of :func:`icetide_glue.changes.batch.inspect_batch`: any row failing one is not
    read here."""
    if not pc.all(pc.is_in(changes.column(OP), pa.array([INSERT, UPDATE, DELETE]))).as_py():
        raise NotEligible("an Op other than I, U or D")
    if changes.column(CHANGE_TS).null_count:
        raise NotEligible("a change time that cannot be read")
    sequence = changes.column(CHANGE_SEQ)
    if (
        len(sequence) > sequence.null_count
        and not pc.all(pc.match_substring_regex(sequence.drop_null(), _SEQUENCE_DIGITS)).as_py()
    ):
        raise NotEligible("a change sequence that is not digits")
    if any(changes.column(key).null_count for key in keys):
        raise NotEligible("a null key")


def _latest_per_key(changes: pa.Table, keys: Sequence[str]) -> pa.Table:
    """Each key's latest change (icetide_glue.decision.LATEST_CHANGE_ORDER, nulls lowest), as
    :func:`icetide_glue.changes.normalize.latest_change_per_key` orders them.

    A batch with one change per key (a single whole-number key: most hourly batches) is kept as it
    is, in file order: sorting every column of a batch costs several times what sorting the key
    alone, to see that it repeats nowhere, costs."""
    if _one_change_per_key(changes, keys):
        return changes
    ordering = [(key, "ascending") for key in keys] + [(name, "descending") for name in LATEST_CHANGE_ORDER]
    ordered = changes.sort_by(ordering, null_placement="at_end")
    if not len(ordered):
        return ordered
    first = np.zeros(len(ordered), dtype=bool)
    first[0] = True
    for key in keys:
        values = ordered.column(key)
        first[1:] |= pc.not_equal(values.slice(1), values.slice(0, len(values) - 1)).to_numpy(
            zero_copy_only=False
        )
    return ordered.filter(pa.array(first))


def _one_change_per_key(changes: pa.Table, keys: Sequence[str]) -> bool:
    """Whether no value of a single whole-number key repeats (False: more keys, or another type)."""
    if len(keys) != 1 or not pa.types.is_integer(changes.schema.field(keys[0]).type):
        return False
    ordered = np.sort(changes.column(keys[0]).to_numpy())
    return bool((ordered[1:] != ordered[:-1]).all())


def _newest_change_time(changes: pa.Table) -> str | None:
    """:func:`icetide_glue.changes.batch.cdc_change_time`'s largest value: the newest change time among the
    CDC-phase rows, as text (None: none; a full-load row's time is DMS's transfer time)."""
    from_cdc = pc.equal(changes.column(CHANGE_PHASE), pa.scalar(CDC_PHASE, pa.int32()))
    newest = pc.max(changes.column(CHANGE_TS).filter(from_cdc)).as_py()
    return format_epoch_micros(int(newest)) if newest is not None else None


def _new_watermark(batch: pa.Table, schema: StructType, watermark_column: str | None) -> WatermarkJson:
    """The largest value of the watermark column, as the manifest's JSON value (None: no column)."""
    if watermark_column is None:
        return None
    name = find_column(batch.column_names, watermark_column)
    data_type = schema[watermark_column].dataType
    if name is None:
        raise NotEligible("the watermark column is not in the files")
    values = batch.column(name)
    if pa.types.is_floating(values.type) and pc.any(pc.is_nan(values)).as_py():
        raise NotEligible("a NaN watermark (Spark's largest value)")
    if pa.types.is_timestamp(values.type):
        return watermark_json(pc.max(micros(values)).as_py(), data_type)
    if pa.types.is_binary(values.type) or pa.types.is_boolean(values.type):
        raise NotEligible("a watermark type the check refuses")
    return watermark_json(pc.max(values).as_py(), data_type)
