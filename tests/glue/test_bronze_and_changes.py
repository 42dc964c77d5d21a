"""Reading DMS files and turning them into changes: DataFrame → DataFrame, on a real session."""

from __future__ import annotations

import re
from datetime import UTC, date, datetime, timedelta
from decimal import Decimal
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from pyspark.sql import SparkSession
from pyspark.sql import functions as F
from pyspark.sql.types import IntegerType, LongType, StringType, StructField, StructType, TimestampType

from glue.dms_files import utc, write_dms_file
from glue.frames import assert_frame_equal
from glue.silver_tables import load_into_silver, silver_table
from icetide_glue.bronze.read import file_rank, read_bronze, unreadable_file_in
from icetide_glue.changes.batch import inspect_batch
from icetide_glue.changes.normalize import latest_change_per_key, normalize_changes
from icetide_glue.errors import BronzeSchemaError, NoParquetInBronze, UnreadableBronzeFile
from icetide_glue.session import session_settings

pytestmark = pytest.mark.spark


BRONZE_V = pa.schema(
    [("Op", pa.string()), ("dms_timestamp", pa.string()), ("id", pa.int64()), ("v", pa.string())]
)


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
            # A full-load row without Op is an insert; DMS's own columns are gone. The phase is
            # the file's: 0 for the LOAD file, 1 for the CDC file.
            (1, "I", utc("2026-11-21 06:00:00"), None, "run-7", 0, 0),
            (1, "U", utc("2026-11-21 07:00:00.250000"), "0002", "run-7", 1, 0),
            (2, "D", utc("2026-11-21 07:00:01"), "0003", "run-7", 1, 1),
        ],
        StructType(
            [
                StructField("id", IntegerType()),
                StructField("_icetide_op", StringType()),
                StructField("_icetide_change_ts", TimestampType()),
                StructField("_icetide_change_seq", StringType()),
                StructField("_icetide_run_id", StringType()),
                StructField("_icetide_change_phase", IntegerType()),
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


def test_latest_change_per_key_orders_by_phase_time_sequence_file_and_position(spark: SparkSession) -> None:
    columns = (
        "id",
        "value",
        "_icetide_change_ts",
        "_icetide_change_seq",
        "_icetide_change_phase",
        "_icetide_file_rank",
        "_icetide_row_index",
    )
    schema = "id int, value string, ts string, seq string, phase int, file string, pos long"
    rows = [
        (1, "older time", "2026-11-21 07:00:00", "9", 1, "1b", 9),
        (1, "newest time", "2026-11-21 07:00:01", None, 1, "1a", 0),
        (2, "lower sequence", "2026-11-21 07:00:00", "0001", 1, "1b", 5),
        (2, "higher sequence", "2026-11-21 07:00:00", "0002", 1, "1a", 0),
        (3, "earlier file", "2026-11-21 07:00:00", None, 1, "1a", 7),
        (3, "later file", "2026-11-21 07:00:00", None, 1, "1b", 0),
        (4, "earlier row", "2026-11-21 07:00:00", None, 1, "1a", 0),
        (4, "later row", "2026-11-21 07:00:00", None, 1, "1a", 1),
        # A full-load row transferred after a change committed during the load: the change wins.
        (5, "full load, later time", "2026-11-21 07:00:09", None, 0, "0a", 0),
        (5, "change during the load", "2026-11-21 07:00:01", "0001", 1, "1a", 0),
    ]
    frame = spark.createDataFrame(rows, schema).toDF(*columns)
    frame = frame.withColumn("_icetide_change_ts", F.col("_icetide_change_ts").cast("timestamp"))
    latest = latest_change_per_key(frame, ["id"]).select("id", "value")
    assert_frame_equal(
        latest,
        [
            (1, "newest time"),
            (2, "higher sequence"),
            (3, "later file"),
            (4, "later row"),
            (5, "change during the load"),
        ],
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


# What Spark 3.5 raised, cause by cause (outermost first), for a CSV file named .parquet.
FOOTER_CHAIN = [
    "Job aborted due to stage failure: Task 1 in stage 0.0 failed 1 times, most recent failure: Lost task "
    "1.0 in stage 0.0 (TID 1) (192.0.2.2 executor driver): org.apache.spark.SparkException: Exception "
    "thrown in awaitResult: \n\tat org.apache.spark.util.SparkThreadUtils$.awaitResult(ThreadUtils.scala)",
    "Exception thrown in awaitResult: ",
    "[CANNOT_READ_FILE_FOOTER] Could not read footer for file: "
    "s3://bronze/run-1/dbo/orders/LOAD00000002.parquet. Please ensure that the file is in either ORC or "
    "Parquet format. If not, please convert it to a valid format.",
    "s3://bronze/run-1/dbo/orders/LOAD00000002.parquet is not a Parquet file. Expected magic number at tail, "
    "but found [48, 44, 50, 10]",
]
# ... and for a file whose footer is whole but whose pages are not.
PAGE_CHAIN = [
    "Job aborted due to stage failure: Task 0 in stage 1.0 failed 1 times, most recent failure: Lost task "
    "0.0 in stage 1.0 (TID 1) (192.0.2.2 executor driver): org.apache.spark.SparkException: Encountered "
    "error while reading file file:///tmp/bronze/LOAD00000001.parquet. Details:\n\tat org.apache.spark",
    "Encountered error while reading file file:///tmp/bronze/LOAD00000001.parquet. Details:",
    "could not decode the dictionary for [id] optional int64 id",
    "PARSING_ERROR(2)",
]


@pytest.mark.parametrize(
    ("chain", "message"),
    [
        (
            FOOTER_CHAIN,
            "bronze file s3://bronze/run-1/dbo/orders/LOAD00000002.parquet is not a Parquet file. Expected "
            "magic number at tail, but found [48, 44, 50, 10]; it is truncated or corrupt, or not parquet at "
            "all (an endpoint writing CSV?): replace or remove it, then rerun",
        ),
        (
            PAGE_CHAIN,
            "bronze file file:///tmp/bronze/LOAD00000001.parquet cannot be read as parquet: could not "
            "decode the dictionary for [id] optional int64 id; it is truncated or corrupt, or not parquet "
            "at all (an endpoint writing CSV?): replace or remove it, then rerun",
        ),
    ],
    ids=["footer", "pages"],
)
def test_an_unreadable_file_is_named_from_sparks_error_chain(chain: list[str], message: str) -> None:
    error = unreadable_file_in(chain)
    assert isinstance(error, UnreadableBronzeFile)
    assert str(error) == message


def test_other_spark_failures_are_not_called_unreadable_files() -> None:
    assert (
        unreadable_file_in(["Job aborted due to stage failure: java.lang.OutOfMemoryError: Java heap"])
        is None
    )


def test_an_unreadable_file_fails_the_read_naming_the_file(spark: SparkSession, tmp_path: Path) -> None:
    write_dms_file(tmp_path, "LOAD00000001.parquet", pa.schema([("id", pa.int32())]), [(1,)])
    (tmp_path / "dbo" / "source_table" / "LOAD00000002.parquet").write_text(
        "Op,dms_timestamp,id\nI,2026-11-21 06:00:00,2\n"
    )
    with pytest.raises(UnreadableBronzeFile) as raised:
        read_bronze(spark, str(tmp_path))
    assert re.fullmatch(
        r"bronze file file:\S+/dbo/source_table/LOAD00000002\.parquet is not a Parquet file\. Expected magic "
        r"number at tail, but found \[48, 44, 50, 10\]; .*",  # "0,2\n": the CSV's last bytes
        str(raised.value),
    ), str(raised.value)


def test_corrupt_pages_fail_the_batch_check_naming_the_file(spark: SparkSession, tmp_path: Path) -> None:
    rows = [("I", "2026-11-21 06:00:00", i, f"value {i} " * 5) for i in range(1000)]
    schema = pa.schema(
        [("Op", pa.string()), ("dms_timestamp", pa.string()), ("id", pa.int64()), ("v", pa.string())]
    )
    path = write_dms_file(tmp_path, "LOAD00000001.parquet", schema, rows)
    damaged = bytearray(path.read_bytes())
    damaged[200:3000] = b"\xff" * 2800  # the first pages; the footer at the end stays whole
    path.write_bytes(bytes(damaged))
    bronze = read_bronze(spark, str(tmp_path))  # footers only: still readable
    assert bronze is not None
    changes = normalize_changes(bronze, "dms_timestamp", "AR_H_CHANGE_SEQ", "run-9")
    with pytest.raises(
        UnreadableBronzeFile, match=r"^bronze file file:\S+/LOAD00000001\.parquet cannot be read"
    ):
        inspect_batch(changes, ["id"], None, "dms_timestamp")


def test_an_unreadable_value_column_fails_the_run_before_any_ddl(spark: SparkSession, tmp_path: Path) -> None:
    """The check needs no value column for what it checks: a merge's read of its batch must still
    decode every page before any DDL, or a broken page of a value column would fail the run only
    after the ALTER TABLE of the batch's new column."""
    load_into_silver(spark, "broken_values", "broken-1", _one_row_folder(tmp_path / "first"))
    schema = pa.schema([*BRONZE_V, ("note", pa.string())])
    rows = [("U", "2026-11-21 07:00:00", i, f"value {i} " * 5, f"note {i}") for i in range(1000)]
    path = write_dms_file(tmp_path / "second", "20261121-070000000.parquet", schema, rows)
    chunk = pq.ParquetFile(path).metadata.row_group(0).column(schema.get_field_index("v"))
    start = chunk.dictionary_page_offset or chunk.data_page_offset
    damaged = bytearray(path.read_bytes())
    damaged[start + 8 : start + chunk.total_compressed_size - 8] = b"\xff" * (
        chunk.total_compressed_size - 16
    )
    path.write_bytes(bytes(damaged))
    columns_before = spark.table(silver_table("broken_values")).columns

    with pytest.raises(UnreadableBronzeFile, match=r"20261121-070000000\.parquet cannot be read"):
        load_into_silver(spark, "broken_values", "broken-2", tmp_path / "second")
    assert spark.table(silver_table("broken_values")).columns == columns_before


def _one_row_folder(folder: Path) -> Path:
    write_dms_file(folder, "LOAD00000001.parquet", BRONZE_V, [("I", "2026-11-21 06:00:00", 1, "a")])
    return folder


def test_a_folder_of_files_without_parquet_is_refused(spark: SparkSession, tmp_path: Path) -> None:
    folder = tmp_path / "dbo" / "orders"
    folder.mkdir(parents=True)
    (folder / "LOAD00000001.csv").write_text("I,2026-11-21 06:00:00,1\n")
    with pytest.raises(NoParquetInBronze) as raised:
        read_bronze(spark, str(tmp_path))
    assert str(raised.value) == (
        f"{tmp_path} holds file(s) but no .parquet file (e.g. dbo/orders/LOAD00000001.csv): the DMS S3 "
        "endpoint must write parquet (DataFormat=parquet); nothing was loaded"
    )


def test_hidden_files_alone_are_an_empty_batch(spark: SparkSession, tmp_path: Path) -> None:
    """Spark skips _SUCCESS and dot files; so does the check for a folder without parquet."""
    folder = tmp_path / "dbo" / "orders"
    folder.mkdir(parents=True)
    (folder / "_SUCCESS").write_text("")
    (folder / ".LOAD00000001.parquet.crc").write_text("crc")
    assert read_bronze(spark, str(tmp_path)) is None


@pytest.mark.parametrize(
    ("column", "arrow_type", "value", "message"),
    [
        (
            "dms_timestamp",
            pa.int64(),
            1_795_334_400_000_000,
            "the DMS timestamp column (--timestamp_column) 'dms_timestamp' is bigint, not a "
            "'yyyy-MM-dd HH:mm:ss[.SSSSSS]' string or a timestamp",
        ),
        (
            "dms_timestamp",
            pa.bool_(),
            True,
            "the DMS timestamp column (--timestamp_column) 'dms_timestamp' is boolean, not a "
            "'yyyy-MM-dd HH:mm:ss[.SSSSSS]' string or a timestamp",
        ),
        (
            "dms_timestamp",
            pa.date32(),
            date(2026, 11, 21),
            "the DMS timestamp column (--timestamp_column) 'dms_timestamp' is date, not a "
            "'yyyy-MM-dd HH:mm:ss[.SSSSSS]' string or a timestamp",
        ),
        ("Op", pa.int32(), 1, "the DMS column 'Op' is int, not a string of I, U or D"),
        (
            "AR_H_CHANGE_SEQ",
            pa.float64(),
            1.5,
            "the change sequence column (--change_sequence_column) 'AR_H_CHANGE_SEQ' is double, not a "
            "string of digits or a whole number",
        ),
        (
            "AR_H_CHANGE_SEQ",
            pa.bool_(),
            False,
            "the change sequence column (--change_sequence_column) 'AR_H_CHANGE_SEQ' is boolean, not a "
            "string of digits or a whole number",
        ),
        (
            "AR_H_CHANGE_SEQ",
            pa.decimal128(10, 2),
            Decimal("1.50"),
            "the change sequence column (--change_sequence_column) 'AR_H_CHANGE_SEQ' is decimal(10,2), "
            "not a string of digits or a whole number",
        ),
        (
            "AR_H_CHANGE_SEQ",
            pa.binary(),
            b"\x01",
            "the change sequence column (--change_sequence_column) 'AR_H_CHANGE_SEQ' is binary, not a "
            "string of digits or a whole number",
        ),
    ],
    ids=[
        "timestamp-bigint",
        "timestamp-boolean",
        "timestamp-date",
        "op-int",
        "sequence-double",
        "sequence-boolean",
        "sequence-decimal-with-scale",
        "sequence-binary",
    ],
)
def test_dms_columns_of_a_type_dms_never_writes_are_refused(
    spark: SparkSession, tmp_path: Path, column: str, arrow_type: pa.DataType, value: object, message: str
) -> None:
    defaults: dict[str, tuple[pa.DataType, object]] = {
        "Op": (pa.string(), "U"),
        "dms_timestamp": (pa.string(), "2026-11-21 07:00:00"),
        "AR_H_CHANGE_SEQ": (pa.string(), "0001"),
        "id": (pa.int32(), 1),
    }
    defaults[column] = (arrow_type, value)
    schema = pa.schema([(name, data_type) for name, (data_type, _) in defaults.items()])
    write_dms_file(tmp_path, "LOAD00000001.parquet", schema, [tuple(v for _, v in defaults.values())])
    bronze = read_bronze(spark, str(tmp_path))
    assert bronze is not None
    with pytest.raises(BronzeSchemaError, match=f"^{re.escape(message)}: these columns order the changes"):
        normalize_changes(bronze, "dms_timestamp", "AR_H_CHANGE_SEQ", "run-10")


def test_a_timestamp_typed_dms_timestamp_and_a_whole_number_sequence_are_taken(
    spark: SparkSession, tmp_path: Path
) -> None:
    schema = pa.schema(
        [
            ("dms_timestamp", pa.timestamp("us", tz="UTC")),
            ("AR_H_CHANGE_SEQ", pa.decimal128(38, 0)),
            ("id", pa.int32()),
        ]
    )
    write_dms_file(tmp_path, "LOAD00000001.parquet", schema, [(utc("2026-11-21 07:00:00.5"), Decimal(42), 1)])
    bronze = read_bronze(spark, str(tmp_path))
    assert bronze is not None
    changes = normalize_changes(bronze, "dms_timestamp", "AR_H_CHANGE_SEQ", "run-11")
    assert_frame_equal(
        changes.select("id", "_icetide_change_ts", "_icetide_change_seq"),
        [(1, utc("2026-11-21 07:00:00.5"), "0" * 38 + "42")],
        StructType(
            [
                StructField("id", IntegerType()),
                StructField("_icetide_change_ts", TimestampType()),
                StructField("_icetide_change_seq", StringType()),
            ]
        ),
    )


def test_only_dms_timestamp_strings_become_change_times(spark: SparkSession, tmp_path: Path) -> None:
    """Spark's cast alone reads "2026" or "2026-11-21T06:00" as times; DMS never writes them."""
    values = [
        "2026-11-21 06:00:00",
        "2026-11-21 06:00:00.123456",
        "2026-11-21T06:00:00",
        "2026-11-21",
        "2026",
        "2026-11-21 06:00:00.1234567",
    ]
    schema = pa.schema([("dms_timestamp", pa.string()), ("id", pa.int32())])
    write_dms_file(tmp_path, "LOAD00000001.parquet", schema, [(v, i) for i, v in enumerate(values)])
    bronze = read_bronze(spark, str(tmp_path))
    assert bronze is not None
    changes = normalize_changes(bronze, "dms_timestamp", "AR_H_CHANGE_SEQ", "run-12")
    assert_frame_equal(
        changes.select("id", "_icetide_change_ts"),
        [
            (0, utc("2026-11-21 06:00:00")),
            (1, utc("2026-11-21 06:00:00.123456")),
            (2, None),
            (3, None),
            (4, None),
            (5, None),
        ],
        StructType([StructField("id", IntegerType()), StructField("_icetide_change_ts", TimestampType())]),
    )


@pytest.mark.parametrize("zone", ["America/New_York", "Asia/Kolkata"])
@pytest.mark.parametrize("written_as", [pa.string(), pa.timestamp("us")])
def test_change_times_are_utc_whatever_the_session_s_zone(
    spark: SparkSession, tmp_path: Path, zone: str, written_as: pa.DataType
) -> None:
    """DMS writes UTC without saying so (a string, or a timestamp without zone where files were
    converted): a session in another zone, when the batch is normalized and when it is read as
    the job reads it (a view queried by SQL, checkpointed), must neither shift the times nor lose
    one that does not exist on its clocks (New York skips 02:00-03:00 on 2026-03-08)."""
    values = ["2026-03-08 02:30:00", "2026-11-01 01:30:00.5", "1999-12-31 23:59:59.999999"]
    written = values if pa.types.is_string(written_as) else [datetime.fromisoformat(v) for v in values]
    schema = pa.schema([("dms_timestamp", written_as), ("id", pa.int32())])
    write_dms_file(tmp_path, "LOAD00000001.parquet", schema, [(v, i) for i, v in enumerate(written)])
    with session_settings(spark, {"spark.sql.session.timeZone": zone}):
        bronze = read_bronze(spark, str(tmp_path))
        assert bronze is not None
        changes = normalize_changes(bronze, "dms_timestamp", "AR_H_CHANGE_SEQ", "run-12")
        changes.createOrReplaceTempView("zoned")
        assert spark.conf.get("spark.sql.session.timeZone") == zone
        query = "SELECT id, unix_micros(_icetide_change_ts) AS micros FROM zoned"
        rows = spark.sql(query).localCheckpoint(eager=True).collect()
    spark.catalog.dropTempView("zoned")
    epoch = datetime(1970, 1, 1, tzinfo=UTC)
    expected = {i: (utc(value) - epoch) // timedelta(microseconds=1) for i, value in enumerate(values)}
    assert {row["id"]: row["micros"] for row in rows} == expected
