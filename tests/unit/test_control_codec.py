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


def test_a_number_boto3_would_read_as_nan_is_a_value_error() -> None:
    for text in ("NaN", "Infinity"):
        with pytest.raises(ValueError, match="is not a valid DynamoDB N value"):
            from_typed_json({"startvalue": {"N": text}})
    with pytest.raises(ValueError, match="is not a valid DynamoDB NS value"):
        from_typed_json({"shards": {"NS": ["1", "five"]}})


def test_a_flag_that_is_not_a_boolean_is_a_value_error() -> None:
    with pytest.raises(ValueError, match=r"\{'BOOL': 'false'\} is not a valid DynamoDB BOOL value"):
        from_typed_json({"enabled": {"BOOL": "false"}})


def test_a_nested_error_names_the_innermost_value() -> None:
    with pytest.raises(ValueError, match=r"^\{'N': 'five'\} is not a valid DynamoDB N value$"):
        from_typed_json({"lastRunStats": {"M": {"rows": {"L": [{"N": "five"}]}}}})


def test_binary_from_a_boto3_client_response_is_taken_as_bytes() -> None:
    assert from_typed_json({"blob": {"B": b"hello"}, "blobs": {"BS": [b"a"]}}) == {
        "blob": b"hello",
        "blobs": {b"a"},
    }


def test_floats_and_exponents_encode_as_plain_numbers() -> None:
    assert to_typed_json({"f": 0.1, "e": Decimal("1E+3"), "fs": {2.5, 1}, "l": [0.5]}) == {
        "f": {"N": "0.1"},
        "e": {"N": "1000"},
        "fs": {"NS": ["1", "2.5"]},
        "l": {"L": [{"N": "0.5"}]},
    }


def test_set_members_are_written_in_sorted_order() -> None:
    letters = set("qwertyuiopasdfghjkl")
    assert to_typed_json({"tags": letters}) == {"tags": {"SS": sorted(letters)}}


def test_values_dynamodb_cannot_hold_are_value_errors() -> None:
    with pytest.raises(ValueError, match="cannot store a float in DynamoDB"):
        to_typed_json({"x": float("nan")})
    with pytest.raises(ValueError, match="cannot store a object in DynamoDB"):
        to_typed_json({"x": object()})
    with pytest.raises(ValueError, match="cannot store a set in DynamoDB"):
        to_typed_json({"x": {"a", 1}})
