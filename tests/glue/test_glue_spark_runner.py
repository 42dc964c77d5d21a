"""The local stack's Glue job runner (`icetide_local.standins.glue_spark.SparkGlueJob`) on Spark.

Each job run gets its own Spark session, but every run of the process shares ONE SparkContext (one
JVM): a runner reuses the session it built for its later runs, and a second runner gets the same
context from Spark's getOrCreate. The test lives with the Glue tests to use their one Spark session
(tests/glue/conftest.py), so it starts no JVM of its own and can check the runs share that one.
"""

from __future__ import annotations

from collections.abc import Iterator
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
from glue.silver_tables import CATALOG, SILVER_DATABASE, silver_table
from icetide_glue.arguments import JobArguments
from icetide_local.standins import glue_spark
from icetide_local.standins.glue_spark import SparkGlueJob

pytestmark = pytest.mark.spark

BUCKET = "raw"
TABLE = "via_glue_standin"
BRONZE = pa.schema(
    [("Op", pa.string()), ("dms_timestamp", pa.string()), ("id", pa.int64()), ("v", pa.string())]
)
SILVER = silver_schema(("id", LongType()), ("v", StringType()))


@pytest.fixture
def s3() -> Iterator[Any]:
    """moto's S3 with the bronze bucket, where the local stack's DMS stand-in writes."""
    with mock_aws():
        client = boto3.client("s3", region_name="eu-west-1")  # the tests' region (tests/conftest.py)
        client.create_bucket(Bucket=BUCKET, CreateBucketConfiguration={"LocationConstraint": "eu-west-1"})
        yield client


def job_run_arguments(s3: Any, tmp_path: Path, run_id: str, rows: list[tuple[Any, ...]]) -> dict[str, str]:
    """A Glue job run's arguments for one bronze file of ``rows``, uploaded to moto's S3."""
    local = write_dms_file(tmp_path / run_id, "LOAD00000001.parquet", BRONZE, rows)
    s3.upload_file(str(local), BUCKET, f"bronze/{TABLE}/{run_id}/{local.name}")
    return {
        "--target_table": f"{SILVER_DATABASE}.{TABLE}",
        "--run_id": run_id,
        "--bronze_uri": f"s3://{BUCKET}/bronze/{TABLE}/{run_id}/",
        "--primary_keys": "id",
    }


def test_job_runs_of_one_runner_and_of_two_runners_share_one_spark_context(
    spark: SparkSession, warehouse: Path, s3: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    sessions_built: list[SparkSession] = []
    run_sessions: list[SparkSession] = []
    build_session, run = glue_spark.local_spark_session, glue_spark.run_job

    def counting_session(*args: Any, **kwargs: Any) -> SparkSession:
        sessions_built.append(build_session(*args, **kwargs))
        return sessions_built[-1]

    def recording_run(session: SparkSession, arguments: JobArguments) -> dict[str, Any]:
        run_sessions.append(session)
        return run(session, arguments)

    monkeypatch.setattr(glue_spark, "local_spark_session", counting_session)
    monkeypatch.setattr(glue_spark, "run_job", recording_run)
    first, second = SparkGlueJob(warehouse, catalog=CATALOG), SparkGlueJob(warehouse, catalog=CATALOG)

    first(job_run_arguments(s3, tmp_path, "standin-1", [("I", "2026-11-21 06:00:00", 1, "a")]))
    first(job_run_arguments(s3, tmp_path, "standin-2", [("I", "2026-11-21 07:00:00", 2, "b")]))
    assert len(sessions_built) == 1  # the runner's second run reuses what its first one built
    second(job_run_arguments(s3, tmp_path, "standin-3", [("U", "2026-11-21 08:00:00", 1, "a3")]))

    assert len(sessions_built) == 2
    # Each run has a session of its own (its temporary views are its own) ...
    assert len({id(session) for session in run_sessions}) == 3
    # ... and all of them, through either runner, run on the tests' one SparkContext and JVM.
    assert all(session.sparkContext is spark.sparkContext for session in run_sessions)
    assert all(session._jvm is spark._jvm for session in run_sessions)
    assert all(session is spark for session in sessions_built)
    assert_frame_equal(
        spark.table(silver_table(TABLE)),
        [
            (1, "a3", utc("2026-11-21 08:00:00"), None, "standin-3"),
            (2, "b", utc("2026-11-21 07:00:00"), None, "standin-2"),
        ],
        SILVER,
    )
