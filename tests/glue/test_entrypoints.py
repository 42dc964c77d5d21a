"""The same job through the Glue entrypoint (awsglue faked) and through `icetide job run`.

The entrypoint is Glue's only: it resolves its arguments with awsglue's getResolvedOptions and takes
the active session (Glue's; here the tests' session). `icetide job run` is the local entry: it
builds local Spark with a file-system catalog on ``--warehouse``.
"""

from __future__ import annotations

import json
from pathlib import Path
from types import ModuleType

import pyarrow as pa
import pytest
from pyspark.sql import SparkSession
from pyspark.sql.types import LongType, StringType

from glue.dms_files import utc, write_dms_file
from glue.frames import assert_frame_equal, silver_schema
from glue.silver_tables import CATALOG, silver_table
from icetide_cli.main import main as icetide

pytestmark = pytest.mark.spark

BRONZE = pa.schema(
    [("Op", pa.string()), ("dms_timestamp", pa.string()), ("id", pa.int64()), ("v", pa.string())]
)
SILVER = silver_schema(
    ("id", LongType()),
    ("v", StringType()),
)


@pytest.fixture
def bronze(tmp_path: Path) -> Path:
    write_dms_file(
        tmp_path / "bronze",
        "LOAD00000001.parquet",
        BRONZE,
        [("I", "2026-11-21 06:00:00", 1, "a"), ("I", "2026-11-21 06:00:00", 2, "b")],
    )
    return tmp_path / "bronze"


def last_stdout_line(capsys: pytest.CaptureFixture[str]) -> dict[str, object]:
    lines = capsys.readouterr().out.strip().splitlines()
    return json.loads(lines[-1])


def test_glue_entrypoint(
    spark: SparkSession,
    glue_entrypoint: ModuleType,
    bronze: Path,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    manifest_path = tmp_path / "manifest.json"
    returned = glue_entrypoint.main(
        [
            "--target_table",
            "silver.via_glue_entrypoint",
            "--run_id",
            "entry-1",
            "--bronze_uri",
            str(bronze),
            "--manifest_uri",
            manifest_path.as_uri(),
            "--primary_keys",
            "id",
            "--watermark_column",
            "id",
            "--catalog",
            CATALOG,
            # Glue adds its own arguments; the job's resolver asks only for the job's.
            "--JOB_ID",
            "j_0123",
        ]
    )
    printed = last_stdout_line(capsys)
    assert printed == returned == json.loads(manifest_path.read_text())
    assert (printed["rowsInserted"], printed["newWatermark"]) == (2, 2)
    assert_frame_equal(
        spark.table(silver_table("via_glue_entrypoint")),
        [
            (1, "a", utc("2026-11-21 06:00:00"), None, "entry-1"),
            (2, "b", utc("2026-11-21 06:00:00"), None, "entry-1"),
        ],
        SILVER,
    )


def test_icetide_job_run(
    spark: SparkSession, warehouse: Path, bronze: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    manifest_path = tmp_path / "manifest.json"
    exit_code = icetide(
        [
            "job",
            "run",
            "--bronze",
            str(bronze),
            "--warehouse",
            str(warehouse),
            "--table",
            "silver.via_cli",
            "--keys",
            "id",
            "--run-id",
            "cli-1",
            "--manifest",
            str(manifest_path),
        ]
    )
    assert exit_code == 0
    # --warehouse DIR: the table lands in a file-system catalog on DIR.
    assert (warehouse / "silver" / "via_cli" / "metadata").is_dir()
    printed = last_stdout_line(capsys)
    assert printed == json.loads(manifest_path.read_text())
    assert (printed["runId"], printed["rowsInserted"], printed["alreadyCommitted"]) == ("cli-1", 2, False)
    assert_frame_equal(
        spark.table(silver_table("via_cli")),
        [
            (1, "a", utc("2026-11-21 06:00:00"), None, "cli-1"),
            (2, "b", utc("2026-11-21 06:00:00"), None, "cli-1"),
        ],
        SILVER,
    )


def test_icetide_job_run_without_keys_says_how_to_proceed(
    warehouse: Path, bronze: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    exit_code = icetide(
        ["job", "run", "--bronze", str(bronze), "--warehouse", str(warehouse), "--table", "silver.x"]
    )
    assert exit_code == 1
    assert capsys.readouterr().err.strip().splitlines()[-1] == (
        "error: MissingPrimaryKeys: silver.x: merging needs --keys; a table without keys needs --append-only"
    )
