"""`icetide tables put`: validated control items into the control table (AWS API under moto)."""

from __future__ import annotations

import json
from decimal import Decimal
from pathlib import Path

import boto3
import pytest
from moto import mock_aws

from deploy.cfn_yaml import load_template

STACK = "icetide"
INVOICES = {
    "targetTableName": "erp_invoices",
    "sourceSchema": "erp",
    "sourceTable": "invoices",
    "filtercolumn": "invoice_no",
    "filteroperator": "gte",
    "startvalue": 1000,
    "primaryKeys": ["invoice_no"],
    "lookback": 50,
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
TEMPLATE = Path(__file__).resolve().parents[2] / "template.yaml"


@pytest.fixture
def control_table():
    """The deployed template's control table and ControlTableName output, as stack `icetide` in moto."""
    template = load_template(TEMPLATE)
    deployed = {
        "Resources": {"ControlTable": template["Resources"]["ControlTable"]},
        "Outputs": {"ControlTableName": template["Outputs"]["ControlTableName"]},
    }
    with mock_aws():
        cloudformation = boto3.client("cloudformation")
        cloudformation.create_stack(StackName=STACK, TemplateBody=json.dumps(deployed))
        outputs = cloudformation.describe_stacks(StackName=STACK)["Stacks"][0]["Outputs"]
        yield boto3.resource("dynamodb").Table(outputs[0]["OutputValue"])


def _stored(table, name):
    return table.get_item(Key={"targetTableName": name}, ConsistentRead=True).get("Item")


def test_put_writes_plain_and_typed_items_and_prints_a_line_each(control_table, write_tables, icetide):
    result = icetide("tables", "put", write_tables([INVOICES, MLB_TYPED]), "--stack-name", STACK)

    assert result.exit_code == 0, result.text
    assert result.out.splitlines() == ["PUT erp_invoices: created", "PUT mlb_data: created"]
    expected = {**INVOICES, "startvalue": Decimal(1000), "lookback": Decimal(50)}  # DynamoDB numbers
    assert _stored(control_table, "erp_invoices") == expected
    mlb = _stored(control_table, "mlb_data")
    assert mlb["endvalue"] == Decimal("500")
    assert mlb["ouputs3Prefix"] == "mlb"


def test_one_invalid_item_means_nothing_is_written(control_table, write_tables, icetide):
    bad = {**INVOICES, "targetTableName": "dbo_bad", "filteroperator": "gt"}

    result = icetide("tables", "put", write_tables([INVOICES, bad]), "--stack-name", STACK)

    assert result.exit_code == 1
    assert "INVALID dbo_bad: filteroperator" in result.out
    assert "nothing written: 1 of 2 item(s) invalid" in result.err
    assert control_table.scan()["Items"] == []


def test_a_name_differing_only_in_case_from_a_stored_table_is_refused(control_table, write_tables, icetide):
    control_table.put_item(Item={**INVOICES, "targetTableName": "ERP_Invoices"})

    result = icetide("tables", "put", write_tables([INVOICES]), "--stack-name", STACK)

    assert result.exit_code == 1
    assert result.out.splitlines() == [
        "INVALID erp_invoices: targetTableName: differs only in case from the stored table "
        "'ERP_Invoices'; the Glue catalog lowercases table names: use that name"
    ]
    assert [item["targetTableName"] for item in control_table.scan()["Items"]] == ["ERP_Invoices"]


def test_put_replaces_configuration_but_keeps_run_state_and_lock(control_table, write_tables, icetide):
    run_state = {
        "watermark": 1450,
        "lastRunId": "erp_invoices-20260301T1000Z",
        "lastRunStatus": "SUCCEEDED",
        "lastRunStats": {"rowsRead": 7},
        "lockHolder": "erp_invoices-20260301T1100Z",
        "lockTime": "2026-03-01T11:00:05Z",
    }
    control_table.put_item(Item={**INVOICES, "lookback": 300, "outputS3Prefix": "old", **run_state})
    changed = {key: value for key, value in INVOICES.items() if key != "lookback"} | {
        "startvalue": 2000,
        "watermark": 1,  # run state from a file is ignored, never written
    }

    result = icetide("tables", "put", write_tables([changed]), "--stack-name", STACK)

    assert result.exit_code == 0, result.text
    assert result.out.splitlines() == [
        "PUT erp_invoices: updated (run state kept); removed lookback, outputS3Prefix; "
        "ignored run-state attribute(s) watermark (written by the runs only)"
    ]
    stored = _stored(control_table, "erp_invoices")
    assert stored["startvalue"] == Decimal(2000)
    assert "lookback" not in stored and "outputS3Prefix" not in stored
    kept = {name: stored[name] for name in run_state}
    assert kept == {**run_state, "watermark": Decimal(1450), "lastRunStats": {"rowsRead": Decimal(7)}}


def test_table_name_names_the_table_directly(control_table, write_tables, icetide):
    result = icetide("tables", "put", write_tables([INVOICES]), "--table-name", control_table.name)

    assert result.exit_code == 0, result.text
    assert _stored(control_table, "erp_invoices")["sourceTable"] == "invoices"


def test_unknown_stack_and_missing_table_are_named(control_table, write_tables, icetide):
    tables_file = write_tables([INVOICES])

    no_stack = icetide("tables", "put", tables_file, "--stack-name", "nope")
    no_table = icetide("tables", "put", tables_file, "--table-name", "not-there")

    assert no_stack.exit_code == 3
    assert "stack 'nope'" in no_stack.err and "ValidationError" in no_stack.err
    assert no_table.exit_code == 3
    assert "ResourceNotFoundException" in no_table.err


def test_stack_without_the_output_is_refused(control_table, write_tables, icetide):
    template = {"Resources": {"Topic": {"Type": "AWS::SNS::Topic", "Properties": {"TopicName": "t"}}}}
    boto3.client("cloudformation").create_stack(StackName="other", TemplateBody=json.dumps(template))

    result = icetide("tables", "put", write_tables([INVOICES]), "--stack-name", "other")

    assert result.exit_code == 3
    assert "stack 'other' has no ControlTableName output" in result.err


def test_table_or_stack_is_required(write_tables, icetide):
    result = icetide("tables", "put", write_tables([INVOICES]))

    assert result.exit_code == 2
    assert "one of the arguments --table-name --stack-name is required" in result.err
