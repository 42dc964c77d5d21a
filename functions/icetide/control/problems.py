"""pydantic validation errors as "attribute: reason" lines, the form every icetide message takes."""

from __future__ import annotations

from pydantic import ValidationError


def problem_lines(exc: ValidationError) -> list[str]:
    """One "attribute: reason" line per error, the attribute spelt as in the input (its alias)."""
    lines = []
    for error in exc.errors():
        if error["type"] == "default_factory_not_called":
            # A default computed from other attributes is skipped when one of those failed: that
            # failure is already reported, this is only its echo.
            continue
        attribute = ".".join(str(part) for part in error["loc"]) or "item"
        reason = "required attribute is missing" if error["type"] == "missing" else error["msg"]
        lines.append(f"{attribute}: {reason.removeprefix('Value error, ')}")
    return lines
