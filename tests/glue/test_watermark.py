"""The new watermark as the manifest's JSON value: exact, and in the contract's formats."""

from __future__ import annotations

from datetime import date
from decimal import Decimal

import pytest
from pyspark.sql.types import (
    BinaryType,
    BooleanType,
    DateType,
    DecimalType,
    DoubleType,
    IntegerType,
    LongType,
    StringType,
    TimestampNTZType,
    TimestampType,
)

from icetide_glue.changes.watermark import check_watermark_type, watermark_json
from icetide_glue.errors import BronzeSchemaError


def test_timestamps_are_utc_text_with_microseconds_only_when_present() -> None:
    # 2026-11-21 06:59:58 UTC is 1795244398 seconds after the epoch; the text form itself is
    # icetide_contracts.watermark_text's (tests/unit/test_watermark_text.py).
    assert watermark_json(1_795_244_398_500_000, TimestampType()) == "2026-11-21 06:59:58.500000"
    assert watermark_json(1_795_244_398_000_000, TimestampNTZType()) == "2026-11-21 06:59:58"


@pytest.mark.parametrize(
    ("value", "data_type", "expected"),
    [
        (42, LongType(), 42),
        (7, IntegerType(), 7),
        (2.5, DoubleType(), 2.5),
        (Decimal("12.0000"), DecimalType(38, 4), 12),
        (Decimal("12.5000"), DecimalType(38, 4), 12.5),
        # Not exact as a float: kept as text rather than rounded.
        (Decimal("12345678901234567.8901"), DecimalType(38, 4), "12345678901234567.8901"),
        (date(2026, 11, 21), DateType(), "2026-11-21"),
        ("2026-11-21T06:00", StringType(), "2026-11-21T06:00"),
        (None, LongType(), None),
    ],
)
def test_values_keep_their_kind_and_exactness(value: object, data_type: object, expected: object) -> None:
    assert watermark_json(value, data_type) == expected  # type: ignore[arg-type]
    assert type(watermark_json(value, data_type)) is type(expected)  # type: ignore[arg-type]


@pytest.mark.parametrize("data_type", [BooleanType(), BinaryType()])
def test_types_without_a_meaningful_maximum_are_refused(data_type: object) -> None:
    with pytest.raises(BronzeSchemaError, match="watermark column 'flag' has type"):
        check_watermark_type("flag", data_type)  # type: ignore[arg-type]
