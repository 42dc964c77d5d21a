"""Continuous cdc end to end (issue 13): `icetide local run` cycles of a table whose one long-lived
DMS task keeps running between cycles, on SQLite (the stand-in's triggers) and PostgreSQL (a real
logical replication slot).

Before each cycle the running task writes the CDC files of the source's changes since its position,
as DMS would have; each run merges the files after the committed file checkpoint. After every cycle
that succeeds and has consumed every file, silver, read with pyiceberg, equals the source. In
between, on SQLite: a run that fails after its job merged (its files stay for the next, merged
again with the next file), and a file DMS delivers twice. Those act on the task's files, whichever
source wrote them; on PostgreSQL the cycles check what the real slot adds: the running task's
position kept from one cycle's changes to the next. A backlog larger than one run may take
(`maxFilesPerRun`, `maxBytesPerRun`) is consumed over bounded runs in DMS order:
tests/statemachine/test_continuous_runs.py, on the real state machine.
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
import pytest
import sqlalchemy as sa

from e2e.helpers import PAYMENT_COLUMNS, payment, payments_table, run_cycle, silver_by_key, source_by_key
from icetide.control.codec import from_typed_json
from icetide.run import commit
from icetide_local.standins.dms.cdc import DEFAULT_SLOT_NAME
from local.dms_cdc import slot_start_point

pytestmark = pytest.mark.spark

TABLE = "live_payments"
COLUMNS = PAYMENT_COLUMNS


def _item(schema: str, **extra: Any) -> dict[str, Any]:
    return {
        "targetTableName": TABLE,
        "sourceSchema": schema,
        "sourceTable": "payments",
        "primaryKeys": "id",
        "captureMode": "cdc",
        "cdcTask": "continuous",
        **extra,
    }


def _assert_equal(workspace: Path, engine: sa.Engine, table: sa.Table) -> None:
    assert silver_by_key(workspace, TABLE, COLUMNS, "id") == source_by_key(engine, table, "id")


def _changes(engine: sa.Engine, table: sa.Table, step: int) -> None:
    """Inserts, an update, a delete, and a key deleted and inserted again, different each step."""
    base = 10 * step
    with engine.begin() as connection:
        connection.execute(table.insert(), [payment(base + 1), payment(base + 2, "new")])
        connection.execute(table.update().where(table.c.id == base - 9).values(note=f"updated {step}"))
        connection.execute(table.delete().where(table.c.id == base - 8))
        connection.execute(table.delete().where(table.c.id == 1))
        connection.execute(table.insert(), [payment(1, f"back {step}")])


def _status(icetide: Callable[..., Any], workspace: Path) -> dict[str, Any]:
    result = icetide("local", "status", "--workspace", workspace, "--json")
    return {entry["targetTableName"]: entry for entry in json.loads(result.out)}[TABLE]


def _stored_item(workspace: Path) -> dict[str, Any]:
    """The table's control item as the workspace saved it (run state included)."""
    typed = json.loads((workspace / "state" / "control-table.json").read_text(encoding="utf-8"))
    items = {item["targetTableName"]: item for item in map(from_typed_json, typed)}
    return items[TABLE]


def _cdc_files(workspace: Path) -> list[Path]:
    """The CDC files the running task wrote, oldest first (their names are times)."""
    files = (workspace / "continuous-bronze").rglob("*.parquet")
    return sorted((path for path in files if not path.name.startswith("LOAD")), key=lambda path: path.name)


def _counted_again(workspace: Path, changes: int) -> None:
    """The task counts the changes it reads again (a resume from an earlier position reads them as
    changes like any other): added to the stand-in's saved statistics of the table."""
    path = workspace / "state" / "dms-tasks.json"
    tasks = json.loads(path.read_text(encoding="utf-8"))
    (task,) = tasks
    (line,) = [line for line in task["tableStatistics"] if line["table"] == "payments"]
    line["inserts"] += changes
    path.write_text(json.dumps(tasks), encoding="utf-8")


def _failing_cycle(
    icetide: Callable[..., Any],
    workspace: Path,
    source: str,
    tables_file: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    def broken(*_: Any, **__: Any) -> Any:
        raise RuntimeError("injected: the commit failed")

    # After the Glue job merged the run's files into silver: the next run merges them again.
    with monkeypatch.context() as patch:
        patch.setattr(commit, "checkpoint_step", broken)
        result = icetide(
            "local", "run", "--workspace", workspace, "--source", source, "--tables", tables_file
        )
    assert result.exit_code != 0, result.text
    assert _status(icetide, workspace)["lastRunStatus"] == "FAILED"


def _cycles_of_changes(
    icetide: Callable[..., Any],
    workspace: Path,
    source: str,
    tables_file: Path,
    engine: sa.Engine,
    table: sa.Table,
    steps: int,
) -> list[dict[str, Any]]:
    """The task's start, its full load, then `steps` cycles of changes; each cycle's status entry of
    the table."""
    with engine.begin() as connection:
        connection.execute(table.insert(), [payment(number) for number in range(1, 7)])
    statuses = [run_cycle(icetide, workspace, source, tables_file)[TABLE]]  # creates and starts the task
    statuses.append(run_cycle(icetide, workspace, source, tables_file)[TABLE])  # its full load
    _assert_equal(workspace, engine, table)
    for step in range(1, steps + 1):
        _changes(engine, table, step)
        statuses.append(run_cycle(icetide, workspace, source, tables_file)[TABLE])
        _assert_equal(workspace, engine, table)
    return statuses


def _cycles_with_failure_and_redelivery(
    icetide: Callable[..., Any],
    monkeypatch: pytest.MonkeyPatch,
    workspace: Path,
    source: str,
    tables_file: Path,
    engine: sa.Engine,
    table: sa.Table,
) -> list[dict[str, Any]]:
    """A cycle of changes, a failed run, a file delivered twice; each successful cycle's status entry
    of the table."""
    statuses = _cycles_of_changes(icetide, workspace, source, tables_file, engine, table, steps=1)

    # A failed run leaves its file; the next run merges it and the next file: equal again.
    _changes(engine, table, 2)
    _failing_cycle(icetide, workspace, source, tables_file, monkeypatch)
    _changes(engine, table, 3)
    statuses.append(run_cycle(icetide, workspace, source, tables_file)[TABLE])
    _assert_equal(workspace, engine, table)

    # DMS delivers a file twice (as after a resume from an earlier position, which reads and counts
    # those changes again): merging it again changes nothing that matters.
    merged = _cdc_files(workspace)[-2]
    name = datetime.strptime(_cdc_files(workspace)[-1].stem, "%Y%m%d-%H%M%S%f") + timedelta(milliseconds=1)
    shutil.copyfile(merged, merged.with_name(f"{name:%Y%m%d-%H%M%S}{name.microsecond // 1000:03d}.parquet"))
    _counted_again(workspace, pq.read_metadata(merged).num_rows)
    statuses.append(run_cycle(icetide, workspace, source, tables_file)[TABLE])
    _assert_equal(workspace, engine, table)
    return statuses


def test_sqlite_continuous_cycles_keep_silver_equal_to_the_source(
    tmp_path, write_tables, icetide, monkeypatch
):
    path = tmp_path / "shop.db"
    engine = sa.create_engine(f"sqlite:///{path}")
    table = payments_table(sa.MetaData())
    table.metadata.create_all(engine)
    tables_file = write_tables([_item("main")])
    workspace = tmp_path / "ws"

    statuses = _cycles_with_failure_and_redelivery(
        icetide, monkeypatch, workspace, f"sqlite:///{path}", tables_file, engine, table
    )

    assert [status["lastRunStatus"] for status in statuses] == ["SUCCEEDED"] * len(statuses)
    # Step 1 (third cycle): keys 11 and 12 inserted, key 1 updated (deleted and back), key 2 deleted.
    third = statuses[2]
    assert (third["rowsInserted"], third["rowsUpdated"], third["rowsDeleted"]) == (2, 1, 1)
    # The file delivered twice is step 2's (the failed run's): six changes to five keys, every one
    # as old as or older than what silver holds (step 3 updated 21, deleted 22; key 1 came back
    # again; 11 and 12 as step 2 left them): all five unchanged.
    counts = ("rowsRead", "rowsInserted", "rowsUpdated", "rowsDeleted", "rowsUnchanged", "filesMerged")
    stats = _stored_item(tmp_path / "ws")["lastRunStats"]
    assert tuple(stats[name] for name in counts) == (6, 0, 0, 0, 5, 1)
    engine.dispose()


@pytest.mark.postgres
def test_postgresql_continuous_cycles_through_a_real_slot(
    pg_schema, postgres_url, tmp_path, write_tables, icetide
):
    schema, engine = pg_schema
    table = payments_table(sa.MetaData(schema=schema))
    table.metadata.create_all(engine)

    # The local stack's source endpoint names a slot: its task starts at the slot's start point.
    start_point = slot_start_point(postgres_url, DEFAULT_SLOT_NAME)
    tables_file = write_tables([_item(schema, cdcStartPoint=start_point)])
    statuses = _cycles_of_changes(icetide, tmp_path / "ws", postgres_url, tables_file, engine, table, steps=2)

    assert [status["lastRunStatus"] for status in statuses] == ["SUCCEEDED"] * len(statuses)
