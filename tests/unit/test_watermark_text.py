"""The watermark's text form that the Glue job and the Lambdas write (icetide_contracts.watermark_text)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone
from decimal import Decimal

import pytest

from icetide_contracts.watermark_text import (
    format_epoch_micros,
    format_timestamp,
    number_json,
    watermark_json,
)


def test_timestamps_are_utc_text_with_microseconds_only_when_present() -> None:
    # 2026-11-21 06:59:58 UTC is 1795244398 seconds after the epoch.
    assert format_epoch_micros(1_795_244_398_000_000) == "2026-11-21 06:59:58"
    assert format_epoch_micros(1_795_244_398_000_123) == "2026-11-21 06:59:58.000123"


def test_a_timestamp_is_spelt_in_utc_and_keeps_a_fraction_when_asked() -> None:
    in_paris = datetime(2026, 11, 21, 7, 59, 58, tzinfo=timezone(timedelta(hours=1)))

    assert format_timestamp(in_paris) == "2026-11-21 06:59:58"
    assert format_timestamp(in_paris, fraction=True) == "2026-11-21 06:59:58.000000"
    # A naive datetime is UTC already.
    assert format_timestamp(datetime(2026, 11, 21, 6, 59, 58, 500000)) == "2026-11-21 06:59:58.500000"
    assert format_timestamp(datetime(2026, 11, 21, 6, 59, 58, tzinfo=UTC)) == "2026-11-21 06:59:58"


def test_to_json_keeps_numbers_numbers_where_exact() -> None:
    assert watermark_json(Decimal("590")) == 590
    assert watermark_json(Decimal("0.5")) == 0.5
    assert watermark_json(Decimal("0.12345678901234567890")) == "0.12345678901234567890"
    assert watermark_json("2026-11-21 06:00:00") == "2026-11-21 06:00:00"


@pytest.mark.parametrize(
    ("number", "expected"),
    [
        (Decimal("12.0000"), 12),
        (Decimal("1E+3"), 1000),
        (Decimal("12.5000"), 12.5),
        # Not exact as a float: kept as text rather than rounded, in plain notation.
        (Decimal("12345678901234567.8901"), "12345678901234567.8901"),
        (Decimal("1.2345678901234567891E-7"), "0.00000012345678901234567891"),
    ],
)
def test_a_decimal_is_a_json_number_only_when_exact(number: Decimal, expected: object) -> None:
    assert number_json(number) == expected
    assert type(number_json(number)) is type(expected)


@pytest.mark.parametrize("value", [True, float("nan"), Decimal("Infinity"), [1]])
def test_what_is_neither_a_number_nor_a_string_is_refused(value: object) -> None:
    with pytest.raises(ValueError, match="is neither a number nor a string"):
        watermark_json(value)  # type: ignore[arg-type]
