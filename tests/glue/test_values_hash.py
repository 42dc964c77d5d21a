"""The values hash a merge table stores (``_icetide_values_hash``): what it covers, that a run
stores it, and that a table without it (an earlier icetide's) is classified exactly while it fills."""

from __future__ import annotations

import math
from datetime import UTC, datetime
from decimal import Decimal
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from pyspark.sql import SparkSession
from pyspark.sql import functions as F
from pyspark.sql.types import (
    BinaryType,
    DataType,
    DecimalType,
    DoubleType,
    FloatType,
    IntegerType,
    LongType,
    StringType,
    StructField,
    StructType,
    TimestampType,
)

from glue.dms_files import write_dms_file
from glue.silver_tables import CATALOG, SILVER_DATABASE, load_into_silver, silver_table
from glue.values_hash import int_text, values_hash
from icetide_glue import job
from icetide_glue.arguments import DeleteMode
from icetide_glue.columns import VALUES_HASH
from icetide_glue.iceberg_tables import iceberg_table
from icetide_glue.merge.apply import fill_values_hashes
from icetide_glue.merge.sql import values_hash_sql
from icetide_glue.silver import SilverTable, has_rows_without_values_hash, main_snapshot_id

pytestmark = pytest.mark.spark

Value = tuple[str, DataType, Any]
A, B = ("a", StringType()), ("b", StringType())


def hash_of(spark: SparkSession, *values: Value) -> int:
    """The job's hash of one row holding ``values`` (name, type, value)."""
    schema = StructType([StructField(name, data_type) for name, data_type, _ in values])
    row = spark.createDataFrame([tuple(value for _, _, value in values)], schema)
    expression = values_hash_sql([(name, data_type.simpleString()) for name, data_type, _ in values])
    return int(row.select(F.expr(expression).alias("h")).collect()[0]["h"])


def test_the_job_s_hash_matches_an_independent_oracle(spark: SparkSession) -> None:
    got = hash_of(
        spark,
        ("qty", IntegerType(), 10),
        ("name", StringType(), 'café "x"\n'),
        ("amount", DecimalType(10, 2), Decimal("1.25")),
        ("at", TimestampType(), datetime(2026, 11, 21, 7, 0, 0, 250000, tzinfo=UTC)),
        ("blob", BinaryType(), b"\xca\xfe"),
        ("gone", StringType(), None),
    )
    assert got == values_hash(
        {
            "qty": "10",
            "name": 'café "x"\n',
            "amount": "1.25",
            "at": "1795244400250000",
            "blob": "CAFE",
            "gone": None,
        }
    )


# Pairs a silver row and a batch row may hold for an unchanged source row (``<=>`` holds): after
# a widening, with a column added since (null), under another session time zone.
SAME = [
    ((("n", IntegerType(), 5),), (("n", LongType(), 5),)),
    ((("f", FloatType(), 1.1),), (("f", DoubleType(), 1.100000023841858),)),
    ((("d", DecimalType(10, 2), Decimal("1.25")),), (("d", DecimalType(12, 2), Decimal("1.25")),)),
    ((("x", DoubleType(), -0.0),), (("x", DoubleType(), 0.0),)),
    ((("x", DoubleType(), math.nan),), (("x", DoubleType(), math.nan),)),
    ((("a", IntegerType(), 1),), (("a", IntegerType(), 1), ("added", StringType(), None))),
]
# Rows that differ somewhere.
DIFFERENT = [
    ((("n", LongType(), 5),), (("n", LongType(), 6),)),
    ((("s", StringType(), ""),), (("s", StringType(), None),)),
    ((("x", DoubleType(), 0.1),), (("x", DoubleType(), 0.2),)),
    (
        (("a", StringType(), "x"), ("b", StringType(), "y")),
        (("a", StringType(), "y"), ("b", StringType(), "x")),
    ),
    (
        (("a", StringType(), "1"), ("b", StringType(), None)),
        (("a", StringType(), None), ("b", StringType(), "1")),
    ),
    ((("a", IntegerType(), 1),), (("a", IntegerType(), 1), ("added", StringType(), "new"))),
]


@pytest.mark.parametrize(("left", "right"), SAME)
def test_equal_values_hash_alike_across_widenings_and_added_columns(
    spark: SparkSession, left: tuple[Value, ...], right: tuple[Value, ...]
) -> None:
    assert hash_of(spark, *left) == hash_of(spark, *right)


@pytest.mark.parametrize(("left", "right"), DIFFERENT)
def test_different_values_hash_apart(
    spark: SparkSession, left: tuple[Value, ...], right: tuple[Value, ...]
) -> None:
    assert hash_of(spark, *left) != hash_of(spark, *right)


def test_a_timestamp_hashes_alike_in_every_session_time_zone(spark: SparkSession) -> None:
    at = ("at", TimestampType(), datetime(2026, 11, 21, 7, 0, tzinfo=UTC))
    zone = str(spark.conf.get("spark.sql.session.timeZone"))
    hashes = []
    try:
        for other in ("UTC", "America/Los_Angeles", "Asia/Kolkata"):
            spark.conf.set("spark.sql.session.timeZone", other)
            hashes.append(hash_of(spark, at))
    finally:
        spark.conf.set("spark.sql.session.timeZone", zone)
    assert len(set(hashes)) == 1


def test_null_fields_are_left_out_whatever_the_session_says(spark: SparkSession) -> None:
    with_null = (("a", IntegerType(), 1), ("added", StringType(), None))
    setting = "spark.sql.jsonGenerator.ignoreNullFields"
    before = spark.conf.get(setting)
    try:
        spark.conf.set(setting, "false")
        assert hash_of(spark, *with_null) == hash_of(spark, ("a", IntegerType(), 1))
    finally:
        spark.conf.set(setting, str(before))


CHANGES = pa.schema(
    [
        ("Op", pa.string()),
        ("dms_timestamp", pa.string()),
        ("id", pa.int32()),
        ("name", pa.string()),
        ("qty", pa.int32()),
    ]
)
COUNTS = ("rowsInserted", "rowsUpdated", "rowsDeleted", "rowsUnchanged")


def counts(manifest: dict[str, Any]) -> tuple[int, ...]:
    return tuple(manifest[name] for name in COUNTS)


def stored_hashes(spark: SparkSession, table: str) -> dict[int, int | None]:
    rows = spark.table(silver_table(table)).select("id", VALUES_HASH).collect()
    return {row["id"]: row[VALUES_HASH] for row in rows}


def load_changes(
    spark: SparkSession,
    folder: Path,
    table: str,
    number: int,
    schema: pa.Schema,
    rows: list[tuple[Any, ...]],
    merge_plan: str = "auto",
) -> dict[str, Any]:
    """Run ``number`` of ``table``: one DMS file of ``rows``; its manifest."""
    bronze = folder / f"run{number}"
    write_dms_file(bronze, f"20261121-07{number:04d}000.parquet", schema, rows)
    return load_into_silver(
        spark,
        table,
        f"{table}-{number}",
        bronze,
        expected_rows=0,
        max_change_rows=len(rows),
        merge_plan=merge_plan,
    )


METRICS_PROPERTY = f"write.metadata.metrics.column.{VALUES_HASH}"


def metrics_mode(spark: SparkSession, table: str) -> str | None:
    """The table's metrics mode for the values hash (None: not set)."""
    shown = spark.sql(f"SHOW TBLPROPERTIES {silver_table(table)}").collect()
    return {row["key"]: row["value"] for row in shown}.get(METRICS_PROPERTY)


def unhashed_rows(spark: SparkSession, table: str) -> bool:
    """What the job asks before it classifies: may a row of main lack a stored hash?"""
    silver = SilverTable(CATALOG, SILVER_DATABASE, table)
    return has_rows_without_values_hash(spark, silver, main_snapshot_id(spark, silver))


def oracle(name: str | None, qty: int | None) -> int:
    return values_hash({"name": name, "qty": int_text(qty)})


def fill_commits(spark: SparkSession, table: str, run_snapshot: int) -> list[str]:
    """The operations of the snapshots a run committed before its own (``run_snapshot``: the
    run's fills), back to the snapshot main had before the run (:func:`before_run`)."""
    iceberg = iceberg_table(spark, silver_table(table), refreshed=True)
    found = []
    snapshot = iceberg.snapshot(iceberg.snapshot(run_snapshot).parentId())
    while int(snapshot.snapshotId()) != BEFORE_RUN[table]:
        found.append(str(snapshot.operation()))
        snapshot = iceberg.snapshot(snapshot.parentId())
    return found


# Main's snapshot before each table's latest run (before_run).
BEFORE_RUN: dict[str, int] = {}


def before_run(spark: SparkSession, table: str) -> None:
    silver = SilverTable(CATALOG, SILVER_DATABASE, table)
    if spark.catalog.tableExists(silver.sql_name):
        BEFORE_RUN[table] = main_snapshot_id(spark, silver) or 0


def test_rows_stored_without_the_hash_are_filled_in_a_commit_of_their_own_before_the_run_classifies(
    spark: SparkSession, tmp_path: Path
) -> None:
    table = "values_hash_fill"

    def run(number: int, rows: list[tuple[Any, ...]]) -> dict[str, Any]:
        # The Spark path fills (the driver path leaves a table with rows to fill to it).
        before_run(spark, table)
        return load_changes(spark, tmp_path, table, number, CHANGES, rows, merge_plan="spark")

    first = [
        ("I", "2026-11-21 07:00:01", 1, "one", 1),
        ("I", "2026-11-21 07:00:01", 2, "two", 2),
        ("I", "2026-11-21 07:00:01", 3, "three", None),
        ("I", "2026-11-21 07:00:01", 4, "four", 4),
    ]
    assert counts(run(1, first)) == (4, 0, 0, 0)
    assert stored_hashes(spark, table) == {
        1: oracle("one", 1),
        2: oracle("two", 2),
        3: oracle("three", None),
        4: oracle("four", 4),
    }
    assert unhashed_rows(spark, table) is False
    # An earlier icetide's table: no hash column. The next run adds it, null in every old row,
    # and fills it before it classifies: re-reads are unchanged.
    spark.sql(f"ALTER TABLE {silver_table(table)} DROP COLUMN {VALUES_HASH}")
    second = [
        ("U", "2026-11-21 08:00:01", 1, "one", 1),  # re-read, unchanged
        ("U", "2026-11-21 08:00:01", 2, "two", 20),  # changed
        ("U", "2026-11-21 08:00:01", 3, "three", None),  # re-read, unchanged (a null value)
        ("I", "2026-11-21 08:00:01", 5, "five", 5),
    ]
    manifest = run(2, second)
    assert counts(manifest) == (1, 1, 0, 2)
    assert fill_commits(spark, table, manifest["snapshotId"]) == ["overwrite"]
    assert stored_hashes(spark, table) == {
        1: oracle("one", 1),
        2: oracle("two", 20),
        3: oracle("three", None),
        4: oracle("four", 4),
        5: oracle("five", 5),
    }
    assert metrics_mode(spark, table) == "counts"
    # A run that stopped between the column and its property: the next run sets the property.
    spark.sql(f"ALTER TABLE {silver_table(table)} UNSET TBLPROPERTIES ('{METRICS_PROPERTY}')")
    assert metrics_mode(spark, table) is None
    # Rows an earlier icetide wrote without a hash, beside rows with one.
    forget_hashes(spark, table, "id IN (1, 3, 5)")
    third = [
        ("U", "2026-11-21 09:00:01", 1, "one", 1),  # no stored hash, unchanged
        ("U", "2026-11-21 09:00:01", 2, "two", 20),  # stored hash, unchanged
        ("U", "2026-11-21 09:00:01", 3, "three", 3),  # no stored hash: null became 3
        ("U", "2026-11-21 09:00:01", 5, None, 5),  # no stored hash: a value became null
        ("D", "2026-11-21 09:00:01", 4, "four", 4),
    ]
    manifest = run(3, third)
    assert counts(manifest) == (0, 2, 1, 2)
    assert fill_commits(spark, table, manifest["snapshotId"]) == ["overwrite"]
    assert metrics_mode(spark, table) == "counts"
    assert stored_hashes(spark, table) == {
        1: oracle("one", 1),
        2: oracle("two", 20),
        3: oracle("three", 3),
        5: oracle(None, 5),
    }
    # Every row stores its hash now: the next run fills nothing.
    manifest = run(4, [("U", "2026-11-21 10:00:01", 1, "uno", 1)])
    assert counts(manifest) == (0, 1, 0, 0)
    assert fill_commits(spark, table, manifest["snapshotId"]) == []


def test_files_without_null_counts_may_hold_rows_without_a_hash(
    spark: SparkSession, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An owner's metrics mode "none" keeps no null counts: Iceberg's metadata cannot rule a null
    hash out, and the job's query of those files answers every run (what each run's fill did is
    recorded)."""
    table = "values_hash_no_metrics"
    filled: list[bool] = []

    def recording(*args: Any, **kwargs: Any) -> bool:
        filled.append(fill_values_hashes(*args, **kwargs))
        return filled[-1]

    monkeypatch.setattr(job, "fill_values_hashes", recording)

    def run(number: int, rows: list[tuple[Any, ...]]) -> dict[str, Any]:
        return load_changes(spark, tmp_path, table, number, CHANGES, rows, merge_plan="spark")

    assert counts(run(1, [("I", "2026-11-21 07:00:01", 1, "one", 1)])) == (1, 0, 0, 0)
    assert unhashed_rows(spark, table) is False
    spark.sql(f"ALTER TABLE {silver_table(table)} SET TBLPROPERTIES ('{METRICS_PROPERTY}' = 'none')")
    second = [
        ("U", "2026-11-21 08:00:01", 1, "one", 1),  # re-read, unchanged
        ("I", "2026-11-21 08:00:01", 2, "two", 2),
    ]
    assert counts(run(2, second)) == (1, 0, 0, 1)
    assert metrics_mode(spark, table) == "none"
    assert unhashed_rows(spark, table) is True
    third = [("U", "2026-11-21 09:00:01", 1, "one", 10)]
    assert counts(run(3, third)) == (0, 1, 0, 0)
    forget_hashes(spark, table, "id = 2")
    fourth = [
        ("U", "2026-11-21 10:00:01", 2, "two", 2),  # re-read, unchanged: its hash is filled first
        ("U", "2026-11-21 10:00:01", 1, "one", 11),
    ]
    assert counts(run(4, fourth)) == (0, 1, 0, 1)
    assert stored_hashes(spark, table) == {1: oracle("one", 11), 2: oracle("two", 2)}
    # A new table; files with null counts of 0; a file without counts, whose rows store their
    # hash; a row without its hash.
    assert filled == [False, False, False, True]


def forget_hashes(spark: SparkSession, table: str, condition: str) -> None:
    """Clear the stored hash of ``table``'s rows that meet ``condition``, as an earlier icetide's
    driver path left its rows."""
    spark.sql(f"UPDATE {silver_table(table)} SET {VALUES_HASH} = NULL WHERE {condition}")  # noqa: S608
    assert unhashed_rows(spark, table) is True


def test_a_soft_delete_table_stores_no_hash(spark: SparkSession, tmp_path: Path) -> None:
    bronze = tmp_path / "soft"
    write_dms_file(bronze, "20261121-070000000.parquet", CHANGES, [("I", "2026-11-21 07:00:01", 1, "one", 1)])
    load_into_silver(spark, "values_hash_soft", "soft-1", bronze, delete_mode=DeleteMode.SOFT)
    assert VALUES_HASH not in spark.table(silver_table("values_hash_soft")).columns


NESTED = pa.schema(
    [
        ("Op", pa.string()),
        ("dms_timestamp", pa.string()),
        ("id", pa.int32()),
        ("tags", pa.list_(pa.string())),
        ("qty", pa.int32()),
    ]
)


def test_a_table_with_a_nested_column_compares_values_and_stores_no_hash(
    spark: SparkSession, tmp_path: Path
) -> None:
    table = "values_hash_nested"

    def run(number: int, rows: list[tuple[Any, ...]]) -> dict[str, Any]:
        return load_changes(spark, tmp_path, table, number, NESTED, rows)

    first = [
        ("I", "2026-11-21 07:00:01", 1, ["a"], 1),
        ("I", "2026-11-21 07:00:01", 2, ["b"], 2),
        ("I", "2026-11-21 07:00:01", 3, ["a", "b"], 3),
    ]
    assert counts(run(1, first)) == (3, 0, 0, 0)
    again = [
        ("U", "2026-11-21 08:00:01", 1, ["a"], 1),  # re-read, unchanged
        ("U", "2026-11-21 08:00:01", 2, ["b", "c"], 2),
        ("U", "2026-11-21 08:00:01", 3, ["a, b"], 3),  # Spark's text of the array is the same
    ]
    assert counts(run(2, again)) == (0, 2, 0, 1)
    assert stored_hashes(spark, table) == {1: None, 2: None, 3: None}


def test_a_key_spelled_otherwise_than_silver_s_is_not_a_compared_column(
    spark: SparkSession, tmp_path: Path
) -> None:
    table = "values_hash_key_case"
    upper = pa.schema([field.with_name("ID") if field.name == "id" else field for field in CHANGES])
    first = [("I", "2026-11-21 07:00:01", 1, "one", 1)]
    assert counts(load_changes(spark, tmp_path, table, 1, CHANGES, first)) == (1, 0, 0, 0)
    # The table's owner chose another metrics mode: runs keep it.
    spark.sql(f"ALTER TABLE {silver_table(table)} SET TBLPROPERTIES ('{METRICS_PROPERTY}' = 'full')")
    again = [("U", "2026-11-21 08:00:01", 1, "one", 1)]
    assert counts(load_changes(spark, tmp_path, table, 2, upper, again)) == (0, 0, 0, 1)
    assert stored_hashes(spark, table) == {1: oracle("one", 1)}
    assert metrics_mode(spark, table) == "full"
