"""Schema evolution on a real table: additions and widenings applied, incompatible changes refused."""

from __future__ import annotations

import re
from decimal import Decimal
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from pyspark.sql import SparkSession
from pyspark.sql.types import (
    DecimalType,
    DoubleType,
    IntegerType,
    LongType,
    StringType,
)

from glue.conftest import LoadRun
from glue.dms_files import utc, write_dms_file
from glue.frames import assert_frame_equal, silver_schema
from glue.silver_tables import load_into_silver, silver_table, snapshot_ids
from icetide_glue.errors import IncompatibleSchemaChange

pytestmark = pytest.mark.spark

V1 = pa.schema(
    [
        ("dms_timestamp", pa.string()),
        ("id", pa.int32()),
        ("qty", pa.int32()),
        ("price", pa.float32()),
        ("amount", pa.decimal128(10, 2)),
        ("name", pa.string()),
    ]
)
# qty and price widened, amount's precision grown, name dropped, note added.
V2 = pa.schema(
    [
        ("Op", pa.string()),
        ("dms_timestamp", pa.string()),
        ("id", pa.int32()),
        ("qty", pa.int64()),
        ("price", pa.float64()),
        ("amount", pa.decimal128(12, 2)),
        ("note", pa.string()),
    ]
)
EVOLVED = silver_schema(
    ("id", IntegerType()),
    ("qty", LongType()),
    ("price", DoubleType()),
    ("amount", DecimalType(12, 2)),
    ("name", StringType()),
    added=(("note", StringType()),),
)


@pytest.fixture(scope="module")
def evolved(spark: SparkSession, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    def run(run_id: str, bronze: Path) -> dict[str, Any]:
        return load_into_silver(spark, "evolving", run_id, bronze)

    v1 = tmp_path_factory.mktemp("schema_v1")
    write_dms_file(
        v1,
        "LOAD00000001.parquet",
        V1,
        [
            ("2026-11-21 06:00:00", 1, 10, 1.5, Decimal("1.25"), "one"),
            ("2026-11-21 06:00:00", 2, 20, 2.5, Decimal("2.50"), "two"),
        ],
    )
    run("evolve-1", v1)
    v2 = tmp_path_factory.mktemp("schema_v2")
    write_dms_file(
        v2,
        "20261121-070000000.parquet",
        V2,
        [
            ("U", "2026-11-21 07:00:00", 1, 5_000_000_000, 0.1, Decimal("1234567890.12"), "bigger now"),
        ],
    )
    return run("evolve-2", v2)


def test_added_and_widened_columns_are_applied(spark: SparkSession, evolved: dict[str, Any]) -> None:
    assert evolved["schemaChanges"] == [
        "widened column qty int to bigint",
        "widened column price float to double",
        "widened column amount decimal(10,2) to decimal(12,2)",
        "added column note string",
    ]
    assert_frame_equal(
        spark.table(silver_table("evolving")),
        [
            # name was dropped at the source: the updated row gets null, the other keeps its value
            (
                1,
                5_000_000_000,
                0.1,
                Decimal("1234567890.12"),
                None,
                utc("2026-11-21 07:00:00"),
                None,
                "evolve-2",
                "bigger now",
            ),
            (2, 20, 2.5, Decimal("2.50"), "two", utc("2026-11-21 06:00:00"), None, "evolve-1", None),
        ],
        EVOLVED,
    )


@pytest.mark.parametrize(
    ("column", "arrow_type", "value", "message"),
    [
        ("name", pa.int32(), 7, "column name: silver has string, the source now sends int"),
        (
            "amount",
            pa.decimal128(12, 3),
            Decimal("1.125"),
            "column amount: silver has decimal(12,2), the source now sends decimal(12,3)",
        ),
    ],
)
def test_incompatible_change_fails_and_leaves_the_table_untouched(
    spark: SparkSession,
    evolved: dict[str, Any],
    load_run: LoadRun,
    tmp_path: Path,
    column: str,
    arrow_type: pa.DataType,
    value: object,
    message: str,
) -> None:
    snapshots_before = snapshot_ids(spark, "evolving")
    schema_before = spark.table(silver_table("evolving")).schema
    # Also a new column and a widening, to show that nothing is applied when one column is incompatible.
    bronze_schema = pa.schema(
        [
            ("Op", pa.string()),
            ("dms_timestamp", pa.string()),
            ("id", pa.int64()),
            (column, arrow_type),
            ("extra", pa.string()),
        ]
    )
    write_dms_file(
        tmp_path, "20261121-080000000.parquet", bronze_schema, [("U", "2026-11-21 08:00:00", 1, value, "x")]
    )
    with pytest.raises(IncompatibleSchemaChange, match=re.escape(message)):
        load_run("evolving", f"evolve-bad-{column}", tmp_path)
    assert snapshot_ids(spark, "evolving") == snapshots_before
    assert spark.table(silver_table("evolving")).schema == schema_before
