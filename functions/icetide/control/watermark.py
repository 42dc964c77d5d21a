"""Watermarks: the largest filter-column value merged so far, and the next run's lower bound.

A watermark is a number, or a string holding a number or a timestamp (`YYYY-MM-DD HH:MM:SS[.ffffff]`,
or ISO-8601 with an optional zone; no zone means UTC), or any other text (a varchar filter column).
Numbers compare as numbers (so "9" < "10"), timestamps as UTC instants (so "07:00+01:00" == "06:00"),
text by code point, the order Spark's max() finds it in. A text column may hold values that look
like numbers ("0012" next to "A12"): text against anything compares as text. Comparing a number with a
timestamp is a configuration mistake and raises ValueError rather than guessing.
"""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta
from decimal import Decimal
from enum import StrEnum

from icetide.control.values import as_decimal, scalar_text
from icetide_contracts.watermark_text import format_timestamp

Watermark = int | float | Decimal | str

# Deliberately narrower than datetime.fromisoformat (which also takes week dates and "20261121"):
# a watermark string is either a number or one of these.
_TIMESTAMP = re.compile(
    r"^\d{4}-\d{2}-\d{2}"
    r"(?P<time>[T ]\d{2}:\d{2}(?::\d{2}(?P<fraction>\.\d+)?)?(?:[Zz]|[+-]\d{2}(?::?\d{2})?)?)?$"
)


class WatermarkKind(StrEnum):
    NUMBER = "number"
    TIMESTAMP = "timestamp"
    TEXT = "text"


def kind(value: Watermark) -> WatermarkKind:
    """Whether `value` is a number, a timestamp or other text; ValueError for anything else."""
    if as_decimal(value) is not None:
        return WatermarkKind.NUMBER
    if isinstance(value, str):
        return WatermarkKind.TIMESTAMP if _TIMESTAMP.match(value.strip()) else WatermarkKind.TEXT
    raise ValueError(f"watermark {value!r} is neither a number nor a string")


def parse_timestamp(value: str) -> datetime:
    """A timestamp watermark as an aware UTC datetime (no zone means UTC).

    More than six fractional digits (SQL Server's datetime2 has seven) are cut to microseconds:
    rounding down only makes a `gte` bound re-read a boundary row, which the merge absorbs.
    """
    text = value.strip()
    if not _TIMESTAMP.match(text):
        raise ValueError(f"{value!r} is not a timestamp (YYYY-MM-DD HH:MM:SS[.ffffff] or ISO-8601)")
    try:
        moment = datetime.fromisoformat(text)
    except ValueError as exc:
        raise ValueError(f"{value!r} is not a valid timestamp: {exc}") from None
    return moment.replace(tzinfo=UTC) if moment.tzinfo is None else moment.astimezone(UTC)


def _comparable(value: Watermark) -> tuple[WatermarkKind, Decimal | datetime | str]:
    value_kind = kind(value)
    if value_kind is WatermarkKind.NUMBER:
        number = as_decimal(value)
        assert number is not None  # kind() said so
        return value_kind, number
    assert isinstance(value, str)
    if value_kind is WatermarkKind.TEXT:
        return value_kind, value
    return value_kind, parse_timestamp(value)


def compare(a: Watermark, b: Watermark) -> int:
    """-1, 0 or 1 as `a` is before, equal to or after `b`.

    ValueError when a number meets a timestamp; text against anything compares as text.
    """
    kind_a, key_a = _comparable(a)
    kind_b, key_b = _comparable(b)
    if kind_a is not kind_b:
        if WatermarkKind.TEXT not in (kind_a, kind_b):
            raise ValueError(f"cannot compare the {kind_a} watermark {a!r} with the {kind_b} watermark {b!r}")
        key_a, key_b = scalar_text(a), scalar_text(b)
    # Same kind (or both text now), so both keys are Decimals, datetimes or strings.
    return (key_a > key_b) - (key_a < key_b)  # type: ignore[operator]


def later(a: Watermark | None, b: Watermark | None) -> Watermark | None:
    """The larger of two watermarks, as given; a missing one (None) loses to any value."""
    if a is None:
        return b
    if b is None:
        return a
    return b if compare(b, a) > 0 else a


def lower_bound(
    watermark: Watermark | None, lookback: Watermark | None, startvalue: Watermark | None
) -> Watermark | None:
    """The lower filter value of the next run: `watermark - lookback`, else `startvalue`.

    `lookback` is subtracted from a number, or taken as seconds for a timestamp. The result keeps the
    watermark's kind and style: an int stays an int, a numeric string stays a string, a timestamp
    comes back as a UTC `YYYY-MM-DD HH:MM:SS[.ffffff]` string (a date stays a date if still whole).
    """
    if watermark is None or (isinstance(watermark, str) and not watermark.strip()):
        return startvalue
    back = Decimal(0) if lookback is None else as_decimal(lookback)
    if back is None or back < 0:
        raise ValueError(f"lookback {lookback!r} is not a non-negative number")
    value_kind, key = _comparable(watermark)
    if value_kind is WatermarkKind.TEXT:
        if back:
            raise ValueError(
                f"lookback {scalar_text(back)} needs a number or timestamp watermark, "
                f"not the text {watermark!r}"
            )
        return watermark
    if value_kind is WatermarkKind.NUMBER:
        assert isinstance(key, Decimal)
        return _number_like(watermark, key - back)
    assert isinstance(key, datetime) and isinstance(watermark, str)
    bound = key - timedelta(microseconds=int(back * 1_000_000))
    match = _TIMESTAMP.match(watermark.strip())
    assert match is not None
    if match["time"] is None and bound.time() == datetime.min.time():
        return bound.strftime("%Y-%m-%d")
    return format_timestamp(bound, fraction=match["fraction"] is not None)


def _number_like(original: Watermark, number: Decimal) -> Watermark:
    if isinstance(original, str):
        return scalar_text(number)
    if isinstance(original, float):
        return float(number)
    if isinstance(original, int) and number == number.to_integral_value():
        return int(number)
    return number


def to_dynamo(value: Watermark | None) -> Decimal | str | None:
    """The watermark as DynamoDB stores it: numbers as Decimal (boto3 refuses floats), strings as is."""
    if value is None or isinstance(value, str):
        return value
    number = as_decimal(value)
    if number is None:
        raise ValueError(f"watermark {value!r} is neither a number nor a string")
    return number
