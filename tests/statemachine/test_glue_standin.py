"""The Glue stand-in: job runs that run a callable, through boto3 against moto."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator, Mapping
from typing import Any, Final

import boto3
import pytest
from moto import mock_aws

from icetide_local.standins.glue import GlueStandIn, ManifestUriInvalid, failing_job, manifest_writer

REGION: Final = "eu-west-1"
JOB = "icetide-bronze-to-silver"


@pytest.fixture
def glue() -> Iterator[Any]:
    with mock_aws():
        client = boto3.client("glue", region_name=REGION)
        client.create_job(
            Name=JOB,
            Role="arn:aws:iam::123456789012:role/glue",
            Command={"Name": "glueetl", "ScriptLocation": "s3://scripts/job.py"},
            DefaultArguments={"--catalog": "glue_catalog", "--load_mode": "merge"},
        )
        yield client


def _finished_run(glue: Any, run_id: str) -> dict[str, Any]:
    for _ in range(200):
        run: dict[str, Any] = glue.get_job_run(JobName=JOB, RunId=run_id)["JobRun"]
        if run["JobRunState"] not in {"STARTING", "RUNNING"}:
            return run
        time.sleep(0.01)
    raise AssertionError(f"job run {run_id} never finished")


def test_a_run_gets_the_default_arguments_overlaid_with_its_own_and_succeeds(glue: Any) -> None:
    received: list[Mapping[str, str]] = []
    with GlueStandIn(received.append).install():
        run_id = glue.start_job_run(JobName=JOB, Arguments={"--run_id": "r1", "--load_mode": "append"})[
            "JobRunId"
        ]
        run = _finished_run(glue, run_id)

    assert run["JobRunState"] == "SUCCEEDED"
    assert received == [{"--catalog": "glue_catalog", "--load_mode": "append", "--run_id": "r1"}]


def test_a_runner_that_raises_fails_the_run_with_its_message(glue: Any) -> None:
    with GlueStandIn(failing_job("MERGE refused")).install():
        run_id = glue.start_job_run(JobName=JOB, Arguments={"--run_id": "r1"})["JobRunId"]
        run = _finished_run(glue, run_id)

    assert run["JobRunState"] == "FAILED"
    assert run["ErrorMessage"] == "GlueJobFailed: MERGE refused"


def test_manifest_writer_writes_the_run_manifest_to_the_manifest_uri(glue: Any) -> None:
    s3 = boto3.client("s3", region_name=REGION)
    s3.create_bucket(Bucket="raw", CreateBucketConfiguration={"LocationConstraint": REGION})
    arguments = {
        "--run_id": "dbo_orders-20261121T0700Z",
        "--target_table": "icetide_silver.dbo_orders",
        "--watermark_column": "updated_at",
        "--manifest_uri": "s3://raw/manifests/dbo_orders/dbo_orders-20261121T0700Z.json",
    }
    with GlueStandIn(
        manifest_writer(rowsRead=2, rowsInserted=2, newWatermark="2026-11-21 06:59:58")
    ).install():
        run = _finished_run(glue, glue.start_job_run(JobName=JOB, Arguments=arguments)["JobRunId"])
    written = s3.get_object(Bucket="raw", Key="manifests/dbo_orders/dbo_orders-20261121T0700Z.json")

    assert run["JobRunState"] == "SUCCEEDED"
    assert json.loads(written["Body"].read()) == {
        "runId": "dbo_orders-20261121T0700Z",
        "targetTable": "icetide_silver.dbo_orders",
        "rowsRead": 2,
        "rowsInserted": 2,
        "rowsUpdated": 0,
        "rowsDeleted": 0,
        "rowsUnchanged": 0,
        "watermarkColumn": "updated_at",
        "newWatermark": "2026-11-21 06:59:58",
        "snapshotId": None,
        "alreadyCommitted": False,
        "schemaChanges": [],
        "newestChangeTime": None,
    }


@pytest.mark.parametrize("uri", [None, "", "file:///tmp/manifest.json", "s3://bucket-only/"])
def test_manifest_writer_refuses_a_manifest_uri_that_is_not_an_s3_object(uri: str | None) -> None:
    arguments = {} if uri is None else {"--manifest_uri": uri}

    with pytest.raises(ManifestUriInvalid, match="--manifest_uri"):
        manifest_writer()(arguments)
