"""Key-less (append-only) tables through `icetide local run`: the rows a gte/between run re-reads at
the watermark are not appended again, so two cycles hold every source row once."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import sqlalchemy as sa

from e2e.helpers import run_cycle, silver_table

pytestmark = pytest.mark.spark

# The AWS blog post's item as written there (between 0 and 1000 on mlb_id, no keys, so it loads
# append-only), its schema pointed at the SQLite source.
BLOG_ITEM = Path(__file__).resolve().parents[1] / "fixtures" / "control_items" / "blog_mlb_data.json"
MLB_ITEM = {**json.loads(BLOG_ITEM.read_text()), "sourceSchema": "main"}
EVENTS_ITEM = {
    "sourceSchema": "main",
    "sourceTable": "events",
    "targetTableName": "events",
    "filtercolumn": "id",
    "filteroperator": "gte",
    "startvalue": "0",
}


def _silver_rows(workspace, table: str, key: str) -> list[tuple]:
    """Every silver row as (key, name), duplicates kept: a row appended twice shows twice."""
    rows = silver_table(workspace, table).scan(selected_fields=(key, "name")).to_arrow().to_pylist()
    return sorted((row[key], row["name"]) for row in rows)


def test_two_cycles_append_each_source_row_once(tmp_path, write_tables, icetide):
    database = tmp_path / "source.db"
    engine = sa.create_engine(f"sqlite:///{database}")
    metadata = sa.MetaData()
    mlb = sa.Table("mlb_data", metadata, sa.Column("mlb_id", sa.Integer), sa.Column("name", sa.String(20)))
    events = sa.Table("events", metadata, sa.Column("id", sa.Integer), sa.Column("name", sa.String(20)))
    metadata.create_all(engine)
    with engine.begin() as connection:
        connection.execute(
            mlb.insert(),
            [{"mlb_id": 1, "name": "one"}, {"mlb_id": 500, "name": "five hundred"},
             {"mlb_id": 1000, "name": "thousand"}, {"mlb_id": 1001, "name": "out of range"}],
        )  # fmt: skip
        connection.execute(events.insert(), [{"id": 1, "name": "login"}, {"id": 2, "name": "logout"}])
    workspace = tmp_path / "ws"
    tables_file = write_tables([MLB_ITEM, EVENTS_ITEM])

    def cycle() -> dict[str, dict]:
        return run_cycle(icetide, workspace, f"sqlite:///{database}", tables_file)

    cycle()
    with engine.begin() as connection:
        connection.execute(events.insert(), [{"id": 3, "name": "login"}])
    engine.dispose()

    second = cycle()

    # mlb_data: `between 1000..1000` re-read row 1000 only; events: `gte 2` re-read 2 and found 3.
    assert _silver_rows(workspace, "mlb_data", "mlb_id") == [
        (1, "one"),
        (500, "five hundred"),
        (1000, "thousand"),
    ]
    assert _silver_rows(workspace, "events", "id") == [(1, "login"), (2, "logout"), (3, "login")]
    assert {table: (second[table]["watermark"], second[table]["rowsInserted"]) for table in second} == {
        "mlb_data": (1000, 0),
        "events": (3, 1),
    }
