"""The one DataFrame-equality helper of the Glue tests: schema and rows, order-insensitive."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from datetime import UTC, datetime
from typing import Any

from pyspark.sql import DataFrame
from pyspark.sql.types import DataType, StringType, StructField, StructType, TimestampType

from icetide_glue.columns import CHANGE_PHASE, VALUES_HASH


def _comparable(value: Any, is_timestamp: bool) -> Any:
    # PySpark hands timestamps (with zone) to Python as naive local-time datetimes; expectations
    # are written as UTC-aware datetimes, so bring the actual ones to UTC.
    if is_timestamp and isinstance(value, datetime) and value.tzinfo is None:
        return value.astimezone(UTC)
    return value


def _sort_key(row: Sequence[Any]) -> tuple[tuple[bool, str], ...]:
    return tuple((value is None, repr(value)) for value in row)


def assert_frame_equal(actual: DataFrame, expected_rows: Iterable[Sequence[Any]], schema: StructType) -> None:
    """Assert ``actual`` has ``schema``'s column names and types (nullability ignored) and exactly
    ``expected_rows`` (tuples in schema order), in any order.

    A hard-delete table's ``_icetide_values_hash`` is left out unless ``schema`` lists it: tests
    state their rows' values, and the hash of those is checked against its own oracle where it is
    tested (test_values_hash.py, the random workloads). So is a merge table's
    ``_icetide_change_phase``: the order it gives is tested by its outcomes (test_full_load_order.py)."""
    for derived in (VALUES_HASH, CHANGE_PHASE):
        if derived in actual.columns and derived not in schema.fieldNames():
            actual = actual.drop(derived)
    actual_columns = [(f.name, f.dataType) for f in actual.schema.fields]
    expected_columns = [(f.name, f.dataType) for f in schema.fields]
    assert actual_columns == expected_columns, (
        f"schema differs:\n  actual   {actual_columns}\n  expected {expected_columns}"
    )
    timestamps = [isinstance(f.dataType, TimestampType) for f in actual.schema.fields]
    actual_rows = sorted(
        (
            tuple(_comparable(v, ts) for v, ts in zip(row, timestamps, strict=True))
            for row in actual.collect()
        ),
        key=_sort_key,
    )
    wanted = sorted((tuple(row) for row in expected_rows), key=_sort_key)
    assert actual_rows == wanted, f"rows differ:\n  actual   {actual_rows}\n  expected {wanted}"


# icetide's metadata columns of a merge table (docs/glue-job.md), written out once for the tests.
METADATA_COLUMNS = (
    ("_icetide_change_ts", TimestampType()),
    ("_icetide_change_seq", StringType()),
    ("_icetide_run_id", StringType()),
)


def silver_schema(*source: tuple[str, DataType], added: Sequence[tuple[str, DataType]] = ()) -> StructType:
    """A silver table's expected schema: the source columns of its first load, icetide's metadata
    columns, then the columns added after them (by later runs, or ``_icetide_op`` in append tables)."""
    return StructType(
        [StructField(name, data_type) for name, data_type in (*source, *METADATA_COLUMNS, *added)]
    )
