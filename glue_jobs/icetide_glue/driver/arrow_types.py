"""Spark's column types and the Arrow types that hold their values on the driver, one table read
both ways: a bronze column's Arrow type must be the very Spark type Spark's reader gives it
(icetide_glue.driver.batch), and silver's Spark types name the Arrow types its rows are read and
written with (icetide_glue.driver.silver, icetide_glue.driver.commit). A type outside the table
makes the run :class:`NotEligible`: it takes the Spark path.
"""

from __future__ import annotations

import pyarrow as pa
from pyspark.sql.types import (
    BinaryType,
    BooleanType,
    ByteType,
    DataType,
    DateType,
    DecimalType,
    DoubleType,
    FloatType,
    IntegerType,
    LongType,
    ShortType,
    StringType,
    TimestampNTZType,
    TimestampType,
)


class NotEligible(Exception):
    """The run cannot be merged on the driver exactly as Spark would: the job takes its Spark path.
    Not an error of the batch (the Spark path finds those)."""


# Each Spark type and the Arrow type holding its values as Iceberg stores them (a ``timestamp`` is
# Iceberg's ``timestamptz``: microseconds, adjusted to UTC). Decimals are their own case.
_PAIRS: tuple[tuple[DataType, pa.DataType], ...] = (
    (ByteType(), pa.int8()),
    (ShortType(), pa.int16()),
    (IntegerType(), pa.int32()),
    (LongType(), pa.int64()),
    (FloatType(), pa.float32()),
    (DoubleType(), pa.float64()),
    (BooleanType(), pa.bool_()),
    (StringType(), pa.string()),
    (BinaryType(), pa.binary()),
    (DateType(), pa.date32()),
    (TimestampType(), pa.timestamp("us", tz="UTC")),
    (TimestampNTZType(), pa.timestamp("us")),
)
# Arrow types a Parquet file may read as that Spark reads as the same type as another's.
_ARROW_ALIASES = {pa.large_string(): pa.string()}


def arrow_type(data_type: DataType) -> pa.DataType:
    """The Arrow type that holds ``data_type``'s values as Iceberg stores them."""
    if isinstance(data_type, DecimalType):
        return pa.decimal128(data_type.precision, data_type.scale)
    for spark_type, arrow in _PAIRS:
        if data_type == spark_type:
            return arrow
    raise NotEligible(f"a column of type {data_type.simpleString()}")


def spark_type_of(arrow: pa.DataType, int96: bool) -> DataType | None:
    """The Spark type Spark's Parquet reader gives a column pyarrow reads as ``arrow`` (``int96``:
    the file stores it as INT96, which both read as an instant), or None when the driver does not
    read that type."""
    if pa.types.is_decimal128(arrow):
        return DecimalType(arrow.precision, arrow.scale)
    if pa.types.is_timestamp(arrow):
        return TimestampType() if (arrow.tz is not None or int96) else TimestampNTZType()
    arrow = _ARROW_ALIASES.get(arrow, arrow)
    return next((spark_type for spark_type, held in _PAIRS if held == arrow), None)
