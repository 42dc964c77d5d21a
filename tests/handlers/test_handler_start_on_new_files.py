"""start_on_new_files: a file below a continuous table's folder starts that table's run, once per
slot; a batch of object events from the queue costs one control-table scan and starts at most one
run per table."""

from __future__ import annotations

import json
import logging
from collections.abc import Callable
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
    """The events rule's S3 event (the body of the sample's record), for ``key``."""
    (record,) = load_event("start_on_new_files")["Records"]
    event = json.loads(record["body"])
    event["detail"]["object"]["key"] = key
    if time is not None:
        event["time"] = time
    if bucket is not None:
        event["detail"]["bucket"]["name"] = bucket
    return event


def _batch(*bodies: Any) -> dict[str, Any]:
    """SQS records as the queue's event source mapping hands them over: message ids m0, m1, ..."""
    return {
        "Records": [
            {"messageId": f"m{index}", "body": body if isinstance(body, str) else json.dumps(body)}
            for index, body in enumerate(bodies)
        ]
    }


def _handle(lambda_context: Any, *events: Any) -> dict[str, Any]:
    result: dict[str, Any] = handlers.start_on_new_files.handler(_batch(*events), lambda_context)
    return result


NO_FAILURES: dict[str, Any] = {"batchItemFailures": []}


@pytest.fixture
def scans(monkeypatch: pytest.MonkeyPatch) -> Callable[[], int]:
    """How often the handler has read the control table."""
    count = 0
    scan = handlers.start_on_new_files.triaged_control_items

    def counting(table_name: str) -> Any:
        nonlocal count
        count += 1
        return scan(table_name)

    monkeypatch.setattr(handlers.start_on_new_files, "triaged_control_items", counting)
    return lambda: count


def test_a_file_of_a_continuous_table_starts_its_run_named_after_the_event_slot(
    executions, control_items, state_machine, load_event, lambda_context
):
    control_items.put(_continuous())

    result = _handle(lambda_context, _event(load_event))

    # 07:03:12 lies in the 5-minute slot starting 07:00.
    assert result == NO_FAILURES
    assert executions() == {
        "dbo_orders-20261121T0700Z": {
            "targetTableName": "dbo_orders",
            "runId": "dbo_orders-20261121T0700Z",
            "scheduledTime": "2026-11-21T07:03:12Z",
        }
    }


def test_the_sample_event_starts_the_run_of_its_table(
    executions, control_items, state_machine, load_event, lambda_context
):
    control_items.put(_continuous())

    result = handlers.start_on_new_files.handler(load_event("start_on_new_files"), lambda_context)

    assert result == NO_FAILURES
    assert list(executions()) == ["dbo_orders-20261121T0700Z"]


def test_more_files_in_the_same_slot_start_nothing_new_and_the_next_slot_starts_a_run(
    executions, control_items, state_machine, load_event, lambda_context, caplog
):
    control_items.put(_continuous())
    caplog.set_level(logging.INFO)
    _handle(lambda_context, _event(load_event))

    later_in_slot = _handle(
        lambda_context,
        _event(load_event, CDC_FILE.replace("070301123", "070459999"), time="2026-11-21T07:04:59Z"),
    )
    next_slot = _handle(
        lambda_context,
        _event(load_event, CDC_FILE.replace("070301123", "070500004"), time="2026-11-21T07:05:00Z"),
    )

    assert later_in_slot == next_slot == NO_FAILURES
    handled = [(r.runId, r.started) for r in caplog.records if r.getMessage() == "object events handled"]
    assert handled == [
        ("dbo_orders-20261121T0700Z", True),
        ("dbo_orders-20261121T0700Z", False),
        ("dbo_orders-20261121T0705Z", True),
    ]
    assert sorted(executions()) == ["dbo_orders-20261121T0700Z", "dbo_orders-20261121T0705Z"]


def test_a_burst_in_one_batch_costs_one_scan_and_starts_one_run_per_table(
    executions, control_items, state_machine, load_event, lambda_context, scans
):
    # 40 files of two tables over two slots, and one outside the continuous folders: one scan, and
    # for each table the run of its latest event's slot (it lists the earlier files too).
    control_items.put(_continuous())
    control_items.put(_continuous("dbo_lines"))
    burst = []
    for second in range(0, 400, 20):
        moment = datetime(2026, 11, 21, 7, 0, tzinfo=UTC) + timedelta(seconds=second)
        stamp = moment.strftime("%Y%m%d-%H%M%S000")
        when = moment.strftime("%Y-%m-%dT%H:%M:%SZ")
        burst.append(
            _event(load_event, f"bronze/_continuous/dbo_orders/dbo/orders/{stamp}.parquet", time=when)
        )
        burst.append(_event(load_event, f"bronze/_continuous/dbo_lines/dbo/lines/{stamp}.parquet", time=when))
    burst.append(_event(load_event, RUN_FILE))

    result = _handle(lambda_context, *burst)

    assert result == NO_FAILURES
    assert scans() == 1
    # The latest events (07:06:20) lie in the 07:05 slot.
    assert sorted(executions()) == ["dbo_lines-20261121T0705Z", "dbo_orders-20261121T0705Z"]
    assert executions()["dbo_orders-20261121T0705Z"]["scheduledTime"] == "2026-11-21T07:06:20Z"


def test_a_batch_of_objects_outside_the_continuous_folders_reads_no_control_table(
    executions, state_machine, load_event, lambda_context, scans
):
    result = _handle(
        lambda_context, _event(load_event, RUN_FILE), _event(load_event, bucket="another-bucket")
    )

    assert result == NO_FAILURES
    assert scans() == 0
    assert executions() == {}


def test_the_slot_length_is_event_slot_minutes(
    executions, control_items, state_machine, load_event, lambda_context, monkeypatch
):
    monkeypatch.setenv("EVENT_SLOT_MINUTES", "15")
    control_items.put(_continuous())

    _handle(lambda_context, _event(load_event, time="2026-11-21T07:29:59Z"))

    assert list(executions()) == ["dbo_orders-20261121T0715Z"]


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

    _handle(lambda_context, _event(load_event, archive_file))
    _handle(lambda_context, _event(load_event, lines_file))

    assert sorted(executions()) == ["dbo_lines-20261121T0700Z", "dbo_orders_archive-20261121T0700Z"]


def test_tables_whose_folders_nest_are_invalid_and_a_file_below_them_starts_neither(
    executions, control_items, state_machine, load_event, lambda_context, caplog
):
    control_items.put(_continuous("sales"))
    control_items.put(_continuous("dbo_lines", outputS3Prefix="sales"))
    key = "bronze/_continuous/sales/dbo_lines/dbo/lines/20261121-070301123.parquet"

    with caplog.at_level(logging.INFO):
        result = _handle(lambda_context, _event(load_event, key))

    assert result == NO_FAILURES
    (ignored,) = [r for r in caplog.records if r.getMessage() == "object event ignored"]
    assert ignored.reason == f"no active continuous table's folder holds {key}"
    assert list(executions()) == []


def test_a_table_locked_by_a_live_run_starts_nothing_and_keeps_the_slot_free(
    executions, control_items, state_machine, load_event, lambda_context, caplog
):
    # The lock was taken a minute ago (the run of the previous slot, its Glue job still going).
    recent = (datetime.now(UTC) - timedelta(minutes=1)).strftime("%Y-%m-%dT%H:%M:%SZ")
    control_items.put(_continuous(lockHolder="dbo_orders-20261121T0655Z", lockTime=recent))

    with caplog.at_level(logging.INFO):
        locked = _handle(lambda_context, _event(load_event))
    control_items.put(_continuous())  # that run committed and released the lock
    later = _handle(lambda_context, _event(load_event, time="2026-11-21T07:04:00Z"))

    # The locked table's events are handled (not retried): the file waits for the next event.
    assert locked == later == NO_FAILURES
    (logged,) = [r for r in caplog.records if r.getMessage() == "table locked by a run: nothing started"]
    assert (logged.runId, logged.lockedBy) == ("dbo_orders-20261121T0700Z", "dbo_orders-20261121T0655Z")
    # The slot's name was not used up by an execution that could only fail at the lock.
    assert list(executions()) == ["dbo_orders-20261121T0700Z"]


def test_a_stale_lock_does_not_hold_back_the_run(
    executions, control_items, state_machine, load_event, lambda_context
):
    # LOCK_STALE_AFTER_SECONDS is 21600 (conftest): a lock of a day ago belongs to a run that died.
    old = (datetime.now(UTC) - timedelta(days=1)).strftime("%Y-%m-%dT%H:%M:%SZ")
    control_items.put(_continuous(lockHolder="dbo_orders-20261120T0700Z", lockTime=old))

    _handle(lambda_context, _event(load_event))

    assert list(executions()) == ["dbo_orders-20261121T0700Z"]


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
        result = _handle(lambda_context, _event(load_event, key))

    assert result == NO_FAILURES
    (ignored,) = [r for r in caplog.records if r.getMessage() == "object event ignored"]
    assert ignored.reason == f"no active continuous table's folder holds {key}"
    assert executions() == {}


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
    executions, state_machine, load_event, lambda_context, bucket, key, reason, caplog
):
    # No control table exists: reading it would fail.
    with caplog.at_level(logging.INFO):
        result = _handle(lambda_context, _event(load_event, key, bucket=bucket))

    assert result == NO_FAILURES
    (ignored,) = [r for r in caplog.records if r.getMessage() == "object event ignored"]
    assert ignored.reason == reason
    assert executions() == {}


def test_an_invalid_control_item_is_logged_and_skipped(
    executions, control_items, state_machine, load_event, lambda_context, caplog
):
    control_items.put(_continuous())
    control_items.put(_continuous("dbo_broken", maxFilesPerRun="many"))

    with caplog.at_level(logging.ERROR):
        _handle(lambda_context, _event(load_event))

    assert list(executions()) == ["dbo_orders-20261121T0700Z"]
    (logged,) = [record for record in caplog.records if record.getMessage() == "invalid control item skipped"]
    assert logged.targetTableName == "dbo_broken"


def test_a_file_of_an_invalid_continuous_item_starts_nothing(
    executions, control_items, state_machine, load_event, lambda_context
):
    control_items.put(_continuous(maxFilesPerRun=0))

    result = _handle(lambda_context, _event(load_event))

    assert result == NO_FAILURES
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
def test_a_malformed_record_alone_is_reported_failed_naming_what_is_wrong(
    executions, control_items, state_machine, load_event, lambda_context, change, named, caplog
):
    control_items.put(_continuous())
    malformed = _event(load_event)
    change(malformed)

    with caplog.at_level(logging.ERROR):
        result = _handle(lambda_context, _event(load_event), malformed)

    # The good record started its run; only the malformed one comes back (and, in the end, lands in
    # the dead-letter queue).
    assert result == {"batchItemFailures": [{"itemIdentifier": "m1"}]}
    assert list(executions()) == ["dbo_orders-20261121T0700Z"]
    (refused,) = [r for r in caplog.records if r.getMessage() == "object event record refused"]
    assert refused.messageId == "m1"
    assert refused.error.startswith("ObjectCreatedEvent: ")
    assert named in refused.error


@pytest.mark.parametrize(
    ("body", "named"),
    [
        ("not json", "record m0: body is not JSON"),
        ('["an", "array"]', "record m0: body is not a JSON object"),
    ],
)
def test_a_record_whose_body_is_no_json_object_is_reported_failed(
    state_machine, lambda_context, body, named, caplog
):
    with caplog.at_level(logging.ERROR):
        result = _handle(lambda_context, body)

    assert result == {"batchItemFailures": [{"itemIdentifier": "m0"}]}
    (refused,) = [r for r in caplog.records if r.getMessage() == "object event record refused"]
    assert refused.error.startswith(named)


def test_the_records_of_a_table_whose_run_could_not_start_are_reported_failed(
    executions, control_items, state_machine, load_event, lambda_context, monkeypatch
):
    from botocore.exceptions import ClientError

    control_items.put(_continuous())
    control_items.put(_continuous("dbo_lines"))
    start_once = handlers.start_on_new_files.stepfunctions.start_execution_once

    def throttled_for_orders(machine: str, name: str, execution_input: Any) -> bool:
        if name.startswith("dbo_orders-"):
            raise ClientError(
                {"Error": {"Code": "ThrottlingException", "Message": "Rate exceeded"}}, "StartExecution"
            )
        return start_once(machine, name, execution_input)

    monkeypatch.setattr(
        handlers.start_on_new_files.stepfunctions, "start_execution_once", throttled_for_orders
    )
    lines_file = "bronze/_continuous/dbo_lines/dbo/lines/20261121-070301123.parquet"

    result = _handle(lambda_context, _event(load_event), _event(load_event, lines_file), _event(load_event))

    assert result == {"batchItemFailures": [{"itemIdentifier": "m0"}, {"itemIdentifier": "m2"}]}
    assert list(executions()) == ["dbo_lines-20261121T0700Z"]


@pytest.mark.parametrize(
    ("event", "named"),
    [
        (["not", "an", "event"], "must be a JSON object"),
        # The events rule's event itself, as it reached the function before the queue.
        ({"detail-type": "Object Created", "detail": {}}, "Records: required attribute is missing"),
        ({"Records": [{"body": "{}"}]}, "Records.0.messageId: required attribute is missing"),
    ],
    ids=["no-object", "no-Records", "record-without-messageId"],
)
def test_an_event_that_is_no_batch_of_records_is_refused(state_machine, lambda_context, event, named):
    with pytest.raises(InvalidHandlerInput) as raised:
        handlers.start_on_new_files.handler(event, lambda_context)

    assert named in str(raised.value)
