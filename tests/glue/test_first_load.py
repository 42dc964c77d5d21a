"""First load: the silver table is created with source-faithful types and the right rows."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from decimal import Decimal
from pathlib import Path

import pyarrow as pa
import pytest
from pyiceberg.table import StaticTable
from pyspark.sql import SparkSession
from pyspark.sql.types import (
    BinaryType,
    BooleanType,
    DecimalType,
    DoubleType,
    FloatType,
    IntegerType,
    LongType,
    StringType,
    TimestampType,
)

from glue.dms_files import utc, write_dms_file
from glue.frames import assert_frame_equal, silver_schema
from glue.silver_tables import SILVER_DATABASE, load_into_silver, silver_table

pytestmark = pytest.mark.spark

# What DMS writes for a PostgreSQL table: numeric as decimal with the source precision, bytea as
# binary, timestamptz as a UTC timestamp, smallint as int16; Op absent without IncludeOpForFullLoad.
BRONZE = pa.schema(
    [
        ("dms_timestamp", pa.string()),
        ("id", pa.int64()),
        ("amount", pa.decimal128(38, 4)),
        ("payload", pa.binary()),
        ("created_at", pa.timestamp("us", tz="UTC")),
        ("active", pa.bool_()),
        ("level", pa.int16()),
        ("quantity", pa.int32()),
        ("ratio", pa.float32()),
        ("score", pa.float64()),
        ("name", pa.string()),
    ]
)
CREATED = datetime(2026, 1, 2, 3, 4, 5, 6, tzinfo=UTC)
BIG_AMOUNT = Decimal("12345678901234567890123456789012.3456")
EMPTY = (None,) * 9
ROWS = [
    ("2026-11-21 06:00:00.000001", 1, BIG_AMOUNT, b"\x00\xff", CREATED, True, 7, 100, 0.5, 2.25, "first"),
    ("2026-11-21 06:00:00.000002", 2, *EMPTY),
]
SILVER_SCHEMA = silver_schema(
    ("id", LongType()),
    ("amount", DecimalType(38, 4)),
    ("payload", BinaryType()),
    ("created_at", TimestampType()),
    ("active", BooleanType()),
    # Iceberg has no 16-bit integer: smallint is stored as int.
    ("level", IntegerType()),
    ("quantity", IntegerType()),
    ("ratio", FloatType()),
    ("score", DoubleType()),
    ("name", StringType()),
)
# change time, change sequence (none in a full load), run id
FIRST_LOAD_METADATA = [
    (utc("2026-11-21 06:00:00.000001"), None, "first-load-1"),
    (utc("2026-11-21 06:00:00.000002"), None, "first-load-1"),
]
SILVER_ROWS = [
    (
        1,
        BIG_AMOUNT,
        bytearray(b"\x00\xff"),
        CREATED,
        True,
        7,
        100,
        0.5,
        2.25,
        "first",
        *FIRST_LOAD_METADATA[0],
    ),
    (2, *EMPTY, *FIRST_LOAD_METADATA[1]),
]


@pytest.fixture(scope="module")
def first_load(spark: SparkSession, tmp_path_factory: pytest.TempPathFactory) -> dict[str, object]:
    bronze = tmp_path_factory.mktemp("first_load")
    write_dms_file(bronze, "LOAD00000001.parquet", BRONZE, ROWS)
    manifest_path = bronze.parent / "first_load_manifest.json"
    return load_into_silver(
        spark,
        "first_load",
        "first-load-1",
        bronze,
        watermark_column="created_at",
        manifest_uri=str(manifest_path),
    )


def test_table_has_source_faithful_types_and_the_rows(
    spark: SparkSession, first_load: dict[str, object]
) -> None:
    assert_frame_equal(spark.table(silver_table("first_load")), SILVER_ROWS, SILVER_SCHEMA)


def test_iceberg_types_and_layout(spark: SparkSession, first_load: dict[str, object]) -> None:
    described = {
        row["col_name"]: row["data_type"]
        for row in spark.sql(f"DESCRIBE TABLE EXTENDED {silver_table('first_load')}").collect()
    }
    # Unpartitioned, written in key order (files and row groups cover bands of keys).
    assert "Part 0" not in described
    properties = described["Table Properties"]
    for expected in (
        "format-version=2",
        "write.delete.mode=merge-on-read",
        "write.merge.mode=merge-on-read",
        "write.update.mode=merge-on-read",
        "write.target-file-size-bytes=67108864",
        "write.parquet.row-group-size-bytes=8388608",
        "sort-order=id ASC NULLS FIRST",
        "write.distribution-mode=range",
    ):
        assert expected in properties


def test_manifest_of_the_first_load(
    first_load: dict[str, object], tmp_path_factory: pytest.TempPathFactory
) -> None:
    assert {k: v for k, v in first_load.items() if k != "snapshotId"} == {
        "runId": "first-load-1",
        "targetTable": "silver.first_load",
        "rowsRead": 2,
        "rowsInserted": 2,
        "rowsUpdated": 0,
        "rowsDeleted": 0,
        "rowsUnchanged": 0,
        "watermarkColumn": "created_at",
        "newWatermark": "2026-01-02 03:04:05.000006",
        "alreadyCommitted": False,
        "schemaChanges": ["created table silver.first_load with 10 source column(s)"],
        "newestChangeTime": None,
    }
    assert isinstance(first_load["snapshotId"], int)
    written = next(tmp_path_factory.getbasetemp().glob("**/first_load_manifest.json"))
    assert json.loads(written.read_text()) == first_load


def test_other_engines_read_the_table_from_its_metadata_file(
    warehouse: Path, first_load: dict[str, object]
) -> None:
    metadata_dir = warehouse / SILVER_DATABASE / "first_load" / "metadata"
    latest = max(metadata_dir.glob("v*.metadata.json"), key=lambda p: int(p.name[1:].split(".")[0]))
    table = StaticTable.from_metadata(str(latest))
    assert str(table.schema().find_field("created_at").field_type) == "timestamptz"
    assert str(table.schema().find_field("amount").field_type) == "decimal(38, 4)"
    assert str(table.schema().find_field("payload").field_type) == "binary"
    rows = table.scan(selected_fields=("id", "name", "amount")).to_arrow().sort_by("id").to_pylist()
    assert rows == [
        {"id": 1, "name": "first", "amount": Decimal("12345678901234567890123456789012.3456")},
        {"id": 2, "name": None, "amount": None},
    ]
