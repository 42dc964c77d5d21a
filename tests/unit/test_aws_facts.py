"""docs/aws-facts.md has a row for every AWS operation, task resource, error name and DMS setting the
code uses (derived from the code: tests/unit/aws_calls.py)."""

from __future__ import annotations

import pytest

from icetide_acceptance.facts import FactsPageInvalid, fact_rows, named_in_rows, read_facts_page
from unit.aws_calls import (
    LAMBDA_TASK,
    AwsCall,
    aws_calls,
    aws_error_names,
    dms_setting_names,
    task_resources,
)


def used_names() -> set[str]:
    """Everything the code uses of AWS that the page must name."""
    operations = {call.operation for call in aws_calls()}
    return operations | task_resources() | aws_error_names() | dms_setting_names()


def missing_rows(page: str) -> set[str]:
    """What the code uses and no row of ``page`` names in backticks."""
    return used_names() - named_in_rows(page)


def test_every_aws_operation_setting_and_error_of_the_code_has_a_row() -> None:
    missing = missing_rows(read_facts_page())
    assert not missing, f"docs/aws-facts.md needs rows naming: {sorted(missing)}"


def test_a_page_without_the_create_task_row_is_refused() -> None:
    page = read_facts_page()
    without = "\n".join(line for line in page.splitlines() if not line.startswith("| dms-create-task |"))
    assert without != page
    assert "CreateReplicationTask" in missing_rows(without)


def test_the_derivation_finds_what_the_code_is_known_to_call() -> None:
    # Written by hand from the adapters, the CLI and the ASL: the derivation must see at least these.
    calls = aws_calls()
    for call in [
        AwsCall("dms", "CreateReplicationTask"),
        AwsCall("dms", "StartReplicationTask"),
        AwsCall("dms", "DescribeTableStatistics"),
        AwsCall("dynamodb", "UpdateItem"),
        AwsCall("s3", "ListObjectsV2"),
        AwsCall("stepfunctions", "StartExecution"),
        AwsCall("logs", "PutRetentionPolicy"),
        AwsCall("cloudformation", "DescribeStacks"),
        AwsCall("lambda", "GetLayerVersionByArn"),
    ]:
        assert call in calls
    assert {"glue:startJobRun.sync", "sns:publish", LAMBDA_TASK} <= task_resources()
    errors = aws_error_names()
    assert {"Lambda.TooManyRequestsException", "Glue.ConcurrentRunsExceededException"} <= errors
    assert "DmsResourceNotReady" not in errors  # icetide's own
    assert {"TimestampColumnName", "IncludeOpForFullLoad", "CdcMinFileSize", "TargetTablePrepMode"} <= (
        dms_setting_names()
    )


def test_an_operation_of_another_service_with_a_shared_name_is_not_counted() -> None:
    # The DMS adapter names "describe_endpoints"; DynamoDB has DescribeEndpoints too, but no module
    # making a DynamoDB client calls it.
    assert AwsCall("dynamodb", "DescribeEndpoints") not in aws_calls()


def test_every_row_has_an_id_once() -> None:
    rows = fact_rows(read_facts_page())
    assert "dms-stop-position" in rows
    assert rows["dms-stop-position"].service == "DMS"


def test_a_row_without_an_id_is_refused() -> None:
    with pytest.raises(FactsPageInvalid, match="no id"):
        fact_rows("## DMS\n| id | a | b |\n|---|---|---|\n| StartReplicationTask | x | y |\n")


def test_two_rows_with_one_id_are_refused() -> None:
    with pytest.raises(FactsPageInvalid, match="two rows"):
        fact_rows("## DMS\n| dms-a | x |\n| dms-a | y |\n")
