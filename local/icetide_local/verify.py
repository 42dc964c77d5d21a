"""`icetide verify TABLE --workspace DIR --source URL`: a workspace's silver table against its source.

The table's control item, as the workspace saved it, says what to compare: the source table, its
primary keys, the filter (with its configured start value, never the watermark: silver should hold
every row the filter selects) and the delete mode (a soft-deleted row is in silver but not live).
The source is read through SQLAlchemy by the DMS stand-in's reader, so its values have the types
DMS writes (a decimal keeps its scale, ``timestamptz`` is UTC); silver is read with pyiceberg
straight from the warehouse. The comparison itself is :mod:`icetide_local.silver_compare`'s.

Nothing is written: not silver, not the workspace's state. So a verify may run while no cycle does
(it takes no workspace lock) and reports what silver holds against what the source holds now: rows
changed at the source since the last cycle show up as differences until the next cycle loads them.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from icetide.control.codec import from_typed_json
from icetide.control.model import ControlItem, LoadMode
from icetide.dms.table_mapping import build_table_mapping
from icetide.errors import InvalidControlItem
from icetide.run.plan import silver_table_name
from icetide_contracts.verify import (
    COMPARED_KEYS,
    COMPARED_KEYS_AND_VALUES,
    COMPARED_ROWS,
    DEFAULT_SHOWN,
    Difference,
    VerifyReport,
    json_values,
)
from icetide_local.silver_compare import Row, compare_as_rows, compare_by_key, read_silver, silver_columns
from icetide_local.standins.dms.replicator import TableSelection, parse_table_mapping
from icetide_local.standins.dms.source import (
    SourceTableError,
    SourceUnreachable,
    open_source,
    reflect_table,
)
from icetide_local.stepfunctions import StackNames
from icetide_local.workspace import Workspace

DELETED_AT = "_icetide_deleted_at"  # silver's soft-delete column (icetide_glue.columns.DELETED_AT)
_BATCH_ROWS = 10_000


class VerifyError(Exception):
    """The table cannot be verified: it has no (valid) control item, or its source cannot be read."""


def verify_workspace_table(
    workspace: Workspace,
    target_table_name: str,
    source_url: str,
    *,
    values: bool = False,
    shown: int = DEFAULT_SHOWN,
) -> VerifyReport:
    """Compare the silver table of ``target_table_name`` in ``workspace`` with its source table.

    ``values``: also compare the values of the keys both sides hold (a table without keys is
    always compared by whole rows). At most ``shown`` keys are listed per difference.
    """
    item = workspace_control_item(workspace, target_table_name)
    selection = configured_selection(item)
    source_columns, source_rows = _read_source(source_url, item, selection)
    database, table = silver_table_name(StackNames().glue_database, item.target_table_name).split(".")
    location = workspace.warehouse / database / table
    in_silver = _silver_names(location)
    common = [column for column in source_columns if column.lower() in in_silver]
    not_in_silver = [column for column in source_columns if column.lower() not in in_silver]
    silver_rows = _read_live_silver(location, in_silver, common)
    report: dict[str, Any] = {
        "silver_table": f"{database}.{table}",
        "source_filter": describe_filter(item),
        "source_rows": len(source_rows),
        "silver_rows": len(silver_rows),
    }
    if item.load_mode is LoadMode.APPEND:
        rows = compare_as_rows(source_rows, silver_rows, common)
        return VerifyReport(
            **report,
            compared=COMPARED_ROWS,
            missing=_difference(common, rows.missing, shown),
            extra=_difference(common, rows.extra, shown),
            columns_missing_from_silver=not_in_silver,
        )
    keys = [_source_column(source_columns, key, item) for key in item.primary_keys]
    missing_keys = [key for key in keys if key.lower() not in in_silver]
    if in_silver and missing_keys:
        raise VerifyError(
            f"{item.target_table_name}: silver table {location} has no key column "
            f"{', '.join(missing_keys)}: it was not loaded with these primaryKeys"
        )
    compared_values = [column for column in common if column not in keys] if values else []
    keyed = compare_by_key(source_rows, silver_rows, keys, compared_values)
    return VerifyReport(
        **report,
        compared=COMPARED_KEYS_AND_VALUES if values else COMPARED_KEYS,
        key_columns=keys,
        missing=_difference(keys, keyed.missing, shown),
        extra=_difference(keys, keyed.extra, shown),
        differing=_difference(keys, keyed.differing, shown) if values else None,
        duplicate_keys_in_silver=keyed.duplicate_keys,
        columns_missing_from_silver=not_in_silver if values else [],
    )


def workspace_control_item(workspace: Workspace, target_table_name: str) -> ControlItem:
    """The control item the workspace saved for ``target_table_name``, validated."""
    saved = [from_typed_json(typed) for typed in workspace.load_control_items()]
    found = [item for item in saved if item.get("targetTableName") == target_table_name]
    if not found:
        known = ", ".join(sorted(str(item.get("targetTableName")) for item in saved)) or "none"
        raise VerifyError(
            f"workspace {workspace.root} has no table {target_table_name!r} (its tables: {known})"
        )
    try:
        return ControlItem.parse(found[0])
    except InvalidControlItem as invalid:
        raise VerifyError(f"{target_table_name}: the saved control item is invalid: {invalid}") from None


def configured_selection(item: ControlItem) -> TableSelection:
    """The source rows the table loads: its DMS selection with the filter as configured (the
    ``startvalue``, not the watermark), read the way the DMS stand-in reads a table mapping."""
    [selection] = parse_table_mapping(build_table_mapping(item))
    return selection


def describe_filter(item: ControlItem) -> str | None:
    """The item's filter in words (``updated_at gte '2020-01-01'``); None when it has none."""
    if item.filter_operator is None:
        return None
    values = [f"'{value}'" for value in (item.start_value, item.end_value) if value is not None]
    return " ".join([item.filter_column or "", item.filter_operator.value, " and ".join(values)]).strip()


def _read_source(
    source_url: str, item: ControlItem, selection: TableSelection
) -> tuple[list[str], list[dict[str, Any]]]:
    """The source table's column names and the rows its filter selects, typed as DMS writes them."""
    try:
        engine, created = open_source(source_url)
    except SourceUnreachable as unreachable:
        raise VerifyError(str(unreachable)) from None
    try:
        with engine.connect() as connection:
            table = reflect_table(connection, item.source_schema, item.source_table)
            batches = table.batches(connection, selection.filters, _BATCH_ROWS)
            rows = [row for batch in batches for row in batch.to_pylist()]
    except SourceTableError as error:
        raise VerifyError(f"{item.target_table_name}: {error}") from None
    finally:
        if created:
            engine.dispose()
    return [column.name for column in table.table.columns], rows


def _source_column(columns: Sequence[str], name: str, item: ControlItem) -> str:
    """The source's spelling of a key column the item names (matched without regard to case)."""
    for column in columns:
        if column.lower() == name.lower():
            return column
    raise VerifyError(
        f"{item.target_table_name}: primary key column {name!r} is not a column of "
        f"{item.source_schema}.{item.source_table}"
    )


def _silver_names(location: Path) -> dict[str, str]:
    """Silver's column names by their lower-case form; none when the table was never loaded."""
    if not (location / "metadata").is_dir():
        return {}
    return {name.lower(): name for name in silver_columns(location)}


def _read_live_silver(
    location: Path, in_silver: dict[str, str], columns: Sequence[str]
) -> list[dict[str, Any]]:
    """Silver's live rows, with ``columns`` spelt as the source's: a soft-deleted row
    (``_icetide_deleted_at`` set) is not live, whatever the table's delete mode is now."""
    if not in_silver:
        return []
    wanted = [in_silver[column.lower()] for column in columns]
    deleted_at = in_silver.get(DELETED_AT)
    rows = read_silver(location, [*wanted, *([deleted_at] if deleted_at else [])])
    return [
        {column: row[name] for column, name in zip(columns, wanted, strict=True)}
        for row in rows
        if deleted_at is None or row[deleted_at] is None
    ]


def _difference(columns: Sequence[str], rows: list[Row], shown: int) -> Difference:
    """All of ``rows`` counted, the first ``shown`` listed as ``{column: value}``."""
    listed = [json_values(dict(zip(columns, row, strict=True))) for row in rows[:shown]]
    return Difference(count=len(rows), first=listed)
