"""`icetide run --workspace`: a real local cycle (DMS stand-in, state machine, Spark + Iceberg) of the
named table only, recorded for `icetide runs`; then a reset makes the next run read from the new
watermark, which the run's own statistics show."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import sqlalchemy as sa

pytestmark = pytest.mark.spark


def test_run_then_reset_then_run_again_reads_from_the_reset_watermark(tmp_path: Path, icetide) -> None:
    database = tmp_path / "shop.db"
    engine = sa.create_engine(f"sqlite:///{database}")
    with engine.begin() as connection:
        connection.execute(
            sa.text("CREATE TABLE orders (id INTEGER PRIMARY KEY, change_no INTEGER, amount TEXT)")
        )
        connection.execute(sa.text("CREATE TABLE customers (id INTEGER PRIMARY KEY, name TEXT)"))
        connection.execute(
            sa.text("INSERT INTO orders VALUES (1, 1, '10.00'), (2, 2, '20.00'), (3, 3, '30.00')")
        )
    engine.dispose()
    item = {"sourceSchema": "main", "primaryKeys": "id"}
    tables = tmp_path / "tables.json"
    tables.write_text(
        json.dumps(
            [
                {**item, "targetTableName": "orders", "sourceTable": "orders", "filtercolumn": "change_no",
                 "filteroperator": "gte", "startvalue": 0},
                {**item, "targetTableName": "customers", "sourceTable": "customers"},
            ]
        )
    )  # fmt: skip
    workspace = tmp_path / "ws"  # created by the first run
    run = ("run", "orders", "--workspace", workspace, "--source", f"sqlite:///{database}", "--tables", tables)

    first = icetide(*run, "--json", "--quiet")

    assert first.exit_code == 0, first.err
    (orders_run,) = first.json()["runs"]  # customers, not named, did not run
    assert (orders_run["targetTableName"], orders_run["status"]) == ("orders", "SUCCEEDED")
    assert orders_run["stats"]["rowsRead"] == 3
    status = icetide("status", "--workspace", workspace, "--json").json()
    assert [(record["targetTableName"], record["state"], record["watermark"]) for record in status] == [
        ("orders", "ok", 3)
    ]
    runs = icetide("runs", "orders", "--workspace", workspace, "--json").json()
    assert [(record["runId"], record["status"]) for record in runs] == [(orders_run["runId"], "SUCCEEDED")]

    assert icetide("reset", "orders", "--to", "1", "--workspace", workspace).exit_code == 0
    second = icetide(*run, "--json", "--quiet")

    assert second.exit_code == 0, second.err
    (again,) = second.json()["runs"]
    # From change_no 1 on: all three rows again (from the watermark 3 it would have read one).
    assert again["stats"]["rowsRead"] == 3
    assert again["stats"]["rowsInserted"] == 0
    assert icetide("status", "--workspace", workspace, "--json").json()[0]["watermark"] == 3
    history = icetide("runs", "orders", "--workspace", workspace, "--json").json()
    assert [record["runId"] for record in history] == [again["runId"], orders_run["runId"]]
