"""The DMS stand-in reads a task's inputs as DMS does, and refuses what DMS (or the stand-in) cannot do.

Table mappings are written in the JSON shape of the AWS DMS user guide ("Using source filters",
schema ``test``, table ``employee``); S3 settings in the shape of ``create_endpoint``'s ``S3Settings``.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from icetide_local.standins.dms.replicator import TableMappingError, TableSelection, parse_table_mapping
from icetide_local.standins.dms.s3_target import (
    LocalDirectorySink,
    S3TargetSettings,
    UnsupportedTargetSettings,
)
from icetide_local.standins.dms.source import FilterCondition, SourceFilter


def employee_rule(
    rule_id: str = "1", action: str = "include", table: str = "employee", **extra: Any
) -> dict[str, Any]:
    return {
        "rule-type": "selection",
        "rule-id": rule_id,
        "rule-name": rule_id,
        "object-locator": {"schema-name": "test", "table-name": table},
        "rule-action": action,
        **extra,
    }


def test_the_guides_multiple_operator_example_reads_as_one_ored_filter():
    mapping = """{"rules": [{"rule-type": "selection", "rule-id": "1", "rule-name": "1",
      "object-locator": {"schema-name": "test", "table-name": "employee"}, "rule-action": "include",
      "filters": [{"filter-type": "source", "column-name": "empid", "filter-conditions": [
        {"filter-operator": "lte", "value": "10"},
        {"filter-operator": "between", "start-value": "50", "end-value": "75"},
        {"filter-operator": "gte", "value": "100"}]}]}]}"""
    assert parse_table_mapping(mapping) == [
        TableSelection(
            "test",
            "employee",
            (
                SourceFilter(
                    "empid",
                    (
                        FilterCondition("lte", value="10"),
                        FilterCondition("between", start_value="50", end_value="75"),
                        FilterCondition("gte", value="100"),
                    ),
                ),
            ),
        )
    ]


def test_the_guides_multiple_filters_example_reads_as_two_filters():
    empid_not_50 = {"filter-operator": "noteq", "value": "50"}
    rule = employee_rule(
        filters=[
            {"filter-type": "source", "column-name": "empid", "filter-conditions": [empid_not_50]},
            {
                "filter-type": "source",
                "column-name": "dept",
                "filter-conditions": [{"filter-operator": "notnull"}],
            },
        ]
    )
    assert parse_table_mapping(json.dumps({"rules": [rule]})) == [
        TableSelection(
            "test",
            "employee",
            (
                SourceFilter("empid", (FilterCondition("noteq", value="50"),)),
                SourceFilter("dept", (FilterCondition("notnull"),)),
            ),
        )
    ]


def test_an_exclude_rule_removes_an_included_table_and_table_settings_rules_are_ignored():
    mapping = {
        "rules": [
            employee_rule("1"),
            employee_rule("2", table="salary"),
            employee_rule("3", action="exclude", table="salary"),
            {
                "rule-type": "table-settings",
                "rule-id": "4",
                "rule-name": "4",
                "object-locator": {"schema-name": "test", "table-name": "employee"},
                "parallel-load": {"type": "none"},
            },
        ]
    }
    assert parse_table_mapping(mapping) == [TableSelection("test", "employee", ())]


def test_numeric_filter_values_are_read_as_the_strings_dms_carries():
    rule = employee_rule(
        filters=[{"filter-type": "source", "column-name": "empid",
                  "filter-conditions": [{"filter-operator": "gte", "value": 100}]}]
    )  # fmt: skip
    assert parse_table_mapping({"rules": [rule]})[0].filters == (
        SourceFilter("empid", (FilterCondition("gte", value="100"),)),
    )


def transformation(
    action: str, *, column: str | None = None, table: str = "employee", **extra: Any
) -> dict[str, Any]:
    locator = {"schema-name": "test", "table-name": table}
    if column is not None:
        locator["column-name"] = column
    return {
        "rule-type": "transformation",
        "rule-id": "2",
        "rule-name": "t2",
        "rule-target": "column",
        "object-locator": locator,
        "rule-action": action,
        **extra,
    }


def test_the_change_sequence_and_include_column_rules_the_lambdas_send_are_honoured():
    change_sequence = {
        **transformation("add-column", value="AR_H_CHANGE_SEQ", expression="$AR_H_CHANGE_SEQ"),
        "data-type": {"type": "string", "length": 35},
    }
    keep = [
        {**transformation("include-column", column=column), "rule-id": str(n), "rule-name": f"keep-{column}"}
        for n, column in enumerate(("empid", "dept"), start=3)
    ]
    assert parse_table_mapping({"rules": [employee_rule(), change_sequence, *keep]}) == [
        TableSelection("test", "employee", (), include_columns=("empid", "dept"), change_sequence=True)
    ]


def one_filter(*conditions: dict[str, Any]) -> dict[str, Any]:
    return {
        "rules": [
            employee_rule(
                filters=[
                    {"filter-type": "source", "column-name": "empid", "filter-conditions": list(conditions)}
                ]
            )
        ]
    }


WILDCARD_LOCATOR = {"schema-name": "test", "table-name": "emp%"}
WILDCARD_EXTRA: dict[str, Any] = {"object-locator": WILDCARD_LOCATOR}
NOTEQ_1, IS_NULL = {"filter-operator": "noteq", "value": "1"}, {"filter-operator": "null"}


@pytest.mark.parametrize(
    ("mapping", "message"),
    [
        pytest.param("not json", "not valid JSON", id="json"),
        pytest.param({"rules": []}, "non-empty 'rules'", id="no-rules"),
        pytest.param({"rules": [employee_rule(action="exclude")]}, "selects no table", id="nothing-selected"),
        pytest.param(
            {"rules": [employee_rule("1"), employee_rule("2")]}, "more than one rule", id="duplicate"
        ),
        pytest.param({"rules": [employee_rule(action="maybe")]}, "rule-action 'maybe'", id="action"),
        pytest.param({"rules": [employee_rule(**WILDCARD_EXTRA)]}, "wildcard", id="wildcard"),
        pytest.param(
            {"rules": [employee_rule(), {**employee_rule("2"), "rule-type": "transformation"}]},
            "rule 2: transformation rule-action 'include' on rule-target None is not supported",
            id="transformation",
        ),
        pytest.param(
            {"rules": [employee_rule(), transformation("rename", value="id", column="empid")]},
            "rule t2: transformation rule-action 'rename' on rule-target 'column' is not supported",
            id="rename",
        ),
        pytest.param(
            {
                "rules": [
                    employee_rule(),
                    transformation("add-column", value="x", expression="$AR_H_TIMESTAMP"),
                ]
            },
            "rule t2: add-column of 'x' = '\\$AR_H_TIMESTAMP' is not supported",
            id="other-add-column",
        ),
        pytest.param(
            {"rules": [employee_rule(), transformation("include-column", column="emp%")]},
            "rule t2: include-column needs an exact object-locator column-name",
            id="include-wildcard",
        ),
        pytest.param(
            {"rules": [employee_rule(), transformation("include-column", column="empid", table="salary")]},
            "rule t2: test.salary is not a table the mapping selects",
            id="include-unselected",
        ),
        pytest.param(
            one_filter({"filter-operator": "gt", "value": "1"}), "filter-operator 'gt'", id="unknown-op"
        ),
        pytest.param(one_filter({"filter-operator": "gte"}), "needs 'value'", id="missing-value"),
        pytest.param(
            one_filter({"filter-operator": "between", "start-value": "1"}), "needs 'end-value'", id="no-end"
        ),
        pytest.param(
            one_filter({"filter-operator": "eq", "value": True}), "needs 'value'", id="boolean-value"
        ),
        pytest.param(one_filter(), "no filter-conditions", id="no-conditions"),
        pytest.param(one_filter(NOTEQ_1, IS_NULL), "negative operator", id="negative-with-others"),
    ],
)
def test_a_mapping_dms_would_reject_is_rejected_with_the_reason(mapping, message):
    with pytest.raises(TableMappingError, match=message):
        parse_table_mapping(mapping)


def test_s3_settings_are_read_with_dms_defaults():
    settings = S3TargetSettings.from_dms(
        {"BucketName": "raw", "BucketFolder": "/bronze/t/run/", "DataFormat": "parquet"}
    )
    assert settings == S3TargetSettings(
        bucket_name="raw",
        bucket_folder="bronze/t/run",
        timestamp_column_name=None,
        include_op_for_full_load=False,
        parquet_version="1.0",
        compression="none",
        put_arguments={"ServerSideEncryption": "AES256"},
    )
    assert (
        settings.object_key("dbo", "orders", "LOAD00000001.parquet")
        == "bronze/t/run/dbo/orders/LOAD00000001.parquet"
    )


def test_without_a_bucket_folder_keys_start_at_the_schema():
    settings = S3TargetSettings.from_dms({"BucketName": "raw", "DataFormat": "parquet"})
    assert settings.object_key("dbo", "orders", "LOAD00000001.parquet") == "dbo/orders/LOAD00000001.parquet"


def test_sse_kms_puts_objects_with_the_key():
    settings = S3TargetSettings.from_dms(
        {
            "BucketName": "raw",
            "DataFormat": "parquet",
            "EncryptionMode": "SSE_KMS",
            "ServerSideEncryptionKmsKeyId": "k-1",
        }
    )
    assert settings.put_arguments == {"ServerSideEncryption": "aws:kms", "SSEKMSKeyId": "k-1"}


@pytest.mark.parametrize(
    ("settings", "message"),
    [
        ({"DataFormat": "parquet"}, "BucketName"),
        ({"BucketName": "raw"}, "DataFormat is 'csv'"),
        (
            {"BucketName": "raw", "DataFormat": "parquet", "IncludeOpForFullLoad": "yes"},
            "IncludeOpForFullLoad",
        ),
        ({"BucketName": "raw", "DataFormat": "parquet", "ParquetVersion": "parquet-3-0"}, "ParquetVersion"),
        (
            {"BucketName": "raw", "DataFormat": "parquet", "EncryptionMode": "SSE_KMS"},
            "ServerSideEncryptionKmsKeyId",
        ),
        ({"BucketName": "raw", "DataFormat": "parquet", "TimestampColumnName": 5}, "TimestampColumnName"),
    ],
)
def test_settings_dms_would_reject_are_rejected_with_the_setting_named(settings, message):
    with pytest.raises(UnsupportedTargetSettings, match=message):
        S3TargetSettings.from_dms(settings)


def test_a_failed_local_write_leaves_neither_file_nor_folder(tmp_path):
    sink = LocalDirectorySink(tmp_path / "bucket")
    with (
        pytest.raises(RuntimeError, match="disk full"),
        sink.open("bronze/dbo/orders/LOAD00000001.parquet") as stream,
    ):
        stream.write(b"PAR1 half a file")
        raise RuntimeError("disk full")
    assert list((tmp_path / "bucket").iterdir()) == []


def test_a_local_key_cannot_escape_the_bucket_directory(tmp_path):
    sink = LocalDirectorySink(tmp_path / "bucket")
    with pytest.raises(ValueError, match="outside the target directory"), sink.open("../../escaped.parquet"):
        pass
    assert not (tmp_path.parent / "escaped.parquet").exists()
