"""`icetide local demo` (what `make demo` runs): three cycles on a sample shop, then a check.

1. A workspace and a SQLite sample source (customers with a timestamp watermark, orders with an
   integer one, payments captured as changes; decimals and timestamps).
2. Cycle 1: every table's first run, a full load from the item's `startvalue` (payments: a full
   load that goes on capturing changes).
3. Inserts, updates and deletes at the source, some exactly at the watermark boundary.
4. Cycle 2: the delta; `gte` re-reads the boundary rows, the merge updates them in place; payments
   apply their changes, deletes included.
5. More payment changes (a deleted key inserted again, a key updated then deleted), and cycle 3.
6. The check: each silver table, read with pyiceberg straight from its Iceberg metadata (not with
   icetide's code), must hold exactly the source's rows.
7. Maintenance of every table through the maintenance state machine (files before and after),
   then the same check again: maintenance must not change a row.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, TextIO

import sqlalchemy as sa
from pyiceberg.table import StaticTable

from icetide_local.cycle_report import CycleReport, render_cycle
from icetide_local.progress import RunProgress
from icetide_local.sample_source import (
    CUSTOMERS,
    ORDERS,
    PAYMENTS,
    SampleSource,
    apply_second_cycle_changes,
    apply_third_cycle_changes,
    create_sample_source,
    sample_control_items,
)
from icetide_local.stepfunctions import StackNames
from icetide_local.workspace import Workspace, WorkspaceError
from icetide_local.workspace_cycle import run_workspace_cycle
from icetide_local.workspace_maintenance import maintain_workspace, render_maintenance

SILVER_DATABASE = StackNames().glue_database
# The sample tables by their control items' targetTableName.
SAMPLE_TABLES = {"main_customers": CUSTOMERS, "main_orders": ORDERS, "main_payments": PAYMENTS}
_SHOWN_DIFFERENCES = 3


@dataclass(frozen=True)
class SilverCheck:
    """Whether one silver table holds exactly its source table's rows."""

    table: str
    rows: int
    differences: tuple[str, ...]

    @property
    def matches(self) -> bool:
        return not self.differences

    def line(self) -> str:
        if self.matches:
            return f"{self.table}: silver matches source ({self.rows} rows)"
        return f"{self.table}: silver DIFFERS from source: " + "; ".join(self.differences)


def silver_table_location(warehouse: Path, target_table_name: str) -> Path:
    """Where the Hadoop catalog keeps a silver table (`<warehouse>/<database>/<table>`)."""
    return warehouse / SILVER_DATABASE / target_table_name


def check_silver(
    warehouse: Path, target_table_name: str, source: SampleSource, table: sa.Table
) -> SilverCheck:
    """Compare a silver table, read with pyiceberg, with the source table's rows, key by key."""
    location = silver_table_location(warehouse, target_table_name)
    if not (location / "metadata").is_dir():
        return SilverCheck(target_table_name, 0, (f"no Iceberg table at {location}",))
    columns = [column.name for column in table.columns]
    silver = StaticTable.from_metadata(str(location)).scan(selected_fields=tuple(columns)).to_arrow()
    engine = source.engine()
    try:
        with engine.connect() as connection:
            source_rows = [dict(row._mapping) for row in connection.execute(sa.select(table))]
    finally:
        engine.dispose()
    key = next(column.name for column in table.primary_key.columns)
    expected = {row[key]: _comparable(row) for row in source_rows}
    actual = {row[key]: _comparable(row) for row in silver.to_pylist()}
    differences = [f"row {k} missing" for k in sorted(expected.keys() - actual.keys())]
    differences += [f"row {k} not at the source" for k in sorted(actual.keys() - expected.keys())]
    differences += [
        f"row {k}: silver {actual[k]} != source {expected[k]}"
        for k in sorted(expected.keys() & actual.keys())
        if actual[k] != expected[k]
    ]
    if silver.num_rows != len(actual):
        differences.append(f"{silver.num_rows - len(actual)} duplicate key(s) in silver")
    return SilverCheck(target_table_name, silver.num_rows, tuple(differences[:_SHOWN_DIFFERENCES]))


def _comparable(row: Mapping[str, Any]) -> dict[str, Any]:
    # Iceberg may hand back timestamps with an explicit UTC zone; the source's are naive UTC.
    return {name: _naive_utc(value) for name, value in row.items()}


def _naive_utc(value: Any) -> Any:
    if isinstance(value, datetime) and value.tzinfo is not None:
        return value.astimezone(UTC).replace(tzinfo=None)
    return value


def _check_all(workspace: Workspace, source: SampleSource) -> list[SilverCheck]:
    return [check_silver(workspace.warehouse, name, source, table) for name, table in SAMPLE_TABLES.items()]


def run_demo(directory: str | None, *, out: TextIO, progress: RunProgress) -> bool:
    """Run the demo in a new workspace at `directory` (a temporary one when None); True if all is well."""
    workspace = Workspace.open(directory)
    if not workspace.is_new:
        raise WorkspaceError(
            f"{workspace.root} already holds icetide state; the demo needs a new or empty directory"
        )
    source = create_sample_source(workspace.root / "source.db")
    items = sample_control_items()
    tables_file = workspace.root / "tables.json"
    tables_file.write_text(json.dumps(items, indent=2) + "\n", encoding="utf-8")
    print(f"workspace {workspace.root}", file=out)
    print(f"source    {source.url} (tables {', '.join(t.name for t in SAMPLE_TABLES.values())})", file=out)
    print(f"tables    {tables_file}", file=out)

    reports: list[CycleReport] = []
    changes: dict[int, tuple[str, Callable[[SampleSource], None]]] = {
        2: (
            "changing the source: inserts, updates and deletes, some at the watermark boundary",
            apply_second_cycle_changes,
        ),
        3: (
            "changing payments: a deleted key comes back, another is updated then deleted",
            apply_third_cycle_changes,
        ),
    }
    cycles = (
        (1, "first cycle: full load"),
        (2, "second cycle: delta and changes"),
        (3, "third cycle: changes"),
    )
    for number, title in cycles:
        if number in changes:
            what, change = changes[number]
            progress.message(what)
            change(source)
        progress.message(title)
        report = run_workspace_cycle(workspace, source.url, items, progress=progress)
        reports.append(report)
        print(f"\n{title}", file=out)
        for line in render_cycle(report):
            print(line, file=out)

    print("\ncheck: each silver table (read with pyiceberg) against its source table", file=out)
    checks = _check_all(workspace, source)
    for check in checks:
        print(f"  {check.line()}", file=out)

    # What the daily maintenance state machine does in AWS; rows must not change.
    progress.message("maintenance: compaction, delete-file rewrite, snapshot expiry, orphan removal")
    maintained = maintain_workspace(workspace, progress=progress)
    print("\nmaintenance: files before -> after, per table", file=out)
    for line in render_maintenance(maintained):
        print(f"  {line}", file=out)
    print("\ncheck after maintenance: each silver table against its source table", file=out)
    rechecks = _check_all(workspace, source)
    for check in rechecks:
        print(f"  {check.line()}", file=out)
    checks += rechecks
    print(
        f"\nTry: icetide local status --workspace {workspace.root}\n"
        f"     icetide local maintain --workspace {workspace.root}\n"
        f"     icetide local run --workspace {workspace.root} --source {source.url} --tables {tables_file}",
        file=out,
    )
    return (
        all(report.succeeded for report in reports)
        and maintained.succeeded
        and all(check.matches for check in checks)
    )
