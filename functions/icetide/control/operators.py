"""The nine DMS source-filter operators and the values each one takes.

From the AWS DMS user guide, "Using source filters": `lte`, `ste` (an alias of `lte`), `gte`, `eq` and
`noteq` take one `value`; `between` and `notbetween` take `start-value` and `end-value` (inclusive);
`null` and `notnull` take none. DMS has no strict `gt`/`lt`. Both the control-item model and the
table-mapping builder read this table, so the rules live in one place.
"""

from __future__ import annotations

from enum import Enum, StrEnum


class FilterOperator(StrEnum):
    """A DMS `filter-operator` value, spelt as DMS spells it."""

    LTE = "lte"
    STE = "ste"
    GTE = "gte"
    EQ = "eq"
    NOTEQ = "noteq"
    BETWEEN = "between"
    NOTBETWEEN = "notbetween"
    NULL = "null"
    NOTNULL = "notnull"


class ValueShape(Enum):
    """Which value parameters a filter condition carries."""

    ONE = "value"
    RANGE = "start-value/end-value"
    NONE = "no value"


VALUE_SHAPES: dict[FilterOperator, ValueShape] = {
    FilterOperator.LTE: ValueShape.ONE,
    FilterOperator.STE: ValueShape.ONE,
    FilterOperator.GTE: ValueShape.ONE,
    FilterOperator.EQ: ValueShape.ONE,
    FilterOperator.NOTEQ: ValueShape.ONE,
    FilterOperator.BETWEEN: ValueShape.RANGE,
    FilterOperator.NOTBETWEEN: ValueShape.RANGE,
    FilterOperator.NULL: ValueShape.NONE,
    FilterOperator.NOTNULL: ValueShape.NONE,
}

# Operators whose lower value follows the watermark from run to run (contracts: "Lower bound of a run").
WATERMARK_BOUNDED: frozenset[FilterOperator] = frozenset({FilterOperator.GTE, FilterOperator.BETWEEN})

OPERATOR_NAMES = ", ".join(operator.value for operator in FilterOperator)


def parse_operator(value: object) -> FilterOperator:
    """The operator named by `value` (case-insensitive), or ValueError naming the nine valid ones."""
    if isinstance(value, FilterOperator):
        return value
    text = value.strip().lower() if isinstance(value, str) else ""
    try:
        return FilterOperator(text)
    except ValueError:
        raise ValueError(f"{value!r} is not a DMS filter operator; use one of {OPERATOR_NAMES}") from None
