"""Silver against its source, row by row: the one comparison `icetide verify` (and a check of silver
by hand) uses, with one normalisation of values.

Values are compared as Python values after :func:`comparable`: pyiceberg hands back Iceberg
``timestamptz`` values with an explicit UTC zone, while a source's ``timestamp`` columns are naive
(UTC by icetide's contract), so aware times become naive UTC; everything else compares as it is
(``Decimal("1.50") == Decimal("1.5")``). Keys are compared the same way.

A keyed table is compared key by key (:func:`compare_by_key`); a table without keys as a multiset of
whole rows (:func:`compare_as_rows`): a row the source holds twice must be in silver twice.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

Row = tuple[Any, ...]


def comparable(value: Any) -> Any:
    """``value`` in the form both sides share: an aware time as naive UTC, anything else as it is."""
    if isinstance(value, datetime) and value.tzinfo is not None:
        return value.astimezone(UTC).replace(tzinfo=None)
    return value


def comparable_row(row: Mapping[str, Any], columns: Sequence[str]) -> Row:
    """``columns`` of ``row``, in that order, each made :func:`comparable`."""
    return tuple(comparable(row[column]) for column in columns)


def in_order(rows: Iterable[Row]) -> list[Row]:
    """Keys or rows sorted for display: by value where the values compare, else by their text."""
    listed = list(rows)
    try:
        return sorted(listed)
    except TypeError:  # a None or mixed types in some position
        return sorted(listed, key=lambda row: tuple((value is None, str(value)) for value in row))


@dataclass(frozen=True)
class KeyedComparison:
    """A keyed table's differences: keys only at the source, keys only in silver, keys whose values
    differ (only when values were compared), all sorted; and how many keys silver holds twice."""

    missing: list[Row]
    extra: list[Row]
    differing: list[Row]
    duplicate_keys: int

    @property
    def matches(self) -> bool:
        return not (self.missing or self.extra or self.differing or self.duplicate_keys)


def compare_by_key(
    source_rows: Iterable[Mapping[str, Any]],
    silver_rows: Iterable[Mapping[str, Any]],
    keys: Sequence[str],
    value_columns: Sequence[str] = (),
) -> KeyedComparison:
    """Compare the rows of both sides by ``keys``; with ``value_columns``, also their values.

    Each side's rows need ``keys`` and ``value_columns`` (spelt alike on both sides).
    """
    if not keys:
        raise ValueError("a comparison by key needs at least one key column")
    expected = {comparable_row(row, keys): comparable_row(row, value_columns) for row in source_rows}
    actual: dict[Row, Row] = {}
    duplicates: set[Row] = set()
    for row in silver_rows:
        key = comparable_row(row, keys)
        if key in actual:
            duplicates.add(key)
        actual[key] = comparable_row(row, value_columns)
    differing = [key for key in expected.keys() & actual.keys() if expected[key] != actual[key]]
    return KeyedComparison(
        missing=in_order(expected.keys() - actual.keys()),
        extra=in_order(actual.keys() - expected.keys()),
        differing=in_order(differing),
        duplicate_keys=len(duplicates),
    )


@dataclass(frozen=True)
class RowComparison:
    """A key-less table's differences: rows the source has more often than silver (once per missing
    copy), and rows silver has more often than the source, each sorted."""

    missing: list[Row]
    extra: list[Row]

    @property
    def matches(self) -> bool:
        return not (self.missing or self.extra)


def compare_as_rows(
    source_rows: Iterable[Mapping[str, Any]],
    silver_rows: Iterable[Mapping[str, Any]],
    columns: Sequence[str],
) -> RowComparison:
    """Compare both sides as multisets of their ``columns``."""
    expected = Counter(comparable_row(row, columns) for row in source_rows)
    actual = Counter(comparable_row(row, columns) for row in silver_rows)
    return RowComparison(
        missing=in_order((expected - actual).elements()), extra=in_order((actual - expected).elements())
    )


def read_silver(location: Path, columns: Sequence[str]) -> list[dict[str, Any]]:
    """The rows of the Iceberg table at ``location`` (a Hadoop-catalog table folder), ``columns``
    only, read with pyiceberg straight from the table's metadata, not with icetide's code."""
    from pyiceberg.table import StaticTable  # loaded only by the commands that read silver

    table = StaticTable.from_metadata(str(location))
    rows: list[dict[str, Any]] = table.scan(selected_fields=tuple(columns)).to_arrow().to_pylist()
    return rows


def silver_columns(location: Path) -> list[str]:
    """The column names of the Iceberg table at ``location``, in schema order."""
    from pyiceberg.table import StaticTable

    return [field.name for field in StaticTable.from_metadata(str(location)).schema().fields]
