"""Tables without keys: append-only when asked, a clear refusal when a merge is asked."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pytest
from pyspark.sql import SparkSession
from pyspark.sql import functions as F
from pyspark.sql.types import LongType, StringType

from glue.conftest import LoadRun
from glue.dms_files import utc, write_dms_file
from glue.frames import assert_frame_equal, silver_schema
from glue.silver_tables import silver_table
from icetide_glue.arguments import JobArguments, LoadMode
from icetide_glue.errors import MissingPrimaryKeys

pytestmark = pytest.mark.spark

EVENTS = pa.schema(
    [("Op", pa.string()), ("dms_timestamp", pa.string()), ("event", pa.string()), ("n", pa.int64())]
)


def test_keyless_table_appends_every_row(spark: SparkSession, load_run: LoadRun, tmp_path: Path) -> None:
    write_dms_file(
        tmp_path / "r1",
        "LOAD00000001.parquet",
        EVENTS,
        [("I", "2026-11-21 06:00:00", "login", 1), ("I", "2026-11-21 06:00:00", "login", 1)],
    )
    write_dms_file(
        tmp_path / "r2",
        "20261121-070000000.parquet",
        EVENTS,
        [("I", "2026-11-21 07:00:00", "logout", 2), ("D", "2026-11-21 07:00:01", "login", 1)],
    )
    first = load_run("events", "events-1", tmp_path / "r1", keys=(), load_mode=LoadMode.APPEND)
    second = load_run(
        "events", "events-2", tmp_path / "r2", keys=(), load_mode=LoadMode.APPEND, watermark_column="n"
    )
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
