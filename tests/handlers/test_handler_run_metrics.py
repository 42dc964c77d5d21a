"""Per-table metrics of the run handlers (issue 15): what commit, lock refusal, failure and the schedule
publish, read back from the CloudWatch embedded-metric lines Powertools prints."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Any

import boto3
import pytest

import handlers.acquire_lock
import handlers.commit_watermark
import handlers.record_failure
import handlers.start_workflow
from icetide.errors import TableLocked, TableUnderMaintenance
from icetide.run import freshness

RUN_ID = "dbo_orders-20261121T0700Z"  # the run of the sample events
MANIFEST_KEY = f"manifests/dbo_orders/{RUN_ID}.json"
# The run took its lock at 07:00:04 and commits at 07:12:04: twelve minutes.
LOCKED_AT = "2026-11-21T07:00:04Z"
COMMITTED_AT = datetime(2026, 11, 21, 7, 12, 4, tzinfo=UTC)
MANIFEST = {
    "runId": RUN_ID,
    "targetTable": "icetide_silver.dbo_orders",
    "rowsRead": 10,
    "rowsInserted": 4,
    "rowsUpdated": 5,
    "rowsDeleted": 1,
    "rowsUnchanged": 0,
    "watermarkColumn": "updated_at",
    "newWatermark": "2026-11-21 07:05:00",
    "snapshotId": 123456789,
    "alreadyCommitted": False,
    "schemaChanges": [],
}


def _metric_documents(capsys: pytest.CaptureFixture[str]) -> list[dict[str, Any]]:
    return [json.loads(line) for line in capsys.readouterr().out.splitlines() if '"_aws"' in line]


def _dimensions(document: dict[str, Any]) -> list[list[str]]:
    return [sorted(names) for names in document["_aws"]["CloudWatchMetrics"][0]["Dimensions"]]


def _table_metrics(documents: list[dict[str, Any]]) -> dict[str, dict[str, list[float]]]:
    """Table -> metric name -> values, from the documents that carry the table dimension."""
    tables: dict[str, dict[str, list[float]]] = {}
    for document in documents:
        if "table" not in document:
            continue
        names = [metric["Name"] for metric in document["_aws"]["CloudWatchMetrics"][0]["Metrics"]]
        tables.setdefault(document["table"], {}).update({name: document[name] for name in names})
    return tables


def _stack_metrics(documents: list[dict[str, Any]]) -> dict[str, list[float]]:
    """Metric name -> values, from the documents with the service dimension only."""
    (document,) = [d for d in documents if _dimensions(d) == [["service"]]]
    names = [metric["Name"] for metric in document["_aws"]["CloudWatchMetrics"][0]["Metrics"]]
    return {name: document[name] for name in names}


@pytest.fixture
def committing(control_items, raw_bucket, monkeypatch):
    """The sample run holding its lock since LOCKED_AT, its manifest written, the clock at COMMITTED_AT."""
    control_items.orders(lockHolder=RUN_ID, lockTime=LOCKED_AT, lastRunId=RUN_ID, lastRunStatus="RUNNING")
    body = json.dumps(MANIFEST).encode()
    boto3.client("s3").put_object(Bucket=raw_bucket, Key=MANIFEST_KEY, Body=body)
    monkeypatch.setattr(handlers.commit_watermark, "utc_now", lambda: COMMITTED_AT)


def test_a_commit_publishes_the_runs_rows_duration_and_lag_per_table(
    committing, load_event, lambda_context, capsys
):
    handlers.commit_watermark.handler(load_event("commit_watermark"), lambda_context)

    documents = _metric_documents(capsys)
    (per_table,) = [d for d in documents if "table" in d]
    assert _dimensions(per_table) == [["service", "table"]]
    assert _table_metrics(documents) == {
        "dbo_orders": {
            "RunsSucceeded": [1.0],
            "RowsRead": [10.0],
            "RowsInserted": [4.0],
            "RowsUpdated": [5.0],
            "RowsDeleted": [1.0],
            # 07:00:04 -> 07:12:04
            "RunSeconds": [720.0],
            # The watermark (07:05:00) is newer than the run's start: 07:05:00 -> 07:12:04.
            "LagSeconds": [424.0],
        }
    }


def test_a_commit_with_an_older_watermark_counts_the_lag_from_the_runs_start(
    committing, raw_bucket, load_event, lambda_context, capsys
):
    # Nothing changed at the source since 06:30: the run still read it all at 07:00:04.
    body = json.dumps({**MANIFEST, "newWatermark": "2026-11-21 06:30:00"}).encode()
    boto3.client("s3").put_object(Bucket=raw_bucket, Key=MANIFEST_KEY, Body=body)

    handlers.commit_watermark.handler(load_event("commit_watermark"), lambda_context)

    assert _table_metrics(_metric_documents(capsys))["dbo_orders"]["LagSeconds"] == [720.0]


def test_a_windowed_cdc_commit_counts_the_lag_from_its_watermark_only(
    committing, raw_bucket, load_event, lambda_context, capsys
):
    # Its task stopped at a server time on the replication instance's clock; how far it had read the
    # source by then is not known, so the run's start claims nothing (icetide.run.freshness).
    body = json.dumps({**MANIFEST, "newWatermark": "2026-11-21 06:30:00"}).encode()
    boto3.client("s3").put_object(Bucket=raw_bucket, Key=MANIFEST_KEY, Body=body)
    event = load_event("commit_watermark")
    event["plan"]["captureMode"] = "cdc"

    handlers.commit_watermark.handler(event, lambda_context)

    # 06:30:00 -> 07:12:04, not the 720 s a run that read the source after its lock would claim.
    assert _table_metrics(_metric_documents(capsys))["dbo_orders"]["LagSeconds"] == [2524.0]


def _cdc_commit(raw_bucket: str, load_event: Any, **manifest: Any) -> dict[str, Any]:
    """The sample run as a windowed cdc run whose manifest is MANIFEST with ``manifest`` applied."""
    body = json.dumps({**MANIFEST, "newWatermark": "2026-11-21 06:30:00", **manifest}).encode()
    boto3.client("s3").put_object(Bucket=raw_bucket, Key=MANIFEST_KEY, Body=body)
    event = load_event("commit_watermark")
    event["plan"]["captureMode"] = "cdc"
    return event


def test_a_cdc_commit_stores_its_newest_change_and_counts_the_lag_from_it(
    committing, control_items, raw_bucket, load_event, lambda_context, capsys
):
    event = _cdc_commit(raw_bucket, load_event, newestChangeTime="2026-11-21 06:50:00.750000")

    handlers.commit_watermark.handler(event, lambda_context)

    # Whole seconds, cut down: the stored time stays a lower bound of how far the task read.
    assert control_items.get("dbo_orders")["lastChangeTime"] == "2026-11-21T06:50:00Z"
    # 06:50:00 (later than the watermark's 06:30:00) -> 07:12:04.
    assert _table_metrics(_metric_documents(capsys))["dbo_orders"]["LagSeconds"] == [1324.0]


def test_a_cdc_commit_without_a_change_keeps_the_stored_newest_change(
    control_items, raw_bucket, load_event, lambda_context, capsys, monkeypatch
):
    control_items.orders(
        lockHolder=RUN_ID,
        lockTime=LOCKED_AT,
        lastRunId=RUN_ID,
        lastRunStatus="RUNNING",
        lastChangeTime="2026-11-21T06:40:00Z",
    )
    monkeypatch.setattr(handlers.commit_watermark, "utc_now", lambda: COMMITTED_AT)
    event = _cdc_commit(raw_bucket, load_event)

    handlers.commit_watermark.handler(event, lambda_context)

    assert control_items.get("dbo_orders")["lastChangeTime"] == "2026-11-21T06:40:00Z"
    # 06:40:00 -> 07:12:04.
    assert _table_metrics(_metric_documents(capsys))["dbo_orders"]["LagSeconds"] == [1924.0]


def test_a_cdc_commit_of_a_change_from_the_future_reports_the_table_stale(
    committing, control_items, raw_bucket, load_event, lambda_context, capsys
):
    # A forged CDC row: dms_timestamp 9999-12-31. It no longer counts as caught up.
    event = _cdc_commit(raw_bucket, load_event, newestChangeTime="9999-12-31 23:59:59")

    handlers.commit_watermark.handler(event, lambda_context)

    assert control_items.get("dbo_orders")["lastChangeTime"] == "9999-12-31T23:59:59Z"
    ahead = (datetime(9999, 12, 31, 23, 59, 59, tzinfo=UTC) - COMMITTED_AT).total_seconds()
    assert _table_metrics(_metric_documents(capsys))["dbo_orders"]["LagSeconds"] == [ahead]


def test_a_retried_commit_publishes_no_table_metrics_again(committing, load_event, lambda_context, capsys):
    handlers.commit_watermark.handler(load_event("commit_watermark"), lambda_context)
    capsys.readouterr()

    handlers.commit_watermark.handler(load_event("commit_watermark"), lambda_context)

    assert _table_metrics(_metric_documents(capsys)) == {}


@pytest.mark.parametrize(
    ("holder", "refusal"),
    [
        ("dbo_orders-20261121T0600Z", TableLocked),
        ("dbo_orders-maintain-20261121T0000Z", TableUnderMaintenance),
    ],
)
def test_a_lock_refusal_is_counted_as_a_refused_run_of_the_table(
    control_items, load_event, lambda_context, capsys, holder, refusal
):
    since = datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    control_items.orders(lockHolder=holder, lockTime=since)

    with pytest.raises(refusal):
        handlers.acquire_lock.handler(load_event("acquire_lock"), lambda_context)

    documents = _metric_documents(capsys)
    assert _table_metrics(documents) == {"dbo_orders": {"RunsRefused": [1.0]}}
    # A refusal is not a failure: the failed-runs alarm counts RunsFailed.
    assert "RunsFailed" not in json.dumps(documents)


def test_a_taken_lock_publishes_no_refusal(control_items, load_event, lambda_context, capsys):
    control_items.orders()

    handlers.acquire_lock.handler(load_event("acquire_lock"), lambda_context)

    assert "RunsRefused" not in capsys.readouterr().out


def test_a_recorded_failure_counts_for_the_stack_and_for_the_table(
    control_items, load_event, lambda_context, capsys
):
    control_items.orders(lockHolder=RUN_ID, lockTime=LOCKED_AT)

    handlers.record_failure.handler(load_event("record_failure"), lambda_context)

    documents = _metric_documents(capsys)
    assert _table_metrics(documents) == {"dbo_orders": {"RunsFailed": [1.0]}}
    assert _stack_metrics(documents) == {"RunsFailed": [1.0]}


SCHEDULED_AT = datetime(2026, 11, 21, 9, 0, 30, tzinfo=UTC)


def _item(name: str, **extra: object) -> dict[str, Any]:
    return {"targetTableName": name, "sourceSchema": "dbo", "sourceTable": name, **extra}


def test_the_schedule_publishes_each_tables_lag_and_the_largest_for_the_stack(
    control_items, state_machine, load_event, lambda_context, capsys, monkeypatch
):
    monkeypatch.setattr(handlers.start_workflow, "utc_now", lambda: SCHEDULED_AT)
    # Its last run failed: only the timestamp watermark counts (09:00:30 - 06:00:00 = 3 h 0 min 30 s).
    control_items.orders(lastRunStatus="FAILED", lastRunTime="2026-11-21T08:40:00Z")
    # A number watermark and a successful run committed at 08:20:30: 40 minutes.
    control_items.put(
        _item(
            "dbo_customers",
            filtercolumn="customer_id",
            filteroperator="gte",
            startvalue="0",
            watermark=5000,
            lastRunStatus="SUCCEEDED",
            lastRunTime="2026-11-21T08:20:30Z",
        )
    )
    # Never ran, no watermark: unknown, published neither alone nor in the maximum.
    control_items.put(_item("dbo_new_table"))
    # Inactive: not loaded on purpose, so not behind.
    control_items.put(_item("dbo_archive", activeflag="N", watermark="2020-01-01 00:00:00"))
    event = load_event("start_workflow")
    event["time"] = "2026-11-21T09:00:00Z"

    handlers.start_workflow.handler(event, lambda_context)

    documents = _metric_documents(capsys)
    assert _table_metrics(documents) == {
        "dbo_customers": {"LagSeconds": [2400.0]},
        "dbo_orders": {"LagSeconds": [10830.0]},
    }
    assert _stack_metrics(documents) == {
        "RunsStarted": [3.0],
        "InvalidControlItems": [0.0],
        "MaxLagSeconds": [10830.0],
    }


def test_the_schedule_sees_a_cdc_table_without_a_watermark_and_one_whose_change_is_in_the_future(
    control_items, state_machine, load_event, lambda_context, capsys, monkeypatch
):
    monkeypatch.setattr(handlers.start_workflow, "utc_now", lambda: SCHEDULED_AT)
    cdc = {"captureMode": "cdc", "primaryKeys": "id", "lastRunStatus": "SUCCEEDED"}
    # No filter column, so no watermark: its newest merged change (07:00:30) is two hours old.
    control_items.put(_item("dbo_events", **cdc, lastChangeTime="2026-11-21T07:00:30Z"))
    # A forged change from 9999 was merged: stale by how far ahead it is, not caught up.
    control_items.put(_item("dbo_forged", **cdc, lastChangeTime="9999-12-31T23:59:59Z"))
    warned: list[dict[str, Any]] = []
    monkeypatch.setattr(freshness.logger, "warning", lambda message, extra: warned.append(extra))
    event = load_event("start_workflow")
    event["time"] = "2026-11-21T09:00:00Z"

    handlers.start_workflow.handler(event, lambda_context)

    documents = _metric_documents(capsys)
    assert [(extra["table"], extra["caughtUpTime"]) for extra in warned] == [
        ("dbo_forged", "9999-12-31T23:59:59Z")
    ]
    ahead = (datetime(9999, 12, 31, 23, 59, 59, tzinfo=UTC) - SCHEDULED_AT).total_seconds()
    assert _table_metrics(documents) == {
        "dbo_events": {"LagSeconds": [7200.0]},
        "dbo_forged": {"LagSeconds": [ahead]},
    }
    assert _stack_metrics(documents)["MaxLagSeconds"] == [ahead]


def test_invalid_control_items_are_counted_for_the_stack(
    control_items, state_machine, load_event, lambda_context, capsys
):
    control_items.orders()
    control_items.put({"targetTableName": "dbo_broken", "sourceSchema": "dbo"})

    handlers.start_workflow.handler(load_event("start_workflow"), lambda_context)

    assert _stack_metrics(_metric_documents(capsys))["InvalidControlItems"] == [1.0]
