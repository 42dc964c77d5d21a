"""Scalar values of control items as text.

DynamoDB hands numbers back as `Decimal`, users write `"5"` or `5`, and DMS wants every filter value
as a string. One conversion keeps those three views of a value in agreement.
"""

from __future__ import annotations

from decimal import Decimal, InvalidOperation


def scalar_text(value: object) -> str:
    """Return a string or number as text; numbers in plain notation (`Decimal("1E+3")` -> `"1000"`).

    Plain notation matters because DMS compares the text with the source column: `1E+3` is not a
    value a database column holds. Raises ValueError for anything else (bool, list, map, NaN).
    """
    if isinstance(value, str):
        return value
    if isinstance(value, bool):
        # bool is an int in Python; a flag where a value is expected is a mistake, not the number 1.
        raise ValueError(f"must be a string or a number, got the boolean {value}")
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float | Decimal):
        number = Decimal(repr(value)) if isinstance(value, float) else value
        if not number.is_finite():
            raise ValueError(f"must be a finite number, got {value}")
        return format(number, "f")
    raise ValueError(f"must be a string or a number, got {type(value).__name__}")


def as_decimal(value: object) -> Decimal | None:
    """The value as a finite Decimal when it is a number or a string holding one, else None."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int | Decimal):
        number = Decimal(value)
    elif isinstance(value, float):
        number = Decimal(repr(value))
    elif isinstance(value, str):
        try:
            number = Decimal(value.strip())
        except InvalidOperation:
            return None
    else:
        return None
    return number if number.is_finite() else None
