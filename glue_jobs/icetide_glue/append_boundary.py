"""The watermark's boundary rows of an append-only run: read again, but not appended again.

DMS has no strict "greater than", so a `gte`/`between` run starts AT the stored watermark and re-reads
the rows that hold it. A merge absorbs them on the key; a key-less (append-only) table would append
them again every run. The plan therefore passes the stored watermark as ``--append_after`` and the
job appends only rows whose watermark column is strictly above it.
"""

from __future__ import annotations

from dataclasses import dataclass

from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.types import DataType, TimestampType

from icetide_glue.changes import column, utc_timestamp
from icetide_glue.errors import InvalidJobArguments


def boundary_literal(text: str, data_type: DataType) -> Column:
    """``text`` cast to the watermark column's type (null when it does not cast).

    A timestamp without a zone is read as UTC, like every watermark, whatever the session's zone
    (``2026-11-21 06:00:00`` is 06:00 UTC); one with an explicit zone keeps it.
    """
    value = F.lit(text)
    if isinstance(data_type, TimestampType):
        return F.coalesce(utc_timestamp(value), value.cast(data_type))
    return value.cast(data_type)


@dataclass(frozen=True)
class AppendBoundary:
    """Rows whose ``watermark_column`` is at or below ``bound`` were appended by an earlier run."""

    watermark_column: str
    bound: Column

    @classmethod
    def of(cls, spark: SparkSession, text: str, watermark_column: str, data_type: DataType) -> AppendBoundary:
        """The boundary ``--append_after`` names, checked before anything is written.

        Raises InvalidJobArguments naming the column, the value and the type when the value does not
        cast: filtering with a null bound would silently append nothing at all.
        """
        bound = boundary_literal(text, data_type)
        row = spark.range(1).select(bound.alias("bound")).first()
        assert row is not None  # one row in, one row out
        if row["bound"] is None:
            raise InvalidJobArguments(
                f"--append_after {text!r} is not a value of the watermark column {watermark_column!r} "
                f"(type {data_type.simpleString()}): it must be the stored watermark of that column"
            )
        return cls(watermark_column, bound)

    def rows_after(self, changes: DataFrame) -> DataFrame:
        """The rows not appended before: watermark strictly above the bound.

        A row whose watermark is null was never selected by a watermark filter, so it is no
        re-read boundary row: it is kept rather than silently dropped.
        """
        value = column(self.watermark_column)
        return changes.where(value.isNull() | (value > self.bound))
