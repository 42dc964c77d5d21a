"""A continuous cdc run merges exactly the files of its bronze file selection (``--bronze_files_uri``).

The selection's ``bronzeUri`` is an S3 folder (its contract says so); these tests' Spark has no S3,
so the job reads the listed files from a local copy of that folder (``run_job``'s ``bronze_copy``,
what the local Glue stand-in and ``icetide job run --bronze-files`` do). One table is loaded once
for the module; the refusals run against it and must leave it as it was.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import boto3
import pyarrow as pa
import pytest
from moto import mock_aws
from pyspark.sql import SparkSession
from pyspark.sql.types import LongType, StringType

from glue.dms_files import utc, write_dms_file
from glue.frames import assert_frame_equal, silver_schema
from glue.silver_tables import CATALOG, SILVER_DATABASE, silver_table, snapshot_ids
from icetide_contracts.bronze_files import BronzeFiles
from icetide_glue.arguments import JobArguments
from icetide_glue.errors import (
    BronzeFileSelectionMismatch,
    InvalidBronzeFileSelection,
    MissingBronzeFile,
    UnreadableBronzeFile,
)
from icetide_glue.job import run_job
from icetide_local.standins.glue_spark import SparkGlueJob

pytestmark = pytest.mark.spark

FOLDER = "s3://raw/bronze/_continuous/orders/"
# write_dms_file puts a file at <folder>/dbo/source_table/<name>, as DMS does below its BucketFolder.
KEY_PREFIX = "dbo/source_table/"
BRONZE = pa.schema(
    [("Op", pa.string()), ("dms_timestamp", pa.string()), ("id", pa.int64()), ("v", pa.string())]
)
SILVER = silver_schema(("id", LongType()), ("v", StringType()))
TABLE = "continuous_orders"
LOADED = [
    (1, "cdc", utc("2026-11-24 12:00:00"), None, "orders-1"),
    (2, "b", utc("2026-11-24 12:00:00"), None, "orders-1"),
]


def write_selection(folder: Path, run_id: str, names: Sequence[str], bronze_uri: str = FOLDER) -> str:
    """The selection of ``names`` (file names below KEY_PREFIX) as the state machine writes it."""
    selection = BronzeFiles(
        run_id=run_id, bronze_uri=bronze_uri, files=[KEY_PREFIX + name for name in names], total_bytes=0
    )
    path = folder / f"{run_id}.bronze-files.json"
    path.write_text(json.dumps(selection.to_json()))
    return str(path)


def run_selection(spark: SparkSession, table: str, run_id: str, selection: str, copy: Path) -> dict[str, Any]:
    """The job on a selection, its files read from ``copy``; continuous runs carry no row count."""
    arguments = JobArguments.from_options(
        {
            "target_table": f"{SILVER_DATABASE}.{table}",
            "run_id": run_id,
            "bronze_uri": FOLDER,
            "bronze_files_uri": selection,
            "primary_keys": "id",
            "catalog": CATALOG,
            "expected_rows": "",
        }
    )
    return run_job(spark, arguments, bronze_copy=str(copy))


@dataclass(frozen=True)
class Loaded:
    """The module's table after its one run, and the local copy of the task's folder."""

    copy: Path
    snapshots: list[int]


@pytest.fixture(scope="module")
def loaded(spark: SparkSession, tmp_path_factory: pytest.TempPathFactory) -> Loaded:
    """Run orders-1 merges a LOAD file and a CDC file; a later CDC file in the folder is not listed.

    Key 1's two changes share their change time: the file order alone (every LOAD file before the
    CDC files, though ``2026…`` sorts before ``LOAD…`` as text) makes the CDC change the winner.
    """
    copy = tmp_path_factory.mktemp("continuous")
    write_dms_file(
        copy,
        "LOAD00000001.parquet",
        BRONZE,
        [("I", "2026-11-24 12:00:00", 1, "load"), ("I", "2026-11-24 12:00:00", 2, "b")],
    )
    write_dms_file(copy, "20261124-120501123.parquet", BRONZE, [("U", "2026-11-24 12:00:00", 1, "cdc")])
    write_dms_file(copy, "20261124-121000000.parquet", BRONZE, [("I", "2026-11-24 12:10:00", 3, "later")])
    selection = write_selection(copy, "orders-1", ["LOAD00000001.parquet", "20261124-120501123.parquet"])

    manifest = run_selection(spark, TABLE, "orders-1", selection, copy)

    assert (manifest["rowsRead"], manifest["rowsInserted"]) == (3, 2)
    return Loaded(copy, snapshot_ids(spark, TABLE))


def assert_unchanged(spark: SparkSession, loaded: Loaded) -> None:
    assert snapshot_ids(spark, TABLE) == loaded.snapshots
    assert_frame_equal(spark.table(silver_table(TABLE)), LOADED, SILVER)


def test_only_the_listed_files_are_merged_and_file_order_decides_ties(
    spark: SparkSession, loaded: Loaded
) -> None:
    # Key 3's file is in the folder but not in the selection; key 1's CDC change wins its tie.
    assert_unchanged(spark, loaded)


@pytest.mark.parametrize(
    ("run_id", "bronze_uri", "message"),
    [
        ("orders-1", FOLDER, "its runId is orders-1, not orders-2"),
        (
            "orders-2",
            "s3://raw/bronze/_continuous/customers/",
            f"its bronzeUri is s3://raw/bronze/_continuous/customers/, not {FOLDER}",
        ),
    ],
)
def test_a_selection_of_another_run_or_folder_is_refused(
    spark: SparkSession, loaded: Loaded, tmp_path: Path, run_id: str, bronze_uri: str, message: str
) -> None:
    selection = write_selection(tmp_path, run_id, ["20261124-121000000.parquet"], bronze_uri)

    with pytest.raises(BronzeFileSelectionMismatch) as refused:
        run_selection(spark, TABLE, "orders-2", selection, loaded.copy)

    assert message in str(refused.value)
    assert refused.value.summary().startswith(
        f"BronzeFileSelectionMismatch: the bronze file selection {selection} is not this run's: "
    )
    assert_unchanged(spark, loaded)


def test_a_listed_file_that_is_gone_is_named_and_nothing_is_merged(
    spark: SparkSession, loaded: Loaded, tmp_path: Path
) -> None:
    selection = write_selection(
        tmp_path, "orders-2", ["20261124-121000000.parquet", "20261124-122000000.parquet"]
    )

    with pytest.raises(MissingBronzeFile) as refused:
        run_selection(spark, TABLE, "orders-2", selection, loaded.copy)

    assert isinstance(refused.value, UnreadableBronzeFile)
    assert str(refused.value).startswith("bronze file file:")
    missing = f"{KEY_PREFIX}20261124-122000000.parquet is missing: the bronze file selection {selection} "
    assert missing in str(refused.value)
    assert_unchanged(spark, loaded)


def test_a_selection_that_breaks_its_contract_is_refused(
    spark: SparkSession, loaded: Loaded, tmp_path: Path
) -> None:
    selection = tmp_path / "orders-2.bronze-files.json"
    selection.write_text(json.dumps({"runId": "orders-2", "bronzeUri": FOLDER, "files": ["x.csv"]}))

    with pytest.raises(InvalidBronzeFileSelection, match=r"'x\.csv' is not a DMS file name"):
        run_selection(spark, TABLE, "orders-2", str(selection), loaded.copy)
    with pytest.raises(InvalidBronzeFileSelection, match=r"cannot read the bronze file selection .*absent"):
        run_selection(spark, TABLE, "orders-2", str(tmp_path / "absent.json"), loaded.copy)
    assert_unchanged(spark, loaded)


def test_an_empty_selection_commits_nothing(spark: SparkSession, loaded: Loaded, tmp_path: Path) -> None:
    manifest = run_selection(spark, TABLE, "orders-2", write_selection(tmp_path, "orders-2", []), loaded.copy)

    assert (manifest["rowsRead"], manifest["snapshotId"], manifest["alreadyCommitted"]) == (0, None, False)
    assert_unchanged(spark, loaded)


@pytest.fixture
def s3() -> Iterator[Any]:
    """moto's S3 with the raw bucket, where the continuous task writes and the selection lives."""
    with mock_aws():
        client = boto3.client("s3", region_name="eu-west-1")  # the tests' region (tests/conftest.py)
        client.create_bucket(Bucket="raw", CreateBucketConfiguration={"LocationConstraint": "eu-west-1"})
        yield client


def test_the_local_glue_standin_stages_and_merges_only_the_selected_files(
    spark: SparkSession, warehouse: Path, s3: Any, tmp_path: Path
) -> None:
    for name, rows in [
        ("LOAD00000001.parquet", [("I", "2026-11-24 12:00:00", 1, "a")]),
        ("20261124-120501123.parquet", [("I", "2026-11-24 12:05:00", 2, "b")]),
        ("20261124-121000000.parquet", [("I", "2026-11-24 12:10:00", 3, "not listed")]),
    ]:
        local = write_dms_file(tmp_path / "task", name, BRONZE, rows)
        s3.upload_file(str(local), "raw", f"bronze/_continuous/orders/{KEY_PREFIX}{name}")
    selection = write_selection(tmp_path, "standin-1", ["LOAD00000001.parquet", "20261124-120501123.parquet"])
    s3.upload_file(selection, "raw", "manifests/orders/standin-1.bronze-files.json")

    # The arguments as the state machine's "Run Glue job" passes them.
    SparkGlueJob(warehouse, catalog=CATALOG)(
        {
            "--target_table": f"{SILVER_DATABASE}.continuous_via_standin",
            "--run_id": "standin-1",
            "--bronze_uri": FOLDER,
            "--bronze_files_uri": "s3://raw/manifests/orders/standin-1.bronze-files.json",
            "--primary_keys": "id",
            "--expected_rows": "",
        }
    )

    assert_frame_equal(
        spark.table(silver_table("continuous_via_standin")),
        [
            (1, "a", utc("2026-11-24 12:00:00"), None, "standin-1"),
            (2, "b", utc("2026-11-24 12:05:00"), None, "standin-1"),
        ],
        SILVER,
    )
