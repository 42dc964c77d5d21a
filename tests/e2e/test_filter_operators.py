"""Every DMS filter operator end to end through `icetide local run`, as tables of one workspace: a
key-less (append-only) table per operator, in two cycles of the unchanged source.

The first cycle must land in each table exactly the rows its operator selects, as the DMS user guide
defines them ("Using source filters"; between/notbetween inclusive, ste an alias of lte, a NULL
matching neither a comparison nor its negation). The second re-reads rows: every operator but a
strict "greater than" does (lte, eq, notbetween... read the same rows each run; gte the rows at its
watermark), so without a content check a key-less table would append them again; after it each
source row is still in silver exactly as often as the source holds it. Which rows a run reads is
the table mapping's filter, whatever the table's keys (icetide.dms.table_mapping); a keyed table
merges a re-read row onto itself by its key (the watermark-boundary tests re-read keyed rows).
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
    "noteq": ({"startvalue": 3}, {1, 2, 4, 5}),  # SQL: NULL <> 3 is not true
    "between": ({"startvalue": 2, "endvalue": 4}, {2, 3, 4}),
    "notbetween": ({"startvalue": 2, "endvalue": 4}, {1, 5}),
    "null": ({}, {None}),
    "notnull": ({}, {1, 2, 3, 4, 5}),
    "none": ({}, {1, 2, 3, 4, 5, None}),  # no filter at all: every run reads the whole table
}


def _create_sources(engine: sa.Engine) -> None:
    metadata = sa.MetaData()
    for operator in OPERATORS:
        table = sa.Table(
            f"t_{operator}", metadata, sa.Column("v", sa.Integer), sa.Column("label", sa.String(10))
        )
        metadata.create_all(engine, tables=[table])
        with engine.begin() as connection:
            connection.execute(table.insert(), [{"v": v, "label": label} for v, label in ROWS])


def _filter(operator: str, values: dict[str, int]) -> dict[str, object]:
    return {"filtercolumn": "v", "filteroperator": operator, **values} if operator != "none" else {}


def test_every_operator_selects_exactly_its_rows_and_a_second_cycle_appends_none_again(
    tmp_path, write_tables, icetide
):
    database = tmp_path / "events.db"
    engine = sa.create_engine(f"sqlite:///{database}")
    _create_sources(engine)
    engine.dispose()
    keyless = [
        {"targetTableName": f"keyless_{operator}", "sourceSchema": "main", "sourceTable": f"t_{operator}"}
        | _filter(operator, values)
        for operator, (values, _) in OPERATORS.items()
    ]
    tables_file = write_tables(keyless)

    for cycle in (1, 2):
        result = icetide(
            "local", "run", "--workspace", tmp_path / "ws", "--source", f"sqlite:///{database}",
            "--tables", tables_file,
        )  # fmt: skip

        assert result.exit_code == 0, result.text
        for operator, (_, selected) in OPERATORS.items():
            rows = silver_table(tmp_path / "ws", f"keyless_{operator}").scan().to_arrow().to_pylist()
            assert Counter((row["v"], row["label"]) for row in rows) == Counter(
                row for row in ROWS if row[0] in selected
            ), f"key-less {operator}, cycle {cycle}"
