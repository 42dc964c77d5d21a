"""All nine DMS filter operators, end to end through `icetide local run`, in one cycle.

Nine small SQLite tables hold the same rows (v = 1..5 and one NULL); each table's control item
uses one operator. What lands in silver must be exactly the rows the operator selects, as the DMS
user guide defines them ("Using source filters"; between/notbetween inclusive, ste an alias of lte).
"""

from __future__ import annotations

import pytest
import sqlalchemy as sa

from e2e.helpers import silver_table

pytestmark = pytest.mark.spark

ROWS = [{"id": n, "v": n, "label": f"row {n}"} for n in range(1, 6)] + [{"id": 6, "v": None, "label": "null"}]
# operator -> (its values in the control item, the ids of the rows it selects)
OPERATORS = {
    "lte": ({"startvalue": 3}, {1, 2, 3}),
    "ste": ({"startvalue": 3}, {1, 2, 3}),
    "gte": ({"startvalue": 3}, {3, 4, 5}),
    "eq": ({"startvalue": 3}, {3}),
    "noteq": ({"startvalue": 3}, {1, 2, 4, 5}),  # SQL: NULL <> 3 is not true
    "between": ({"startvalue": 2, "endvalue": 4}, {2, 3, 4}),
    "notbetween": ({"startvalue": 2, "endvalue": 4}, {1, 5}),
    "null": ({}, {6}),
    "notnull": ({}, {1, 2, 3, 4, 5}),
}


def test_every_operator_selects_exactly_its_rows(tmp_path, write_tables, icetide):
    engine = sa.create_engine(f"sqlite:///{tmp_path / 'ops.db'}")
    metadata = sa.MetaData()
    for operator in OPERATORS:
        table = sa.Table(
            f"t_{operator}",
            metadata,
            sa.Column("id", sa.Integer, primary_key=True),
            sa.Column("v", sa.Integer, nullable=True),
            sa.Column("label", sa.String(10)),
        )
        metadata.create_all(engine, tables=[table])
        with engine.begin() as connection:
            connection.execute(
                table.insert(),
                ROWS,
            )
    engine.dispose()
    items = [
        {
            "targetTableName": f"ops_{operator}",
            "sourceSchema": "main",
            "sourceTable": f"t_{operator}",
            "filtercolumn": "v",
            "filteroperator": operator,
            "primaryKeys": "id",
            **values,
        }
        for operator, (values, _) in OPERATORS.items()
    ]

    result = icetide(
        "local",
        "run",
        "--workspace",
        tmp_path / "ws",
        "--source",
        f"sqlite:///{tmp_path / 'ops.db'}",
        "--tables",
        write_tables(items),
    )

    assert result.exit_code == 0, result.text
    for operator, (_, expected_ids) in OPERATORS.items():
        rows = silver_table(tmp_path / "ws", f"ops_{operator}").scan().to_arrow().to_pylist()
        assert [row for row in ROWS if row["id"] in expected_ids] == sorted(
            ({name: row[name] for name in ("id", "v", "label")} for row in rows), key=lambda row: row["id"]
        ), operator
