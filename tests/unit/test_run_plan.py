"""The RunPlan built at lock time (contracts: "RunPlan") and the task settings it embeds.

The plan is `icetide_contracts.run_plan.RunPlan`; these tests check its JSON, as the state machine sees it.
"""

import json
from datetime import UTC, datetime
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest

from icetide.control.model import ControlItem
from icetide.dms.task_settings import task_settings_json
from icetide.errors import InvalidControlItem
from icetide.run.plan import RunTiming, build_run_plan
from icetide_contracts.run_plan import RunPlan

ORDERS = {
    "targetTableName": "dbo_Orders",
    "sourceSchema": "dbo",
    "sourceTable": "orders",
    "filtercolumn": "updated_at",
    "filteroperator": "gte",
    "startvalue": "2000-01-01 00:00:00",
    "primaryKeys": "order_id",
    "lookback": 3600,
    "watermark": "2026-11-21 06:00:00",
}
# Scheduled at 07:00, locked three seconds later.
TIMING = RunTiming(
    scheduled_time=datetime(2026, 11, 21, 7, 0, tzinfo=UTC),
    locked_at=datetime(2026, 11, 21, 7, 0, 3, 500000, tzinfo=UTC),
)
SETTINGS: dict[str, Any] = {
    "raw_bucket": "raw-bucket",
    "bronze_prefix": "bronze/",
    "manifest_prefix": "manifests",
    "glue_database": "icetide_silver",
    "timestamp_column": "dms_timestamp",
    "timing": TIMING,
}


def plan_of(raw: dict[str, Any], **overrides: Any) -> dict[str, Any]:
    plan = build_run_plan(ControlItem.parse(raw), "dbo_Orders-20261121T0700Z", **{**SETTINGS, **overrides})
    return plan.to_json()


def test_the_plan_is_the_contract_type_and_reads_back_as_built() -> None:
    plan = build_run_plan(ControlItem.parse(ORDERS), "dbo_Orders-20261121T0700Z", **SETTINGS)

    assert isinstance(plan, RunPlan)
    # Through JSON text, as the state machine carries it.
    assert RunPlan.from_json(json.loads(json.dumps(plan.to_json()))) == plan


def test_the_plan_has_the_contract_keys_and_values() -> None:
    plan = plan_of(ORDERS)

    expected_mapping = {
        "rules": [
            {
                "rule-type": "selection",
                "rule-id": "1",
                "rule-name": "1",
                "object-locator": {"schema-name": "dbo", "table-name": "orders"},
                "rule-action": "include",
                "filters": [
                    {
                        "filter-type": "source",
                        "column-name": "updated_at",
                        # watermark 06:00 minus a lookback of 3600 s
                        "filter-conditions": [{"filter-operator": "gte", "value": "2026-11-21 05:00:00"}],
                    }
                ],
            }
        ]
    }
    assert json.loads(plan.pop("tableMapping")) == expected_mapping
    assert json.loads(plan.pop("taskSettings")) == {
        "FullLoadSettings": {"TargetTablePrepMode": "DO_NOTHING"},
        "Logging": {"EnableLogging": True},
    }
    assert plan == {
        "targetTableName": "dbo_Orders",
        "runId": "dbo_Orders-20261121T0700Z",
        "sourceSchema": "dbo",
        "sourceTable": "orders",
        "silverTable": "icetide_silver.dbo_orders",
        "primaryKeys": "order_id",
        "loadMode": "merge",
        "watermarkColumn": "updated_at",
        "previousWatermark": "2026-11-21 06:00:00",
        "replicationInstanceArn": None,
        "bronzeUri": "s3://raw-bucket/bronze/dbo_Orders/dbo_Orders-20261121T0700Z/",
        "manifestUri": "s3://raw-bucket/manifests/dbo_Orders/dbo_Orders-20261121T0700Z.json",
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
        "verify": False,
        "verifyReportUri": "",
        "changeCount": None,
        "closedStart": None,
    }


def test_the_first_run_starts_from_startvalue() -> None:
    raw = {key: value for key, value in ORDERS.items() if key != "watermark"}

    plan = plan_of(raw)

    condition = json.loads(plan["tableMapping"])["rules"][0]["filters"][0]["filter-conditions"][0]
    assert condition == {"filter-operator": "gte", "value": "2000-01-01 00:00:00"}
    assert plan["previousWatermark"] is None


def test_a_numeric_watermark_travels_as_a_json_number() -> None:
    raw = {**ORDERS, "filtercolumn": "id", "startvalue": "0", "lookback": 10, "watermark": Decimal("590")}

    plan = plan_of(raw)

    assert plan["previousWatermark"] == 590
    condition = json.loads(plan["tableMapping"])["rules"][0]["filters"][0]["filter-conditions"][0]
    assert condition == {"filter-operator": "gte", "value": "580"}


def test_the_instance_is_the_items_else_the_stacks() -> None:
    item_arn = "arn:aws:dms:eu-west-1:123456789012:rep:ITEM"
    stack_arn = "arn:aws:dms:eu-west-1:123456789012:rep:STACK"

    assert (
        plan_of({**ORDERS, "replicationInstanceArn": item_arn}, stack_instance_arn=stack_arn)[
            "replicationInstanceArn"
        ]
        == item_arn
    )
    assert plan_of(ORDERS, stack_instance_arn=stack_arn)["replicationInstanceArn"] == stack_arn
    assert plan_of(ORDERS, stack_instance_arn="")["replicationInstanceArn"] is None


def test_a_key_less_item_plans_an_append_with_empty_glue_arguments() -> None:
    raw = {"targetTableName": "events", "sourceSchema": "app", "sourceTable": "events"}

    plan = plan_of(raw)

    assert (plan["loadMode"], plan["primaryKeys"], plan["watermarkColumn"]) == ("append", "", "")


# A key-less table loading the blog's way: between 0 and 1000 on mlb_id, append-only.
MLB_APPEND = {
    "targetTableName": "mlb_data",
    "sourceSchema": "dms_sample",
    "sourceTable": "mlb_data",
    "filtercolumn": "mlb_id",
    "filteroperator": "between",
    "startvalue": "0",
    "endvalue": "1000",
}


def test_a_watermark_the_lookback_cannot_apply_to_is_an_invalid_item() -> None:
    with pytest.raises(
        InvalidControlItem, match="watermark: lookback 3600 needs a number or timestamp watermark, not the"
    ):
        plan_of({**ORDERS, "watermark": "yesterday"})


def test_an_empty_bucket_is_refused() -> None:
    with pytest.raises(ValueError, match="raw bucket must not be empty"):
        plan_of(ORDERS, raw_bucket=" ")


def test_item_task_settings_are_merged_over_ours(blog_item: dict[str, Any]) -> None:
    raw = {
        **blog_item,
        "replication_task_settings": json.dumps(
            {
                "TargetMetadata": {"ParallelLoadThreads": 0},
                "Logging": {"LogComponents": [{"Id": "SOURCE_UNLOAD"}]},
            }
        ),
    }

    settings = json.loads(task_settings_json(ControlItem.parse(raw)))

    assert settings == {
        "FullLoadSettings": {"TargetTablePrepMode": "DO_NOTHING"},
        "Logging": {"EnableLogging": True, "LogComponents": [{"Id": "SOURCE_UNLOAD"}]},
        "TargetMetadata": {"ParallelLoadThreads": 0},
    }


def test_an_item_may_override_our_defaults(blog_item: dict[str, Any]) -> None:
    raw = {**blog_item, "replication_task_settings": '{"Logging": {"EnableLogging": false}}'}

    settings = json.loads(task_settings_json(ControlItem.parse(raw)))

    assert settings["Logging"] == {"EnableLogging": False}


@pytest.mark.parametrize(
    ("prefixes", "expected"),
    [
        (
            {"ouputs3Prefix": "mlb_data"},
            "s3://raw-bucket/bronze/mlb_data/dbo_Orders/dbo_Orders-20261121T0700Z/",
        ),
        (
            {"ouputs3Prefix": "old", "outputS3Prefix": "/sales/eu/"},
            "s3://raw-bucket/bronze/sales/eu/dbo_Orders/dbo_Orders-20261121T0700Z/",
        ),
    ],
)
def test_the_output_prefix_groups_bronze_files_and_the_correct_spelling_wins(prefixes, expected) -> None:
    assert plan_of({**ORDERS, **prefixes})["bronzeUri"] == expected


@pytest.mark.parametrize("prefix", ["../other-table", "a//b", "with space", "x?y"])
def test_an_output_prefix_that_is_no_s3_folder_is_an_invalid_item(prefix) -> None:
    with pytest.raises(InvalidControlItem, match=r"outputS3Prefix: .* is not an S3 folder"):
        plan_of({**ORDERS, "outputS3Prefix": prefix})


def _filters(plan: dict[str, Any]) -> list[dict[str, Any]]:
    filters: list[dict[str, Any]] = json.loads(plan["tableMapping"])["rules"][0]["filters"]
    return filters


def test_the_blog_items_ignored_endvalue_does_not_reach_the_table_mapping(blog_lte_item_path: Path) -> None:
    plan = plan_of(json.loads(blog_lte_item_path.read_text()))

    assert _filters(plan) == [
        {
            "filter-type": "source",
            "column-name": "mlb_id",
            "filter-conditions": [{"filter-operator": "lte", "value": "1"}],
        }
    ]
    assert plan["previousWatermark"] is None


@pytest.mark.parametrize(
    ("change", "expected"),
    [
        pytest.param(
            {"filteroperator": "notnull"},
            [
                {
                    "filter-type": "source",
                    "column-name": "mlb_id",
                    "filter-conditions": [{"filter-operator": "notnull"}],
                }
            ],
            id="notnull",
        ),
        pytest.param({"filteroperator": None, "filtercolumn": None}, [], id="no-operator"),
    ],
)
def test_values_an_operator_does_not_take_do_not_reach_the_table_mapping(
    change: dict[str, Any], expected: list[dict[str, Any]]
) -> None:
    raw = {key: value for key, value in {**MLB_APPEND, **change}.items() if value is not None}

    assert _filters(plan_of(raw)) == expected


CONTINUOUS = {
    **{
        name: value
        for name, value in ORDERS.items()
        if name not in ("filtercolumn", "filteroperator", "startvalue")
    },
    "lookback": None,
    "watermark": None,
    "captureMode": "cdc",
    "cdcTask": "continuous",
    "ouputs3Prefix": "erp",
    "replicationInstanceArn": "arn:aws:dms:eu-west-1:123456789012:rep:shared",
}


def test_a_continuous_plan_reads_the_tables_fixed_folder_after_its_file_checkpoint() -> None:
    plan = plan_of(
        {**CONTINUOUS, "cdcFileCheckpoint": "dbo/orders/20261121-065958123.parquet", "maxFilesPerRun": 7}
    )

    assert {key: plan[key] for key in plan if key in CONTINUOUS_KEYS} == {
        "cdcTask": "continuous",
        "migrationType": "full-load-and-cdc",
        "bronzeUri": "s3://raw-bucket/bronze/_continuous/erp/dbo_Orders/",
        "bronzeFilesUri": "s3://raw-bucket/manifests/dbo_Orders/dbo_Orders-20261121T0700Z.bronze-files.json",
        "fileCheckpoint": "dbo/orders/20261121-065958123.parquet",
        "maxFilesPerRun": 7,
        "maxBytesPerRun": 1073741824,
        "cdcStartPosition": None,
        "replicationInstanceArn": "arn:aws:dms:eu-west-1:123456789012:rep:shared",
    }


CONTINUOUS_KEYS = (
    "cdcTask",
    "migrationType",
    "bronzeUri",
    "bronzeFilesUri",
    "fileCheckpoint",
    "maxFilesPerRun",
    "maxBytesPerRun",
    "cdcStartPosition",
    "replicationInstanceArn",
)


def test_a_continuous_table_takes_the_stacks_instance_else_it_is_an_invalid_item() -> None:
    without = {name: value for name, value in CONTINUOUS.items() if name != "replicationInstanceArn"}

    assert plan_of(without, stack_instance_arn="arn:stack")["replicationInstanceArn"] == "arn:stack"
    with pytest.raises(InvalidControlItem, match="continuous needs a long-lived replication instance"):
        plan_of(without)


@pytest.mark.parametrize(
    ("changes", "problem"),
    [
        ({"captureMode": "delta"}, "cdcTask: continuous is a kind of cdc task; set captureMode cdc"),
        (
            {"cdcTask": "windowed", "maxFilesPerRun": 3},
            "maxFilesPerRun: bounds the files a continuous task's run",
        ),
        ({"maxBytesPerRun": 0}, "maxBytesPerRun"),
        ({"cdcTask": "forever"}, "cdcTask"),
    ],
)
def test_continuous_attributes_are_validated(changes: dict[str, Any], problem: str) -> None:
    with pytest.raises(InvalidControlItem) as raised:
        ControlItem.parse({**{k: v for k, v in CONTINUOUS.items() if v is not None}, **changes})

    assert any(problem in error for error in raised.value.errors), raised.value.errors
