"""A watermark's text form: how both sides spell a watermark in JSON (docs/contracts.md, "Watermark").

The Glue job writes the run manifest's `newWatermark` in it; the Lambdas write the plan's
`previousWatermark`, the next run's lower bound and their outputs in it, and compare what they read
back. One definition keeps the two sides spelling a value alike:

- a timestamp is `YYYY-MM-DD HH:MM:SS` in UTC, with `.ffffff` when it has microseconds (or when asked);
- a number is a JSON number when that is exact, else its exact text in plain notation: a float
  that rounded a decimal up would make the next run skip rows, and DMS compares the text with the
  source column, which never holds `1E+3`.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from decimal import Decimal

WatermarkJson = int | float | str | None
"""A watermark as JSON carries it (null: no watermark, or an empty batch)."""

_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


def format_timestamp(moment: datetime, *, fraction: bool = False) -> str:
    """`YYYY-MM-DD HH:MM:SS[.ffffff]` in UTC (a naive datetime is UTC); the fraction when asked for
    or when not zero."""
    utc = moment.astimezone(UTC) if moment.tzinfo else moment
    pattern = "%Y-%m-%d %H:%M:%S.%f" if fraction or utc.microsecond else "%Y-%m-%d %H:%M:%S"
    return utc.strftime(pattern)


def format_epoch_micros(epoch_micros: int) -> str:
    """A timestamp given as microseconds since the epoch (as Spark's unix_micros gives it), as text."""
    return format_timestamp(_EPOCH + timedelta(microseconds=epoch_micros))


def epoch_micros(moment: datetime) -> int:
    """An aware ``moment`` as whole microseconds since the epoch (as Spark's unix_micros gives it)."""
    return (moment - _EPOCH) // timedelta(microseconds=1)


def number_json(number: Decimal) -> int | float | str:
    """A decimal as a JSON number when that is exact, else its exact plain-notation text."""
    if number == number.to_integral_value():
        return int(number)
    as_float = float(number)
    return as_float if Decimal(repr(as_float)) == number else format(number, "f")


def watermark_json(value: int | float | Decimal | str | None) -> WatermarkJson:
    """A watermark value as JSON: strings as they are, numbers by `number_json` (ints stay ints).

    ValueError for anything else (a boolean, NaN, infinity).
    """
    if value is None or isinstance(value, str):
        return value
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    number: Decimal | None = None
    if isinstance(value, float):
        number = Decimal(repr(value))
    elif isinstance(value, Decimal):
        number = value
    if number is None or not number.is_finite():
        raise ValueError(f"watermark {value!r} is neither a number nor a string")
    return number_json(number)
