"""The Glue job's real manifest, read by the Lambda side as commit_watermark reads it.

The writer (icetide_glue, run here through the real job) and the reader (icetide.run.manifest and
icetide.run.commit) share one definition, icetide_contracts.run_manifest.RunManifest; this test is
what proves that they agree on the file between them: its keys, its counts and the watermark's text.
"""

from __future__ import annotations

import shutil
from datetime import UTC, datetime
from decimal import Decimal
from pathlib import Path

import pyarrow as pa
import pytest
from pyspark.sql import SparkSession

from glue.conftest import LoadRun
from glue.dms_files import write_dms_file
from glue.silver_tables import SILVER_DATABASE, snapshot_ids
from icetide.run import commit
from icetide.run.manifest import read_manifest
from icetide_contracts.run_manifest import RunManifest
from icetide_glue.arguments import LoadMode

pytestmark = pytest.mark.spark

CHANGES = pa.schema(
    [
        ("Op", pa.string()),
        ("dms_timestamp", pa.string()),
        ("id", pa.int64()),
        ("v", pa.int64()),
        ("updated_at", pa.timestamp("us", tz="UTC")),
    ]
)


def at(second: int, micro: int = 0) -> datetime:
    return datetime(2026, 11, 21, 6, 59, second, micro, tzinfo=UTC)


def read_as_commit_watermark_does(manifest_file: Path, *, run_id: str, column: str) -> RunManifest:
    """The Lambda side's reading: the file's text, the contract's reader, the commit's own checks."""
    manifest = read_manifest(manifest_file.read_text(encoding="utf-8"))
    commit.check_manifest(manifest, run_id=run_id, watermark_column=column)
    return manifest


def test_a_merge_runs_manifest_reaches_the_commit_as_the_job_wrote_it(
    spark: SparkSession, load_run: LoadRun, tmp_path: Path
) -> None:
    first, second = tmp_path / "bronze-1", tmp_path / "bronze-2"
    write_dms_file(
        first,
        "LOAD00000001.parquet",
        CHANGES,
        [("I", "2026-11-21 06:00:00", key, 10 * key, at(key)) for key in (1, 2, 3)],
    )
    load_run("handoff", "handoff-1", first, watermark_column="updated_at")
    write_dms_file(
        second,
        "20261121-070000000.parquet",
        CHANGES,
        [
            ("U", "2026-11-21 07:00:00", 1, 11, at(57, 123)),
            ("D", "2026-11-21 07:00:00", 2, 20, at(2)),
            ("U", "2026-11-21 07:00:00", 3, 30, at(3)),  # the row silver already holds
            ("I", "2026-11-21 07:00:00", 4, 40, at(58, 123)),
        ],
    )
    manifest_file = tmp_path / "manifests" / "handoff-2.json"

    load_run("handoff", "handoff-2", second, watermark_column="updated_at", manifest_uri=str(manifest_file))
    manifest = read_as_commit_watermark_does(manifest_file, run_id="handoff-2", column="updated_at")

    assert manifest == RunManifest(
        run_id="handoff-2",
        target_table=f"{SILVER_DATABASE}.handoff",
        rows_read=4,
        rows_inserted=1,
        rows_updated=1,
        rows_deleted=1,
        rows_unchanged=1,
        watermark_column="updated_at",
        new_watermark="2026-11-21 06:59:58.000123",
        snapshot_id=snapshot_ids(spark, "handoff")[-1],
        already_committed=False,
        schema_changes=[],
        # Every change of the CDC file was committed at 07:00:00 (the LOAD rows before are left out).
        newest_change_time="2026-11-21 07:00:00",
    )
    step = commit.next_watermark("2026-11-21 06:59:03", manifest.new_watermark)
    assert (step.watermark, step.advanced) == ("2026-11-21 06:59:58.000123", True)
    assert commit.run_stats(manifest, 4) == {
        "rowsRead": 4,
        "rowsInserted": 1,
        "rowsUpdated": 1,
        "rowsDeleted": 1,
        "rowsUnchanged": 1,
        "snapshotId": manifest.snapshot_id,
        "fullLoadRows": 4,
    }

    # A rerun of the committed run rebuilds its manifest from the snapshot summary: read alike.
    shutil.rmtree(second)
    rerun_file = tmp_path / "manifests" / "handoff-2-again.json"
    load_run("handoff", "handoff-2", second, watermark_column="updated_at", manifest_uri=str(rerun_file))
    again = read_as_commit_watermark_does(rerun_file, run_id="handoff-2", column="updated_at")

    assert again.already_committed is True
    assert again.to_json() == {**manifest.to_json(), "alreadyCommitted": True}


def test_a_decimal_watermark_no_float_holds_reaches_the_commit_exactly(
    load_run: LoadRun, tmp_path: Path
) -> None:
    schema = pa.schema([("dms_timestamp", pa.string()), ("amount", pa.decimal128(38, 4))])
    bronze = tmp_path / "bronze"
    amounts = [Decimal("12345678901234567.8900"), Decimal("12345678901234567.8901")]
    write_dms_file(bronze, "LOAD00000001.parquet", schema, [("2026-11-21 06:00:00", a) for a in amounts])
    manifest_file = tmp_path / "manifest.json"

    load_run(
        "handoff_decimal",
        "handoff_decimal-1",
        bronze,
        keys=(),
        load_mode=LoadMode.APPEND,
        watermark_column="amount",
        manifest_uri=manifest_file.as_uri(),
    )
    manifest = read_as_commit_watermark_does(manifest_file, run_id="handoff_decimal-1", column="amount")

    assert (manifest.rows_read, manifest.rows_inserted) == (2, 2)
    # Text, not a float that would round to ...567.89: the next run must not skip the last row.
    assert manifest.new_watermark == "12345678901234567.8901"
    step = commit.next_watermark("12345678901234567.89", manifest.new_watermark)
    assert (step.watermark, step.advanced) == ("12345678901234567.8901", True)
