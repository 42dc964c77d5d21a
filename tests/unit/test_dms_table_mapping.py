"""The table mapping of each of the nine operators is exactly DMS's JSON.

Expected values are written out by hand in the shape of the AWS DMS user guide, "Using source
filters" (schema `test`, table `employee`, as in the guide's examples).
"""

import json
from typing import Any

import pytest

from icetide.control.model import ControlItem
from icetide.dms.table_mapping import build_table_mapping, source_filter, table_mapping_json
from icetide.errors import InvalidTableMapping


def employee_item(**attributes: Any) -> ControlItem:
    return ControlItem.parse(
        {"targetTableName": "employee", "sourceSchema": "test", "sourceTable": "employee", **attributes}
    )


LTE = """{"rules": [{"rule-type": "selection", "rule-id": "1", "rule-name": "1",
  "object-locator": {"schema-name": "test", "table-name": "employee"}, "rule-action": "include",
  "filters": [{"filter-type": "source", "column-name": "empid",
               "filter-conditions": [{"filter-operator": "lte", "value": "10"}]}]}]}"""
STE = """{"rules": [{"rule-type": "selection", "rule-id": "1", "rule-name": "1",
  "object-locator": {"schema-name": "test", "table-name": "employee"}, "rule-action": "include",
  "filters": [{"filter-type": "source", "column-name": "empid",
               "filter-conditions": [{"filter-operator": "ste", "value": "10"}]}]}]}"""
GTE = """{"rules": [{"rule-type": "selection", "rule-id": "1", "rule-name": "1",
  "object-locator": {"schema-name": "test", "table-name": "employee"}, "rule-action": "include",
  "filters": [{"filter-type": "source", "column-name": "empid",
               "filter-conditions": [{"filter-operator": "gte", "value": "100"}]}]}]}"""
EQ = """{"rules": [{"rule-type": "selection", "rule-id": "1", "rule-name": "1",
  "object-locator": {"schema-name": "test", "table-name": "employee"}, "rule-action": "include",
  "filters": [{"filter-type": "source", "column-name": "dept",
               "filter-conditions": [{"filter-operator": "eq", "value": "tech"}]}]}]}"""
NOTEQ = """{"rules": [{"rule-type": "selection", "rule-id": "1", "rule-name": "1",
  "object-locator": {"schema-name": "test", "table-name": "employee"}, "rule-action": "include",
  "filters": [{"filter-type": "source", "column-name": "empid",
               "filter-conditions": [{"filter-operator": "noteq", "value": "50"}]}]}]}"""
BETWEEN = """{"rules": [{"rule-type": "selection", "rule-id": "1", "rule-name": "1",
  "object-locator": {"schema-name": "test", "table-name": "employee"}, "rule-action": "include",
  "filters": [{"filter-type": "source", "column-name": "empid",
               "filter-conditions": [{"filter-operator": "between",
                                      "start-value": "50", "end-value": "75"}]}]}]}"""
NOTBETWEEN = """{"rules": [{"rule-type": "selection", "rule-id": "1", "rule-name": "1",
  "object-locator": {"schema-name": "test", "table-name": "employee"}, "rule-action": "include",
  "filters": [{"filter-type": "source", "column-name": "empid",
               "filter-conditions": [{"filter-operator": "notbetween",
                                      "start-value": "50", "end-value": "75"}]}]}]}"""
NULL = """{"rules": [{"rule-type": "selection", "rule-id": "1", "rule-name": "1",
  "object-locator": {"schema-name": "test", "table-name": "employee"}, "rule-action": "include",
  "filters": [{"filter-type": "source", "column-name": "dept",
               "filter-conditions": [{"filter-operator": "null"}]}]}]}"""
NOTNULL = """{"rules": [{"rule-type": "selection", "rule-id": "1", "rule-name": "1",
  "object-locator": {"schema-name": "test", "table-name": "employee"}, "rule-action": "include",
  "filters": [{"filter-type": "source", "column-name": "dept",
               "filter-conditions": [{"filter-operator": "notnull"}]}]}]}"""


@pytest.mark.parametrize(
    ("attributes", "expected_json"),
    [
        pytest.param({"filtercolumn": "empid", "filteroperator": "lte", "startvalue": "10"}, LTE, id="lte"),
        pytest.param({"filtercolumn": "empid", "filteroperator": "ste", "startvalue": 10}, STE, id="ste"),
        pytest.param({"filtercolumn": "empid", "filteroperator": "gte", "startvalue": "100"}, GTE, id="gte"),
        pytest.param({"filtercolumn": "dept", "filteroperator": "eq", "startvalue": "tech"}, EQ, id="eq"),
        pytest.param(
            {"filtercolumn": "empid", "filteroperator": "noteq", "startvalue": "50"}, NOTEQ, id="noteq"
        ),
        pytest.param(
            {"filtercolumn": "empid", "filteroperator": "between", "startvalue": "50", "endvalue": "75"},
            BETWEEN,
            id="between",
        ),
        pytest.param(
            {"filtercolumn": "empid", "filteroperator": "NotBetween", "startvalue": 50, "endvalue": 75},
            NOTBETWEEN,
            id="notbetween",
        ),
        pytest.param({"filtercolumn": "dept", "filteroperator": "null"}, NULL, id="null"),
        pytest.param({"filtercolumn": "dept", "filteroperator": "notnull"}, NOTNULL, id="notnull"),
    ],
)
def test_each_operator_gives_the_dms_documented_json(attributes: dict[str, Any], expected_json: str) -> None:
    item = employee_item(**attributes)

    assert build_table_mapping(item) == json.loads(expected_json)
    # What DMS receives is the serialised text: it must hold the same JSON.
    assert json.loads(table_mapping_json(item)) == json.loads(expected_json)


def test_numbers_from_dynamodb_reach_dms_as_plain_strings() -> None:
    from decimal import Decimal

    item = employee_item(
        filtercolumn="empid",
        filteroperator="between",
        startvalue=Decimal("1E+3"),
        endvalue=Decimal("2500.50"),
    )

    condition = build_table_mapping(item)["rules"][0]["filters"][0]["filter-conditions"][0]
    assert condition == {"filter-operator": "between", "start-value": "1000", "end-value": "2500.50"}


def test_gte_takes_the_lower_bound_instead_of_startvalue() -> None:
    item = employee_item(filtercolumn="updated_at", filteroperator="gte", startvalue="2000-01-01 00:00:00")

    mapping = build_table_mapping(item, lower_bound="2026-11-21 05:00:00")

    assert mapping["rules"][0]["filters"] == [
        {
            "filter-type": "source",
            "column-name": "updated_at",
            "filter-conditions": [{"filter-operator": "gte", "value": "2026-11-21 05:00:00"}],
        }
    ]


def test_between_takes_the_lower_bound_as_start_value_and_keeps_end_value() -> None:
    item = employee_item(filtercolumn="empid", filteroperator="between", startvalue="0", endvalue="1000")

    mapping = build_table_mapping(item, lower_bound=590)

    assert mapping["rules"][0]["filters"][0]["filter-conditions"] == [
        {"filter-operator": "between", "start-value": "590", "end-value": "1000"}
    ]


def test_a_lower_bound_does_not_move_other_operators() -> None:
    item = employee_item(filtercolumn="empid", filteroperator="lte", startvalue="10")

    mapping = build_table_mapping(item, lower_bound="590")

    assert mapping["rules"][0]["filters"][0]["filter-conditions"] == [
        {"filter-operator": "lte", "value": "10"}
    ]


def test_an_item_without_a_filter_selects_the_whole_table() -> None:
    mapping = build_table_mapping(employee_item())

    assert mapping == {
        "rules": [
            {
                "rule-type": "selection",
                "rule-id": "1",
                "rule-name": "1",
                "object-locator": {"schema-name": "test", "table-name": "employee"},
                "rule-action": "include",
                "filters": [],
            }
        ]
    }


@pytest.mark.parametrize("operator", ["gt", "like"])
def test_operators_dms_lacks_are_rejected(operator: str) -> None:
    with pytest.raises(InvalidTableMapping, match=f"'{operator}' is not a DMS filter operator"):
        source_filter("empid", operator, "5")


@pytest.mark.parametrize("operator", ["gt", "like"])
def test_an_item_that_bypassed_validation_still_cannot_reach_dms_with_a_bad_operator(operator: str) -> None:
    valid = employee_item(filtercolumn="empid", filteroperator="gte", startvalue="5")
    tampered = valid.model_copy(update={"filter_operator": operator})  # model_copy skips validation

    with pytest.raises(InvalidTableMapping, match=f"'{operator}' is not a DMS filter operator"):
        build_table_mapping(tampered)


def test_a_missing_value_is_rejected_before_dms_sees_it() -> None:
    with pytest.raises(InvalidTableMapping, match="between needs an end value"):
        source_filter("empid", "between", "0", None)
