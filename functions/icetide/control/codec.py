"""DynamoDB typed JSON <-> plain values, without boto3.

`aws dynamodb get-item` prints `{"Item": {"targetTableName": {"S": "x"}, "startvalue": {"N": "5"}}}`
and `scan` prints `{"Items": [...]}`; users paste those into `icetide tables validate`. Numbers
decode to Decimal, as boto3's TypeDeserializer does, so a value reads the same from either path.
"""

from __future__ import annotations

import base64
import binascii
from collections.abc import Mapping, Set
from decimal import Decimal
from typing import Any

from icetide.control.values import scalar_text

TYPE_DESCRIPTORS = frozenset({"S", "N", "B", "BOOL", "NULL", "L", "M", "SS", "NS", "BS"})


def _is_typed_value(value: object) -> bool:
    return isinstance(value, Mapping) and len(value) == 1 and next(iter(value)) in TYPE_DESCRIPTORS


def is_typed_json(obj: object) -> bool:
    """True for a typed item (`{"attr": {"S": ..}, ..}`) or get-item output (`{"Item": {..}}`)."""
    if not isinstance(obj, Mapping) or not obj:
        return False
    if set(obj) == {"Item"} and isinstance(obj["Item"], Mapping):
        return True
    return all(_is_typed_value(value) for value in obj.values())


def decode_value(typed: Mapping[str, Any]) -> Any:
    """One typed value (`{"N": "5"}`) as a plain value (`Decimal("5")`)."""
    if not _is_typed_value(typed):
        descriptors = ", ".join(sorted(TYPE_DESCRIPTORS))
        raise ValueError(f"{typed!r} is not a DynamoDB typed value (one of {descriptors})")
    descriptor, raw = next(iter(typed.items()))
    try:
        return _decode(descriptor, raw)
    except (ArithmeticError, TypeError, AttributeError, binascii.Error):
        raise ValueError(f"{typed!r} is not a valid DynamoDB {descriptor} value") from None


def _decode(descriptor: str, raw: Any) -> Any:
    if descriptor == "S":
        return raw
    if descriptor == "N":
        return Decimal(raw)
    if descriptor == "B":
        return base64.b64decode(raw)
    if descriptor == "BOOL":
        if not isinstance(raw, bool):
            raise TypeError("BOOL holds true or false")
        return raw
    if descriptor == "NULL":
        return None
    if descriptor == "L":
        return [decode_value(item) for item in raw]
    if descriptor == "M":
        return {key: decode_value(item) for key, item in raw.items()}
    if descriptor == "SS":
        return set(raw)
    if descriptor == "NS":
        return {Decimal(item) for item in raw}
    return {base64.b64decode(item) for item in raw}  # BS


def from_typed_json(obj: Mapping[str, Any]) -> dict[str, Any]:
    """A typed item, or `{"Item": {...}}` as printed by get-item, as a plain dict."""
    item = obj["Item"] if set(obj) == {"Item"} else obj
    if not is_typed_json(item):
        raise ValueError('not DynamoDB typed JSON: every attribute must look like {"S": ...} or {"N": ...}')
    return {attribute: decode_value(value) for attribute, value in item.items()}


def encode_value(value: object) -> dict[str, Any]:
    """A plain value as a typed value; sets become SS/NS/BS, numbers N (as text, like DynamoDB)."""
    if value is None:
        return {"NULL": True}
    if isinstance(value, bool):
        return {"BOOL": value}
    if isinstance(value, str):
        return {"S": value}
    if isinstance(value, int | float | Decimal):
        return {"N": scalar_text(value)}
    if isinstance(value, bytes | bytearray):
        return {"B": base64.b64encode(value).decode("ascii")}
    if isinstance(value, Mapping):
        return {"M": {str(key): encode_value(item) for key, item in value.items()}}
    if isinstance(value, Set):
        return _encode_set(value)
    if isinstance(value, list | tuple):
        return {"L": [encode_value(item) for item in value]}
    raise ValueError(f"cannot store a {type(value).__name__} in DynamoDB")


def _encode_set(values: Set[Any]) -> dict[str, Any]:
    if not values:
        raise ValueError("DynamoDB does not store empty sets; store a list or leave the attribute out")
    if all(isinstance(item, str) for item in values):
        return {"SS": sorted(values)}
    if all(isinstance(item, bytes | bytearray) for item in values):
        return {"BS": sorted(base64.b64encode(item).decode("ascii") for item in values)}
    if all(isinstance(item, int | float | Decimal) and not isinstance(item, bool) for item in values):
        return {"NS": sorted(scalar_text(item) for item in values)}
    raise ValueError("a DynamoDB set holds only strings, only numbers or only binary values")


def to_typed_json(plain: Mapping[str, Any]) -> dict[str, Any]:
    """A plain item as typed JSON (the form `aws dynamodb put-item --item` takes)."""
    return {str(attribute): encode_value(value) for attribute, value in plain.items()}
