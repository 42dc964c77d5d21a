"""The run manifest as the contract spells it (icetide_contracts.run_manifest), written to a path, a
file:// URI or S3."""

from __future__ import annotations

import json
from pathlib import Path

import boto3
import pytest
from moto import mock_aws

from icetide_contracts.run_manifest import RunManifest
from icetide_glue.commit.manifest import write_manifest
from icetide_glue.errors import ManifestWriteError

MANIFEST = RunManifest(
    run_id="dbo_orders-20261121T0700Z",
    target_table="icetide_silver.dbo_orders",
    rows_read=10,
    rows_inserted=4,
    rows_updated=5,
    rows_deleted=1,
    rows_unchanged=0,
    watermark_column="updated_at",
    new_watermark="2026-11-21 06:59:58",
    snapshot_id=123456789,
    schema_changes=["added column note string"],
    newest_change_time="2026-11-21 06:59:57.250000",
)
CONTRACT_JSON = {
    "runId": "dbo_orders-20261121T0700Z",
    "targetTable": "icetide_silver.dbo_orders",
    "rowsRead": 10,
    "rowsInserted": 4,
    "rowsUpdated": 5,
    "rowsDeleted": 1,
    "rowsUnchanged": 0,
    "watermarkColumn": "updated_at",
    "newWatermark": "2026-11-21 06:59:58",
    "snapshotId": 123456789,
    "alreadyCommitted": False,
    "schemaChanges": ["added column note string"],
    "newestChangeTime": "2026-11-21 06:59:57.250000",
}


def test_manifest_json_has_the_contract_keys_in_order() -> None:
    assert list(MANIFEST.to_json().items()) == list(CONTRACT_JSON.items())


def test_a_committed_run_reproduces_its_manifest_from_the_stored_statistics() -> None:
    stored = json.loads(json.dumps(MANIFEST.run_stats()))
    again = RunManifest.already_committed_run(
        "dbo_orders-20261121T0700Z", "icetide_silver.dbo_orders", 123456789, stored
    )
    assert again.to_json() == {**CONTRACT_JSON, "alreadyCommitted": True}


def test_written_to_a_local_path_and_a_file_uri(tmp_path: Path) -> None:
    path = tmp_path / "manifests" / "run.json"
    write_manifest(str(path), MANIFEST)
    assert json.loads(path.read_text()) == CONTRACT_JSON
    other = tmp_path / "with space" / "run.json"
    write_manifest(other.as_uri(), MANIFEST)
    assert json.loads(other.read_text()) == CONTRACT_JSON


def test_written_to_s3() -> None:
    with mock_aws():
        s3 = boto3.client("s3", region_name="eu-west-1")
        s3.create_bucket(Bucket="raw", CreateBucketConfiguration={"LocationConstraint": "eu-west-1"})
        write_manifest("s3://raw/manifests/dbo_orders/run.json", MANIFEST)
        stored = s3.get_object(Bucket="raw", Key="manifests/dbo_orders/run.json")
        assert stored["ContentType"] == "application/json"
        assert json.loads(stored["Body"].read()) == CONTRACT_JSON


def test_s3_failure_is_a_manifest_write_error() -> None:
    with (
        mock_aws(),
        pytest.raises(ManifestWriteError, match=r"cannot write the run manifest to s3://missing/m\.json"),
    ):
        write_manifest("s3://missing/m.json", MANIFEST)


@pytest.mark.parametrize(
    ("uri", "message"),
    [
        ("hdfs://nn/m.json", "only s3://, file:// and local paths"),
        ("s3://bucket-only", "must be s3://bucket/key"),
    ],
)
def test_unsupported_uris_are_refused(uri: str, message: str) -> None:
    with pytest.raises(ManifestWriteError, match=message):
        write_manifest(uri, MANIFEST)
