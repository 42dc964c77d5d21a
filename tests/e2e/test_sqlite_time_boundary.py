"""`icetide local run` on SQLite loads the row stamped exactly at the watermark, whatever text form the
source stores its times in (issue 9, part 3).

A `gte` run starts AT the stored watermark (``2026-11-21 12:00:00``), so a row committed late with
that very time must be read by the next run. Each table stores its times in one form users write:
without fractions, with ``T``, with a UTC offset. Before the DMS stand-in compared times as times,
``'2026-11-21 12:00:00'`` and ``'2026-11-21 07:00:00-05:00'`` sorted below the bound
``'2026-11-21 12:00:00.000000'`` and the late row was never loaded.
"""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
import sqlalchemy as sa

from e2e.helpers import run_cycle, silver_table

pytestmark = pytest.mark.spark

# table -> its times as stored text: 10:00 UTC, 12:00 UTC (the first run's watermark)
STORED_FORMS = {
    "no_fraction": ("2026-11-21 10:00:00", "2026-11-21 12:00:00"),
    "iso_t": ("2026-11-21T10:00:00", "2026-11-21T12:00:00"),
    "utc_offset": ("2026-11-21 05:00:00-05:00", "2026-11-21 07:00:00-05:00"),
}
TEN, NOON = datetime(2026, 11, 21, 10, 0), datetime(2026, 11, 21, 12, 0)


def _naive_utc(value: datetime) -> datetime:
    return value.astimezone(UTC).replace(tzinfo=None) if value.tzinfo else value


def _as_text(table: str) -> sa.TableClause:
    """The table as its writer sees it: untyped columns, so each time is stored as exactly the text given."""
    return sa.table(table, sa.column("id"), sa.column("updated_at"))


def _silver_rows(workspace, table: str) -> tuple[tuple[int, datetime], ...]:
    rows = silver_table(workspace, table).scan(selected_fields=("id", "updated_at")).to_arrow().to_pylist()
    return tuple(sorted((row["id"], _naive_utc(row["updated_at"])) for row in rows))


def test_a_late_row_stamped_at_the_watermark_is_loaded_in_every_stored_form(tmp_path, write_tables, icetide):
    database = tmp_path / "source.db"
    engine = sa.create_engine(f"sqlite:///{database}")
    metadata = sa.MetaData()
    for table in STORED_FORMS:
        sa.Table(
            table,
            metadata,
            sa.Column("id", sa.Integer, primary_key=True),
            sa.Column("updated_at", sa.DateTime),
        )
    metadata.create_all(engine)
    with engine.begin() as connection:
        for table, (ten, noon) in STORED_FORMS.items():
            connection.execute(
                _as_text(table).insert(), [{"id": 1, "updated_at": ten}, {"id": 2, "updated_at": noon}]
            )
    items = [
        {
            "targetTableName": table,
            "sourceSchema": "main",
            "sourceTable": table,
            "filtercolumn": "updated_at",
            "filteroperator": "gte",
            "startvalue": "2026-11-21 00:00:00",
            "primaryKeys": "id",
        }
        for table in STORED_FORMS
    ]
    workspace = tmp_path / "ws"
    tables_file = write_tables(items)

    def cycle() -> dict[str, dict]:
        return run_cycle(icetide, workspace, f"sqlite:///{database}", tables_file)

    first = cycle()
    assert {table: first[table]["watermark"] for table in STORED_FORMS} == dict.fromkeys(
        STORED_FORMS, "2026-11-21 12:00:00"
    )
    # Committed late, with the same time as the watermark: only a run starting AT it can see the row.
    with engine.begin() as connection:
        for table, (_, noon) in STORED_FORMS.items():
            connection.execute(_as_text(table).insert(), [{"id": 3, "updated_at": noon}])
    engine.dispose()

    second = cycle()

    # Every table at once, so a failure shows which stored forms lost the row.
    assert {table: _silver_rows(workspace, table) for table in STORED_FORMS} == dict.fromkeys(
        STORED_FORMS, ((1, TEN), (2, NOON), (3, NOON))
    )
    assert {table: (second[table]["watermark"], second[table]["rowsInserted"]) for table in STORED_FORMS} == (
        dict.fromkeys(STORED_FORMS, ("2026-11-21 12:00:00", 1))
    )
