"""The run manifest as commit_watermark reads it (contracts: "Run manifest")."""

import json
from typing import Any

import pytest

from icetide.errors import ManifestInvalid
from icetide.run.manifest import read_manifest
from icetide_contracts.run_manifest import RunManifest

CONTRACT_EXAMPLE = """{"runId": "dbo_orders-20261121T0700Z", "targetTable": "icetide_silver.dbo_orders",
 "rowsRead": 10, "rowsInserted": 4, "rowsUpdated": 5, "rowsDeleted": 1, "rowsUnchanged": 0,
 "watermarkColumn": "updated_at", "newWatermark": "2026-11-21 06:59:58", "snapshotId": 123456789,
 "alreadyCommitted": false, "schemaChanges": ["added column note string"]}"""


def test_the_contract_example_parses() -> None:
    manifest = read_manifest(CONTRACT_EXAMPLE)

    assert manifest.run_id == "dbo_orders-20261121T0700Z"
    assert manifest.target_table == "icetide_silver.dbo_orders"
    assert (manifest.rows_read, manifest.rows_inserted, manifest.rows_updated) == (10, 4, 5)
    assert (manifest.rows_deleted, manifest.rows_unchanged) == (1, 0)
    assert manifest.watermark_column == "updated_at"
    assert manifest.new_watermark == "2026-11-21 06:59:58"
    assert manifest.snapshot_id == 123456789
    assert manifest.already_committed is False
    assert manifest.schema_changes == ["added column note string"]


def test_an_empty_batch_has_null_watermark_and_snapshot() -> None:
    data = {**json.loads(CONTRACT_EXAMPLE), "rowsRead": 0, "newWatermark": None, "snapshotId": None}

    manifest = read_manifest(json.dumps(data).encode())

    assert (manifest.new_watermark, manifest.snapshot_id) == (None, None)


def test_a_numeric_watermark_stays_a_number() -> None:
    data = {**json.loads(CONTRACT_EXAMPLE), "newWatermark": 1000}

    assert read_manifest(json.dumps(data)).new_watermark == 1000


@pytest.mark.parametrize(
    ("change", "reason"),
    [
        ({"rowsDeleted": -1}, "rowsDeleted: Input should be greater than or equal to 0"),
        ({"rowsRead": 2.5}, "rowsRead: must be a whole number, got 2.5"),
        ({"rowsInserted": "4"}, "rowsInserted: must be a whole number, got '4'"),
        ({"rowsUpdated": True}, "rowsUpdated: must be a whole number, got True"),
        ({"runId": None}, "runId: Input should be a valid string"),
        ({"newWatermark": [1]}, "newWatermark: must be a finite number, a string or null, got [1]"),
    ],
)
def test_bad_fields_are_refused_with_the_reason(change: dict[str, Any], reason: str) -> None:
    data = {**json.loads(CONTRACT_EXAMPLE), **change}

    with pytest.raises(ManifestInvalid) as caught:
        read_manifest(json.dumps(data))

    assert str(caught.value) == f"run manifest is invalid: {reason}"


def test_a_missing_count_is_refused() -> None:
    data = {key: value for key, value in json.loads(CONTRACT_EXAMPLE).items() if key != "rowsRead"}

    with pytest.raises(ManifestInvalid, match="rowsRead: required attribute is missing"):
        read_manifest(json.dumps(data))


def test_text_that_is_not_json_is_refused() -> None:
    with pytest.raises(ManifestInvalid, match="run manifest is not valid JSON: Expecting value"):
        read_manifest("<html>Access Denied</html>")


def test_json_that_is_not_an_object_is_refused() -> None:
    with pytest.raises(ManifestInvalid, match="run manifest must be a JSON object, got a JSON list"):
        read_manifest("[]")


def test_the_newest_change_time_is_optional_for_manifests_written_without_it() -> None:
    assert read_manifest(CONTRACT_EXAMPLE).newest_change_time is None


@pytest.mark.parametrize(
    "newest", ["2026-11-21 06:59:58", "2026-11-21 06:59:58.123456", "9999-12-31 23:59:59"]
)
def test_the_newest_change_time_round_trips_through_the_file_and_a_rerun(newest: str) -> None:
    written = RunManifest(
        run_id="dbo_orders-20261121T0700Z",
        target_table="icetide_silver.dbo_orders",
        rows_read=3,
        snapshot_id=7,
        newest_change_time=newest,
    )

    assert json.loads(json.dumps(written.to_json()))["newestChangeTime"] == newest
    assert read_manifest(json.dumps(written.to_json())) == written
    # A rerun of the committed run rebuilds its manifest from the snapshot summary's statistics.
    rerun = RunManifest.already_committed_run(
        written.run_id, written.target_table, 7, json.loads(json.dumps(written.run_stats()))
    )
    assert rerun.newest_change_time == newest


@pytest.mark.parametrize(
    "newest",
    ["2026-11-21T06:59:58Z", "2026-02-30 07:00:00", "2026-11-21 06:59:58.1234567", "", 1700000000],
)
def test_a_newest_change_time_that_is_not_a_utc_time_is_refused(newest: Any) -> None:
    data = {**json.loads(CONTRACT_EXAMPLE), "newestChangeTime": newest}

    with pytest.raises(ManifestInvalid, match="newestChangeTime: "):
        read_manifest(json.dumps(data))
