"""The DMS table mapping of one run: one selection rule for the source table, one source filter.

Built as data and serialised with `json.dumps`, never pasted together as text, in the shape of the
AWS DMS user guide ("Using source filters"): `value` for lte/ste/gte/eq/noteq, `start-value` and
`end-value` for between/notbetween, no value for null/notnull, every value a string.
"""

from __future__ import annotations

import json
from typing import Any

from icetide.control.model import ControlItem
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


def build_table_mapping(item: ControlItem, lower_bound: object = None) -> dict[str, Any]:
    """The table mapping of a run of `item`.

    `lower_bound` (the watermark minus the lookback, see `icetide.control.watermark.lower_bound`) replaces the
    configured start value of `gte` and `between`; every other operator keeps its values as configured.
    """
    filters = []
    if item.filter_operator is not None or item.filter_column is not None:
        operator = _operator(item.filter_operator)
        start: object = item.start_value
        if lower_bound is not None and operator in WATERMARK_BOUNDED:
            start = lower_bound
        filters.append(source_filter(item.filter_column or "", operator, start, item.end_value))
    return {
        "rules": [
            {
                "rule-type": "selection",
                "rule-id": "1",
                "rule-name": "1",
                "object-locator": {"schema-name": item.source_schema, "table-name": item.source_table},
                "rule-action": "include",
                "filters": filters,
            }
        ]
    }


def table_mapping_json(item: ControlItem, lower_bound: object = None) -> str:
    """`build_table_mapping` serialised, as `CreateReplicationTask`'s `TableMappings` wants it."""
    return json.dumps(build_table_mapping(item, lower_bound))
