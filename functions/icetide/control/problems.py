"""Problems with an item as "attribute: reason" lines, the form every icetide message takes."""

from __future__ import annotations

import difflib
from collections.abc import Collection, Iterable

from pydantic import ValidationError
from pydantic_core import PydanticCustomError

from icetide_contracts.json_fields import ContractViolation

_CONTRACT_VIOLATION = "contract_violation"


def contract_error(violation: ContractViolation) -> PydanticCustomError:
    """A contract's violation as a pydantic error, raised in a validator of a field holding a contract
    document: `problem_lines` then reports each of its problems below that field."""
    return PydanticCustomError(_CONTRACT_VIOLATION, str(violation), {"problems": violation.problems})


def problem_lines(exc: ValidationError) -> list[str]:
    """One "attribute: reason" line per error, the attribute spelt as in the input (its alias)."""
    lines = []
    for error in exc.errors():
        if error["type"] == "default_factory_not_called":
            # A default computed from other attributes is skipped when one of those failed: that
            # failure is already reported, this is only its echo.
            continue
        if error["type"] == _CONTRACT_VIOLATION:
            for inner, reason in error["ctx"]["problems"]:
                path = [*error["loc"], inner] if inner else error["loc"]
                lines.append(f"{'.'.join(str(part) for part in path)}: {reason}")
            continue
        attribute = ".".join(str(part) for part in error["loc"]) or "item"
        reason = "required attribute is missing" if error["type"] == "missing" else error["msg"]
        lines.append(f"{attribute}: {reason.removeprefix('Value error, ')}")
    return lines


def attribute_of(line: str) -> str:
    """The attribute a problem line is about (the text before its first colon)."""
    return line.partition(":")[0]


def likely_meant(name: str, known: Collection[str]) -> str | None:
    """The known attribute `name` most likely misspells, or None when none is close.

    A difference in case alone is the commonest typo (`primarykeys`) and DynamoDB names are
    case-sensitive, so a case-insensitive match wins over any merely similar name.
    """
    by_folded = {attribute.casefold(): attribute for attribute in known}
    folded = name.casefold()
    if folded in by_folded:
        return by_folded[folded]
    close = difflib.get_close_matches(folded, list(by_folded), n=1)
    return by_folded[close[0]] if close else None


def unknown_attribute_lines(attributes: Iterable[str], known: Collection[str]) -> dict[str, str]:
    """One problem line per attribute not in `known`, keyed by that attribute.

    An attribute nobody reads is most often a typo of one that matters (`primarykeys` would silently
    leave a table without keys), so it is a problem, and the line names the likely intended attribute.
    """
    lines = {}
    for attribute in attributes:
        if attribute in known:
            continue
        meant = likely_meant(attribute, known)
        hint = f"did you mean {meant}?" if meant else "remove it (nothing reads it)"
        lines[attribute] = f"{attribute}: unknown attribute; {hint}"
    return lines
