"""Watermark comparison and the lower bound of the next run (contracts: "Lower bound of a run")."""

from decimal import Decimal

import pytest

from icetide.control import watermark


@pytest.mark.parametrize(
    ("a", "b", "expected"),
    [
        pytest.param("9", "10", -1, id="numeric-strings-compare-as-numbers"),
        pytest.param(10, Decimal("10.0"), 0, id="int-equals-decimal"),
        pytest.param(2.5, "2", 1, id="float-vs-string"),
        pytest.param("-3", -4, 1, id="negative"),
    ],
)
def test_numbers_compare_numerically(a: object, b: object, expected: int) -> None:
    assert watermark.compare(a, b) == expected  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("a", "b", "expected"),
    [
        pytest.param("2026-11-21 06:00:00", "2026-11-21 05:59:59.999999", 1, id="no-zone"),
        pytest.param("2026-11-21T07:00:00+01:00", "2026-11-21 06:00:00", 0, id="zone-is-converted-to-utc"),
        pytest.param("2026-11-21T06:00:00Z", "2026-11-21 06:00:00.000001", -1, id="z-suffix"),
        pytest.param("2026-11-20", "2026-11-20 00:00:01", -1, id="date-is-midnight"),
    ],
)
def test_timestamps_compare_as_utc_instants(a: str, b: str, expected: int) -> None:
    assert watermark.compare(a, b) == expected


def test_mixed_kinds_raise_a_clear_error() -> None:
    with pytest.raises(
        ValueError, match="cannot compare the number watermark '5' with the timestamp watermark"
    ):
        watermark.compare("5", "2026-11-21 06:00:00")


def test_text_watermarks_compare_by_code_point() -> None:
    """A varchar filter column's watermark: the order Spark's max() found it in."""
    assert watermark.compare("abc", "abd") == -1
    assert watermark.compare("tech", "tech") == 0
    assert watermark.compare("Zebra", "apple") == -1  # upper case sorts first, as in Spark
    assert watermark.later("B", "A") == "B"


def test_text_next_to_a_number_looking_value_compares_as_text() -> None:
    """A code column may hold "0012" and "A12": text, not a configuration mistake."""
    assert watermark.compare("A12", "0012") == 1
    assert watermark.compare(12, "A12") == -1


def test_a_text_watermark_is_its_own_lower_bound_and_refuses_a_lookback() -> None:
    assert watermark.lower_bound("B", None, "A") == "B"
    with pytest.raises(
        ValueError, match="lookback 5 needs a number or timestamp watermark, not the text 'B'"
    ):
        watermark.lower_bound("B", 5, "A")


def test_a_value_that_is_no_string_or_number_is_refused() -> None:
    with pytest.raises(ValueError, match="watermark True is neither a number nor a string"):
        watermark.compare(True, "abd")


def test_later_returns_the_larger_value_as_given() -> None:
    assert watermark.later("9", "10") == "10"
    assert watermark.later(Decimal("12"), 11) == Decimal("12")
    assert watermark.later("2026-11-21T07:00:01+01:00", "2026-11-21 06:00:00") == "2026-11-21T07:00:01+01:00"


def test_later_is_none_safe() -> None:
    assert watermark.later(None, "5") == "5"
    assert watermark.later(7, None) == 7
    assert watermark.later(None, None) is None


@pytest.mark.parametrize(
    ("stored", "lookback", "startvalue", "expected"),
    [
        pytest.param(None, 60, "0", "0", id="no-watermark-uses-startvalue"),
        pytest.param("", None, 5, 5, id="empty-watermark-uses-startvalue"),
        pytest.param(1000, 10, "0", 990, id="int-stays-int"),
        pytest.param(Decimal("1000"), None, "0", Decimal("1000"), id="no-lookback"),
        pytest.param("1000", "2.5", "0", "997.5", id="numeric-string-stays-string"),
        pytest.param(10.5, 0.5, None, 10.0, id="float-stays-float"),
        pytest.param("2026-11-21 06:00:00", 3600, None, "2026-11-21 05:00:00", id="timestamp-minus-seconds"),
        pytest.param(
            "2026-11-21 06:00:00.250000", "0.5", None, "2026-11-21 05:59:59.750000", id="fraction-is-kept"
        ),
        pytest.param("2026-11-21T08:00:00+02:00", 0, None, "2026-11-21 06:00:00", id="zone-becomes-utc"),
        pytest.param("2026-11-21", 86400, None, "2026-11-20", id="date-stays-date"),
        pytest.param("2026-11-21", 60, None, "2026-11-20 23:59:00", id="date-gets-a-time-when-needed"),
    ],
)
def test_lower_bound(stored: object, lookback: object, startvalue: object, expected: object) -> None:
    result = watermark.lower_bound(stored, lookback, startvalue)  # type: ignore[arg-type]

    assert result == expected
    assert type(result) is type(expected)


def test_a_negative_lookback_is_refused() -> None:
    with pytest.raises(ValueError, match="lookback -1 is not a non-negative number"):
        watermark.lower_bound(100, -1, None)


def test_to_dynamo_stores_numbers_as_decimal() -> None:
    assert watermark.to_dynamo(0.1) == Decimal("0.1")
    assert watermark.to_dynamo(5) == Decimal(5)
    assert watermark.to_dynamo("2026-11-21 06:00:00") == "2026-11-21 06:00:00"
    assert watermark.to_dynamo(None) is None
    with pytest.raises(ValueError, match="neither a number nor a string"):
        watermark.to_dynamo(True)
