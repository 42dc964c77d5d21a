"""Tables without keys: append-only when asked, a clear refusal when a merge is asked, and the
watermark's boundary rows (re-read by a gte/between run) never appended twice."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from pyspark.sql import SparkSession
from pyspark.sql import functions as F
from pyspark.sql.types import LongType, StringType, TimestampType

from glue.conftest import LoadRun
from glue.dms_files import utc, write_dms_file
from glue.frames import assert_frame_equal, silver_schema
from glue.silver_tables import silver_table, snapshot_ids
from icetide_glue.arguments import JobArguments, LoadMode
from icetide_glue.errors import InvalidJobArguments, MissingPrimaryKeys

pytestmark = pytest.mark.spark

EVENTS = pa.schema(
    [("Op", pa.string()), ("dms_timestamp", pa.string()), ("event", pa.string()), ("n", pa.int64())]
)


# load_run keywords of a key-less table: append-only, its watermark on n.
APPEND_ONLY: dict[str, Any] = {"keys": (), "load_mode": LoadMode.APPEND}
APPEND_BY_N: dict[str, Any] = {**APPEND_ONLY, "watermark_column": "n"}


def write_events(
    folder: Path, *rows: tuple[str, str, str, int], file_name: str = "LOAD00000001.parquet"
) -> None:
    """One DMS file of EVENTS rows (Op, dms_timestamp, event, n) in ``folder``."""
    write_dms_file(folder, file_name, EVENTS, rows)


def test_keyless_table_appends_every_row(spark: SparkSession, load_run: LoadRun, tmp_path: Path) -> None:
    write_events(
        tmp_path / "r1", ("I", "2026-11-21 06:00:00", "login", 1), ("I", "2026-11-21 06:00:00", "login", 1)
    )
    write_events(
        tmp_path / "r2",
        ("I", "2026-11-21 07:00:00", "logout", 2),
        ("D", "2026-11-21 07:00:01", "login", 1),
        file_name="20261121-070000000.parquet",
    )
    first = load_run("events", "events-1", tmp_path / "r1", **APPEND_ONLY)
    second = load_run("events", "events-2", tmp_path / "r2", **APPEND_BY_N)
    assert (first["rowsRead"], first["rowsInserted"]) == (2, 2)
    assert (second["rowsRead"], second["rowsInserted"], second["rowsDeleted"], second["newWatermark"]) == (
        2,
        2,
        0,
        2,
    )
    assert_frame_equal(
        spark.table(silver_table("events")),
        [
            # duplicates are kept, and a D is recorded as a fact, not applied
            ("login", 1, utc("2026-11-21 06:00:00"), None, "events-1", "I"),
            ("login", 1, utc("2026-11-21 06:00:00"), None, "events-1", "I"),
            ("logout", 2, utc("2026-11-21 07:00:00"), None, "events-2", "I"),
            ("login", 1, utc("2026-11-21 07:00:01"), None, "events-2", "D"),
        ],
        silver_schema(
            ("event", StringType()),
            ("n", LongType()),
            added=(("_icetide_op", StringType()),),
        ),
    )
    run_ids = (
        spark.table(f"{silver_table('events')}.snapshots")
        .orderBy("committed_at")
        .select(F.col("summary")["icetide.run-id"])
        .collect()
    )
    assert [row[0] for row in run_ids] == ["events-1", "events-2"]


def test_merge_without_keys_is_refused_before_any_work() -> None:
    with pytest.raises(MissingPrimaryKeys, match=r"silver\.events: --load_mode merge needs --primary_keys"):
        JobArguments(target_table="silver.events", run_id="events-3", bronze_uri="/nowhere", catalog="local")


def test_rows_at_the_watermark_read_again_are_not_appended_again(
    spark: SparkSession, load_run: LoadRun, tmp_path: Path
) -> None:
    # The blog's between filter: run 1 reads n <= 1000; run 2 starts AT the watermark 1000, so it
    # reads row 1000 again, next to the new row 1001.
    write_events(
        tmp_path / "r1", ("I", "2026-11-21 06:00:00", "a", 999), ("I", "2026-11-21 06:00:00", "b", 1000)
    )
    write_events(
        tmp_path / "r2", ("I", "2026-11-21 07:00:00", "b", 1000), ("I", "2026-11-21 07:00:00", "c", 1001)
    )
    load_run("boundary", "boundary-1", tmp_path / "r1", **APPEND_BY_N)

    second = load_run("boundary", "boundary-2", tmp_path / "r2", append_after="1000", **APPEND_BY_N)

    assert {key: second[key] for key in ("rowsRead", "rowsInserted", "rowsUnchanged", "newWatermark")} == {
        "rowsRead": 2,
        "rowsInserted": 1,
        "rowsUnchanged": 1,
        "newWatermark": 1001,
    }
    assert_frame_equal(
        spark.table(silver_table("boundary")),
        [
            ("a", 999, utc("2026-11-21 06:00:00"), None, "boundary-1", "I"),
            ("b", 1000, utc("2026-11-21 06:00:00"), None, "boundary-1", "I"),
            ("c", 1001, utc("2026-11-21 07:00:00"), None, "boundary-2", "I"),
        ],
        silver_schema(("event", StringType()), ("n", LongType()), added=(("_icetide_op", StringType()),)),
    )


def test_a_run_holding_only_boundary_rows_commits_nothing(
    spark: SparkSession, load_run: LoadRun, tmp_path: Path
) -> None:
    write_events(tmp_path / "r1", ("I", "2026-11-21 06:00:00", "b", 1000))
    load_run("only_boundary", "only-boundary-1", tmp_path / "r1", **APPEND_BY_N)
    before = snapshot_ids(spark, "only_boundary")

    second = load_run("only_boundary", "only-boundary-2", tmp_path / "r1", append_after="1000", **APPEND_BY_N)

    assert (second["rowsRead"], second["rowsInserted"], second["rowsUnchanged"]) == (1, 0, 1)
    assert (second["snapshotId"], second["newWatermark"]) == (None, 1000)
    assert snapshot_ids(spark, "only_boundary") == before


CHANGES_AT = pa.schema(
    [("dms_timestamp", pa.string()), ("updated_at", pa.timestamp("us", tz="UTC")), ("event", pa.string())]
)


def test_a_timestamp_boundary_is_read_as_utc_whatever_the_session_zone(
    spark: SparkSession, load_run: LoadRun, tmp_path: Path
) -> None:
    write_dms_file(
        tmp_path / "r1",
        "LOAD00000001.parquet",
        CHANGES_AT,
        [
            ("2026-11-21 07:00:00", utc("2026-11-21 06:00:00"), "at the watermark"),
            ("2026-11-21 07:00:00", utc("2026-11-21 06:00:00.000001"), "just after"),
        ],
    )
    zone = spark.conf.get("spark.sql.session.timeZone")
    # Read in New York time, "06:00:00" would be 11:00 UTC and both rows would be dropped.
    spark.conf.set("spark.sql.session.timeZone", "America/New_York")
    try:
        manifest = load_run(
            "boundary_ts",
            "boundary-ts-1",
            tmp_path / "r1",
            watermark_column="updated_at",
            append_after="2026-11-21 06:00:00",
            **APPEND_ONLY,
        )
    finally:
        spark.conf.set("spark.sql.session.timeZone", zone)

    assert (manifest["rowsInserted"], manifest["rowsUnchanged"]) == (1, 1)
    assert manifest["newWatermark"] == "2026-11-21 06:00:00.000001"
    assert_frame_equal(
        spark.table(silver_table("boundary_ts")),
        [
            (
                utc("2026-11-21 06:00:00.000001"),
                "just after",
                utc("2026-11-21 07:00:00"),
                None,
                "boundary-ts-1",
                "I",
            )
        ],
        silver_schema(
            ("updated_at", TimestampType()), ("event", StringType()), added=(("_icetide_op", StringType()),)
        ),
    )


def test_a_boundary_that_is_no_value_of_the_column_fails_before_any_write(
    spark: SparkSession, load_run: LoadRun, tmp_path: Path
) -> None:
    write_events(tmp_path / "r1", ("I", "2026-11-21 06:00:00", "b", 1000))

    with pytest.raises(
        InvalidJobArguments,
        match=r"--append_after 'yesterday' is not a value of the watermark column 'n' \(type bigint\)",
    ):
        load_run("bad_boundary", "bad-boundary-1", tmp_path / "r1", append_after="yesterday", **APPEND_BY_N)
    assert not spark.catalog.tableExists(silver_table("bad_boundary"))


def test_a_merge_ignores_the_boundary(spark: SparkSession, load_run: LoadRun, tmp_path: Path) -> None:
    # A merge absorbs re-read boundary rows on the key: a new key at the boundary is still inserted.
    write_events(tmp_path / "r1", ("I", "2026-11-21 06:00:00", "b", 1000))

    manifest = load_run(
        "merge_boundary",
        "merge-boundary-1",
        tmp_path / "r1",
        keys=("n",),
        watermark_column="n",
        append_after="1000",
    )

    assert (manifest["rowsInserted"], manifest["rowsUnchanged"]) == (1, 0)
