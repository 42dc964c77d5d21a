"""Later runs: one change per key (the latest), applied as ONE new state of silver; older ones never win."""

from __future__ import annotations

from decimal import Decimal
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from pyspark.sql import SparkSession
from pyspark.sql import functions as F
from pyspark.sql.types import DecimalType, IntegerType, StringType, TimestampType

from glue.conftest import LoadRun
from glue.dms_files import utc, write_dms_file
from glue.frames import assert_frame_equal, silver_schema
from glue.silver_tables import load_into_silver, silver_table, snapshot_ids

pytestmark = pytest.mark.spark

FULL_LOAD = pa.schema(
    [
        ("dms_timestamp", pa.string()),
        ("id", pa.int32()),
        ("name", pa.string()),
        ("amount", pa.decimal128(10, 2)),
        ("updated_at", pa.timestamp("us", tz="UTC")),
    ]
)
# DMS puts Op first; the change sequence header column comes from a transformation rule.
CDC = pa.schema(
    [
        ("Op", pa.string()),
        ("dms_timestamp", pa.string()),
        ("AR_H_CHANGE_SEQ", pa.string()),
        *[FULL_LOAD.field(i) for i in range(1, 5)],
    ]
)
SILVER = silver_schema(
    ("id", IntegerType()),
    ("name", StringType()),
    ("amount", DecimalType(10, 2)),
    ("updated_at", TimestampType()),
)


def d(text: str) -> Decimal:
    return Decimal(text)


def seq(n: int) -> str:
    return f"{n:020d}"


@pytest.fixture(scope="module")
def cdc_runs(tmp_path_factory: pytest.TempPathFactory, spark: SparkSession) -> dict[str, dict[str, Any]]:
    """A full load, then one CDC run with several changes per key."""

    def run(run_id: str, bronze: Path) -> dict[str, Any]:
        return load_into_silver(spark, "cdc", run_id, bronze, watermark_column="updated_at")

    full_load = tmp_path_factory.mktemp("cdc_full_load")
    write_dms_file(
        full_load,
        "LOAD00000001.parquet",
        FULL_LOAD,
        [
            ("2026-11-21 06:00:00.000000", 1, "one", d("1.00"), utc("2026-11-21 05:00:00")),
            ("2026-11-21 06:00:00.000000", 2, "two", d("2.00"), utc("2026-11-21 05:00:00")),
            ("2026-11-21 06:00:00.000000", 3, "three", d("3.00"), utc("2026-11-21 05:00:00")),
        ],
    )
    changes = tmp_path_factory.mktemp("cdc_changes")
    write_dms_file(
        changes,
        "20261121-070000000.parquet",
        CDC,
        [
            # key 4: I then U then D (the D comes in the next file)
            ("I", "2026-11-21 07:00:01.000000", seq(101), 4, "four", d("4.00"), utc("2026-11-21 07:00:01")),
            (
                "U",
                "2026-11-21 07:00:02.000000",
                seq(102),
                4,
                "four v2",
                d("4.50"),
                utc("2026-11-21 07:30:00.25"),
            ),
            # key 2: U then U at the same commit time; the higher sequence wins although it comes first
            (
                "U",
                "2026-11-21 07:00:05.000000",
                seq(202),
                2,
                "two by 202",
                d("22.00"),
                utc("2026-11-21 07:00:05"),
            ),
            (
                "U",
                "2026-11-21 07:00:05.000000",
                seq(201),
                2,
                "two by 201",
                d("21.00"),
                utc("2026-11-21 07:00:05"),
            ),
            # key 3: D then I
            ("D", "2026-11-21 07:00:06.000000", seq(301), 3, "three", d("3.00"), utc("2026-11-21 05:00:00")),
        ],
    )
    write_dms_file(
        changes,
        "20261121-070500000.parquet",
        CDC,
        [
            (
                "D",
                "2026-11-21 07:00:03.000000",
                seq(103),
                4,
                "four v2",
                d("4.50"),
                utc("2026-11-21 07:30:00.25"),
            ),
            (
                "I",
                "2026-11-21 07:00:07.000000",
                seq(302),
                3,
                "three again",
                d("33.00"),
                utc("2026-11-21 07:00:07"),
            ),
            ("D", "2026-11-21 07:00:04.000000", seq(401), 1, "one", d("1.00"), utc("2026-11-21 05:00:00")),
            ("I", "2026-11-21 07:00:08.000000", seq(501), 5, "five", d("5.00"), utc("2026-11-21 07:00:08")),
        ],
    )
    return {"full_load": run("cdc-1", full_load), "cdc": run("cdc-2", changes)}


AFTER_CDC = [
    (2, "two by 202", d("22.00"), utc("2026-11-21 07:00:05"), utc("2026-11-21 07:00:05"), seq(202), "cdc-2"),
    (3, "three again", d("33.00"), utc("2026-11-21 07:00:07"), utc("2026-11-21 07:00:07"), seq(302), "cdc-2"),
    (5, "five", d("5.00"), utc("2026-11-21 07:00:08"), utc("2026-11-21 07:00:08"), seq(501), "cdc-2"),
]


def test_latest_change_per_key_wins(spark: SparkSession, cdc_runs: dict[str, dict[str, Any]]) -> None:
    snapshot = cdc_runs["cdc"]["snapshotId"]
    assert_frame_equal(
        spark.read.option("snapshot-id", snapshot).table(silver_table("cdc")), AFTER_CDC, SILVER
    )


def test_manifest_counts_and_watermark(cdc_runs: dict[str, dict[str, Any]]) -> None:
    manifest = cdc_runs["cdc"]
    assert {
        k: manifest[k]
        for k in (
            "rowsRead",
            "rowsInserted",
            "rowsUpdated",
            "rowsDeleted",
            "rowsUnchanged",
            "newWatermark",
            "schemaChanges",
            "alreadyCommitted",
        )
    } == {
        "rowsRead": 9,
        "rowsInserted": 1,  # key 5
        "rowsUpdated": 2,  # keys 2 and 3
        "rowsDeleted": 1,  # key 1
        "rowsUnchanged": 1,  # key 4: inserted and deleted within the batch, never in silver
        # The largest value read, even though its row (key 4) was superseded and deleted.
        "newWatermark": "2026-11-21 07:30:00.250000",
        "schemaChanges": [],
        "alreadyCommitted": False,
    }


def test_each_run_is_one_new_state_of_main(spark: SparkSession, cdc_runs: dict[str, dict[str, Any]]) -> None:
    snapshots = {
        row["snapshot_id"]: (row["parent_id"], row["operation"], row["run_id"])
        for row in spark.table(f"{silver_table('cdc')}.snapshots")
        .select("snapshot_id", "parent_id", "operation", F.col("summary")["icetide.run-id"].alias("run_id"))
        .collect()
    }
    first, second = cdc_runs["full_load"]["snapshotId"], cdc_runs["cdc"]["snapshotId"]
    # The first load into the empty table appends (in key order). The CDC run both updates or
    # deletes rows silver holds and inserts new keys: a removal by position and an append in one
    # commit on top of the first run's; no other snapshot.
    assert snapshots[first][1:] == ("append", "cdc-1")
    assert snapshots[second] == (first, "overwrite", "cdc-2")
    assert len(snapshots) == 2
    made_current = [
        row["snapshot_id"]
        for row in spark.table(f"{silver_table('cdc')}.history").orderBy("made_current_at").collect()
    ]
    assert made_current == [first, second]


def test_changes_older_than_silver_change_nothing(
    spark: SparkSession, cdc_runs: dict[str, dict[str, Any]], load_run: LoadRun, tmp_path: Path
) -> None:
    before = snapshot_ids(spark, "cdc")
    write_dms_file(
        tmp_path,
        "20261121-060000000.parquet",
        CDC,
        [
            # older commit time than silver's row
            (
                "U",
                "2026-11-21 06:30:00.000000",
                seq(999),
                2,
                "stale two",
                d("0.00"),
                utc("2026-11-21 06:30:00"),
            ),
            # same commit time, lower sequence
            (
                "U",
                "2026-11-21 07:00:07.000000",
                seq(301),
                3,
                "stale three",
                d("0.00"),
                utc("2026-11-21 07:00:07"),
            ),
            # a delete older than the row it would remove
            ("D", "2026-11-21 07:00:07.999999", seq(999), 5, "five", d("5.00"), utc("2026-11-21 07:00:08")),
        ],
    )
    manifest = load_run("cdc", "cdc-late", tmp_path, watermark_column="updated_at")
    assert (manifest["rowsRead"], manifest["rowsUnchanged"], manifest["snapshotId"]) == (3, 3, None)
    assert (manifest["rowsInserted"], manifest["rowsUpdated"], manifest["rowsDeleted"]) == (0, 0, 0)
    assert snapshot_ids(spark, "cdc") == before
    assert_frame_equal(spark.table(silver_table("cdc")), AFTER_CDC, SILVER)


def test_hexadecimal_load_file_order_breaks_commit_time_ties(
    spark: SparkSession, load_run: LoadRun, tmp_path: Path
) -> None:
    # Written A first, so neither write order nor a decimal reading of the number can pick the winner.
    write_dms_file(
        tmp_path,
        "LOAD0000000A.parquet",
        FULL_LOAD,
        [("2026-11-21 06:00:00.000000", 1, "from A", d("10.00"), utc("2026-11-21 05:00:00"))],
    )
    write_dms_file(
        tmp_path,
        "LOAD00000009.parquet",
        FULL_LOAD,
        [("2026-11-21 06:00:00.000000", 1, "from 9", d("9.00"), utc("2026-11-21 05:00:00"))],
    )
    load_run("hex_order", "hex-1", tmp_path)
    assert_frame_equal(
        spark.table(silver_table("hex_order")),
        [(1, "from A", d("10.00"), utc("2026-11-21 05:00:00"), utc("2026-11-21 06:00:00"), None, "hex-1")],
        SILVER,
    )


def test_a_boundary_row_read_again_with_a_newer_transfer_time_is_unchanged(
    tmp_path_factory: pytest.TempPathFactory, spark: SparkSession
) -> None:
    """A gte watermark re-reads its boundary rows every run, with a newer DMS transfer time.

    Identical values must neither count as updates nor be rewritten; a changed row in the same
    batch still is.
    """
    first = tmp_path_factory.mktemp("reread_first")
    write_dms_file(
        first,
        "LOAD00000001.parquet",
        FULL_LOAD,
        [
            ("2026-11-21 06:00:00.000000", 1, "one", d("1.00"), utc("2026-11-21 05:00:00")),
            ("2026-11-21 06:00:00.000000", 2, "two", d("2.00"), utc("2026-11-21 05:00:00")),
        ],
    )
    load_into_silver(spark, "reread", "reread-1", first, watermark_column="updated_at")
    snapshots_before = snapshot_ids(spark, "reread")

    again = tmp_path_factory.mktemp("reread_again")
    write_dms_file(
        again,
        "LOAD00000001.parquet",
        FULL_LOAD,
        [("2026-11-21 07:00:00.000000", 1, "one", d("1.00"), utc("2026-11-21 05:00:00"))],
    )
    unchanged = load_into_silver(spark, "reread", "reread-2", again, watermark_column="updated_at")
    assert (unchanged["rowsUpdated"], unchanged["rowsUnchanged"], unchanged["snapshotId"]) == (0, 1, None)
    assert snapshot_ids(spark, "reread") == snapshots_before

    mixed = tmp_path_factory.mktemp("reread_mixed")
    write_dms_file(
        mixed,
        "LOAD00000001.parquet",
        FULL_LOAD,
        [
            ("2026-11-21 08:00:00.000000", 1, "one", d("1.00"), utc("2026-11-21 05:00:00")),
            ("2026-11-21 08:00:00.000000", 2, "two v2", d("2.50"), utc("2026-11-21 07:45:00")),
        ],
    )
    manifest = load_into_silver(spark, "reread", "reread-3", mixed, watermark_column="updated_at")
    assert (manifest["rowsUpdated"], manifest["rowsUnchanged"]) == (1, 1)
    assert_frame_equal(
        spark.table(silver_table("reread")),
        [
            (1, "one", d("1.00"), utc("2026-11-21 05:00:00"), utc("2026-11-21 06:00:00"), None, "reread-1"),
            (
                2,
                "two v2",
                d("2.50"),
                utc("2026-11-21 07:45:00"),
                utc("2026-11-21 08:00:00"),
                None,
                "reread-3",
            ),
        ],
        SILVER,
    )
