"""The control item model: blog items keep working, every bad item gets one clear line per problem."""

import json
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest

from icetide.control.codec import from_typed_json
from icetide.control.model import LOCK_ATTRIBUTES, RUN_STATE_ATTRIBUTES, ControlItem, LoadMode, RunStatus
from icetide.control.operators import FilterOperator
from icetide.errors import InvalidControlItem

WILDCARD_ERROR = (
    "sourceTable: 'orders%' contains the % wildcard; DMS source filters only support tables with exact names"
)


def errors_of(raw: dict[str, Any]) -> list[str]:
    with pytest.raises(InvalidControlItem) as caught:
        ControlItem.parse(raw)
    return caught.value.errors


def test_the_blog_item_validates(blog_item: dict[str, Any]) -> None:
    item = ControlItem.parse(blog_item)

    assert item.target_table_name == "mlb_data"
    assert item.source_schema == "dms_sample"
    assert item.source_table == "mlb_data"
    assert item.is_active is True
    assert item.filter_column == "mlb_id"
    assert item.filter_operator is FilterOperator.BETWEEN
    assert (item.start_value, item.end_value) == ("0", "1000")
    assert item.output_s3_prefix == "mlb_data"
    assert item.task_settings == {"TargetMetadata": {"ParallelLoadThreads": 0}}
    # No keys and no loadMode: the blog item loads append-only rather than failing or dropping updates.
    assert item.primary_keys == []
    assert item.load_mode is LoadMode.APPEND
    assert item.notes == ()  # between takes both values: nothing is ignored


def test_the_blog_item_as_printed_validates_and_its_unused_endvalue_is_ignored_with_a_note(
    blog_lte_item_path: Path,
) -> None:
    item = ControlItem.parse(json.loads(blog_lte_item_path.read_text()))

    assert item.target_table_name == "mlb_data"
    assert (item.filter_column, item.filter_operator) == ("mlb_id", FilterOperator.LTE)
    # DMS's lte carries one value; the endvalue the blog also sets never reaches a run.
    assert (item.start_value, item.end_value) == ("1", None)
    assert item.notes == ("endvalue: ignored, filteroperator lte takes only startvalue",)
    assert item.output_s3_prefix == "mlb_data"
    assert item.task_settings == {"TargetMetadata": {"ParallelLoadThreads": 0}}


def test_the_typed_json_blog_item_validates_to_the_same_item(
    blog_item: dict[str, Any], blog_typed_item_path: Path
) -> None:
    typed = json.loads(blog_typed_item_path.read_text())

    assert ControlItem.parse(from_typed_json(typed)) == ControlItem.parse(blog_item)


def test_numbers_and_decimals_are_accepted_for_every_value(blog_item: dict[str, Any]) -> None:
    raw = {
        **blog_item,
        "primaryKeys": "mlb_id",  # a lookback needs keys
        "startvalue": Decimal("0"),
        "endvalue": 1000,
        "lookback": Decimal("60"),
        "watermark": Decimal("590"),
        "lastRunStats": {"rowsRead": Decimal("10"), "snapshotId": Decimal("123456789")},
    }

    item = ControlItem.parse(raw)

    assert (item.start_value, item.end_value) == ("0", "1000")
    assert item.lookback == Decimal("60")
    assert item.watermark == Decimal("590")
    assert item.last_run_stats is not None
    assert (item.last_run_stats.rows_read, item.last_run_stats.snapshot_id) == (10, 123456789)


def test_new_attributes_are_read(blog_item: dict[str, Any]) -> None:
    raw = {
        **blog_item,
        "activeflag": "n",
        "filteroperator": "GTE",
        "endvalue": "",
        "primaryKeys": " mlb_id , season ",
        "loadMode": "MERGE",
        "outputS3Prefix": "/better/",
        "replicationInstanceArn": "arn:aws:dms:eu-west-1:123456789012:rep:ABCDEF",
        "lastRunStatus": "SUCCEEDED",
    }

    item = ControlItem.parse(raw)

    assert item.is_active is False
    assert item.filter_operator is FilterOperator.GTE
    assert item.end_value is None  # "" means not set, as in blog items
    assert item.primary_keys == ["mlb_id", "season"]
    assert item.load_mode is LoadMode.MERGE
    assert item.output_s3_prefix == "better"  # the correct spelling wins over ouputs3Prefix
    assert item.replication_instance_arn == "arn:aws:dms:eu-west-1:123456789012:rep:ABCDEF"
    assert item.last_run_status is RunStatus.SUCCEEDED


def test_task_settings_may_be_a_dynamodb_map(blog_item: dict[str, Any]) -> None:
    settings_map = {"TargetMetadata": {"ParallelLoadThreads": Decimal("0")}}
    raw = {**blog_item, "replication_task_settings": settings_map}

    assert ControlItem.parse(raw).task_settings == {"TargetMetadata": {"ParallelLoadThreads": 0}}


def test_primary_keys_as_a_list_default_the_load_mode_to_merge(blog_item: dict[str, Any]) -> None:
    item = ControlItem.parse({**blog_item, "primaryKeys": ["mlb_id"]})

    assert (item.primary_keys, item.load_mode) == (["mlb_id"], LoadMode.MERGE)


def test_a_lookback_of_zero_re_reads_nothing_and_is_accepted_without_keys(blog_item: dict[str, Any]) -> None:
    item = ControlItem.parse({**blog_item, "lookback": 0})

    assert (item.load_mode, item.lookback) == (LoadMode.APPEND, Decimal("0"))


def test_missing_activeflag_means_active(blog_item: dict[str, Any]) -> None:
    raw = {key: value for key, value in blog_item.items() if key != "activeflag"}

    assert ControlItem.parse(raw).is_active is True


@pytest.mark.parametrize(
    ("change", "expected"),
    [
        pytest.param(
            {"filteroperator": "gt"},
            "filteroperator: 'gt' is not a DMS filter operator; use one of lte, ste, gte, eq, noteq, "
            "between, notbetween, null, notnull",
            id="unknown-operator",
        ),
        pytest.param(
            {"endvalue": None}, "endvalue: required when filteroperator is between", id="between-no-end"
        ),
        pytest.param(
            {"replication_task_settings": "{ParallelLoadThreads: 0}"},
            "replication_task_settings: is not valid JSON "
            "(Expecting property name enclosed in double quotes: line 1 column 2 (char 1))",
            id="settings-not-json",
        ),
        pytest.param(
            {"replication_task_settings": "[1, 2]"},
            "replication_task_settings: must be a JSON object, got a JSON list",
            id="settings-not-object",
        ),
        pytest.param(
            {"sourceTable": "orders%"},
            WILDCARD_ERROR,
            id="wildcard-table",
        ),
        pytest.param(
            {"sourceSchema": "sales[12]"},
            "sourceSchema: 'sales[12]' contains [ or ], which DMS reads as a wildcard character set; "
            "source filters need an exact name",
            id="character-set-schema",
        ),
        pytest.param(
            {"sourceTable": '"Orders"'},
            "sourceTable: '\"Orders\"' contains a quote; give the name unquoted, as the source stores it",
            id="quoted-table",
        ),
        pytest.param({"sourceTable": "   "}, "sourceTable: must not be blank", id="blank-table"),
        pytest.param(
            {"sourceTable": "t" * 129},
            "sourceTable: is 129 characters long; at most 128 are allowed",
            id="long",
        ),
        pytest.param(
            {"sourceTable": "orders\t"},
            "sourceTable: 'orders\\t' has leading or trailing spaces; DMS matches names exactly",
            id="trailing-tab",
        ),
        pytest.param(
            {"sourceTable": "ord\x07ers"},
            "sourceTable: 'ord\\x07ers' contains a control character",
            id="control",
        ),
        pytest.param(
            {"targetTableName": None}, "targetTableName: required attribute is missing", id="no-target"
        ),
        pytest.param(
            {"targetTableName": "1mlb"},
            "targetTableName: '1mlb' is not a valid table name: start with a letter, then letters, digits or "
            "underscores, at most 128 characters",
            id="bad-target",
        ),
        pytest.param({"activeflag": "yes"}, "activeflag: 'yes' is neither Y nor N", id="bad-flag"),
        pytest.param(
            {"filtercolumn": None},
            "filtercolumn: required when filteroperator is between",
            id="operator-no-column",
        ),
        pytest.param(
            {"filteroperator": None, "startvalue": None, "endvalue": None},
            "filteroperator: required when filtercolumn is set; use one of lte, ste, gte, eq, noteq, "
            "between, notbetween, null, notnull",
            id="column-no-operator",
        ),
        pytest.param(
            {"startvalue": "1000", "endvalue": "999"},
            "startvalue: '1000' is above endvalue '999'; filteroperator between takes the lower value as "
            "startvalue",
            id="between-numbers-reversed",  # as text "1000" < "999": the check compares numbers
        ),
        pytest.param(
            {
                "filteroperator": "notbetween",
                "startvalue": "2026-11-21T07:00:01Z",
                "endvalue": "2026-11-21 07:00:00",
            },
            "startvalue: '2026-11-21T07:00:01Z' is above endvalue '2026-11-21 07:00:00'; filteroperator "
            "notbetween takes the lower value as startvalue",
            id="notbetween-times-reversed",
        ),
        pytest.param(
            {"startvalue": "b", "endvalue": "a"},
            "startvalue: 'b' is above endvalue 'a'; filteroperator between takes the lower value as "
            "startvalue",
            id="between-text-reversed",
        ),
        pytest.param(
            {"primarykeys": "mlb_id"},
            "primarykeys: unknown attribute; did you mean primaryKeys?",
            id="key-typo-case",
        ),
        pytest.param(
            {"primaryKey": "mlb_id", "loadMode": "merge"},
            # Not also "primaryKeys: required when loadMode is merge": that is the typo's echo.
            "primaryKey: unknown attribute; did you mean primaryKeys?",
            id="key-typo-close",
        ),
        pytest.param(
            {"primary_keys": "mlb_id"},
            "primary_keys: unknown attribute; did you mean primaryKeys?",
            id="python-name",
        ),
        pytest.param(
            {"sourceTable": None, "sourcetable": "mlb_data"},
            "sourcetable: unknown attribute; did you mean sourceTable?",
            id="required-typo",
        ),
        pytest.param(
            {"filteroperator": None, "filterOperator": "between"},
            "filterOperator: unknown attribute; did you mean filteroperator?",
            id="operator-typo",
        ),
        pytest.param(
            {"ouputs3Prefix": None, "outputs3Prefix": "mlb_data"},
            "outputs3Prefix: unknown attribute; did you mean outputS3Prefix?",
            id="prefix-typo",
        ),
        pytest.param(
            {"somethingElse": "x"},
            "somethingElse: unknown attribute; remove it (nothing reads it)",
            id="unknown",
        ),
        pytest.param(
            {"loadMode": "merge"},
            "primaryKeys: required when loadMode is merge; list the key columns or set loadMode to append",
            id="merge-without-keys",
        ),
        pytest.param(
            {"loadMode": "upsert"}, "loadMode: 'upsert' is not a load mode; use merge or append", id="mode"
        ),
        pytest.param(
            {"primaryKeys": "id,,name"}, "primaryKeys: 'id,,name' has an empty column name", id="empty-key"
        ),
        pytest.param(
            {"primaryKeys": ["id", "id"]}, "primaryKeys: lists id more than once", id="duplicate-key"
        ),
        pytest.param(
            {"lookback": "-5"},
            "lookback: '-5' is not a non-negative number (seconds, for timestamp watermarks)",
            id="negative-lookback",
        ),
        pytest.param(
            {"lookback": 60},
            "lookback: re-reading a window needs primaryKeys to dedupe; an append-only table would "
            "append those rows twice (set primaryKeys, or remove lookback)",
            id="lookback-append-by-default",
        ),
        pytest.param(
            {"lookback": "60", "loadMode": "append", "primaryKeys": "mlb_id"},
            "lookback: re-reading a window needs primaryKeys to dedupe; an append-only table would "
            "append those rows twice (set primaryKeys, or remove lookback)",
            id="lookback-append-explicit",
        ),
        pytest.param(
            {"replicationInstanceArn": "my-instance"},
            "replicationInstanceArn: 'my-instance' is not a replication instance ARN "
            "(arn:aws:dms:REGION:ACCOUNT:rep:ID)",
            id="bad-arn",
        ),
        pytest.param(
            {"replication_task_settings": {"Tags": {"a", "b"}}},
            "replication_task_settings: holds a value JSON cannot express (set is not JSON)",
            id="settings-map-with-set",
        ),
        pytest.param(
            {"startvalue": True},
            "startvalue: must be a string or a number, got the boolean True",
            id="bool-value",
        ),
    ],
)
def test_an_invalid_item_gets_exactly_one_clear_error(
    blog_item: dict[str, Any], change: dict[str, Any], expected: str
) -> None:
    raw = {**blog_item, **change}
    raw = {key: value for key, value in raw.items() if value is not None}

    assert errors_of(raw) == [expected]


def test_every_field_problem_is_reported_at_once(blog_item: dict[str, Any]) -> None:
    raw = {
        **blog_item,
        "filteroperator": "like",
        "sourceTable": "orders%",
        "lookback": "soon",
        "primarykeys": "a",
    }

    assert errors_of(raw) == [
        WILDCARD_ERROR,
        "filteroperator: 'like' is not a DMS filter operator; use one of lte, ste, gte, eq, noteq, between, "
        "notbetween, null, notnull",
        "lookback: 'soon' is not a non-negative number (seconds, for timestamp watermarks)",
        "primarykeys: unknown attribute; did you mean primaryKeys?",
    ]


@pytest.mark.parametrize(
    ("change", "values", "notes"),
    [
        pytest.param(
            {"filteroperator": "gte"},
            ("0", None),
            ("endvalue: ignored, filteroperator gte takes only startvalue",),
            id="gte-with-endvalue",
        ),
        pytest.param(
            {"filteroperator": "null"},
            (None, None),
            (
                "startvalue: ignored, filteroperator null takes no value",
                "endvalue: ignored, filteroperator null takes no value",
            ),
            id="null-with-values",
        ),
        pytest.param(
            # An ignored value is not read at all, so not judged either.
            {"filteroperator": "NotNull", "startvalue": True, "endvalue": ""},
            (None, None),
            ("startvalue: ignored, filteroperator notnull takes no value",),
            id="notnull-with-unread-value",
        ),
        pytest.param(
            {"filteroperator": "", "filtercolumn": None},
            (None, None),
            (
                "startvalue: ignored, no filteroperator is set, so the run reads the whole table",
                "endvalue: ignored, no filteroperator is set, so the run reads the whole table",
            ),
            id="no-operator",
        ),
    ],
)
def test_a_value_the_operator_does_not_take_is_ignored_with_a_note(
    blog_item: dict[str, Any],
    change: dict[str, Any],
    values: tuple[str | None, str | None],
    notes: tuple[str, ...],
) -> None:
    raw = {key: value for key, value in {**blog_item, **change}.items() if value is not None}

    item = ControlItem.parse(raw)

    assert (item.start_value, item.end_value) == values
    assert item.notes == notes


@pytest.mark.parametrize(
    ("operator", "start", "end"),
    [
        pytest.param("between", "9", "10", id="numbers"),  # as text "9" > "10"
        pytest.param("between", Decimal("5"), "5", id="equal"),
        # 08:00+02:00 is 06:00 UTC, before 07:00 (as text it sorts after it).
        pytest.param("notbetween", "2026-11-21 08:00:00+02:00", "2026-11-21 07:00:00", id="times-in-utc"),
        pytest.param("between", "A12", "B1", id="text"),
    ],
)
def test_a_range_in_order_is_valid(blog_item: dict[str, Any], operator: str, start: object, end: str) -> None:
    item = ControlItem.parse({**blog_item, "filteroperator": operator, "startvalue": start, "endvalue": end})

    assert item.filter_operator == operator


def test_the_attributes_the_handlers_write_keep_an_item_valid(blog_item: dict[str, Any]) -> None:
    """After its first run an item holds run state and a lock; those must never make it invalid."""
    raw = {
        **blog_item,
        "watermark": Decimal("590"),
        "lastRunId": "mlb_data-20261121T0700Z",
        "lastRunStatus": "FAILED",
        "lastRunTime": "2026-11-21T07:05:00Z",
        "lastRunError": "Glue job failed",
        "lastFailedState": "Run Glue job",
        "lastRunStats": {"rowsRead": Decimal("10"), "rowsInserted": Decimal("10")},
        "lockHolder": "mlb_data-20261121T0800Z",
        "lockTime": "2026-11-21T08:00:00Z",
    }

    assert ControlItem.parse(raw).lock_holder == "mlb_data-20261121T0800Z"
    # Whatever a handler's write adds to these lists must be an attribute the model knows.
    assert set(RUN_STATE_ATTRIBUTES) | set(LOCK_ATTRIBUTES) <= ControlItem.attribute_names()


def test_run_statistics_must_be_non_negative_counts(blog_item: dict[str, Any]) -> None:
    raw = {**blog_item, "lastRunStats": {"rowsRead": -1, "rowsDeleted": True}}

    assert errors_of(raw) == [
        "lastRunStats.rowsRead: Input should be greater than or equal to 0",
        "lastRunStats.rowsDeleted: must be a whole number, got the boolean True",
    ]


def test_the_error_message_lists_every_line() -> None:
    error = InvalidControlItem(["sourceTable: must not be blank", "loadMode: 'x' is not a load mode"])

    assert str(error) == "sourceTable: must not be blank\nloadMode: 'x' is not a load mode"


def test_a_non_mapping_is_an_invalid_item() -> None:
    assert errors_of([1, 2]) == ["item: must be a JSON object, not list"]  # type: ignore[arg-type]
