"""Append-only tables receive each source row once, whatever the filter re-reads.

A key-less table cannot merge, so a run that reads a row silver already holds would append it again.
Every filter but a strict "greater than" re-reads rows: DMS's ``gte`` and ``between`` start AT the
watermark, ``lte``, ``eq``, ``noteq``, ``notbetween``, ``null``, ``notnull`` and no filter at all
re-read the same rows every run. So the job appends a row only when silver holds fewer rows of the
same content than the batch does (a multiset difference): re-read rows are skipped, while genuinely
repeated rows of a key-less source (two identical log lines) still land as often as the source
holds them, and a row that arrives later with the watermark's exact value is not lost.

The content of a row is its source columns plus its Op, as JSON text (every value in an exact text
form: binary as hex, a timestamp as microseconds since the epoch so the session's time zone cannot
change it; null fields left out, so a column added later with nulls changes nothing), hashed with
SHA-256 and stored in ``_icetide_row_hash``. Comparing costs one 32-byte column of silver, and only
of the files whose watermark column can hold the batch's values: equal content means an equal
watermark value, so a filter on the batch's watermark range lets Iceberg skip every other file by
its column statistics (for a ``gte`` delta, nearly all of them).
"""

from __future__ import annotations

from collections.abc import Sequence

from pyspark.sql import Column, DataFrame, SparkSession, Window
from pyspark.sql import functions as F
from pyspark.sql.types import BinaryType, DataType, StringType, StructType, TimestampType

from icetide_glue.changes.normalize import column, find_column
from icetide_glue.columns import CHANGE_SEQ, CHANGE_TS, OP, ROW_HASH, is_metadata_column
from icetide_glue.silver import SilverTable

_OCCURRENCE = "_icetide_occurrence"
_HELD = "_icetide_held"


def content_columns(silver: StructType) -> list[str]:
    """The columns whose values make a row's content: the source columns and the Op."""
    return [name for name in silver.fieldNames() if not is_metadata_column(name) or name == OP]


def row_hash(frame: DataFrame, columns: Sequence[str]) -> Column:
    """SHA-256 (32 bytes) of the row's content, the same for a batch row and a silver row."""
    parts = [_exact_text(column(name), frame.schema[name].dataType).alias(name) for name in columns]
    # to_json leaves null fields out: a row read before a column was added hashes like one read after.
    return F.unhex(F.sha2(F.to_json(F.struct(*parts)), 256))


def _exact_text(value: Column, data_type: DataType) -> Column:
    """A value as text that neither loses precision nor depends on the session's time zone."""
    if isinstance(data_type, BinaryType):
        return F.hex(value)
    if isinstance(data_type, TimestampType):
        return F.unix_micros(value).cast(StringType())
    return value.cast(StringType())


def with_row_hash(aligned: DataFrame) -> DataFrame:
    """``aligned`` (a batch shaped like silver) with ``_icetide_row_hash``, as it is stored: every
    row of a batch appended to a table created by the same run (which holds no row to skip)."""
    return aligned.withColumn(ROW_HASH, row_hash(aligned, content_columns(aligned.schema)))


def rows_not_in_silver(
    spark: SparkSession,
    table: SilverTable,
    aligned: DataFrame,
    watermark_column: str | None,
) -> DataFrame:
    """The rows of ``aligned`` (a batch shaped like silver) that silver does not already hold.

    For each content, the batch's first n copies are skipped where silver holds n; the result
    carries ``_icetide_row_hash`` to be stored with the rows.
    """
    batch = with_row_hash(aligned)
    batch_hashes = batch.select(ROW_HASH).distinct()
    # No forced broadcast: with lte, eq or no filter the batch is the whole source table, and Spark
    # chooses a broadcast on its own when a side is small.
    held = (
        _silver_hashes(spark, table, aligned.schema, _watermark_range(batch, watermark_column))
        .join(batch_hashes, ROW_HASH, "left_semi")
        .groupBy(ROW_HASH)
        .agg(F.count(F.lit(1)).alias(_HELD))
    )
    copies = Window.partitionBy(ROW_HASH).orderBy(F.col(CHANGE_TS), F.col(CHANGE_SEQ))
    return (
        batch.withColumn(_OCCURRENCE, F.row_number().over(copies))
        .join(held, ROW_HASH, "left")
        .where(F.col(_OCCURRENCE) > F.coalesce(F.col(_HELD), F.lit(0)))
        .select(*[column(name) for name in batch.columns])
    )


def _silver_hashes(
    spark: SparkSession, table: SilverTable, silver: StructType, in_range: Column | None
) -> DataFrame:
    """Every silver row's content hash, narrowed to the batch's watermark range when there is one.

    Rows appended before icetide stored the hash (null) get it computed from their columns; the
    ``IS NULL`` filter lets Iceberg skip every file written since, by its null counts.
    """
    rows = spark.table(table.sql_name)
    if in_range is not None:
        rows = rows.where(in_range)
    stored = rows.where(F.col(ROW_HASH).isNotNull()).select(ROW_HASH)
    legacy = rows.where(F.col(ROW_HASH).isNull())
    computed = legacy.select(row_hash(legacy, content_columns(silver)).alias(ROW_HASH))
    return stored.unionByName(computed)


def _watermark_range(batch: DataFrame, watermark_column: str | None) -> Column | None:
    """A filter on silver's watermark column matching every value the batch holds (or None)."""
    name = find_column(batch.columns, watermark_column) if watermark_column else None
    if name is None:
        return None
    value = column(name)
    # A timestamp travels as whole microseconds: a Python datetime would pass through the machine's
    # local zone and come back an hour off in a daylight-saving fold. timestamp_micros(literal) is
    # folded to a literal, so Iceberg still prunes files by it.
    is_timestamp = isinstance(batch.schema[name].dataType, TimestampType)
    measured = F.unix_micros(value) if is_timestamp else value
    bounds = batch.agg(
        F.min(measured).alias("low"),
        F.max(measured).alias("high"),
        F.count_if(value.isNull()).alias("nulls"),
    ).first()
    assert bounds is not None  # a global aggregate always returns one row
    in_range = F.lit(False)
    if bounds["low"] is not None:
        low, high = F.lit(bounds["low"]), F.lit(bounds["high"])
        if is_timestamp:
            low, high = F.timestamp_micros(low), F.timestamp_micros(high)
        in_range = value.between(low, high)
    if bounds["nulls"]:
        in_range = in_range | value.isNull()
    return in_range
