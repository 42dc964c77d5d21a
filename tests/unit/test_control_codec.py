"""DynamoDB typed JSON <-> plain values (the forms `aws dynamodb get-item` and `put-item` use)."""

from decimal import Decimal

import pytest

from icetide.control.codec import from_typed_json, is_typed_json, to_typed_json

TYPED = {
    "targetTableName": {"S": "orders"},
    "startvalue": {"N": "5"},
    "activeflag": {"S": "Y"},
    "primaryKeys": {"L": [{"S": "order_id"}, {"S": "line"}]},
    "lastRunStats": {"M": {"rowsRead": {"N": "10"}, "snapshotId": {"NULL": True}}},
    "tags": {"SS": ["a", "b"]},
    "shards": {"NS": ["1", "2.5"]},
    "enabled": {"BOOL": False},
    "blob": {"B": "aGVsbG8="},
}
PLAIN = {
    "targetTableName": "orders",
    "startvalue": Decimal("5"),
    "activeflag": "Y",
    "primaryKeys": ["order_id", "line"],
    "lastRunStats": {"rowsRead": Decimal("10"), "snapshotId": None},
    "tags": {"a", "b"},
    "shards": {Decimal("1"), Decimal("2.5")},
    "enabled": False,
    "blob": b"hello",
}


def test_typed_json_decodes_to_plain_values() -> None:
    assert from_typed_json(TYPED) == PLAIN


def test_get_item_output_is_unwrapped() -> None:
    assert from_typed_json({"Item": {"targetTableName": {"S": "orders"}}}) == {"targetTableName": "orders"}


def test_plain_values_encode_to_typed_json() -> None:
    assert to_typed_json(PLAIN) == TYPED


def test_recognises_typed_json() -> None:
    assert is_typed_json(TYPED) is True
    assert is_typed_json({"Item": {"targetTableName": {"S": "orders"}}}) is True
    assert is_typed_json({"targetTableName": "orders"}) is False
    assert is_typed_json({}) is False
    assert is_typed_json(["orders"]) is False


def test_plain_json_is_refused_as_typed() -> None:
    with pytest.raises(ValueError, match="not DynamoDB typed JSON"):
        from_typed_json({"targetTableName": "orders"})


def test_a_malformed_number_is_a_value_error() -> None:
    with pytest.raises(ValueError, match=r"\{'N': 'five'\} is not a valid DynamoDB N value"):
        from_typed_json({"startvalue": {"N": "five"}})


def test_empty_sets_cannot_be_stored() -> None:
    with pytest.raises(ValueError, match="does not store empty sets"):
        to_typed_json({"tags": set()})
