"""A table's rows in the files a batch's key ranges can touch, planned by Iceberg and read staged.

Checked against a small oracle of the test's own: each table is written as one data file per
band of keys the test chose, so the test knows every file's lowest and highest key and
which files the ranges meet (a range meets a file when they overlap). The read must hold every
live row whose key is in a range, and no row of another file (Iceberg's reader may also skip row
groups of a met file), each at the data file and position Iceberg's ordinary read gives it,
whatever rows were deleted; and the ranges must be nowhere in Spark's plan (the point of planning
them in Iceberg: icetide_glue.merge.planned_scan says why).
"""

from __future__ import annotations

import functools
import logging
import random
from decimal import Decimal
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from pyspark.sql import DataFrame, SparkSession

import icetide_glue.merge.apply as apply_module
from glue.dms_files import write_dms_file
from glue.silver_tables import CATALOG, SILVER_DATABASE, load_into_silver, silver_table
from icetide_glue.columns import VALUES_HASH
from icetide_glue.iceberg_tables import iceberg_table, jvm
from icetide_glue.merge.planned_scan import rows_in_key_ranges
from icetide_glue.table_sql import qualified_name

DATABASE = "planned"
MERGE_ON_READ = "TBLPROPERTIES ('format-version' = '2', 'write.delete.mode' = 'merge-on-read')"


def create_table(spark: SparkSession, name: str, key: str = "id", key_type: str = "bigint") -> str:
    table = qualified_name(CATALOG, DATABASE, name)
    spark.sql(f"CREATE NAMESPACE IF NOT EXISTS {qualified_name(CATALOG, DATABASE)}")
    spark.sql(f"DROP TABLE IF EXISTS {table}")
    quoted_key = f"`{key.replace('`', '``')}`"
    spark.sql(f"CREATE TABLE {table} ({quoted_key} {key_type}, v string) USING iceberg {MERGE_ON_READ}")
    return table


def append_bands(spark: SparkSession, table: str, bands: list[list[int]], key_type: str = "bigint") -> None:
    """One data file for each band of keys, in one append: each band is a partition of its own
    (one task writes each), none of them shuffled."""
    as_value = Decimal if key_type.startswith("decimal") else int
    schema = f"k {key_type}, v string"
    frames = [
        spark.createDataFrame([(as_value(key), f"v{key}") for key in keys], schema).coalesce(1)
        for keys in bands
    ]
    frame = functools.reduce(DataFrame.union, frames)
    frame.toDF(*spark.table(table).columns).writeTo(table).append()


def append_band(spark: SparkSession, table: str, keys: list[int], key_type: str = "bigint") -> None:
    """One data file holding ``keys``."""
    append_bands(spark, table, [keys], key_type)


def staged_rows(
    spark: SparkSession, table: str, ranges: list[tuple[int, int]], key: str = "id"
) -> set[tuple[object, ...]]:
    with rows_in_key_ranges(spark, table, key, ranges, row_positions=True) as frame:
        return {tuple(row) for row in frame.collect()}  # key, v, _file, _pos


def ordinary_rows(spark: SparkSession, table: str) -> dict[int, tuple[object, ...]]:
    """Iceberg's ordinary read of every live row, by key: (key, v, data file, position)."""
    rows = spark.sql(f"SELECT *, _file, _pos FROM {table}").collect()  # noqa: S608
    return {row[0]: tuple(row) for row in rows}


@pytest.mark.spark
@pytest.mark.parametrize("seed", range(5))
def test_the_read_holds_the_rows_in_the_ranges_and_none_of_the_files_they_miss(
    spark: SparkSession, seed: int, caplog: pytest.LogCaptureFixture
) -> None:
    rng = random.Random(seed)
    table = create_table(spark, f"bands_{seed}")
    bands: list[list[int]] = []
    start = rng.randint(-500, 500)
    for _ in range(rng.randint(3, 9)):
        width = rng.choice([1, 5, 40, 200])
        band = sorted(rng.sample(range(start, start + width * 2), width))
        bands.append(band)
        start += width * 2 + rng.choice([0, 1, 30])
    append_bands(spark, table, bands)
    every_key = [key for band in bands for key in band]
    deleted = set(rng.sample(every_key, len(every_key) // 5))
    if deleted:
        spark.sql(f"DELETE FROM {table} WHERE id IN ({', '.join(map(str, sorted(deleted)))})")  # noqa: S608
    low, high = bands[0][0] - 20, bands[-1][-1] + 20
    ranges: list[tuple[int, int]] = []
    position = low
    while position < high and len(ranges) < rng.randint(1, 6):
        first = position + rng.randint(0, (high - low) // 3)
        ranges.append((first, first + rng.choice([0, 0, 2, 15, 90])))
        position = ranges[-1][1] + rng.randint(2, 60)
    met = [band for band in bands if any(band[0] <= r_high and band[-1] >= r_low for r_low, r_high in ranges)]
    live = ordinary_rows(spark, table)

    with caplog.at_level(logging.INFO, logger="icetide_glue.merge.planned_scan"):
        found = staged_rows(spark, table, ranges)

    in_ranges = {row for key, row in live.items() if any(low <= key <= high for low, high in ranges)}
    of_met_files = {live[key] for band in met for key in band if key not in deleted}
    assert in_ranges <= found <= of_met_files, (ranges, [(band[0], band[-1]) for band in bands])
    (scan,) = [record.scan for record in caplog.records if hasattr(record, "scan")]
    assert (scan["data_files"], scan["skipped_data_files"]) == (len(met), len(bands) - len(met))
    assert scan["delete_files"] <= len(met) and (scan["delete_files"] > 0) == any(
        key in deleted for band in met for key in band
    )


@pytest.mark.spark
def test_no_range_reads_every_file_and_the_plan_holds_no_range(spark: SparkSession) -> None:
    table = create_table(spark, "no_range_in_plan")
    append_bands(spark, table, [[10, 11, 12], [987_654_321, 987_654_329]])

    assert {row[0] for row in staged_rows(spark, table, [])} == {10, 11, 12, 987_654_321, 987_654_329}
    with rows_in_key_ranges(spark, table, "id", [(987_654_320, 987_654_330)]) as frame:
        plan = frame._jdf.queryExecution().executedPlan().toString()
        assert sorted(row[0] for row in frame.collect()) == [987_654_321, 987_654_329]
    assert "987654320" not in plan and "987654330" not in plan
    assert "Filter (" not in plan  # no filter operator ("RuntimeFilters: []" is the scan's)


def _staged_set_ids(spark: SparkSession, table: str) -> list[str]:
    manager = jvm(spark).org.apache.iceberg.spark.ScanTaskSetManager.get()
    return list(manager.fetchSetIds(iceberg_table(spark, table)))


@pytest.mark.spark
def test_no_staged_task_outlives_the_read_even_when_it_fails(spark: SparkSession) -> None:
    table = create_table(spark, "staged_tasks_go")
    append_band(spark, table, [1, 2, 3])
    with rows_in_key_ranges(spark, table, "id", [(2, 2)]) as frame:
        assert len(_staged_set_ids(spark, table)) == 1
        assert len(frame.collect()) == 3  # files are chosen, not rows: the whole file is read
    assert _staged_set_ids(spark, table) == []

    with pytest.raises(RuntimeError, match="inside"), rows_in_key_ranges(spark, table, "id", [(1, 3)]):
        raise RuntimeError("a failure inside the read")
    assert _staged_set_ids(spark, table) == []


@pytest.mark.spark
def test_ranges_that_meet_no_file_and_a_table_without_a_snapshot_read_no_rows(spark: SparkSession) -> None:
    table = create_table(spark, "nothing_to_read")
    assert staged_rows(spark, table, [(1, 5)]) == set()
    assert staged_rows(spark, table, []) == set()
    append_band(spark, table, [100, 101])
    assert staged_rows(spark, table, [(1, 5), (200, 300)]) == set()
    assert _staged_set_ids(spark, table) == []


@pytest.mark.parametrize(
    ("key", "key_type", "values"),
    [
        ("id", "int", [-(2**31), 7, 2**31 - 1]),
        ("Odd `Key`", "bigint", [-(2**63), 5, 2**63 - 1]),
        ("id", "decimal(38, 0)", [-(10**37), 3, 10**37]),
    ],
)
@pytest.mark.spark
def test_every_whole_number_key_type_is_planned_to_its_limits(
    spark: SparkSession, key: str, key_type: str, values: list[int]
) -> None:
    table = create_table(spark, f"limits_{key_type.split('(')[0]}", key=key, key_type=key_type)
    append_bands(spark, table, [[value] for value in values], key_type)
    as_read = Decimal if key_type.startswith("decimal") else int

    def keys_read(ranges: list[tuple[int, int]]) -> list[int]:
        # The key as silver's schema spells it, whatever case the caller uses.
        return sorted(int(str(row[0])) for row in staged_rows(spark, table, ranges, key=key.upper()))

    assert keys_read([(values[0], values[0])]) == [values[0]]
    assert keys_read([(values[1] - 1, values[2])]) == [values[1], values[2]]
    assert keys_read([(values[0] + 1, values[1] - 1)]) == []
    assert isinstance(staged_row_key(spark, table, key), as_read)


def staged_row_key(spark: SparkSession, table: str, key: str) -> object:
    with rows_in_key_ranges(spark, table, key, []) as frame:
        row = frame.first()
        assert row is not None
        return row[0]


@pytest.mark.spark
def test_positions_hold_across_row_groups_and_splits_and_row_groups_out_of_range_are_skipped(
    spark: SparkSession,
) -> None:
    table = create_table(spark, "row_groups")
    # Row groups of about 2 KB and splits of 4 KB: one data file read as several row groups and tasks.
    small = {"write.parquet.row-group-size-bytes": "2048", "read.split.target-size": "4096"}
    settings = ", ".join(f"'{name}' = '{value}'" for name, value in small.items())
    spark.sql(f"ALTER TABLE {table} SET TBLPROPERTIES ({settings})")
    append_band(spark, table, list(range(3000)))
    rng = random.Random(3)
    deleted = sorted(rng.sample(range(3000), 300))
    spark.sql(f"DELETE FROM {table} WHERE id IN ({', '.join(map(str, deleted))})")  # noqa: S608
    (path,) = [row[0] for row in spark.table(f"{table}.data_files").select("file_path").collect()]
    assert pq.ParquetFile(path.removeprefix("file:")).metadata.num_row_groups > 4
    ranges = [(700, 705), (1500, 2100)]
    live = ordinary_rows(spark, table)

    found = staged_rows(spark, table, ranges)

    in_ranges = {row for key, row in live.items() if any(low <= key <= high for low, high in ranges)}
    assert in_ranges <= found <= set(live.values())
    assert len(found) < len(live)  # the row groups far from both ranges were skipped


@pytest.mark.spark
def test_an_unknown_key_is_refused_by_name(spark: SparkSession) -> None:
    table = create_table(spark, "unknown_key")
    append_band(spark, table, [1])
    with pytest.raises(ValueError, match="'nope' is not a column of"):
        staged_rows(spark, table, [(1, 1)], key="nope")


BRONZE = pa.schema(
    [("Op", pa.string()), ("dms_timestamp", pa.string()), ("id", pa.int64()), ("v", pa.int64())]
)


@pytest.mark.spark
def test_a_run_plans_silver_at_its_base_snapshot_and_its_tombstones_without_positions(
    spark: SparkSession, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The job's wiring: silver read with positions as of the snapshot the commit builds on, the
    tombstone table without positions, and a table with rows from before the stored hash read as
    of the commit that filled their hash."""
    table = "planned_wiring"
    planned: list[tuple[object, ...]] = []
    real = apply_module.rows_in_key_ranges

    def recording(spark_: SparkSession, sql_name: str, key: str, ranges: Any, **options: Any) -> Any:
        planned.append((sql_name, key, list(ranges), options))
        return real(spark_, sql_name, key, ranges, **options)

    monkeypatch.setattr(apply_module, "rows_in_key_ranges", recording)

    def run(number: int, rows: list[tuple[object, ...]]) -> dict[str, Any]:
        bronze = tmp_path / f"run{number}"
        write_dms_file(bronze, f"20261121-07{number:04d}000.parquet", BRONZE, rows)
        return load_into_silver(spark, table, f"{table}-{number}", bronze, merge_plan="spark")

    def main_snapshot() -> int:
        return int(iceberg_table(spark, silver_table(table), refreshed=True).currentSnapshot().snapshotId())

    run(1, [("I", "2026-11-21 07:00:01", key, key) for key in range(1, 51)])
    planned.clear()
    base = main_snapshot()
    second = [("U", "2026-11-21 08:00:01", 10, -10), ("U", "2026-11-21 08:00:01", 11, -11)]
    manifest = run(2, [*second, ("D", "2026-11-21 08:00:01", 40, 40)])
    assert (manifest["rowsUpdated"], manifest["rowsDeleted"]) == (2, 1)
    silver = qualified_name(CATALOG, SILVER_DATABASE, table)
    ranges = [(10, 11), (40, 40)]
    tombstones = qualified_name(CATALOG, SILVER_DATABASE, table + "__icetide_tombstones")
    assert planned == [
        (silver, "id", ranges, {"row_positions": True, "snapshot_id": base}),
        (tombstones, "id", ranges, {"row_positions": False, "snapshot_id": None}),
    ]

    # An earlier icetide's table: no hash column; the next run adds it, null in every old row,
    # fills it in a commit of its own, then reads silver once, as of that commit.
    spark.sql(f"ALTER TABLE {silver} DROP COLUMN {VALUES_HASH}")
    planned.clear()
    base = main_snapshot()
    manifest = run(3, [("U", "2026-11-21 09:00:01", 12, -12)])
    assert manifest["rowsUpdated"] == 1
    table_now = iceberg_table(spark, silver_table(table), refreshed=True)
    filled = int(table_now.snapshot(manifest["snapshotId"]).parentId())
    assert filled != base
    assert [call for call in planned if call[0] != tombstones] == [
        (silver, "id", [(12, 12)], {"row_positions": True, "snapshot_id": filled}),
    ]
