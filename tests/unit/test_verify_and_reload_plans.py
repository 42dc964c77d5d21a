"""The plans of verify runs and full reloads (icetide.run.verify, icetide.run.reload), as the state
machine and the Glue job see them: literal JSON, no AWS."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Any

import pytest

from icetide.control.model import ControlItem
from icetide.errors import InvalidControlItem
from icetide.run.plan import RunTiming, build_run_plan
from icetide.run.reload import reload_due, reload_request, reload_run_id
from icetide.run.verify import is_verify_run_id, verify_run_id

ORDERS = {
    "targetTableName": "dbo_Orders",
    "sourceSchema": "dbo",
    "sourceTable": "orders",
    "filtercolumn": "updated_at",
    "filteroperator": "gte",
    "startvalue": "2000-01-01 00:00:00",
    "primaryKeys": "order_id,line_no",
    "watermark": "2026-11-21 06:00:00",
    "lastRunId": "dbo_Orders-20261121T0600Z",
    "lastRunStatus": "SUCCEEDED",
    "lastRunStats": {"rowsRead": 4},
}
SETTINGS: dict[str, Any] = {
    "raw_bucket": "raw-bucket",
    "bronze_prefix": "bronze/",
    "manifest_prefix": "manifests",
    "glue_database": "icetide_silver",
    "timestamp_column": "dms_timestamp",
    "timing": RunTiming(
        scheduled_time=datetime(2026, 11, 21, 7, 0, tzinfo=UTC),
        locked_at=datetime(2026, 11, 21, 7, 0, 3, tzinfo=UTC),
    ),
}
VERIFY_RUN = "dbo_Orders-verify-20261121T073015Z"
OPEN_REQUEST = {"requestedAt": "2026-11-21T06:30:00Z", "afterRun": "dbo_Orders-20261121T0600Z"}


def _plan(raw: dict[str, Any], run_id: str = "dbo_Orders-20261121T0700Z", **overrides: Any) -> dict[str, Any]:
    return build_run_plan(ControlItem.parse(raw), run_id, **{**SETTINGS, **overrides}).to_json()


def _key_rule(position: int, column: str) -> dict[str, Any]:
    return {
        "rule-type": "transformation",
        "rule-id": str(position),
        "rule-name": f"keep-{position - 1}",
        "rule-target": "column",
        "object-locator": {"schema-name": "dbo", "table-name": "orders", "column-name": column},
        "rule-action": "include-column",
    }


def _selection(filters: list[dict[str, Any]]) -> dict[str, Any]:
    return {
        "rule-type": "selection",
        "rule-id": "1",
        "rule-name": "1",
        "object-locator": {"schema-name": "dbo", "table-name": "orders"},
        "rule-action": "include",
        "filters": filters,
    }


FROM_STARTVALUE = {
    "filter-type": "source",
    "column-name": "updated_at",
    "filter-conditions": [{"filter-operator": "gte", "value": "2000-01-01 00:00:00"}],
}


def test_verify_run_ids_carry_the_marker_to_the_second() -> None:
    assert verify_run_id("dbo_Orders", datetime(2026, 11, 21, 7, 30, 15)) == VERIFY_RUN
    assert len(verify_run_id("t" * 128, datetime(2026, 11, 21, 7, 30, 15, tzinfo=UTC))) == 80
    assert is_verify_run_id(VERIFY_RUN)
    assert not is_verify_run_id("dbo_Orders-20261121T0700Z")
    assert not is_verify_run_id("dbo_Orders-maintain-20261121T0700Z")
    assert reload_run_id("dbo_Orders", datetime(2026, 11, 21, 7, 30, 15, tzinfo=UTC)) == (
        "dbo_Orders-reload-20261121T073015Z"
    )


def test_a_verify_plan_extracts_the_keys_of_the_filtered_rows_and_names_its_report() -> None:
    plan = _plan(ORDERS, VERIFY_RUN)

    assert json.loads(plan.pop("tableMapping")) == {
        "rules": [_selection([FROM_STARTVALUE]), _key_rule(2, "order_id"), _key_rule(3, "line_no")]
    }
    assert plan.pop("taskSettings")
    assert plan == {
        "targetTableName": "dbo_Orders",
        "runId": VERIFY_RUN,
        "sourceSchema": "dbo",
        "sourceTable": "orders",
        "silverTable": "icetide_silver.dbo_orders",
        "primaryKeys": "order_id,line_no",
        "loadMode": "merge",
        "watermarkColumn": "",
        "previousWatermark": "2026-11-21 06:00:00",
        "replicationInstanceArn": None,
        "bronzeUri": f"s3://raw-bucket/bronze/_verify/dbo_Orders/{VERIFY_RUN}/",
        "manifestUri": f"s3://raw-bucket/manifests/dbo_Orders/{VERIFY_RUN}.json",
        "timestampColumn": "dms_timestamp",
        "captureMode": "delta",
        "deleteMode": "hard",
        "migrationType": "full-load",
        "cdcStartPosition": None,
        "cdcStartPoint": None,
        "cdcMaxBatchInterval": None,
        "cdcMinFileSize": None,
        "reconcileTableMapping": None,
        "reconcileSlot": None,
        "reconcileBronzeUri": "",
        "cdcTask": "windowed",
        "fileCheckpoint": None,
        "maxFilesPerRun": None,
        "maxBytesPerRun": None,
        "bronzeFilesUri": "",
        "verify": True,
        "verifyReportUri": f"s3://raw-bucket/manifests/dbo_Orders/{VERIFY_RUN}.verify.json",
        "changeCount": None,
        "closedStart": None,
    }


def test_a_continuous_table_is_verified_on_its_long_lived_instance_by_a_task_of_the_run() -> None:
    continuous = {
        **ORDERS,
        "captureMode": "cdc",
        "cdcTask": "continuous",
        "cdcFileCheckpoint": "20261121-0600.parquet",
    }
    del continuous["filtercolumn"], continuous["filteroperator"], continuous["startvalue"]

    plan = _plan(continuous, VERIFY_RUN, continuous_instance_arn="arn:aws:dms:eu-west-1:1:rep:LONG")

    assert (
        plan["cdcTask"],
        plan["migrationType"],
        plan["replicationInstanceArn"],
        plan["fileCheckpoint"],
    ) == (
        "windowed",
        "full-load",
        "arn:aws:dms:eu-west-1:1:rep:LONG",
        None,
    )
    assert json.loads(plan["tableMapping"])["rules"][0]["filters"] == []


def test_a_table_without_keys_has_no_verify_plan() -> None:
    append_only = {**ORDERS, "loadMode": "append", "primaryKeys": ""}

    with pytest.raises(InvalidControlItem, match="primaryKeys: a verify run compares the source's keys"):
        _plan(append_only, VERIFY_RUN)


def test_an_ordinary_plan_is_no_verify() -> None:
    plan = _plan(ORDERS)

    assert (plan["verify"], plan["verifyReportUri"]) == (False, "")


@pytest.mark.parametrize(
    ("state", "due"),
    [
        pytest.param({}, False, id="no request"),
        pytest.param({"reloadRequested": OPEN_REQUEST}, True, id="requested after the last run"),
        pytest.param(
            {
                "reloadRequested": OPEN_REQUEST,
                "lastRunId": "dbo_Orders-20261121T0700Z",
                "lastRunStatus": "FAILED",
            },
            True,
            id="the reload failed",
        ),
        pytest.param(
            {"reloadRequested": OPEN_REQUEST, "lastRunId": "dbo_Orders-20261121T0700Z"},
            False,
            id="a run committed",
        ),
        pytest.param(
            {
                "reloadRequested": {"requestedAt": "2026-11-21T06:30:00Z"},
                "lastRunId": None,
                "lastRunStatus": None,
            },
            True,
            id="never ran",
        ),
    ],
)
def test_a_reload_is_due_until_another_run_commits(state: dict[str, Any], due: bool) -> None:
    assert reload_due(ControlItem.parse({**ORDERS, **state})) is due


def test_a_request_names_the_last_run() -> None:
    assert reload_request(ControlItem.parse(ORDERS), "2026-11-21T06:30:00Z") == OPEN_REQUEST
    never_ran = {key: value for key, value in ORDERS.items() if not key.startswith("lastRun")}
    assert reload_request(ControlItem.parse(never_ran), "2026-11-21T06:30:00Z") == {
        "requestedAt": "2026-11-21T06:30:00Z"
    }


def test_a_reload_plan_reads_from_the_startvalue_and_reconciles() -> None:
    plan = _plan({**ORDERS, "reloadRequested": OPEN_REQUEST})

    assert json.loads(plan["tableMapping"]) == {"rules": [_selection([FROM_STARTVALUE])]}
    assert json.loads(plan["reconcileTableMapping"]) == {
        "rules": [_selection([]), _key_rule(2, "order_id"), _key_rule(3, "line_no")]
    }
    assert (plan["reconcileBronzeUri"], plan["reconcileSlot"], plan["previousWatermark"]) == (
        "s3://raw-bucket/bronze/_reconcile/dbo_Orders/dbo_Orders-20261121T0700Z/",
        "2026-11-21T07:00:00Z",
        "2026-11-21 06:00:00",
    )


def test_a_windowed_cdc_reload_starts_over_with_a_full_load_and_replaces_the_checkpoint() -> None:
    cdc = {**ORDERS, "captureMode": "cdc", "cdcCheckpoint": "checkpoint:V1#27#mysql-bin-changelog.000024:1"}
    del cdc["watermark"]

    ordinary, reload = _plan(cdc), _plan({**cdc, "reloadRequested": OPEN_REQUEST})

    assert (ordinary["migrationType"], reload["migrationType"]) == ("cdc", "full-load-and-cdc")
    # The stored checkpoint stays named: the commit replaces it only while it is still stored.
    assert reload["cdcStartPosition"] == cdc["cdcCheckpoint"]
    assert reload["reconcileTableMapping"] is not None


def test_a_request_on_a_table_a_reload_cannot_replace_fails_the_plan() -> None:
    continuous = {**ORDERS, "captureMode": "cdc", "cdcTask": "continuous", "reloadRequested": OPEN_REQUEST}
    del (
        continuous["filtercolumn"],
        continuous["filteroperator"],
        continuous["startvalue"],
        continuous["watermark"],
    )

    with pytest.raises(InvalidControlItem, match="reloadRequested: dbo_Orders is a continuous cdc table"):
        _plan(continuous, continuous_instance_arn="arn:aws:dms:eu-west-1:1:rep:LONG")
