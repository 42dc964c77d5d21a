"""commit_watermark: the run's manifest moves the watermark forward and the lock is released, in one
conditional write that needs the run's own lock and starting watermark; never backwards."""

from __future__ import annotations

import json
from decimal import Decimal

import boto3
import pytest

import handlers.commit_watermark
from icetide.errors import ControlItemNotFound, LockLost, ManifestInvalid, WatermarkConflict

RUN_ID = "dbo_orders-20261121T0700Z"  # the run of the sample event
LATER_RUN = "dbo_orders-20261121T1400Z"
MANIFEST_KEY = f"manifests/dbo_orders/{RUN_ID}.json"
# The lock the run took at its start: the commit requires it and releases it.
RUN_LOCK = {"lockHolder": RUN_ID, "lockTime": "2026-11-21T07:00:04Z"}
MANIFEST = {
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
    "schemaChanges": [],
}
STATS = {
    "rowsRead": 10,
    "rowsInserted": 4,
    "rowsUpdated": 5,
    "rowsDeleted": 1,
    "rowsUnchanged": 0,
    "snapshotId": 123456789,
    "fullLoadRows": 10,
}


@pytest.fixture
def write_manifest(raw_bucket):
    def write(body: str | dict) -> None:
        text = body if isinstance(body, str) else json.dumps(body)
        boto3.client("s3").put_object(Bucket=raw_bucket, Key=MANIFEST_KEY, Body=text.encode())

    return write


def _locked_orders(control_items, **changes) -> dict:
    """The sample item as it is while the run holds its lock."""
    return control_items.orders(**{**RUN_LOCK, **changes})


def _commit(load_event, lambda_context, **plan_changes) -> dict:
    event = load_event("commit_watermark")
    event["plan"].update(plan_changes)
    return handlers.commit_watermark.handler(event, lambda_context)


def test_the_watermark_advances_the_run_is_recorded_and_the_lock_released(
    control_items, write_manifest, load_event, lambda_context
):
    _locked_orders(
        control_items, lastRunStatus="RUNNING", lastRunError="earlier failure", lastFailedState="Poll"
    )
    write_manifest(MANIFEST)

    result = _commit(load_event, lambda_context)

    assert result == {
        "previousWatermark": "2026-11-21 06:00:00",
        "watermark": "2026-11-21 06:59:58",
        "advanced": True,
        "stats": STATS,
        "cdcCheckpoint": None,
    }
    item = control_items.get("dbo_orders")
    assert item["watermark"] == "2026-11-21 06:59:58"
    assert item["lastRunStats"] == STATS
    assert item["lastRunStatus"] == "SUCCEEDED"
    assert "lastRunError" not in item and "lastFailedState" not in item
    assert "lockHolder" not in item and "lockTime" not in item
    assert item["lastRunTime"].endswith("Z")
    # Kept through later failed runs (which overwrite lastRunTime): the lag counts from it.
    assert item["lastSuccessTime"] == item["lastRunTime"]


def test_the_watermark_never_moves_backwards(control_items, write_manifest, load_event, lambda_context):
    # A lookback re-read rows up to 05:58 only: the stored 06:00 stays.
    _locked_orders(control_items)
    write_manifest({**MANIFEST, "newWatermark": "2026-11-21 05:58:00"})

    result = _commit(load_event, lambda_context)

    assert (result["watermark"], result["advanced"]) == ("2026-11-21 06:00:00", False)
    assert control_items.get("dbo_orders")["watermark"] == "2026-11-21 06:00:00"


def test_an_empty_batch_keeps_the_watermark(control_items, write_manifest, load_event, lambda_context):
    _locked_orders(control_items)
    write_manifest(
        {
            **MANIFEST,
            "rowsRead": 0,
            "rowsInserted": 0,
            "rowsUpdated": 0,
            "rowsDeleted": 0,
            "newWatermark": None,
            "snapshotId": None,
        }
    )

    result = _commit(load_event, lambda_context)

    assert (result["watermark"], result["advanced"]) == ("2026-11-21 06:00:00", False)
    item = control_items.get("dbo_orders")
    assert item["watermark"] == "2026-11-21 06:00:00"
    assert item["lastRunStats"] == {
        "rowsRead": 0,
        "rowsInserted": 0,
        "rowsUpdated": 0,
        "rowsDeleted": 0,
        "rowsUnchanged": 0,
        "fullLoadRows": 10,
    }


def test_the_first_run_sets_the_first_watermark(control_items, write_manifest, load_event, lambda_context):
    _locked_orders(control_items, watermark=None)
    write_manifest(MANIFEST)

    result = _commit(load_event, lambda_context, previousWatermark=None)

    assert (result["previousWatermark"], result["watermark"], result["advanced"]) == (
        None,
        "2026-11-21 06:59:58",
        True,
    )
    assert control_items.get("dbo_orders")["watermark"] == "2026-11-21 06:59:58"


def test_a_watermark_moved_during_the_run_is_a_conflict(
    control_items, write_manifest, load_event, lambda_context
):
    _locked_orders(control_items, watermark="2026-11-21 06:30:00", lastRunStatus="RUNNING")
    write_manifest(MANIFEST)

    with pytest.raises(WatermarkConflict) as raised:
        _commit(load_event, lambda_context)

    assert "is '2026-11-21 06:30:00'" in str(raised.value)
    assert "started from '2026-11-21 06:00:00'" in str(raised.value)
    item = control_items.get("dbo_orders")
    assert (item["watermark"], item["lastRunStatus"]) == ("2026-11-21 06:30:00", "RUNNING")
    assert "lastRunStats" not in item
    assert item["lockHolder"] == RUN_ID  # all or nothing: the failure path releases it


@pytest.mark.parametrize(
    ("lock", "reason"),
    [
        (
            {"lockHolder": LATER_RUN, "lockTime": "2026-11-21T14:00:03Z"},
            f"run {LATER_RUN} took it over at 2026-11-21T14:00:03Z",
        ),
        ({}, "nobody holds it"),
    ],
    ids=["taken-over", "released"],
)
def test_a_run_that_lost_its_lock_commits_nothing(
    control_items, write_manifest, load_event, lambda_context, lock, reason
):
    # The run outlived the lock's staleness: a later run took the table over (or took and released it).
    control_items.orders(lastRunId=LATER_RUN, lastRunStatus="RUNNING", **lock)
    write_manifest(MANIFEST)

    with pytest.raises(LockLost) as raised:
        _commit(load_event, lambda_context)

    assert str(raised.value) == (
        f"run {RUN_ID} no longer holds the lock of dbo_orders ({reason}); nothing was stored, "
        "the watermark stays '2026-11-21 06:00:00'"
    )
    item = control_items.get("dbo_orders")
    assert (item["watermark"], item["lastRunId"], item["lastRunStatus"]) == (
        "2026-11-21 06:00:00",
        LATER_RUN,
        "RUNNING",
    )
    assert item.get("lockHolder") == lock.get("lockHolder")
    assert "lastRunStats" not in item


def test_a_commit_invoked_again_reports_the_commit_it_made(
    control_items, write_manifest, load_event, lambda_context
):
    # The Lambda committed, then was invoked again (a retry after a lost response): the lock and
    # the starting watermark are gone, but the commit is this run's own, so the run succeeds.
    _locked_orders(control_items, lastRunId=RUN_ID, lastRunStatus="RUNNING")
    write_manifest(MANIFEST)
    _commit(load_event, lambda_context)
    committed = control_items.get("dbo_orders")

    again = _commit(load_event, lambda_context)

    assert again == {
        "previousWatermark": "2026-11-21 06:00:00",
        "watermark": "2026-11-21 06:59:58",
        "advanced": True,
        "stats": STATS,
        "cdcCheckpoint": None,
    }
    assert control_items.get("dbo_orders") == committed


def test_a_watermark_appearing_during_a_first_run_is_a_conflict(
    control_items, write_manifest, load_event, lambda_context
):
    _locked_orders(control_items, watermark="2026-11-21 06:30:00")
    write_manifest(MANIFEST)

    with pytest.raises(WatermarkConflict):
        _commit(load_event, lambda_context, previousWatermark=None)

    assert control_items.get("dbo_orders")["watermark"] == "2026-11-21 06:30:00"


def test_numeric_watermarks_stay_numbers(control_items, write_manifest, load_event, lambda_context):
    _locked_orders(control_items, filtercolumn="order_id", startvalue=0, watermark=41)
    write_manifest({**MANIFEST, "watermarkColumn": "order_id", "newWatermark": 57})

    result = _commit(load_event, lambda_context, watermarkColumn="order_id", previousWatermark=41)

    assert (result["previousWatermark"], result["watermark"], result["advanced"]) == (41, 57, True)
    assert control_items.get("dbo_orders")["watermark"] == Decimal(57)


@pytest.mark.parametrize(
    ("previous", "merged", "expected", "advanced"),
    [("tech", "tech", "tech", False), ("retail", "tech", "tech", True), ("tech", "retail", "tech", False)],
)
def test_text_watermarks_commit_on_every_run(
    control_items, write_manifest, load_event, lambda_context, previous, merged, expected, advanced
):
    """A varchar filter column (an eq or gte filter on a code): the second run must commit too."""
    _locked_orders(control_items, filtercolumn="segment", startvalue="a", watermark=previous)
    write_manifest({**MANIFEST, "watermarkColumn": "segment", "newWatermark": merged})

    result = _commit(load_event, lambda_context, watermarkColumn="segment", previousWatermark=previous)

    assert (result["watermark"], result["advanced"]) == (expected, advanced)
    assert control_items.get("dbo_orders")["watermark"] == expected


def test_a_decimal_too_precise_for_json_numbers_is_no_conflict(
    control_items, write_manifest, load_event, lambda_context
):
    # Stored as a DynamoDB number; the plan carried it as text (a float would lose digits).
    _locked_orders(
        control_items, filtercolumn="amount", startvalue=0, watermark=Decimal("12345678901234.123456789")
    )
    write_manifest({**MANIFEST, "watermarkColumn": "amount", "newWatermark": "12345678901234.223456789"})

    result = _commit(
        load_event, lambda_context, watermarkColumn="amount", previousWatermark="12345678901234.123456789"
    )

    assert result["advanced"] is True
    assert control_items.get("dbo_orders")["watermark"] == "12345678901234.223456789"


def test_a_malformed_manifest_is_invalid(control_items, write_manifest, load_event, lambda_context):
    _locked_orders(control_items)
    write_manifest('{"runId": "dbo_orders-20261121T0700Z", "rowsRead": ')

    with pytest.raises(ManifestInvalid, match="not valid JSON"):
        _commit(load_event, lambda_context)

    assert control_items.get("dbo_orders")["watermark"] == "2026-11-21 06:00:00"


def test_a_manifest_breaking_the_model_is_invalid(control_items, write_manifest, load_event, lambda_context):
    _locked_orders(control_items)
    write_manifest({**MANIFEST, "rowsRead": -1})

    with pytest.raises(ManifestInvalid, match="rowsRead"):
        _commit(load_event, lambda_context)


def test_a_missing_manifest_is_invalid(control_items, raw_bucket, load_event, lambda_context):
    _locked_orders(control_items)

    with pytest.raises(ManifestInvalid, match=f"no run manifest at s3://{raw_bucket}/{MANIFEST_KEY}"):
        _commit(load_event, lambda_context)


def test_another_runs_manifest_is_refused(control_items, write_manifest, load_event, lambda_context):
    _locked_orders(control_items)
    write_manifest({**MANIFEST, "runId": "dbo_orders-20261121T0600Z"})

    with pytest.raises(ManifestInvalid, match="belongs to run dbo_orders-20261121T0600Z"):
        _commit(load_event, lambda_context)


def test_a_watermark_of_another_kind_is_refused(control_items, write_manifest, load_event, lambda_context):
    _locked_orders(control_items)
    write_manifest({**MANIFEST, "newWatermark": 1700000000})

    with pytest.raises(ManifestInvalid, match="cannot compare"):
        _commit(load_event, lambda_context)

    assert control_items.get("dbo_orders")["watermark"] == "2026-11-21 06:00:00"


def test_a_deleted_item_is_not_recreated(control_items, write_manifest, load_event, lambda_context):
    write_manifest(MANIFEST)

    with pytest.raises(ControlItemNotFound):
        _commit(load_event, lambda_context)

    assert control_items.get("dbo_orders") is None


def test_without_dms_statistics_the_stats_leave_full_load_rows_out(
    control_items, write_manifest, load_event, lambda_context
):
    _locked_orders(control_items)
    write_manifest(MANIFEST)
    event = load_event("commit_watermark")
    del event["statistics"]

    result = handlers.commit_watermark.handler(event, lambda_context)

    assert result["stats"] == {name: value for name, value in STATS.items() if name != "fullLoadRows"}


@pytest.mark.parametrize(
    ("selection_run", "selection_folder", "problem"),
    [
        ("dbo_orders-20261121T0600Z", "continuous/dbo_orders/", "its runId is dbo_orders-20261121T0600Z"),
        ("dbo_orders-20261121T0700Z", "continuous/dbo_customers/", "its bronzeUri is"),
    ],
)
def test_a_continuous_run_commits_only_its_own_bronze_file_selection(
    control_items,
    write_manifest,
    raw_bucket,
    load_event,
    lambda_context,
    selection_run,
    selection_folder,
    problem,
):
    _locked_orders(control_items, cdcFileCheckpoint="dbo/orders/20261121-050000000.parquet")
    write_manifest(MANIFEST)
    plan = {
        "captureMode": "cdc",
        "cdcTask": "continuous",
        "bronzeUri": f"s3://{raw_bucket}/continuous/dbo_orders/",
        "bronzeFilesUri": f"s3://{raw_bucket}/manifests/dbo_orders/run.bronze-files.json",
        "fileCheckpoint": "dbo/orders/20261121-050000000.parquet",
        "maxFilesPerRun": 100,
        "maxBytesPerRun": 1000,
    }
    selection = {
        "runId": selection_run,
        "bronzeUri": f"s3://{raw_bucket}/{selection_folder}",
        "files": ["dbo/orders/20261121-060000000.parquet"],
        "totalBytes": 10,
    }
    boto3.client("s3").put_object(
        Bucket=raw_bucket,
        Key="manifests/dbo_orders/run.bronze-files.json",
        Body=json.dumps(selection).encode(),
    )

    with pytest.raises(ManifestInvalid, match=problem):
        _commit(load_event, lambda_context, **plan)
    item = control_items.get("dbo_orders")
    assert item["cdcFileCheckpoint"] == "dbo/orders/20261121-050000000.parquet"
    assert item["lockHolder"] == "dbo_orders-20261121T0700Z"


def test_a_file_checkpoint_moved_by_another_writer_is_a_conflict_and_nothing_is_stored(
    control_items, write_manifest, raw_bucket, load_event, lambda_context
):
    _locked_orders(control_items, cdcFileCheckpoint="dbo/orders/20261121-055500000.parquet")
    write_manifest(MANIFEST)
    selection = {
        "runId": "dbo_orders-20261121T0700Z",
        "bronzeUri": f"s3://{raw_bucket}/continuous/dbo_orders/",
        "files": ["dbo/orders/20261121-060000000.parquet"],
        "totalBytes": 10,
    }
    boto3.client("s3").put_object(
        Bucket=raw_bucket,
        Key="manifests/dbo_orders/run.bronze-files.json",
        Body=json.dumps(selection).encode(),
    )

    with pytest.raises(
        WatermarkConflict, match=r"cdc file checkpoint 'dbo/orders/20261121-055500000\.parquet'"
    ):
        _commit(
            load_event,
            lambda_context,
            captureMode="cdc",
            cdcTask="continuous",
            bronzeUri=f"s3://{raw_bucket}/continuous/dbo_orders/",
            bronzeFilesUri=f"s3://{raw_bucket}/manifests/dbo_orders/run.bronze-files.json",
            fileCheckpoint="dbo/orders/20261121-050000000.parquet",
            maxFilesPerRun=100,
            maxBytesPerRun=1000,
        )
    item = control_items.get("dbo_orders")
    assert item["cdcFileCheckpoint"] == "dbo/orders/20261121-055500000.parquet"
    assert item["lockHolder"] == "dbo_orders-20261121T0700Z"
