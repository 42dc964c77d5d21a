"""A table's lag behind now (icetide.run.freshness): the latest of a timestamp watermark, the moment
the last successful run read the source (delta) and the newest merged change (cdc), as the dashboard
and the freshness alarm see it; a caught-up time from the future is stale, not fresh."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from decimal import Decimal
from typing import Any

import pytest

from icetide.control.model import ControlItem
from icetide.errors import InvalidControlItem
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


# --- a caught-up time from the future; a cdc table's newest merged change ------------------------

CDC = {"captureMode": "cdc", "primaryKeys": "order_id"}
CONTINUOUS = {**CDC, "cdcTask": "continuous"}


class Warnings:
    """The warning lines freshness logs, as (message, extra)."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.lines: list[tuple[str, dict[str, Any]]] = []
        monkeypatch.setattr(freshness.logger, "warning", self._record)

    def _record(self, message: str, *, extra: dict[str, Any]) -> None:
        self.lines.append((message, extra))


@pytest.fixture
def warnings(monkeypatch: pytest.MonkeyPatch) -> Warnings:
    return Warnings(monkeypatch)


def test_the_allowance_is_minutes_of_clock_skew() -> None:
    assert timedelta(minutes=1) <= freshness.FUTURE_ALLOWANCE <= timedelta(hours=1)


@pytest.mark.parametrize(
    ("watermark", "newest_change", "expected"),
    [
        pytest.param("2026-11-21 10:00:00", None, 3600.0, id="watermark-an-hour-ahead"),
        pytest.param(None, datetime(2026, 11, 21, 11, 0, tzinfo=UTC), 7200.0, id="change-two-hours-ahead"),
        pytest.param(
            "2026-11-21 08:00:00",
            datetime(9999, 12, 31, 23, 59, 59, tzinfo=UTC),
            (datetime(9999, 12, 31, 23, 59, 59, tzinfo=UTC) - NOW).total_seconds(),
            id="forged-far-future-change",
        ),
    ],
)
def test_a_caught_up_time_past_the_allowance_is_stale_by_how_far_ahead_it_is(
    warnings: Warnings, watermark: Any, newest_change: datetime | None, expected: float
) -> None:
    assert freshness.lag_seconds(NOW, watermark, None, newest_change) == expected
    # Computing the lag logs nothing (the CLI prints it); the Lambdas warn, naming table and time.
    assert warnings.lines == []
    caught_up = freshness.caught_up_time(watermark, None, newest_change)
    freshness.warn_if_ahead_of_clock("orders", caught_up, NOW)
    [(message, extra)] = warnings.lines
    assert "orders" in message
    assert extra["table"] == "orders"
    assert extra["caughtUpTime"] == (newest_change or datetime(2026, 11, 21, 10, tzinfo=UTC)).strftime(
        "%Y-%m-%dT%H:%M:%SZ"
    )


def test_within_the_allowance_the_table_is_caught_up_without_a_warning(warnings: Warnings) -> None:
    just_inside = NOW + freshness.FUTURE_ALLOWANCE
    just_outside = just_inside + timedelta(seconds=1)

    assert freshness.lag_seconds(NOW, None, None, just_inside) == 0.0
    freshness.warn_if_ahead_of_clock("orders", just_inside, NOW)
    freshness.warn_if_ahead_of_clock("orders", None, NOW)
    assert warnings.lines == []
    assert (
        freshness.lag_seconds(NOW, None, None, just_outside)
        == (freshness.FUTURE_ALLOWANCE + timedelta(seconds=1)).total_seconds()
    )


def test_a_cdc_table_without_a_timestamp_watermark_falls_behind_from_its_newest_change() -> None:
    # A continuous table usually has no filter column: before its newest change counted, it had no
    # lag at all, and the freshness alarm could never see it fall behind.
    for item in (
        _item(**CONTINUOUS, lastRunStatus="SUCCEEDED", lastChangeTime="2026-11-21T06:30:00Z"),
        _item(**CDC, watermark=Decimal("5000"), lastChangeTime="2026-11-21T06:30:00Z"),
    ):
        assert freshness.item_lag_seconds(item, NOW) == 9000.0


@pytest.mark.parametrize(
    ("watermark", "change", "expected"),
    [
        pytest.param("2026-11-21 07:00:00", "2026-11-21T08:00:00Z", 3600.0, id="the-change-is-later"),
        pytest.param("2026-11-21 08:30:00", "2026-11-21T08:00:00Z", 1800.0, id="the-watermark-is-later"),
    ],
)
def test_a_cdc_table_counts_the_later_of_its_watermark_and_its_newest_change(
    watermark: str, change: str, expected: float
) -> None:
    item = _item(**CDC, watermark=watermark, lastChangeTime=change, lastSuccessTime="2026-11-21T08:55:00Z")

    assert freshness.item_lag_seconds(item, NOW) == expected


def test_a_cdc_table_whose_newest_change_is_in_the_future_is_stale() -> None:
    # A forged CDC row (dms_timestamp 9999-...) merged by a run: the table is not fresh forever.
    item = _item(**CONTINUOUS, watermark="2026-11-21 08:59:00", lastChangeTime="9999-12-31T23:59:59Z")

    assert (
        freshness.item_lag_seconds(item, NOW)
        == (datetime(9999, 12, 31, 23, 59, 59, tzinfo=UTC) - NOW).total_seconds()
    )


def test_a_delta_table_whose_timestamp_watermark_is_in_the_future_is_stale() -> None:
    item = _item(watermark="2026-11-22 09:00:00", lastSuccessTime="2026-11-21T08:55:00Z")

    assert freshness.item_lag_seconds(item, NOW) == 86400.0


def test_a_delta_table_ignores_a_newest_change_and_keeps_its_rules() -> None:
    # A delta task is a full load: its rows carry DMS's transfer time, never a commit time.
    quiet = {"watermark": "2026-11-21 06:00:00", "lastSuccessTime": "2026-11-21T08:00:00Z"}

    assert freshness.item_lag_seconds(_item(**quiet), NOW) == 3600.0
    assert freshness.item_lag_seconds(_item(**quiet, lastChangeTime="2026-11-21T08:59:00Z"), NOW) == 3600.0
    assert freshness.item_lag_seconds(_item(**quiet, lastChangeTime="9999-12-31T23:59:59Z"), NOW) == 3600.0


def test_a_last_change_time_that_is_no_time_makes_the_item_invalid() -> None:
    with pytest.raises(InvalidControlItem, match="lastChangeTime"):
        _item(**CDC, lastChangeTime="yesterday")
