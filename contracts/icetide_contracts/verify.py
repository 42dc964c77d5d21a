"""The verify report (docs/contracts.md, "Verify report"): silver compared with its source table.

``icetide verify TABLE`` writes one, locally (the workspace's silver table against the source
database, read through SQLAlchemy) and in AWS (a verify run: the Glue job compares silver's live
keys with a key-only DMS extraction and writes the report next to the run's manifest, where the
CLI reads it). One definition, so both verbs print the same thing and ``--json`` is the same
document wherever it was made.

What is compared (``compared``):

- ``keys``: the keys of the source's rows against silver's live keys (a soft-deleted row is not
  live). A key-only extraction, as in AWS, can say no more.
- ``keys and values``: also the values of every source column silver holds, for the keys both
  sides have (locally, with ``--values``).
- ``rows``: a table without primary keys (append-only): whole rows, as a multiset (a row the
  source holds twice must be in silver twice).

Keys and rows are JSON objects ``{column: value}``; a value JSON has no type for (a decimal, a time,
bytes) is written as text (:func:`json_scalar`). Standard library only: Glue imports it too.
"""

from __future__ import annotations

import base64
import datetime as dt
import decimal
import json
import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from icetide_contracts.json_fields import (
    ContractViolation,
    Invalid,
    json_key,
    nested,
    one_of,
    optional,
    read_object,
    text,
    text_list,
    whole_number,
    write_object,
)

COMPARED_KEYS = "keys"
COMPARED_KEYS_AND_VALUES = "keys and values"
COMPARED_ROWS = "rows"
COMPARISONS = (COMPARED_KEYS, COMPARED_KEYS_AND_VALUES, COMPARED_ROWS)
# How many keys (or rows) of each difference a report lists; the counts are always complete.
DEFAULT_SHOWN = 20

JsonScalar = str | int | float | bool | None
KeyValues = dict[str, JsonScalar]


def json_scalar(value: Any) -> JsonScalar:
    """A key or row value as JSON can hold it: numbers, strings, booleans and null as they are;
    decimals as their exact text, times as ISO-8601 (aware ones in UTC), bytes as base64, anything
    else as its ``str``."""
    if value is None or isinstance(value, bool | int | str):
        return value
    if isinstance(value, float):
        return value if math.isfinite(value) else str(value)
    if isinstance(value, decimal.Decimal):
        return str(value)
    if isinstance(value, dt.datetime):
        return (value.astimezone(dt.UTC) if value.tzinfo else value).isoformat()
    if isinstance(value, dt.date | dt.time):
        return value.isoformat()
    if isinstance(value, bytes | bytearray | memoryview):
        return base64.b64encode(bytes(value)).decode("ascii")
    return str(value)


def json_values(columns: Mapping[str, Any]) -> KeyValues:
    """``{column: value}`` with every value made JSON-safe by :func:`json_scalar`."""
    return {name: json_scalar(value) for name, value in columns.items()}


def _key_values_list(value: object) -> list[KeyValues]:
    """A JSON array of objects whose values are JSON scalars."""
    if not isinstance(value, list):
        raise Invalid("Input should be a valid list")
    for position, entry in enumerate(value):
        if not isinstance(entry, dict) or not all(isinstance(name, str) for name in entry):
            raise Invalid("Input should be a JSON object of column values", at=str(position))
        for name, scalar in entry.items():
            if scalar is not None and not isinstance(scalar, str | int | float | bool):
                raise Invalid(f"{name}: must be a string, a number, a boolean or null", at=str(position))
    return [dict(entry) for entry in value]


@dataclass(frozen=True)
class Difference:
    """One kind of difference: how many keys (or rows) have it, and the first of them (sorted)."""

    count: int = field(metadata=json_key("count", whole_number(minimum=0)))
    first: list[KeyValues] = field(default_factory=list, metadata=json_key("first", _key_values_list))


@dataclass(frozen=True, kw_only=True)
class VerifyReport:
    """Silver against the source, for one table at one moment; nothing was changed to make it.

    ``source_rows`` counts the rows the table's filter selects at the source (``source_filter``
    says which, with the configured start, not the watermark); ``silver_rows`` the live rows of
    silver. ``missing``: keys (or rows) the source has and silver lacks; ``extra``: the reverse;
    ``differing``: keys whose values differ (None unless values were compared);
    ``columns_missing_from_silver``: source columns silver has no column for (listed when values or
    whole rows are compared: their values cannot match).
    """

    # ``database.table``, as the Glue job and the catalog name it.
    silver_table: str = field(metadata=json_key("silverTable", text(min_length=1)))
    # The verify run in AWS (the execution name); None for a local verify.
    run_id: str | None = field(default=None, metadata=json_key("runId", optional(text(min_length=1))))
    compared: str = field(metadata=json_key("compared", one_of(*COMPARISONS)))
    key_columns: list[str] = field(default_factory=list, metadata=json_key("keyColumns", text_list))
    source_filter: str | None = field(default=None, metadata=json_key("sourceFilter", optional(text())))
    source_rows: int = field(metadata=json_key("sourceRows", whole_number(minimum=0)))
    silver_rows: int = field(metadata=json_key("silverRows", whole_number(minimum=0)))
    missing: Difference = field(
        metadata=json_key("missingFromSilver", nested(Difference, "missingFromSilver"))
    )
    extra: Difference = field(metadata=json_key("extraInSilver", nested(Difference, "extraInSilver")))
    differing: Difference | None = field(
        default=None, metadata=json_key("valuesDiffer", optional(nested(Difference, "valuesDiffer")))
    )
    duplicate_keys_in_silver: int = field(
        default=0, metadata=json_key("duplicateKeysInSilver", whole_number(minimum=0))
    )
    columns_missing_from_silver: list[str] = field(
        default_factory=list, metadata=json_key("columnsMissingFromSilver", text_list)
    )

    def __post_init__(self) -> None:
        if (self.compared == COMPARED_ROWS) == bool(self.key_columns):
            raise ContractViolation(
                "verify report is invalid: keyColumns: must be empty exactly when whole rows are compared"
            )
        if (self.differing is not None) != (self.compared == COMPARED_KEYS_AND_VALUES):
            raise ContractViolation(
                "verify report is invalid: valuesDiffer: must be given exactly when values are compared"
            )

    @property
    def matches(self) -> bool:
        """True when silver holds exactly the source's keys (rows), and values where compared."""
        return (
            self.missing.count == 0
            and self.extra.count == 0
            and (self.differing is None or self.differing.count == 0)
            and self.duplicate_keys_in_silver == 0
            and not self.columns_missing_from_silver
        )

    def to_json(self) -> dict[str, Any]:
        """The report as the contract spells it (``matches`` included, for readers of the JSON)."""
        return {**write_object(self), "matches": self.matches}

    @classmethod
    def from_json(cls, data: object) -> VerifyReport:
        """The report from its JSON object; ContractViolation names every attribute that breaks it."""
        return read_object(cls, data, "verify report")

    @classmethod
    def from_text(cls, content: str | bytes) -> VerifyReport:
        """The report from the text of its file."""
        try:
            data = json.loads(content)
        except (json.JSONDecodeError, UnicodeDecodeError) as error:
            raise ContractViolation(f"verify report is not valid JSON: {error}") from None
        return cls.from_json(data)
