"""The file size maintenance rewrites a small table into: one file per read slot, within bounds.

Literal cases of :func:`small_table_file_size` (Iceberg's 16 MiB split floor, the row-group floor,
the table's target as ceiling), the policy's own target winning, and one real rewrite on Spark.
"""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pytest
from pyspark.sql import SparkSession

from glue.dms_files import write_dms_file
from glue.silver_tables import CATALOG, SILVER_DATABASE, load_into_silver, silver_table
from icetide_contracts.maintenance import MaintenancePolicy
from icetide_glue.maintenance.maintain import (
    LiveFiles,
    even_range_bounds,
    live_data_bytes,
    maintain_table,
    rewrite_options,
    small_table_file_size,
)
from icetide_glue.silver import SilverTable

MIB = 1024 * 1024
SILVER_PROPERTIES = {
    "write.target-file-size-bytes": str(64 * MIB),
    "write.parquet.row-group-size-bytes": str(8 * MIB),
}


@pytest.mark.parametrize(
    ("live_bytes", "input_bytes", "read_slots", "properties", "expected"),
    [
        # A 20.3 MB table on two slots -> two files of half each.
        (20_318_707, 20_318_707, 2, SILVER_PROPERTIES, 10_159_354),
        # Odd byte counts round up, so the rewrite never makes one file more than there are slots.
        (31 * MIB + 1, 31 * MIB + 1, 2, SILVER_PROPERTIES, 16_252_929),
        # Many slots: no file smaller than one row group (it could not split finer).
        (20_000_000, 20_000_000, 40, SILVER_PROPERTIES, 8 * MIB),
        # 16 MiB per slot or more: row groups give every slot a split; the table's target stays.
        (32 * MIB, 32 * MIB, 2, SILVER_PROPERTIES, None),
        (40 * MIB, 40 * MIB, 2, SILVER_PROPERTIES, None),
        (640 * MIB - 1, 640 * MIB - 1, 40, SILVER_PROPERTIES, 16_777_216),
        # 30 MB of data files, a fifth of their rows deleted: small by its 24 MB of live rows, sized
        # by the 30 MB Iceberg plans from, or the rewrite would plan 3 files (30 / 12 MB).
        (24_000_000, 30_000_000, 2, SILVER_PROPERTIES, 15_000_000),
        # Small by live rows, even when the data files alone would not be.
        (30 * MIB, 40 * MIB, 2, SILVER_PROPERTIES, 20 * MIB),
        # Nothing to rewrite.
        (0, 0, 2, SILVER_PROPERTIES, None),
        # A table without the properties (a tombstone table): Iceberg's 128 MiB row groups.
        (100_000, 100_000, 2, {}, 128 * MIB),
        # A row group as large as the target: the target is as small as it gets.
        (
            10 * MIB,
            10 * MIB,
            2,
            {
                "write.target-file-size-bytes": str(8 * MIB),
                "write.parquet.row-group-size-bytes": str(16 * MIB),
            },
            None,
        ),
        # Unreadable properties count as absent.
        (
            10 * MIB,
            10 * MIB,
            2,
            {"write.target-file-size-bytes": "big", "write.parquet.row-group-size-bytes": "-1"},
            128 * MIB,
        ),
        # No slot count: one slot.
        (10 * MIB, 10 * MIB, 0, SILVER_PROPERTIES, 10 * MIB),
    ],
)
def test_small_table_file_size(
    live_bytes: int, input_bytes: int, read_slots: int, properties: dict[str, str], expected: int | None
) -> None:
    assert small_table_file_size(live_bytes, input_bytes, read_slots, properties) == expected


@pytest.mark.parametrize(
    ("files", "expected"),
    [
        # 1,000 rows in 20 MB, 100 of them deleted by position deletes: 18 MB left to rewrite.
        ({0: LiveFiles(4, 20_000_000, 1_000), 1: LiveFiles(3, 9_000, 100)}, 18_000_000),
        # Delete bytes are not data a rewrite writes.
        ({0: LiveFiles(1, 10_000_000, 500), 1: LiveFiles(1, 6_000_000, 0)}, 10_000_000),
        ({0: LiveFiles(1, 10_000_000, 500), 2: LiveFiles(1, 5_000, 250)}, 5_000_000),
        # Every row deleted, more deletes than rows, or no data file at all.
        ({0: LiveFiles(1, 10_000_000, 500), 1: LiveFiles(1, 5_000, 500)}, 0),
        ({0: LiveFiles(1, 10_000_000, 500), 1: LiveFiles(2, 5_000, 700)}, 0),
        ({}, 0),
        ({0: LiveFiles(1, 1_000, 0)}, 0),
    ],
)
def test_live_data_bytes(files: dict[int, LiveFiles], expected: int) -> None:
    assert live_data_bytes(files) == expected


def test_the_policys_target_wins_over_the_small_table_size() -> None:
    assert rewrite_options(MaintenancePolicy(target_file_size_bytes=128 * MIB), 10_159_354) == {
        "min-input-files": "5",
        "delete-file-threshold": "1",
        "target-file-size-bytes": "134217728",
    }
    assert rewrite_options(MaintenancePolicy(), 10_159_354)["target-file-size-bytes"] == "10159354"
    assert "target-file-size-bytes" not in rewrite_options(MaintenancePolicy(), None)


BRONZE = pa.schema(
    [("Op", pa.string()), ("dms_timestamp", pa.string()), ("id", pa.int64()), ("v", pa.string())]
)


@pytest.mark.spark
def test_a_small_table_is_rewritten_into_one_even_file_per_read_slot(
    spark: SparkSession, tmp_path: Path
) -> None:
    """Six runs of 2,000 rows and one deleting a fifth of them, then maintenance: as many files
    as the session's slots (2), rows split evenly, the session's range sampling left as it was.
    The table is far under 16 MiB per slot; row groups of 4 KiB make it hold many row groups, as
    a 20 MB table holds 8 MB ones."""
    name = "small_layout"
    for run in range(6):
        rows = [
            ("I", f"2026-11-2{run} 06:00:00", key, f"value {key:06d} of run {run}" * 3)
            for key in range(run * 2_000, (run + 1) * 2_000)
        ]
        bronze = tmp_path / f"run{run}"
        write_dms_file(bronze, f"2026112{run}-000000000.parquet", BRONZE, rows)
        load_into_silver(spark, name, f"layout-{run}", bronze)
        if run == 0:
            row_groups = "('write.parquet.row-group-size-bytes'='4096')"
            spark.sql(f"ALTER TABLE {silver_table(name)} SET TBLPROPERTIES {row_groups}")
    # A fifth of the rows deleted, spread over every file: the rewrite's input still holds them.
    deletes = [("D", "2026-11-27 06:00:00", key, "") for key in range(0, 12_000, 5)]
    write_dms_file(tmp_path / "deletes", "20261127-000000000.parquet", BRONZE, deletes)
    load_into_silver(spark, name, "layout-deletes", tmp_path / "deletes")
    assert spark.sparkContext.defaultParallelism == 2
    assert spark.sql(f"SELECT * FROM {silver_table(name)}.data_files").count() == 6  # noqa: S608
    assert spark.sql(f"SELECT * FROM {silver_table(name)}.delete_files").count() >= 1  # noqa: S608

    maintain_table(spark, SilverTable(CATALOG, SILVER_DATABASE, name), MaintenancePolicy(min_snapshots=1))

    files = spark.sql(f"SELECT record_count FROM {silver_table(name)}.files").collect()  # noqa: S608
    counts = sorted(int(row["record_count"]) for row in files)
    assert len(counts) == 2, f"files: {counts}"
    assert sum(counts) == 9_600
    # Range bounds from a sample of every row (even_range_bounds): one key in 100 either side.
    assert counts[0] >= 9_600 * 0.49, f"uneven files: {counts}"
    assert spark.table(silver_table(name)).count() == 9_600
    assert spark.conf.get("spark.sql.execution.rangeExchange.sampleSizePerPartition") == "100"


@pytest.mark.spark
def test_even_range_bounds_samples_more_rows_and_puts_the_sessions_value_back(spark: SparkSession) -> None:
    setting = "spark.sql.execution.rangeExchange.sampleSizePerPartition"
    spark.conf.set(setting, "250")
    try:
        with even_range_bounds(spark):
            assert spark.conf.get(setting) == "10000"
        assert spark.conf.get(setting) == "250"
        with pytest.raises(RuntimeError, match="rewrite failed"), even_range_bounds(spark, 500):
            raise RuntimeError("rewrite failed")
        assert spark.conf.get(setting) == "250"
    finally:
        spark.conf.unset(setting)
    assert spark.conf.get(setting) == "100"
