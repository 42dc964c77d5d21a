"""JSON objects as frozen dataclasses: each field names its JSON key and the check its value passes.

The contracts are read with the standard library alone (they run on Glue too). A reason repeats
pydantic's wording where the Lambdas reported pydantic's before ("Input should be a valid string"),
so a message that operators and tests know stays the same.
"""

from __future__ import annotations

import dataclasses
import json
import math
import re
from collections.abc import Callable, Mapping
from datetime import datetime
from typing import Any, TypeVar

Check = Callable[[Any], Any]
Contract = TypeVar("Contract")


class ContractViolation(ValueError):
    """A JSON document that breaks its contract.

    The message names the contract and every problem ("run manifest is invalid: rowsRead: ...");
    `problems` holds the same as (attribute, reason) pairs, the attribute spelt as the JSON key
    ("" for the document itself), so a caller can place them inside a larger document.
    """

    def __init__(self, message: str, problems: tuple[tuple[str, str], ...] = ()) -> None:
        super().__init__(message)
        self.problems = problems


class Invalid(ValueError):
    """Raised by a check: why the value is refused, and where below the attribute (a list position)."""

    def __init__(self, reason: str, at: str = "") -> None:
        super().__init__(reason)
        self.reason = reason
        self.at = at


def json_key(key: str, check: Check, *, required: bool = False) -> dict[str, Any]:
    """A field's metadata: its JSON key and check. A field without a default is always required in
    JSON; `required` makes one with a default (for writers building it step by step) required too."""
    return {"json": key, "check": check, "required": required}


def read_object(contract: type[Contract], data: object, name: str) -> Contract:
    """The dataclass `contract` from a JSON object; ContractViolation lists every problem.

    Keys the contract does not know are ignored, so a newer writer may add some.
    """
    if not isinstance(data, Mapping):
        reason = f"must be a JSON object, got a JSON {type(data).__name__}"
        raise ContractViolation(f"{name} {reason}", (("", reason),))
    values: dict[str, Any] = {}
    problems: list[tuple[str, str]] = []
    for field in dataclasses.fields(contract):  # type: ignore[arg-type]
        key, check = field.metadata["json"], field.metadata["check"]
        if key not in data:
            has_default = field.default is not dataclasses.MISSING or (
                field.default_factory is not dataclasses.MISSING
            )
            if field.metadata["required"] or not has_default:
                problems.append((key, "required attribute is missing"))
            continue
        try:
            values[field.name] = check(data[key])
        except Invalid as invalid:
            problems.append((f"{key}.{invalid.at}" if invalid.at else key, invalid.reason))
    if problems:
        lines = "; ".join(f"{attribute}: {reason}" for attribute, reason in problems)
        raise ContractViolation(f"{name} is invalid: {lines}", tuple(problems))
    return contract(**values)


def read_text(content: str | bytes, name: str) -> object:
    """The JSON value in ``content``; ContractViolation naming ``name`` when it is not JSON."""
    try:
        return json.loads(content)
    except (json.JSONDecodeError, UnicodeDecodeError) as error:
        raise ContractViolation(f"{name} is not valid JSON: {error}") from None


def nested(contract: type[Contract], name: str) -> Check:
    """A check reading a JSON object inside a document as the dataclass ``contract``; its problems
    become one reason, so the outer document names where they are."""

    def check(value: object) -> Contract:
        try:
            return read_object(contract, value, name)
        except ContractViolation as violation:
            raise Invalid("; ".join(f"{key}: {reason}" for key, reason in violation.problems)) from None

    return check


def write_object(document: object) -> dict[str, Any]:
    """The dataclass `document` as its JSON object, keys in field order."""
    return {
        field.metadata["json"]: _json_value(getattr(document, field.name))
        for field in dataclasses.fields(document)  # type: ignore[arg-type]
    }


def _json_value(value: Any) -> Any:
    # A fresh list, so the caller may change the object without touching the frozen document.
    if isinstance(value, list | tuple):
        return list(value)
    # A document inside a document (a report's per-table parts) is written as its own object.
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return write_object(value)
    return value


# --- checks ---------------------------------------------------------------------------------------


def text(*, min_length: int = 0, pattern: str | None = None) -> Check:
    """A string of at least `min_length` characters matching `pattern`."""
    compiled = re.compile(pattern) if pattern is not None else None

    def check(value: object) -> str:
        if not isinstance(value, str):
            raise Invalid("Input should be a valid string")
        if len(value) < min_length:
            plural = "" if min_length == 1 else "s"
            raise Invalid(f"String should have at least {min_length} character{plural}")
        if compiled is not None and not compiled.search(value):
            raise Invalid(f"String should match pattern '{pattern}'")
        return value

    return check


def one_of(*choices: str) -> Check:
    """One of the strings `choices`."""

    def check(value: object) -> str:
        if not isinstance(value, str) or value not in choices:
            raise Invalid(f"Input should be {' or '.join(repr(choice) for choice in choices)}")
        return value

    return check


def optional(inner: Check) -> Check:
    """null, or a value `inner` accepts."""

    def check(value: object) -> Any:
        return None if value is None else inner(value)

    return check


def whole_number(*, minimum: int | None = None) -> Check:
    """A JSON integer: true, 1.5 and "3" are not row counts (pydantic's lax mode would take them)."""

    def check(value: object) -> int:
        if isinstance(value, bool) or not isinstance(value, int):
            raise Invalid(f"must be a whole number, got {value!r}")
        if minimum is not None and value < minimum:
            raise Invalid(f"Input should be greater than or equal to {minimum}")
        return value

    return check


def flag(value: object) -> bool:
    """A JSON boolean, strictly: 1 and "true" are not."""
    if not isinstance(value, bool):
        raise Invalid("Input should be a valid boolean")
    return value


def text_list(value: object) -> list[str]:
    """A JSON array of strings."""
    if not isinstance(value, list):
        raise Invalid("Input should be a valid list")
    for position, item in enumerate(value):
        if not isinstance(item, str):
            raise Invalid("Input should be a valid string", at=str(position))
    return list(value)


# The text form of a timestamp (icetide_contracts.watermark_text.format_timestamp): UTC, no zone.
_UTC_TIMESTAMP = re.compile(r"^[0-9]{4}-[0-9]{2}-[0-9]{2} [0-9]{2}:[0-9]{2}:[0-9]{2}(\.[0-9]{1,6})?$")


def utc_timestamp(value: object) -> str:
    """A UTC instant in the watermark text form, `YYYY-MM-DD HH:MM:SS[.ffffff]`, that is a real time."""
    if not isinstance(value, str) or not _UTC_TIMESTAMP.match(value):
        raise Invalid(f"must be a UTC time as YYYY-MM-DD HH:MM:SS[.ffffff], got {value!r}")
    try:
        datetime.fromisoformat(value)
    except ValueError as error:
        raise Invalid(f"{value!r} is not a valid time: {error}") from None
    return value


def watermark_value(value: object) -> int | float | str | None:
    """A watermark as JSON carries it: a finite number, a string (a timestamp, a decimal's exact
    text, other text) or null."""
    if value is None or isinstance(value, str):
        return value
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    if not isinstance(value, float) or not math.isfinite(value):
        raise Invalid(f"must be a finite number, a string or null, got {value!r}")
    return value
