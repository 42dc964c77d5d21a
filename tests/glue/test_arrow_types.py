"""The driver's one table of Spark and Arrow types, read both ways, and its file paths."""

from __future__ import annotations

from datetime import UTC, datetime

import pyarrow as pa
import pytest
from pyspark.sql.types import (
    ArrayType,
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
    MapType,
    ShortType,
    StringType,
    TimestampNTZType,
    TimestampType,
)

from icetide_glue.decision import micros
from icetide_glue.driver.arrow_types import NotEligible, arrow_type, spark_type_of
from icetide_glue.driver.files import local_path

PAIRS: list[tuple[DataType, pa.DataType]] = [
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
    (DecimalType(18, 2), pa.decimal128(18, 2)),
    (TimestampType(), pa.timestamp("us", tz="UTC")),
    (TimestampNTZType(), pa.timestamp("us")),
]


@pytest.mark.parametrize(("spark_type", "arrow"), PAIRS, ids=[s.simpleString() for s, _ in PAIRS])
def test_each_type_maps_both_ways(spark_type: DataType, arrow: pa.DataType) -> None:
    assert arrow_type(spark_type) == arrow
    assert spark_type_of(arrow, int96=False) == spark_type


def test_spark_reads_other_arrow_spellings_as_the_same_type() -> None:
    assert spark_type_of(pa.large_string(), int96=False) == StringType()
    # Any unit; an INT96 column is an instant, as is a zoned one.
    assert spark_type_of(pa.timestamp("ns"), int96=True) == TimestampType()
    assert spark_type_of(pa.timestamp("ms", tz="Europe/Oslo"), int96=False) == TimestampType()
    assert spark_type_of(pa.timestamp("ms"), int96=False) == TimestampNTZType()


def test_a_type_outside_the_table_is_named() -> None:
    assert spark_type_of(pa.list_(pa.int32()), int96=False) is None
    assert spark_type_of(pa.uint32(), int96=False) is None
    with pytest.raises(NotEligible, match="map<string,int>"):
        arrow_type(MapType(StringType(), IntegerType()))
    with pytest.raises(NotEligible, match="array<int>"):
        arrow_type(ArrayType(IntegerType()))


def test_times_become_microseconds_since_the_epoch_and_other_columns_stay() -> None:
    moment = datetime(2026, 1, 1, 0, 0, 1, 5, tzinfo=UTC)
    zoned = pa.chunked_array([pa.array([moment, None], pa.timestamp("us", tz="UTC"))])
    plain = pa.chunked_array([pa.array([moment.replace(tzinfo=None)], pa.timestamp("ns"))])
    assert micros(zoned).to_pylist() == [1_767_225_601_000_005, None]
    assert micros(plain).to_pylist() == [1_767_225_601_000_005]
    numbers = pa.chunked_array([pa.array([3, 4], pa.int16())])
    assert micros(numbers) is numbers


def test_local_paths_lose_their_scheme() -> None:
    assert local_path("file:/w/a.parquet") == "/w/a.parquet"
    assert local_path("file:///w/a.parquet") == "/w/a.parquet"
    assert local_path("/w/a.parquet") == "/w/a.parquet"
