"""A table's lag behind now (icetide.run.freshness): the later of a timestamp watermark and the moment
the last successful run read the source, as the dashboard and the freshness alarm see it."""

from __future__ import annotations

from datetime import UTC, datetime
from decimal import Decimal
from typing import Any

import pytest

from icetide.control.model import ControlItem
from icetide.run import freshness

NOW = datetime(2026, 11, 21, 9, 0, 0, tzinfo=UTC)
READ_AT = datetime(2026, 11, 21, 8, 0, 0, tzinfo=UTC)


@pytest.mark.parametrize(
    ("watermark", "source_read_at", "expected"),
    [
        pytest.param("2026-11-21 08:30:00", READ_AT, 1800.0, id="watermark-newer-than-the-read"),
        pytest.param("2026-11-21 06:00:00", READ_AT, 3600.0, id="quiet-source-the-read-counts"),
        pytest.param("2026-11-21T09:30:00+01:00", None, 1800.0, id="zoned-watermark-in-utc"),
        pytest.param(Decimal("5000"), READ_AT, 3600.0, id="number-watermark-the-read-counts"),
        pytest.param("A-0012", READ_AT, 3600.0, id="text-watermark-the-read-counts"),
        pytest.param("2026-11-21 09:05:00", None, 0.0, id="watermark-ahead-of-the-clock-is-caught-up"),
    ],
)
def test_the_lag_runs_from_the_later_of_watermark_and_read(
    watermark: Any, source_read_at: datetime | None, expected: float
) -> None:
    assert freshness.lag_seconds(NOW, watermark, source_read_at) == expected


@pytest.mark.parametrize("watermark", [None, Decimal("5000"), "A-0012"])
def test_without_a_timestamp_watermark_or_a_read_the_lag_is_unknown(watermark: Any) -> None:
    assert freshness.lag_seconds(NOW, watermark, None) is None


def _item(**run_state: Any) -> ControlItem:
    return ControlItem.parse(
        {"targetTableName": "orders", "sourceSchema": "dbo", "sourceTable": "orders", **run_state}
    )


def test_between_runs_a_succeeded_runs_time_counts() -> None:
    item = _item(watermark=Decimal("5000"), lastRunStatus="SUCCEEDED", lastRunTime="2026-11-21T08:15:00Z")

    assert freshness.item_lag_seconds(item, NOW) == 2700.0


@pytest.mark.parametrize("status", ["FAILED", "RUNNING"])
def test_a_table_whose_runs_fail_falls_behind_from_its_last_success(status: str) -> None:
    # The blog's number watermark: a failed run overwrote lastRunTime; lastSuccessTime (ten hours
    # ago) is what keeps the table in the freshness alarm's sight.
    item = _item(
        watermark=Decimal("5000"),
        lastRunStatus=status,
        lastRunTime="2026-11-21T08:50:00Z",
        lastSuccessTime="2026-11-20T23:00:00Z",
    )

    assert freshness.item_lag_seconds(item, NOW) == 36000.0


@pytest.mark.parametrize("status", ["FAILED", "RUNNING"])
def test_without_a_known_success_after_a_failed_or_during_a_run_only_the_watermark_tells(status: str) -> None:
    with_timestamp = _item(
        watermark="2026-11-21 05:00:00", lastRunStatus=status, lastRunTime="2026-11-21T08:50:00Z"
    )
    with_number = _item(watermark=Decimal("5000"), lastRunStatus=status, lastRunTime="2026-11-21T08:50:00Z")

    assert freshness.item_lag_seconds(with_timestamp, NOW) == 14400.0
    assert freshness.item_lag_seconds(with_number, NOW) is None


def test_a_continuous_table_counts_its_watermark_only() -> None:
    # Its last run may have left a backlog of files: a success says nothing about the source.
    item = _item(
        captureMode="cdc",
        cdcTask="continuous",
        primaryKeys="order_id",
        watermark="2026-11-21 07:00:00",
        lastRunStatus="SUCCEEDED",
        lastRunTime="2026-11-21T08:55:00Z",
    )

    assert freshness.item_lag_seconds(item, NOW) == 7200.0


def test_a_windowed_cdc_table_counts_its_watermark_only() -> None:
    # Its task stopped at a server time on the replication instance's clock: how far it had read the
    # source's log by then is not known, so its success (an hour later) claims nothing.
    fresh_success = {
        "captureMode": "cdc",
        "primaryKeys": "order_id",
        "lastRunStatus": "SUCCEEDED",
        "lastRunTime": "2026-11-21T08:55:00Z",
        "lastSuccessTime": "2026-11-21T08:55:00Z",
    }

    assert freshness.item_lag_seconds(_item(**fresh_success, watermark="2026-11-21 07:00:00"), NOW) == 7200.0
    assert freshness.item_lag_seconds(_item(**fresh_success, watermark=Decimal("5000")), NOW) is None
