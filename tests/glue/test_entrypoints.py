"""The same job through the Glue entrypoint (awsglue faked) and through `icetide job run`.

The entrypoint is Glue's only: it resolves its arguments with awsglue's getResolvedOptions and takes
the active session (Glue's; here the tests' session). `icetide job run` is the local entry: it
builds local Spark with a file-system catalog on ``--warehouse``.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from types import ModuleType
from typing import Any

import pyarrow as pa
import pytest
from pyspark.sql import SparkSession
from pyspark.sql.types import LongType, StringType

from glue.dms_files import utc, write_dms_file
from glue.frames import assert_frame_equal, silver_schema
from glue.silver_tables import CATALOG, silver_table
from icetide_cli import job as cli_job
from icetide_cli.main import main as icetide
from icetide_contracts.bronze_files import BronzeFiles
from icetide_glue.arguments import JobArguments

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


def assert_holds_the_bronze_fixture(spark: SparkSession, table: str, run_id: str) -> None:
    """``table`` holds the ``bronze`` fixture's two rows, loaded by run ``run_id``."""
    assert_frame_equal(
        spark.table(silver_table(table)),
        [
            (1, "a", utc("2026-11-21 06:00:00"), None, run_id),
            (2, "b", utc("2026-11-21 06:00:00"), None, run_id),
        ],
        SILVER,
    )


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
    assert_holds_the_bronze_fixture(spark, "via_glue_entrypoint", "entry-1")


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
    assert_holds_the_bronze_fixture(spark, "via_cli", "cli-1")


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


@dataclass
class JobRunSpy:
    """What `icetide job run` asked for: sessions built, and each run's id and session."""

    sessions_built: int = 0
    run_ids: list[str] = field(default_factory=list)
    run_sessions: list[SparkSession] = field(default_factory=list)


@pytest.fixture
def job_run_spy(monkeypatch: pytest.MonkeyPatch) -> JobRunSpy:
    """Counts `local_spark_session` calls and records each `run_job` call of `icetide job run`;
    both still do their real work (on the tests' one Spark session)."""
    spy = JobRunSpy()
    build_session, run = cli_job.local_spark_session, cli_job.run_job

    def counting_session(*args: Any, **kwargs: Any) -> SparkSession:
        spy.sessions_built += 1
        return build_session(*args, **kwargs)

    def recording_run(session: SparkSession, arguments: JobArguments, **options: Any) -> dict[str, Any]:
        spy.run_ids.append(arguments.run_id)
        spy.run_sessions.append(session)
        return run(session, arguments, **options)

    monkeypatch.setattr(cli_job, "local_spark_session", counting_session)
    monkeypatch.setattr(cli_job, "run_job", recording_run)
    return spy


def several_folders(warehouse: Path, table: str, *folders: Path) -> list[str]:
    """`icetide job run` with one --bronze option a folder, run id `several`."""
    bronze = [option for folder in folders for option in ("--bronze", str(folder))]
    return ["job", "run", *bronze, "--warehouse", str(warehouse), "--table", f"silver.{table}",
            "--keys", "id", "--run-id", "several"]  # fmt: skip


def test_icetide_job_run_runs_several_folders_in_order_in_one_spark_session(
    spark: SparkSession,
    warehouse: Path,
    bronze: Path,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    job_run_spy: JobRunSpy,
) -> None:
    later = tmp_path / "later"
    write_dms_file(
        later,
        "20261121-070000000.parquet",
        BRONZE,
        [("U", "2026-11-21 07:00:00", 1, "a2"), ("D", "2026-11-21 07:00:00", 2, "b"),
         ("I", "2026-11-21 07:00:00", 3, "c")],
    )  # fmt: skip

    exit_code = icetide(several_folders(warehouse, "several_folders", bronze, later))

    assert exit_code == 0
    printed = [json.loads(line) for line in capsys.readouterr().out.strip().splitlines()]
    counts = [(run["runId"], run["rowsInserted"], run["rowsUpdated"], run["rowsDeleted"]) for run in printed]
    assert counts == [
        ("several-1", 2, 0, 0),
        ("several-2", 1, 1, 1),
    ]
    # One JVM and one session for both runs, in the given order.
    assert job_run_spy.sessions_built == 1
    assert job_run_spy.run_ids == ["several-1", "several-2"]
    assert all(session is job_run_spy.run_sessions[0] for session in job_run_spy.run_sessions)
    assert job_run_spy.run_sessions[0].sparkContext is spark.sparkContext
    assert_frame_equal(
        spark.table(silver_table("several_folders")),
        [
            (1, "a2", utc("2026-11-21 07:00:00"), None, "several-2"),
            (3, "c", utc("2026-11-21 07:00:00"), None, "several-2"),
        ],
        SILVER,
    )


def test_icetide_job_run_stops_at_the_first_failing_folder(
    spark: SparkSession,
    warehouse: Path,
    bronze: Path,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    job_run_spy: JobRunSpy,
) -> None:
    garbage = tmp_path / "garbage"
    garbage.mkdir()
    (garbage / "LOAD00000001.parquet").write_text("Op,dms_timestamp,id\nI,2026-11-21 07:00:00,8\n")
    last = tmp_path / "last"
    write_dms_file(last, "LOAD00000001.parquet", BRONZE, [("I", "2026-11-21 08:00:00", 9, "z")])

    exit_code = icetide(several_folders(warehouse, "stops_at_failure", bronze, garbage, last))

    assert exit_code == 1
    captured = capsys.readouterr()
    assert [json.loads(line)["runId"] for line in captured.out.strip().splitlines()] == ["several-1"]
    error = captured.err.strip().splitlines()[-1]
    assert error.startswith(
        f"error: --bronze {garbage} (run 2 of 3, run id several-2) failed; 1 earlier run(s) finished, "
        "1 later folder(s) not run: UnreadableBronzeFile: bronze file file:"
    ), error
    assert job_run_spy.run_ids == ["several-1", "several-2"]  # the third folder is not attempted
    assert_holds_the_bronze_fixture(spark, "stops_at_failure", "several-1")


@pytest.mark.parametrize(
    ("option", "reason"),
    [
        (["--reconcile", "keys"], "--reconcile belongs to one run"),
        (["--manifest", "manifest.json"], "--manifest writes one run's manifest"),
        (["--expected-rows", "2"], "--expected-rows is the row count of one folder's files"),
        (["--bronze-files", "orders-7.bronze-files.json"], "--bronze-files lists one run's files"),
    ],
)
def test_icetide_job_run_refuses_options_of_one_run_with_several_folders(
    option: list[str],
    reason: str,
    warehouse: Path,
    bronze: Path,
    capsys: pytest.CaptureFixture[str],
    job_run_spy: JobRunSpy,
) -> None:
    exit_code = icetide([*several_folders(warehouse, "refused", bronze, bronze), *option])

    assert exit_code == 1
    [error] = capsys.readouterr().err.strip().splitlines()
    assert error.startswith(f"error: OneRunOption: {reason}")
    assert error.endswith(": give one --bronze folder with it, not 2")
    assert (job_run_spy.sessions_built, job_run_spy.run_ids) == (0, [])  # refused before Spark


@pytest.mark.parametrize("option", ["--bronze", "--reconcile"])
def test_icetide_job_run_refuses_a_folder_holding_a_link_to_a_folder(
    option: str,
    warehouse: Path,
    bronze: Path,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    job_run_spy: JobRunSpy,
) -> None:
    folder = tmp_path / "with-link"
    (folder / "2026" / "11").mkdir(parents=True)
    (tmp_path / "elsewhere").mkdir()
    (folder / "2026" / "11" / "29").symlink_to(tmp_path / "elsewhere", target_is_directory=True)
    arguments = (
        [*several_folders(warehouse, "linked", folder)]
        if option == "--bronze"
        else [*several_folders(warehouse, "linked", bronze), "--reconcile", str(folder)]
    )

    exit_code = icetide(arguments)

    assert exit_code == 1
    [error] = capsys.readouterr().err.strip().splitlines()
    assert error == (
        f"error: LinkedFolder: {option} {folder}: {folder / '2026' / '11' / '29'} is a symbolic link to "
        "a folder, which the local file system lists as itself without end; put a copy of the folder "
        "in its place"
    )
    assert (job_run_spy.sessions_built, job_run_spy.run_ids) == (0, [])  # refused before Spark


def test_icetide_job_run_help_says_folders_run_in_order_in_one_session(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert icetide(["job", "run", "--help"]) == 0
    text = " ".join(capsys.readouterr().out.split())
    assert "the folders run in the given order, as successive runs of the table, in one Spark session" in text
    assert "the JVM start-up (15-20 s) is paid once" in text
    assert "--bronze-files FILE bronze file selection (BronzeFiles JSON" in text
    assert "merge only the files it lists, read at their keys below --bronze DIR" in text


def test_icetide_job_run_merges_only_the_files_of_a_bronze_file_selection(
    spark: SparkSession, warehouse: Path, bronze: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # --bronze: a local copy of a continuous task's folder; its newest file is not in the selection.
    write_dms_file(bronze, "20261121-070000000.parquet", BRONZE, [("U", "2026-11-21 07:00:00", 1, "a2")])
    write_dms_file(bronze, "20261121-080000000.parquet", BRONZE, [("I", "2026-11-21 08:00:00", 3, "c")])
    selection = tmp_path / "orders-7.bronze-files.json"
    files = ["dbo/source_table/LOAD00000001.parquet", "dbo/source_table/20261121-070000000.parquet"]
    listed = BronzeFiles(run_id="orders-7", bronze_uri="s3://raw/x/", files=files, total_bytes=0)
    selection.write_text(json.dumps(listed.to_json()))

    exit_code = icetide(
        ["job", "run", "--bronze", str(bronze), "--bronze-files", str(selection), "--warehouse",
         str(warehouse), "--table", "silver.via_cli_selection", "--keys", "id"]
    )  # fmt: skip

    assert exit_code == 0
    printed = last_stdout_line(capsys)
    assert (printed["runId"], printed["rowsRead"], printed["rowsInserted"]) == ("orders-7", 3, 2)
    assert_frame_equal(
        spark.table(silver_table("via_cli_selection")),
        [
            (1, "a2", utc("2026-11-21 07:00:00"), None, "orders-7"),
            (2, "b", utc("2026-11-21 06:00:00"), None, "orders-7"),
        ],
        SILVER,
    )
