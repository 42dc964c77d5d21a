"""Reading DMS files and turning them into changes: DataFrame → DataFrame, on a real session."""

from __future__ import annotations

import re
from pathlib import Path

import pyarrow as pa
import pytest
from pyspark.sql import SparkSession
from pyspark.sql import functions as F
from pyspark.sql.types import IntegerType, LongType, StringType, StructField, StructType, TimestampType

from glue.dms_files import utc, write_dms_file
from glue.frames import assert_frame_equal
from icetide_glue.bronze import file_rank, read_bronze
from icetide_glue.changes import latest_change_per_key, normalize_changes
from icetide_glue.errors import BronzeSchemaError

pytestmark = pytest.mark.spark


def test_files_sort_in_dms_write_order(spark: SparkSession) -> None:
    names = [
        "20261121-070000000.parquet",
        "LOAD0000000A.parquet",
        "LOAD00000010.parquet",
        "LOAD00000009.parquet",
        "20261121-065959999.parquet",
    ]
    frame = spark.createDataFrame([(n,) for n in names], "file_name string")
    ordered = [row[0] for row in frame.orderBy(file_rank(F.col("file_name"))).collect()]
    # Full load first, numbered in hexadecimal (9 < A < 0x10); then CDC files by time.
    assert ordered == [
        "LOAD00000009.parquet",
        "LOAD0000000A.parquet",
        "LOAD00000010.parquet",
        "20261121-065959999.parquet",
        "20261121-070000000.parquet",
    ]


def test_an_absent_or_empty_run_folder_is_an_empty_batch(spark: SparkSession, tmp_path: Path) -> None:
    assert read_bronze(spark, str(tmp_path / "never-written")) is None
    (tmp_path / "empty" / "dbo" / "t").mkdir(parents=True)
    assert read_bronze(spark, str(tmp_path / "empty")) is None


def test_reserved_column_names_are_refused(spark: SparkSession, tmp_path: Path) -> None:
    schema = pa.schema([("dms_timestamp", pa.string()), ("_icetide_run_id", pa.string())])
    write_dms_file(tmp_path, "LOAD00000001.parquet", schema, [("2026-11-21 06:00:00.000000", "x")])
    with pytest.raises(
        BronzeSchemaError, match="column\\(s\\) _icetide_run_id: the _icetide_ prefix is reserved"
    ):
        read_bronze(spark, str(tmp_path))


def test_dms_columns_become_icetide_change_columns(spark: SparkSession, tmp_path: Path) -> None:
    full_load = pa.schema([("dms_timestamp", pa.string()), ("id", pa.int32())])
    write_dms_file(tmp_path, "LOAD00000001.parquet", full_load, [("2026-11-21 06:00:00.000000", 1)])
    cdc = pa.schema(
        [
            ("Op", pa.string()),
            ("dms_timestamp", pa.string()),
            ("AR_H_CHANGE_SEQ", pa.string()),
            ("id", pa.int32()),
        ]
    )
    write_dms_file(
        tmp_path,
        "20261121-070000000.parquet",
        cdc,
        [("U", "2026-11-21 07:00:00.250000", "0002", 1), ("D", "2026-11-21 07:00:01", "0003", 2)],
    )
    bronze = read_bronze(spark, str(tmp_path))
    assert bronze is not None
    changes = normalize_changes(bronze, "dms_timestamp", "AR_H_CHANGE_SEQ", "run-7").drop(
        "_icetide_file_rank"
    )
    assert_frame_equal(
        changes,
        [
            # A full-load row without Op is an insert; DMS's own columns are gone.
            (1, "I", utc("2026-11-21 06:00:00"), None, "run-7", 0),
            (1, "U", utc("2026-11-21 07:00:00.250000"), "0002", "run-7", 0),
            (2, "D", utc("2026-11-21 07:00:01"), "0003", "run-7", 1),
        ],
        StructType(
            [
                StructField("id", IntegerType()),
                StructField("_icetide_op", StringType()),
                StructField("_icetide_change_ts", TimestampType()),
                StructField("_icetide_change_seq", StringType()),
                StructField("_icetide_run_id", StringType()),
                StructField("_icetide_row_index", LongType()),
            ]
        ),
    )


def test_a_missing_timestamp_column_is_named(spark: SparkSession, tmp_path: Path) -> None:
    write_dms_file(tmp_path, "LOAD00000001.parquet", pa.schema([("id", pa.int32())]), [(1,)])
    bronze = read_bronze(spark, str(tmp_path))
    assert bronze is not None
    with pytest.raises(
        BronzeSchemaError,
        match="DMS timestamp column \\(--timestamp_column\\) 'dms_timestamp' is "
        "not in the bronze files \\(their columns: id\\)",
    ):
        normalize_changes(bronze, "dms_timestamp", "AR_H_CHANGE_SEQ", "run-7")


def test_latest_change_per_key_orders_by_time_sequence_file_and_position(spark: SparkSession) -> None:
    columns = (
        "id",
        "value",
        "_icetide_change_ts",
        "_icetide_change_seq",
        "_icetide_file_rank",
        "_icetide_row_index",
    )
    schema = "id int, value string, ts string, seq string, file string, pos long"
    rows = [
        (1, "older time", "2026-11-21 07:00:00", "9", "1b", 9),
        (1, "newest time", "2026-11-21 07:00:01", None, "0a", 0),
        (2, "lower sequence", "2026-11-21 07:00:00", "0001", "1b", 5),
        (2, "higher sequence", "2026-11-21 07:00:00", "0002", "1a", 0),
        (3, "earlier file", "2026-11-21 07:00:00", None, "1a", 7),
        (3, "later file", "2026-11-21 07:00:00", None, "1b", 0),
        (4, "earlier row", "2026-11-21 07:00:00", None, "1a", 0),
        (4, "later row", "2026-11-21 07:00:00", None, "1a", 1),
    ]
    frame = spark.createDataFrame(rows, schema).toDF(*columns)
    frame = frame.withColumn("_icetide_change_ts", F.col("_icetide_change_ts").cast("timestamp"))
    latest = latest_change_per_key(frame, ["id"]).select("id", "value")
    assert_frame_equal(
        latest,
        [(1, "newest time"), (2, "higher sequence"), (3, "later file"), (4, "later row")],
        StructType([StructField("id", IntegerType()), StructField("value", StringType())]),
    )


def test_files_of_one_run_with_different_column_types_are_named(spark: SparkSession, tmp_path: Path) -> None:
    write_dms_file(
        tmp_path,
        "LOAD00000001.parquet",
        pa.schema([("dms_timestamp", pa.string()), ("qty", pa.int32())]),
        [("2026-11-21 06:00:00", 1)],
    )
    write_dms_file(
        tmp_path,
        "20261121-070000000.parquet",
        pa.schema([("dms_timestamp", pa.string()), ("qty", pa.int64())]),
        [("2026-11-21 07:00:00", 2)],
    )
    with pytest.raises(BronzeSchemaError) as raised:
        read_bronze(spark, str(tmp_path))
    # Which file Spark reads first decides the order of the two types.
    assert re.search(
        r"column qty: (int in one file, bigint|bigint in one file, int) in another", str(raised.value)
    )


def test_a_numeric_change_sequence_orders_as_a_number(spark: SparkSession, tmp_path: Path) -> None:
    """Sequence 10 is later than 9 although "10" < "9" as text: the latest change must win."""
    cdc = pa.schema(
        [
            ("Op", pa.string()),
            ("dms_timestamp", pa.string()),
            ("seq", pa.int64()),
            ("id", pa.int32()),
            ("note", pa.string()),
        ]
    )
    write_dms_file(
        tmp_path,
        "20261121-070000000.parquet",
        cdc,
        [
            ("U", "2026-11-21 07:00:00.000000", 10, 1, "by seq 10"),
            ("U", "2026-11-21 07:00:00.000000", 9, 1, "by seq 9"),
        ],
    )
    bronze = read_bronze(spark, str(tmp_path))
    assert bronze is not None
    changes = normalize_changes(bronze, "dms_timestamp", "seq", "run-8")

    latest = latest_change_per_key(changes, ["id"]).select("id", "note", "_icetide_change_seq")

    assert [tuple(row) for row in latest.collect()] == [(1, "by seq 10", "0" * 38 + "10")]
