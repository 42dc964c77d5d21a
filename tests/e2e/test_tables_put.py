"""`icetide tables put`: validated control items into the control table (AWS API under moto)."""

from __future__ import annotations

import json
from decimal import Decimal

import boto3
import pytest
from moto import mock_aws

TABLE = "icetide-control"
ORDERS = {
    "targetTableName": "dbo_orders",
    "sourceSchema": "dbo",
    "sourceTable": "orders",
    "filtercolumn": "updated_at",
    "filteroperator": "gte",
    "startvalue": "2026-01-01 00:00:00",
    "primaryKeys": "order_id",
    "lookback": 300,
}
# The blog post's item, in DynamoDB typed JSON (as `aws dynamodb scan` prints it).
MLB_TYPED = {
    "targetTableName": {"S": "mlb_data"},
    "activeflag": {"S": "Y"},
    "sourceSchema": {"S": "dms_sample"},
    "sourceTable": {"S": "mlb_data"},
    "filtercolumn": {"S": "mlb_id"},
    "filteroperator": {"S": "between"},
    "startvalue": {"S": "100"},
    "endvalue": {"N": "500"},
    "ouputs3Prefix": {"S": "mlb"},
}


@pytest.fixture
def control_table():
    with mock_aws():
        dynamodb = boto3.client("dynamodb")
        dynamodb.create_table(
            TableName=TABLE,
            KeySchema=[{"AttributeName": "targetTableName", "KeyType": "HASH"}],
            AttributeDefinitions=[{"AttributeName": "targetTableName", "AttributeType": "S"}],
            BillingMode="PAY_PER_REQUEST",
        )
        yield boto3.resource("dynamodb").Table(TABLE)


def _stored(table, name):
    return table.get_item(Key={"targetTableName": name}, ConsistentRead=True).get("Item")


def test_put_writes_plain_and_typed_items_and_prints_a_line_each(control_table, write_tables, icetide):
    result = icetide("tables", "put", write_tables([ORDERS, MLB_TYPED]), "--table-name", TABLE)

    assert result.exit_code == 0, result.text
    assert result.out.splitlines() == ["PUT dbo_orders: created", "PUT mlb_data: created"]
    assert _stored(control_table, "dbo_orders") == {
        "targetTableName": "dbo_orders",
        "sourceSchema": "dbo",
        "sourceTable": "orders",
        "filtercolumn": "updated_at",
        "filteroperator": "gte",
        "startvalue": "2026-01-01 00:00:00",
        "primaryKeys": "order_id",
        "lookback": Decimal("300"),
    }
    mlb = _stored(control_table, "mlb_data")
    assert mlb["endvalue"] == Decimal("500")
    assert mlb["ouputs3Prefix"] == "mlb"


def test_one_invalid_item_means_nothing_is_written(control_table, write_tables, icetide):
    bad = {**ORDERS, "targetTableName": "dbo_bad", "filteroperator": "gt"}

    result = icetide("tables", "put", write_tables([ORDERS, bad]), "--table-name", TABLE)

    assert result.exit_code == 1
    assert "INVALID dbo_bad: filteroperator" in result.out
    assert "nothing written: 1 of 2 item(s) invalid" in result.err
    assert control_table.scan()["Items"] == []


def test_put_replaces_configuration_but_keeps_run_state_and_lock(control_table, write_tables, icetide):
    run_state = {
        "watermark": "2026-03-01 10:00:00",
        "lastRunId": "dbo_orders-20260301T1000Z",
        "lastRunStatus": "SUCCEEDED",
        "lastRunStats": {"rowsRead": 7},
        "lockHolder": "dbo_orders-20260301T1100Z",
        "lockTime": "2026-03-01T11:00:05Z",
    }
    control_table.put_item(Item={**ORDERS, "lookback": 300, "outputS3Prefix": "old", **run_state})
    changed = {key: value for key, value in ORDERS.items() if key != "lookback"} | {
        "startvalue": "2026-02-01 00:00:00",
        "watermark": "1999-01-01 00:00:00",  # run state from a file is ignored, never written
    }

    result = icetide("tables", "put", write_tables([changed]), "--table-name", TABLE)

    assert result.exit_code == 0, result.text
    assert result.out.splitlines() == [
        "PUT dbo_orders: updated (run state kept); removed lookback, outputS3Prefix; "
        "ignored run-state attribute(s) watermark (written by the runs only)"
    ]
    stored = _stored(control_table, "dbo_orders")
    assert stored["startvalue"] == "2026-02-01 00:00:00"
    assert "lookback" not in stored and "outputS3Prefix" not in stored
    kept = {name: stored[name] for name in run_state}
    assert kept == {**run_state, "lastRunStats": {"rowsRead": Decimal(7)}}


def test_stack_name_picks_the_table_from_the_stack_output(control_table, write_tables, icetide):
    template = {
        "Resources": {
            "Topic": {"Type": "AWS::SNS::Topic", "Properties": {"TopicName": "icetide-runs"}},
        },
        "Outputs": {"ControlTableName": {"Value": TABLE}},
    }
    boto3.client("cloudformation").create_stack(StackName="icetide", TemplateBody=json.dumps(template))

    result = icetide("tables", "put", write_tables([ORDERS]), "--stack-name", "icetide")

    assert result.exit_code == 0, result.text
    assert _stored(control_table, "dbo_orders")["sourceTable"] == "orders"


def test_unknown_stack_and_missing_table_are_named(control_table, write_tables, icetide):
    tables_file = write_tables([ORDERS])

    no_stack = icetide("tables", "put", tables_file, "--stack-name", "nope")
    no_table = icetide("tables", "put", tables_file, "--table-name", "not-there")

    assert no_stack.exit_code == 3
    assert "stack 'nope'" in no_stack.err and "ValidationError" in no_stack.err
    assert no_table.exit_code == 3
    assert "ResourceNotFoundException" in no_table.err


def test_stack_without_the_output_is_refused(control_table, write_tables, icetide):
    template = {"Resources": {"Topic": {"Type": "AWS::SNS::Topic", "Properties": {"TopicName": "t"}}}}
    boto3.client("cloudformation").create_stack(StackName="other", TemplateBody=json.dumps(template))

    result = icetide("tables", "put", write_tables([ORDERS]), "--stack-name", "other")

    assert result.exit_code == 3
    assert "stack 'other' has no ControlTableName output" in result.err


def test_table_or_stack_is_required(write_tables, icetide):
    result = icetide("tables", "put", write_tables([ORDERS]))

    assert result.exit_code == 2
    assert "one of the arguments --table-name --stack-name is required" in result.err
