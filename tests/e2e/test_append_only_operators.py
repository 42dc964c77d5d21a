"""Key-less (append-only) tables under every filter operator, through `icetide local run`: three
cycles of an unchanged source leave each source row in silver exactly as often as the source holds
it. Every operator but a strict "greater than" re-reads rows (lte, eq, notbetween... read the same
rows each run), so without a content check each cycle would append them again.
"""

from __future__ import annotations

from collections import Counter

import pytest
import sqlalchemy as sa

from e2e.helpers import silver_table

pytestmark = pytest.mark.spark

# A key-less source: rows 3 and 3' are identical (the source itself holds that row twice), and one
# row has a null filter value.
ROWS = [(1, "a"), (2, "b"), (3, "c"), (3, "c"), (4, "d"), (5, "e"), (None, "null")]
# operator -> (its values in the control item, the v values it selects)
OPERATORS: dict[str, tuple[dict[str, int], set[int | None]]] = {
    "lte": ({"startvalue": 3}, {1, 2, 3}),
    "ste": ({"startvalue": 3}, {1, 2, 3}),
    "gte": ({"startvalue": 3}, {3, 4, 5}),
    "eq": ({"startvalue": 3}, {3}),
    "noteq": ({"startvalue": 3}, {1, 2, 4, 5}),
    "between": ({"startvalue": 2, "endvalue": 4}, {2, 3, 4}),
    "notbetween": ({"startvalue": 2, "endvalue": 4}, {1, 5}),
    "null": ({}, {None}),
    "notnull": ({}, {1, 2, 3, 4, 5}),
    "none": ({}, {1, 2, 3, 4, 5, None}),  # no filter at all: every run reads the whole table
}


def test_every_operator_appends_each_source_row_once_over_three_cycles(tmp_path, write_tables, icetide):
    database = tmp_path / "events.db"
    engine = sa.create_engine(f"sqlite:///{database}")
    metadata = sa.MetaData()
    for operator in OPERATORS:
        columns = (sa.Column("v", sa.Integer), sa.Column("label", sa.String(10)))
        table = sa.Table(f"t_{operator}", metadata, *columns)
        metadata.create_all(engine, tables=[table])
        with engine.begin() as connection:
            connection.execute(table.insert(), [{"v": v, "label": label} for v, label in ROWS])
    engine.dispose()
    items = [
        {
            "targetTableName": f"keyless_{operator}",
            "sourceSchema": "main",
            "sourceTable": f"t_{operator}",
            **({"filtercolumn": "v", "filteroperator": operator} if operator != "none" else {}),
            **values,
        }
        for operator, (values, _) in OPERATORS.items()
    ]
    tables_file = write_tables(items)

    for cycle in (1, 2, 3):
        result = icetide(
            "local", "run", "--workspace", tmp_path / "ws", "--source", f"sqlite:///{database}",
            "--tables", tables_file,
        )  # fmt: skip

        assert result.exit_code == 0, result.text
        for operator, (_, selected) in OPERATORS.items():
            rows = silver_table(tmp_path / "ws", f"keyless_{operator}").scan().to_arrow().to_pylist()
            assert Counter((row["v"], row["label"]) for row in rows) == Counter(
                row for row in ROWS if row[0] in selected
            ), f"{operator}, cycle {cycle}"
