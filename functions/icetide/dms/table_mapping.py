"""The DMS table mappings of one run: one selection rule for the source table, one source filter.

Built as data and serialised with `json.dumps`, never pasted together as text, in the shape of the
AWS DMS user guide ("Using source filters"): `value` for lte/ste/gte/eq/noteq, `start-value` and
`end-value` for between/notbetween, no value for null/notnull, every value a string.

A cdc task also adds the `AR_H_CHANGE_SEQ` header column ("Using transformation rule expressions to
define column content"): changes committed in one transaction share a commit time, and the job
orders them by this sequence. A reconcile run's key extraction keeps only the key columns
(`include-column` rules), so reading the whole source costs what its keys cost.
"""

from __future__ import annotations

import json
from typing import Any

from icetide.control.model import CaptureMode, ControlItem
from icetide.control.operators import (
    VALUE_SHAPES,
    WATERMARK_BOUNDED,
    FilterOperator,
    ValueShape,
    parse_operator,
)
from icetide.control.values import scalar_text
from icetide.errors import InvalidTableMapping


def _operator(value: object) -> FilterOperator:
    try:
        return parse_operator(value)
    except ValueError as exc:
        raise InvalidTableMapping(str(exc)) from None


def _text(name: str, value: object, operator: FilterOperator) -> str:
    if value is None:
        raise InvalidTableMapping(f"filter operator {operator} needs {name}")
    try:
        return scalar_text(value)
    except ValueError as exc:
        raise InvalidTableMapping(f"filter operator {operator}: {name} {exc}") from None


def source_filter(
    column: str, operator: object, start_value: object = None, end_value: object = None
) -> dict[str, Any]:
    """One DMS source filter on `column`; InvalidTableMapping for an unknown operator or a missing value.

    The operator is checked first, so nothing reaches DMS that DMS would refuse.
    """
    checked = _operator(operator)
    if not column:
        raise InvalidTableMapping(f"filter operator {checked} needs a column name")
    condition: dict[str, Any] = {"filter-operator": checked.value}
    shape = VALUE_SHAPES[checked]
    if shape is ValueShape.ONE:
        condition["value"] = _text("a value", start_value, checked)
    elif shape is ValueShape.RANGE:
        condition["start-value"] = _text("a start value", start_value, checked)
        condition["end-value"] = _text("an end value", end_value, checked)
    return {"filter-type": "source", "column-name": column, "filter-conditions": [condition]}


CHANGE_SEQUENCE_COLUMN = "AR_H_CHANGE_SEQ"


def _selection(item: ControlItem, filters: list[dict[str, Any]]) -> dict[str, Any]:
    return {
        "rule-type": "selection",
        "rule-id": "1",
        "rule-name": "1",
        "object-locator": {"schema-name": item.source_schema, "table-name": item.source_table},
        "rule-action": "include",
        "filters": filters,
    }


def change_sequence_rule(item: ControlItem, rule_id: int) -> dict[str, Any]:
    """The transformation rule that adds DMS's change sequence as a column of every CDC row."""
    return {
        "rule-type": "transformation",
        "rule-id": str(rule_id),
        "rule-name": "add-change-sequence",
        "rule-target": "column",
        "object-locator": {"schema-name": item.source_schema, "table-name": item.source_table},
        "rule-action": "add-column",
        "value": CHANGE_SEQUENCE_COLUMN,
        "expression": f"${CHANGE_SEQUENCE_COLUMN}",
        # DMS's AR_H_CHANGE_SEQ: a 35-character timestamp and counter, ordered as text.
        "data-type": {"type": "string", "length": 35},
    }


def key_columns_mapping(item: ControlItem) -> dict[str, Any]:
    """The mapping of a reconcile run's key extraction: the whole table, its key columns only.

    No filter: a key is gone from the source only if no row of the table has it.
    """
    return _key_extraction(item, [])


def verify_mapping(item: ControlItem) -> dict[str, Any]:
    """The mapping of a verify run's key extraction: the key columns of the rows the table's filter
    selects as configured (its ``startvalue``, never the watermark: silver should hold every row the
    filter selects). DMS filters on the source's rows, so the filter column need not be included."""
    return _key_extraction(item, _configured_filters(item))


def _key_extraction(item: ControlItem, filters: list[dict[str, Any]]) -> dict[str, Any]:
    if not item.primary_keys:
        raise InvalidTableMapping(f"{item.target_table_name}: a key extraction needs primaryKeys")
    keep = [
        {
            "rule-type": "transformation",
            "rule-id": str(position),
            "rule-name": f"keep-{position - 1}",
            "rule-target": "column",
            "object-locator": {
                "schema-name": item.source_schema,
                "table-name": item.source_table,
                "column-name": column,
            },
            "rule-action": "include-column",
        }
        for position, column in enumerate(item.primary_keys, start=2)
    ]
    return {"rules": [_selection(item, filters), *keep]}


def build_table_mapping(item: ControlItem, lower_bound: object = None) -> dict[str, Any]:
    """The table mapping of a run of `item`.

    `lower_bound` (the watermark minus the lookback, see `icetide.control.watermark.lower_bound`) replaces the
    configured start value of `gte` and `between`; every other operator keeps its values as configured.
    A cdc table's mapping also adds the change sequence column.
    """
    rules = [_selection(item, _configured_filters(item, lower_bound))]
    if item.capture_mode is CaptureMode.CDC:
        rules.append(change_sequence_rule(item, rule_id=2))
    return {"rules": rules}


def _configured_filters(item: ControlItem, lower_bound: object = None) -> list[dict[str, Any]]:
    """The item's source filter (none without a filter operator); ``lower_bound`` replaces the start
    value of the operators a watermark bounds."""
    if item.filter_operator is None and item.filter_column is None:
        return []
    operator = _operator(item.filter_operator)
    start: object = item.start_value
    if lower_bound is not None and operator in WATERMARK_BOUNDED:
        start = lower_bound
    return [source_filter(item.filter_column or "", operator, start, item.end_value)]


def table_mapping_json(item: ControlItem, lower_bound: object = None) -> str:
    """`build_table_mapping` serialised, as `CreateReplicationTask`'s `TableMappings` wants it."""
    return json.dumps(build_table_mapping(item, lower_bound))


def key_columns_mapping_json(item: ControlItem) -> str:
    """`key_columns_mapping` serialised."""
    return json.dumps(key_columns_mapping(item))


def verify_mapping_json(item: ControlItem) -> str:
    """`verify_mapping` serialised."""
    return json.dumps(verify_mapping(item))
