"""DynamoDB typed JSON <-> plain values, converted by boto3's TypeSerializer and TypeDeserializer.

`aws dynamodb get-item` prints `{"Item": {"targetTableName": {"S": "x"}, "startvalue": {"N": "5"}}}`
and `scan` prints `{"Items": [...]}`; users paste those into `icetide tables validate`. Numbers
decode to Decimal, as boto3 returns them, so a value reads the same from either path.

boto3 works on the wire form a client sends and receives; the printed JSON differs from it, and our
callers want stricter answers, so each converter below adds only this on top of boto3's:
- B and BS are base64 text in printed JSON (boto3 wants bytes and returns `Binary`);
- `{"N": "five"}` and `{"BOOL": "yes"}` are errors (boto3 returns NaN and "yes");
- floats are stored as the number they print as (boto3 refuses floats);
- set members are sorted and numbers keep the plain notation of `scalar_text` (`1E+3` -> `1000`),
  so one item always gives the same JSON; an empty set is refused (boto3 would write an empty NS,
  which DynamoDB rejects);
- every failure is a ValueError that names the offending value.
"""

from __future__ import annotations

import base64
import binascii
from collections.abc import Mapping, Set
from decimal import Decimal
from typing import Any

from boto3.dynamodb.types import TypeDeserializer, TypeSerializer

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


def _binary(raw: object) -> bytes:
    # Printed JSON carries base64 text; a boto3 client response carries the bytes themselves.
    if isinstance(raw, bytes | bytearray):
        return bytes(raw)
    return base64.b64decode(raw)  # type: ignore[arg-type]  # anything else raises TypeError


class _TypedJsonDeserializer(TypeDeserializer):
    """TypeDeserializer for printed typed JSON; L and M items come back through `deserialize`."""

    def deserialize(self, value: Any) -> Any:
        if not _is_typed_value(value):
            descriptors = ", ".join(sorted(TYPE_DESCRIPTORS))
            raise ValueError(f"{value!r} is not a DynamoDB typed value (one of {descriptors})")
        descriptor, raw = next(iter(value.items()))
        try:
            if descriptor == "B":
                return _binary(raw)
            if descriptor == "BS":
                return {_binary(item) for item in raw}
            if descriptor == "BOOL" and not isinstance(raw, bool):
                raise TypeError("BOOL holds true or false")
            plain = super().deserialize(value)
            numbers = [plain] if descriptor == "N" else plain if descriptor == "NS" else []
            if not all(number.is_finite() for number in numbers):
                raise ArithmeticError("not a finite number")  # boto3 reads "five" as NaN
            return plain
        except (ArithmeticError, TypeError, AttributeError, binascii.Error):
            raise ValueError(f"{value!r} is not a valid DynamoDB {descriptor} value") from None


class _TypedJsonSerializer(TypeSerializer):
    """TypeSerializer that writes printed typed JSON; L and M items go through `serialize`."""

    def serialize(self, value: Any) -> Any:
        if isinstance(value, Set) and not value:
            raise ValueError("DynamoDB does not store empty sets; store a list or leave the attribute out")
        try:
            typed: Mapping[str, Any] = super().serialize(_without_floats(value))
        except (TypeError, ArithmeticError) as error:
            raise ValueError(f"cannot store a {type(value).__name__} in DynamoDB: {error}") from None
        descriptor, raw = next(iter(typed.items()))
        if descriptor == "N":
            return {"N": scalar_text(Decimal(raw))}
        if descriptor == "NS":
            return {"NS": sorted(scalar_text(Decimal(item)) for item in raw)}
        if descriptor == "B":
            return {"B": base64.b64encode(raw).decode("ascii")}
        if descriptor == "BS":
            return {"BS": sorted(base64.b64encode(item).decode("ascii") for item in raw)}
        if descriptor == "SS":
            return {"SS": sorted(raw)}
        return dict(typed)


def _without_floats(value: object) -> object:
    # A float stands for the number its repr shows (0.1, not 0.1000000000000000055...).
    if isinstance(value, float):
        return Decimal(repr(value))
    if isinstance(value, Set):
        return {Decimal(repr(item)) if isinstance(item, float) else item for item in value}
    return value


_DESERIALIZER = _TypedJsonDeserializer()
_SERIALIZER = _TypedJsonSerializer()


def decode_value(typed: Mapping[str, Any]) -> Any:
    """One typed value (`{"N": "5"}`) as a plain value (`Decimal("5")`)."""
    return _DESERIALIZER.deserialize(typed)


def from_typed_json(obj: Mapping[str, Any]) -> dict[str, Any]:
    """A typed item, or `{"Item": {...}}` as printed by get-item, as a plain dict."""
    item = obj["Item"] if set(obj) == {"Item"} else obj
    if not is_typed_json(item):
        raise ValueError('not DynamoDB typed JSON: every attribute must look like {"S": ...} or {"N": ...}')
    return {attribute: decode_value(value) for attribute, value in item.items()}


def encode_value(value: object) -> dict[str, Any]:
    """A plain value as a typed value; sets become SS/NS/BS, numbers N (as text, like DynamoDB)."""
    return _SERIALIZER.serialize(value)


def to_typed_json(plain: Mapping[str, Any]) -> dict[str, Any]:
    """A plain item as typed JSON (the form `aws dynamodb put-item --item` takes)."""
    return {str(attribute): encode_value(value) for attribute, value in plain.items()}
