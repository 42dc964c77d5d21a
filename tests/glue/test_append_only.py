"""Tables without keys: append-only when asked, a clear refusal when a merge is asked, and a row
re-read by any filter (the watermark's boundary rows of gte/between, the same rows again with lte,
eq, no filter...) never appended twice, while rows the source itself repeats all land."""

from __future__ import annotations

import hashlib
import random
import time
from collections import Counter
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.types import LongType, StringType, TimestampType

from glue.conftest import LoadRun
from glue.dms_files import utc, write_dms_file
from glue.frames import assert_frame_equal, silver_schema
from glue.silver_tables import silver_table, snapshot_ids
from icetide_glue.arguments import JobArguments, LoadMode
from icetide_glue.errors import MissingPrimaryKeys
from seeds import EachSeed

pytestmark = pytest.mark.spark

EVENTS = pa.schema(
    [("Op", pa.string()), ("dms_timestamp", pa.string()), ("event", pa.string()), ("n", pa.int64())]
)


# load_run keywords of a key-less table: append-only, its watermark on n.
APPEND_ONLY: dict[str, Any] = {"keys": (), "load_mode": LoadMode.APPEND}
APPEND_BY_N: dict[str, Any] = {**APPEND_ONLY, "watermark_column": "n"}


def without_row_hash(frame: DataFrame) -> DataFrame:
    """Silver without its content hash, whose exact bytes one test pins on its own."""
    return frame.drop("_icetide_row_hash")


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
        without_row_hash(spark.table(silver_table("events"))),
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
    # reads row 1000 again, next to the new row 1001 and a new row that also holds 1000.
    write_events(
        tmp_path / "r1", ("I", "2026-11-21 06:00:00", "a", 999), ("I", "2026-11-21 06:00:00", "b", 1000)
    )
    write_events(
        tmp_path / "r2",
        ("I", "2026-11-21 07:00:00", "b", 1000),
        ("I", "2026-11-21 07:00:00", "c", 1001),
        ("I", "2026-11-21 07:00:00", "late", 1000),
    )
    load_run("boundary", "boundary-1", tmp_path / "r1", **APPEND_BY_N)

    second = load_run("boundary", "boundary-2", tmp_path / "r2", **APPEND_BY_N)

    assert {key: second[key] for key in ("rowsRead", "rowsInserted", "rowsUnchanged", "newWatermark")} == {
        "rowsRead": 3,
        "rowsInserted": 2,
        "rowsUnchanged": 1,
        "newWatermark": 1001,
    }
    assert_frame_equal(
        without_row_hash(spark.table(silver_table("boundary"))),
        [
            ("a", 999, utc("2026-11-21 06:00:00"), None, "boundary-1", "I"),
            ("b", 1000, utc("2026-11-21 06:00:00"), None, "boundary-1", "I"),
            ("c", 1001, utc("2026-11-21 07:00:00"), None, "boundary-2", "I"),
            # a row arriving after run 1 with the watermark's exact value is not lost
            ("late", 1000, utc("2026-11-21 07:00:00"), None, "boundary-2", "I"),
        ],
        silver_schema(("event", StringType()), ("n", LongType()), added=(("_icetide_op", StringType()),)),
    )


def test_a_run_holding_only_rows_silver_has_commits_nothing(
    spark: SparkSession, load_run: LoadRun, tmp_path: Path
) -> None:
    write_events(tmp_path / "r1", ("I", "2026-11-21 06:00:00", "b", 1000))
    load_run("only_boundary", "only-boundary-1", tmp_path / "r1", **APPEND_BY_N)
    before = snapshot_ids(spark, "only_boundary")

    second = load_run("only_boundary", "only-boundary-2", tmp_path / "r1", **APPEND_BY_N)

    assert (second["rowsRead"], second["rowsInserted"], second["rowsUnchanged"]) == (1, 0, 1)
    assert (second["snapshotId"], second["newWatermark"]) == (None, 1000)
    assert snapshot_ids(spark, "only_boundary") == before


def test_the_row_hash_is_sha256_of_the_rows_content_as_json_text(
    spark: SparkSession, load_run: LoadRun, tmp_path: Path
) -> None:
    # Pinned so a change of the content's text form (which would append every re-read row once
    # more after an upgrade) cannot pass unnoticed. Null fields are left out.
    write_dms_file(
        tmp_path / "r1",
        "LOAD00000001.parquet",
        pa.schema([("dms_timestamp", pa.string()), ("event", pa.string()), ("n", pa.int64()),
                   ("at", pa.timestamp("us", tz="UTC")), ("raw", pa.binary()), ("note", pa.string())]),
        [("2026-11-21 06:00:00", "login", 1, utc("2026-11-21 06:00:00.000001"), b"\x01\xff", None)],
    )  # fmt: skip
    load_run("hashed", "hashed-1", tmp_path / "r1", **APPEND_ONLY)

    stored = spark.table(silver_table("hashed")).select("_icetide_row_hash").first()

    assert stored is not None
    text = '{"event":"login","n":"1","at":"1795240800000001","raw":"01FF","_icetide_op":"I"}'
    assert bytes(stored[0]) == hashlib.sha256(text.encode()).digest()


CHANGES_AT = pa.schema(
    [("dms_timestamp", pa.string()), ("updated_at", pa.timestamp("us", tz="UTC")), ("event", pa.string())]
)


def test_a_timestamp_row_read_again_in_another_session_zone_is_still_recognised(
    spark: SparkSession, load_run: LoadRun, tmp_path: Path
) -> None:
    write_dms_file(
        tmp_path / "r1",
        "LOAD00000001.parquet",
        CHANGES_AT,
        [("2026-11-21 07:00:00", utc("2026-11-21 06:00:00"), "at the watermark")],
    )
    write_dms_file(
        tmp_path / "r2",
        "LOAD00000001.parquet",
        CHANGES_AT,
        [
            ("2026-11-21 08:00:00", utc("2026-11-21 06:00:00"), "at the watermark"),
            ("2026-11-21 08:00:00", utc("2026-11-21 06:00:00.000001"), "just after"),
        ],
    )
    by_time: dict[str, Any] = {"watermark_column": "updated_at", **APPEND_ONLY}
    load_run("boundary_ts", "boundary-ts-1", tmp_path / "r1", **by_time)
    zone = spark.conf.get("spark.sql.session.timeZone")
    # Text in New York time would differ from the first run's: the hash must not depend on it.
    spark.conf.set("spark.sql.session.timeZone", "America/New_York")
    try:
        manifest = load_run("boundary_ts", "boundary-ts-2", tmp_path / "r2", **by_time)
    finally:
        spark.conf.set("spark.sql.session.timeZone", zone or "UTC")

    assert (manifest["rowsInserted"], manifest["rowsUnchanged"]) == (1, 1)
    assert manifest["newWatermark"] == "2026-11-21 06:00:00.000001"
    assert_frame_equal(
        without_row_hash(spark.table(silver_table("boundary_ts"))),
        [
            (
                utc("2026-11-21 06:00:00"),
                "at the watermark",
                utc("2026-11-21 07:00:00"),
                None,
                "boundary-ts-1",
                "I",
            ),
            (
                utc("2026-11-21 06:00:00.000001"),
                "just after",
                utc("2026-11-21 08:00:00"),
                None,
                "boundary-ts-2",
                "I",
            ),
        ],
        silver_schema(
            ("updated_at", TimestampType()), ("event", StringType()), added=(("_icetide_op", StringType()),)
        ),
    )


def test_a_row_in_the_daylight_saving_fold_of_the_machines_zone_is_still_recognised(
    spark: SparkSession, load_run: LoadRun, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # 2026-11-01 06:30 UTC is the second 01:30 in New York, an hour that happens twice that night. Bounds that
    # passed through a Python datetime in that zone came back an hour early and missed silver's row.
    monkeypatch.setenv("TZ", "America/New_York")
    time.tzset()
    try:
        write_dms_file(
            tmp_path / "r1",
            "LOAD00000001.parquet",
            CHANGES_AT,
            [("2026-11-01 07:00:00", utc("2026-11-01 06:30:00"), "in the fold")],
        )
        by_time: dict[str, Any] = {"watermark_column": "updated_at", **APPEND_ONLY}
        first = load_run("fold_ts", "fold-ts-1", tmp_path / "r1", **by_time)
        second = load_run("fold_ts", "fold-ts-2", tmp_path / "r1", **by_time)
    finally:
        monkeypatch.undo()
        time.tzset()

    assert (first["rowsInserted"], second["rowsInserted"], second["rowsUnchanged"]) == (1, 0, 1)
    assert spark.table(silver_table("fold_ts")).count() == 1


def test_a_column_added_later_with_nulls_does_not_make_old_rows_new(
    spark: SparkSession, load_run: LoadRun, tmp_path: Path
) -> None:
    write_events(tmp_path / "r1", ("I", "2026-11-21 06:00:00", "a", 1))
    wider = pa.schema([*EVENTS, ("extra", pa.string())])
    write_dms_file(
        tmp_path / "r2",
        "LOAD00000001.parquet",
        wider,
        [("I", "2026-11-21 07:00:00", "a", 1, None), ("I", "2026-11-21 07:00:00", "a", 1, "new")],
    )
    load_run("widened", "widened-1", tmp_path / "r1", **APPEND_ONLY)

    second = load_run("widened", "widened-2", tmp_path / "r2", **APPEND_ONLY)

    assert (second["rowsInserted"], second["rowsUnchanged"]) == (1, 1)
    rows = spark.table(silver_table("widened")).collect()
    assert Counter((row["event"], row["n"], row["extra"]) for row in rows) == Counter(
        [("a", 1, None), ("a", 1, "new")]
    )


def test_rows_appended_before_the_hash_was_stored_are_recognised(
    spark: SparkSession, load_run: LoadRun, tmp_path: Path
) -> None:
    # A table written by an earlier icetide has no hash column; its rows must not be appended again.
    spark.sql(
        f"CREATE TABLE {silver_table('legacy')} (event string, n bigint, _icetide_change_ts timestamp, "
        "_icetide_change_seq string, _icetide_run_id string, _icetide_op string) USING iceberg "
        "TBLPROPERTIES ('format-version' = '2')"
    )
    legacy_row = "('a', 1, TIMESTAMP '2026-11-21 06:00:00', NULL, 'legacy-1', 'I')"
    spark.sql(f"INSERT INTO {silver_table('legacy')} VALUES {legacy_row}")  # noqa: S608 (a test's literal)
    write_events(tmp_path / "r2", ("I", "2026-11-21 07:00:00", "a", 1), ("I", "2026-11-21 07:00:00", "b", 2))

    second = load_run("legacy", "legacy-2", tmp_path / "r2", **APPEND_BY_N)

    assert (second["rowsInserted"], second["rowsUnchanged"]) == (1, 1)
    assert second["schemaChanges"] == ["added metadata column(s) _icetide_row_hash"]
    assert sorted((row["event"], row["n"]) for row in spark.table(silver_table("legacy")).collect()) == [
        ("a", 1),
        ("b", 2),
    ]


def _oracle_after(
    silver: Counter[tuple[Any, ...]], batch: Counter[tuple[Any, ...]]
) -> Counter[tuple[Any, ...]]:
    """What an append-only table holds after a batch: each content as often as it was ever read at
    once (a re-read adds nothing, more copies than silver holds add the difference)."""
    return Counter({row: max(silver[row], batch[row]) for row in silver.keys() | batch.keys()})


# A seed whose runs meet new rows, several copies of a new row, re-reads, more copies of a row
# than silver holds, and a run whose filter selects nothing.
SEEDS = (2,)


def test_random_re_reads_against_an_oracle(
    spark: SparkSession, load_run: LoadRun, tmp_path: Path, each_seed: EachSeed
) -> None:
    """A key-less source grows (sometimes by a copy of a row it holds); each run reads every copy of
    the rows a random filter selects, as DMS does. Silver must hold what the oracle says."""

    def check(seed: int) -> None:
        rng = random.Random(seed)
        source: list[tuple[str, int]] = []
        expected: Counter[tuple[Any, ...]] = Counter()
        table = f"random_{seed}"
        for run in range(1, 6):
            for _ in range(rng.randint(1, 4)):
                if source and rng.random() < 0.4:
                    source.append(rng.choice(source))  # the source repeats a row
                else:
                    source.append((rng.choice(["login", "logout", "view"]), rng.randint(1, 9)))
            selected = {n for n in range(1, 10) if rng.random() < 0.6}
            batch = [row for row in source if row[1] in selected]
            if not batch:
                continue
            folder = tmp_path / table / f"r{run}"
            write_events(folder, *[("I", f"2026-11-21 0{run}:00:00", event, n) for event, n in batch])

            load_run(table, f"{table}-{run}", folder, **APPEND_BY_N)

            expected = _oracle_after(expected, Counter(batch))
            actual = Counter((row["event"], row["n"]) for row in spark.table(silver_table(table)).collect())
            assert actual == expected, f"run {run}"

    each_seed(SEEDS, check)
