"""What the job hands Iceberg and reads back as JSON when it plans a read on the driver: the key
ranges' filter (ExpressionParser) and a task's delete files (ScanTaskParser). Spark is used by the
tests that plan real tables (test_driver_merge, test_planned_scan); these hold the pure parts to
literal answers."""

from __future__ import annotations

import json
from decimal import Decimal
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from icetide_glue.driver.arrow_types import NotEligible
from icetide_glue.driver.silver import key_bounds, planned_file, referenced_data_file
from icetide_glue.merge.planned_scan import ranges_filter_json


def test_ranges_become_one_or_chain_of_closed_ranges() -> None:
    assert json.loads(ranges_filter_json("id", [(3, 3), (5, 9)], decimal=False)) == {
        "type": "or",
        "left": {"type": "eq", "term": "id", "value": 3},
        "right": {
            "type": "and",
            "left": {"type": "gt-eq", "term": "id", "value": 5},
            "right": {"type": "lt-eq", "term": "id", "value": 9},
        },
    }


def test_a_decimal_key_gets_text_literals_and_no_range_is_false() -> None:
    assert json.loads(ranges_filter_json("Amount", [(-7, -7)], decimal=True)) == {
        "type": "eq",
        "term": "Amount",
        "value": "-7",
    }
    assert json.loads(ranges_filter_json("id", [], decimal=False)) is False


def _bounds(*hex_values: str) -> dict[str, list[Any]]:
    return {"keys": [2147483546, 2147483545][: len(hex_values)], "values": list(hex_values)}


def test_the_referenced_data_file_is_named_or_found_from_equal_path_bounds() -> None:
    path_hex = b"/w/a.parquet".hex().upper()
    assert referenced_data_file({"referenced-data-file": "/w/b.parquet"}) == "/w/b.parquet"
    assert referenced_data_file({"lower-bounds": _bounds(path_hex), "upper-bounds": _bounds(path_hex)}) == (
        "/w/a.parquet"
    )
    other = b"/w/c.parquet".hex()
    assert referenced_data_file({"lower-bounds": _bounds(path_hex), "upper-bounds": _bounds(other)}) is None
    assert referenced_data_file({"lower-bounds": _bounds(path_hex)}) is None
    assert referenced_data_file({}) is None


def _task(**changes: object) -> dict[str, object]:
    task: dict[str, object] = {
        "data-file": {"file-path": "/w/a.parquet", "file-format": "PARQUET", "file-size-in-bytes": 100},
        "start": 0,
        "length": 100,
        "delete-files": [
            {
                "content": "POSITION_DELETES",
                "file-path": "/w/d.parquet",
                "file-format": "PARQUET",
                "file-size-in-bytes": 40,
                "record-count": 3,
                "referenced-data-file": "/w/a.parquet",
            }
        ],
    }
    task.update(changes)
    return task


def test_a_task_reads_as_its_data_file_and_delete_files() -> None:
    planned = planned_file(_task())
    assert (planned.path, planned.size_bytes) == ("/w/a.parquet", 100)
    assert [(d.path, d.size_bytes, d.data_file, d.record_count) for d in planned.delete_files] == [
        ("/w/d.parquet", 40, "/w/a.parquet", 3)
    ]
    assert planned_file(_task(**{"delete-files": []})).delete_files == ()


@pytest.mark.parametrize(
    ("changes", "reason"),
    [
        ({"length": 50}, "part of a data file"),
        ({"start": 10}, "part of a data file"),
        (
            {"data-file": {"file-path": "/w/a.orc", "file-format": "ORC", "file-size-in-bytes": 100}},
            "not Parquet",
        ),
        (
            {"delete-files": [{"content": "EQUALITY_DELETES", "file-format": "PARQUET"}]},
            "equality delete",
        ),
        (
            {"delete-files": [{"content": "POSITION_DELETES", "file-format": "PUFFIN"}]},
            "deletion vector",
        ),
    ],
)
def test_a_task_the_driver_cannot_read_exactly_is_not_eligible(
    changes: dict[str, object], reason: str
) -> None:
    with pytest.raises(NotEligible, match=reason):
        planned_file(_task(**changes))


def test_later_iceberg_spellings_of_the_enums_read_alike() -> None:
    task = _task(
        **{
            "data-file": {"file-path": "/w/a.parquet", "file-format": "parquet", "file-size-in-bytes": 100},
            "delete-files": [
                {
                    "content": "position-deletes",
                    "file-path": "/w/d.parquet",
                    "file-format": "parquet",
                    "file-size-in-bytes": 40,
                    "record-count": 3,
                }
            ],
        }
    )
    assert [d.path for d in planned_file(task).delete_files] == ["/w/d.parquet"]


def test_a_task_without_a_field_is_not_eligible() -> None:
    task = _task()
    del task["length"]
    with pytest.raises(NotEligible, match="length"):
        planned_file(task)


def test_row_group_key_bounds_pyarrow_cannot_extract_test_every_key(tmp_path: Path) -> None:
    """Iceberg stores a decimal of precision 18 or less as INT64: pyarrow gives no min for it."""
    keys = pa.table(
        {
            "small": pa.array([Decimal(3), Decimal(9)], pa.decimal128(10, 0)),
            "id": pa.array([3, 9], pa.int64()),
        }
    )
    pq.write_table(keys, tmp_path / "k.parquet", store_decimal_as_integer=True)
    group = pq.ParquetFile(tmp_path / "k.parquet").metadata.row_group(0)
    assert key_bounds(group.column(0).statistics) is None
    assert key_bounds(group.column(1).statistics) == (3, 9)
    assert key_bounds(None) is None
