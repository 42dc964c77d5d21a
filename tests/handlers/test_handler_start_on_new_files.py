"""start_on_new_files: a file below a continuous table's folder starts that table's run, once per slot."""

from __future__ import annotations

import logging
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

import handlers.start_on_new_files
from icetide.run.handler_inputs import InvalidHandlerInput

# As tests/handlers/conftest.py creates them.
STATE_MACHINE_ARN = "arn:aws:states:eu-west-1:123456789012:stateMachine:icetide-table-run"
RAW_BUCKET = "icetide-raw-123456789012-eu-west-1"
CDC_FILE = "bronze/_continuous/dbo_orders/dbo/orders/20261121-070301123.parquet"
# A windowed run's file: below the bronze prefix, in the run's own folder.
RUN_FILE = "bronze/dbo_orders-20261121T0700Z/dbo/orders/LOAD00000001.parquet"


def _continuous(name: str = "dbo_orders", **extra: Any) -> dict[str, Any]:
    """A continuous cdc control item (its source is dbo.<name without dbo_>)."""
    return {
        "targetTableName": name,
        "sourceSchema": "dbo",
        "sourceTable": name.removeprefix("dbo_"),
        "primaryKeys": "id",
        "captureMode": "cdc",
        "cdcTask": "continuous",
        **extra,
    }


def _event(load_event: Any, key: str = CDC_FILE, time: str | None = None, bucket: str | None = None) -> Any:
    event = load_event("start_on_new_files")
    event["detail"]["object"]["key"] = key
    if time is not None:
        event["time"] = time
    if bucket is not None:
        event["detail"]["bucket"]["name"] = bucket
    return event


def test_a_file_of_a_continuous_table_starts_its_run_named_after_the_event_slot(
    executions, control_items, state_machine, load_event, lambda_context
):
    control_items.put(_continuous())

    result = handlers.start_on_new_files.handler(_event(load_event), lambda_context)

    # 07:03:12 lies in the 5-minute slot starting 07:00.
    assert result == {"targetTableName": "dbo_orders", "runId": "dbo_orders-20261121T0700Z", "started": True}
    assert executions() == {
        "dbo_orders-20261121T0700Z": {
            "targetTableName": "dbo_orders",
            "runId": "dbo_orders-20261121T0700Z",
            "scheduledTime": "2026-11-21T07:03:12Z",
        }
    }


def test_more_files_in_the_same_slot_start_nothing_new_and_the_next_slot_starts_a_run(
    executions, control_items, state_machine, load_event, lambda_context
):
    control_items.put(_continuous())
    first = handlers.start_on_new_files.handler(_event(load_event), lambda_context)

    later_in_slot = handlers.start_on_new_files.handler(
        _event(load_event, CDC_FILE.replace("070301123", "070459999"), time="2026-11-21T07:04:59Z"),
        lambda_context,
    )
    next_slot = handlers.start_on_new_files.handler(
        _event(load_event, CDC_FILE.replace("070301123", "070500004"), time="2026-11-21T07:05:00Z"),
        lambda_context,
    )

    assert first["started"] is True
    assert later_in_slot == {
        "targetTableName": "dbo_orders",
        "runId": "dbo_orders-20261121T0700Z",
        "started": False,
    }
    assert next_slot == {
        "targetTableName": "dbo_orders",
        "runId": "dbo_orders-20261121T0705Z",
        "started": True,
    }
    assert sorted(executions()) == ["dbo_orders-20261121T0700Z", "dbo_orders-20261121T0705Z"]


def test_the_slot_length_is_event_slot_minutes(
    control_items, state_machine, load_event, lambda_context, monkeypatch
):
    monkeypatch.setenv("EVENT_SLOT_MINUTES", "15")
    control_items.put(_continuous())

    result = handlers.start_on_new_files.handler(
        _event(load_event, time="2026-11-21T07:29:59Z"), lambda_context
    )

    assert result["runId"] == "dbo_orders-20261121T0715Z"


def test_the_table_is_found_by_its_folder_among_others(
    executions, control_items, state_machine, load_event, lambda_context
):
    # dbo_orders_archive's folder starts with "dbo_orders" but is not dbo_orders' folder; dbo_lines
    # writes below an outputS3Prefix.
    control_items.put(_continuous())
    control_items.put(_continuous("dbo_orders_archive"))
    control_items.put(_continuous("dbo_lines", outputS3Prefix="sales"))
    archive_file = "bronze/_continuous/dbo_orders_archive/dbo/orders_archive/LOAD00000001.parquet"
    lines_file = "bronze/_continuous/sales/dbo_lines/dbo/lines/20261121-070301123.parquet"

    archive = handlers.start_on_new_files.handler(_event(load_event, archive_file), lambda_context)
    lines = handlers.start_on_new_files.handler(_event(load_event, lines_file), lambda_context)

    assert archive["targetTableName"] == "dbo_orders_archive"
    assert lines["targetTableName"] == "dbo_lines"
    assert sorted(executions()) == ["dbo_lines-20261121T0700Z", "dbo_orders_archive-20261121T0700Z"]


def test_tables_whose_folders_nest_are_invalid_and_a_file_below_them_starts_neither(
    executions, control_items, state_machine, load_event, lambda_context
):
    control_items.put(_continuous("sales"))
    control_items.put(_continuous("dbo_lines", outputS3Prefix="sales"))

    result = handlers.start_on_new_files.handler(
        _event(load_event, "bronze/_continuous/sales/dbo_lines/dbo/lines/20261121-070301123.parquet"),
        lambda_context,
    )

    assert result == {
        "ignored": "no active continuous table's folder holds "
        "bronze/_continuous/sales/dbo_lines/dbo/lines/20261121-070301123.parquet"
    }
    assert list(executions()) == []


def test_a_table_locked_by_a_live_run_starts_nothing_and_keeps_the_slot_free(
    executions, control_items, state_machine, load_event, lambda_context
):
    # The lock was taken a minute ago (the run of the previous slot, its Glue job still going).
    recent = (datetime.now(UTC) - timedelta(minutes=1)).strftime("%Y-%m-%dT%H:%M:%SZ")
    control_items.put(_continuous(lockHolder="dbo_orders-20261121T0655Z", lockTime=recent))

    locked = handlers.start_on_new_files.handler(_event(load_event), lambda_context)
    control_items.put(_continuous())  # that run committed and released the lock
    later = handlers.start_on_new_files.handler(
        _event(load_event, time="2026-11-21T07:04:00Z"), lambda_context
    )

    assert locked == {
        "targetTableName": "dbo_orders",
        "runId": "dbo_orders-20261121T0700Z",
        "started": False,
        "lockedBy": "dbo_orders-20261121T0655Z",
    }
    # The slot's name was not used up by an execution that could only fail at the lock.
    assert later["started"] is True
    assert list(executions()) == ["dbo_orders-20261121T0700Z"]


def test_a_stale_lock_does_not_hold_back_the_run(control_items, state_machine, load_event, lambda_context):
    # LOCK_STALE_AFTER_SECONDS is 21600 (conftest): a lock of a day ago belongs to a run that died.
    old = (datetime.now(UTC) - timedelta(days=1)).strftime("%Y-%m-%dT%H:%M:%SZ")
    control_items.put(_continuous(lockHolder="dbo_orders-20261120T0700Z", lockTime=old))

    result = handlers.start_on_new_files.handler(_event(load_event), lambda_context)

    assert result == {"targetTableName": "dbo_orders", "runId": "dbo_orders-20261121T0700Z", "started": True}


@pytest.mark.parametrize(
    ("item", "key"),
    [
        pytest.param(_continuous(activeflag="N"), CDC_FILE, id="inactive-table"),
        pytest.param(_continuous(cdcTask="windowed"), CDC_FILE, id="windowed-cdc-table"),
        pytest.param(
            {"targetTableName": "dbo_orders", "sourceSchema": "dbo", "sourceTable": "orders"},
            CDC_FILE,
            id="delta-table",
        ),
        pytest.param(
            _continuous(),
            "bronze/_continuous/dbo_customers/dbo/customers/LOAD00000001.parquet",
            id="no-table",
        ),
        pytest.param(_continuous(), "bronze/_continuous/dbo_orders", id="folder-name-without-slash"),
    ],
)
def test_a_file_no_active_continuous_table_owns_is_ignored(
    executions, control_items, state_machine, load_event, lambda_context, item, key, caplog
):
    control_items.put(item)

    with caplog.at_level(logging.INFO):
        result = handlers.start_on_new_files.handler(_event(load_event, key), lambda_context)

    assert result == {"ignored": f"no active continuous table's folder holds {key}"}
    assert executions() == {}
    assert "object event ignored" in caplog.text


@pytest.mark.parametrize(
    ("bucket", "key", "reason"),
    [
        ("another-bucket", CDC_FILE, f"bucket another-bucket is not the raw bucket {RAW_BUCKET}"),
        (
            RAW_BUCKET,
            RUN_FILE,
            f"{RUN_FILE} is not below bronze/_continuous/",
        ),
        (
            RAW_BUCKET,
            "manifests/dbo_orders/run.json",
            "manifests/dbo_orders/run.json is not below bronze/_continuous/",
        ),
    ],
)
def test_an_object_outside_the_continuous_folders_is_ignored_without_reading_the_control_table(
    executions, state_machine, load_event, lambda_context, bucket, key, reason
):
    # No control table exists: reading it would fail.
    result = handlers.start_on_new_files.handler(_event(load_event, key, bucket=bucket), lambda_context)

    assert result == {"ignored": reason}
    assert executions() == {}


def test_an_invalid_control_item_is_logged_and_skipped(
    control_items, state_machine, load_event, lambda_context, caplog
):
    control_items.put(_continuous())
    control_items.put(_continuous("dbo_broken", maxFilesPerRun="many"))

    with caplog.at_level(logging.ERROR):
        result = handlers.start_on_new_files.handler(_event(load_event), lambda_context)

    assert result["started"] is True
    (logged,) = [record for record in caplog.records if record.getMessage() == "invalid control item skipped"]
    assert logged.targetTableName == "dbo_broken"


def test_a_file_of_an_invalid_continuous_item_starts_nothing(
    executions, control_items, state_machine, load_event, lambda_context
):
    control_items.put(_continuous(maxFilesPerRun=0))

    result = handlers.start_on_new_files.handler(_event(load_event), lambda_context)

    assert "ignored" in result
    assert executions() == {}


@pytest.mark.parametrize(
    ("change", "named"),
    [
        (lambda event: event.pop("time"), "time: required attribute is missing"),
        (lambda event: event["detail"].pop("object"), "detail.object: required attribute is missing"),
        (lambda event: event["detail"]["bucket"].update(name=""), "detail.bucket.name"),
        (lambda event: event.update(time="yesterday"), "time"),
    ],
)
def test_a_malformed_event_is_refused_naming_what_is_wrong(
    state_machine, load_event, lambda_context, change, named
):
    event = load_event("start_on_new_files")
    change(event)

    with pytest.raises(InvalidHandlerInput) as raised:
        handlers.start_on_new_files.handler(event, lambda_context)

    assert str(raised.value).startswith("ObjectCreatedEvent: ")
    assert named in str(raised.value)


def test_an_event_that_is_no_object_is_refused(state_machine, lambda_context):
    with pytest.raises(InvalidHandlerInput, match="must be a JSON object"):
        handlers.start_on_new_files.handler(["not", "an", "event"], lambda_context)  # type: ignore[arg-type]
