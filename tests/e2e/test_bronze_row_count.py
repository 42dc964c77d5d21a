"""`icetide local run`: a run whose bronze files hold other rows than DMS reported fails before the
commit, and a healthy run whose DMS counters are not its rows commits.

The DMS stand-in answers DescribeTableStatistics as DMS documents it: ``FullLoadRows`` the rows its
full load wrote, ``Inserts``/``Updates``/``Deletes`` every change of the table, also those a source
filter keeps out of the CDC files. The state machine passes the first to the Glue job as
``--expected_rows`` (compared exactly with the LOAD files' rows) and the sum of the others as
``--max_change_rows`` (the CDC files' rows must not exceed it). A stray parquet file (as a previous
run or a hand could leave it) beside the files of the second run would put rows in silver that do
not exist at the source, and move the watermark past rows never read; a lost one would leave rows
out while the watermark moves past them. Refused: the run FAILS, silver keeps its snapshot and
rows, and the watermark stays. End to end once, with the stray file: a lost one is the same
refusal the other way, which tests/glue/test_row_count_rules.py (the rule) and
test_row_count_check.py (the job) show.
"""

from __future__ import annotations

import io
import json
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import boto3
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import sqlalchemy as sa

import handlers.read_task_statistics as read_task_statistics
from e2e.helpers import SHOP_ORDERS_ITEM, silver_table
from icetide_local.standins.dms import data_mover, lifecycle

pytestmark = pytest.mark.spark

STRAY_ID = 99
CDC_ORDERS = {
    "targetTableName": "cdc_orders",
    "sourceSchema": "main",
    "sourceTable": "orders",
    "primaryKeys": "id",
    "captureMode": "cdc",
}


Tamper = Callable[[Any], None]


class TamperingMover:
    """The stand-in's replicator, which, once armed, does ``tamper`` to the bronze files it wrote
    (given the target's S3 settings): what DMS reported (the replicator's own count) stays true, the
    bronze folder does not."""

    def __init__(self, source_url: str, *, armed: bool, tamper: Tamper) -> None:
        self.replicate = data_mover.replicator_mover(source_url)
        self.armed = armed
        self.tamper = tamper

    def __call__(
        self, run: lifecycle.ReplicationTaskRun
    ) -> Sequence[lifecycle.TableStatistics] | lifecycle.MoverResult:
        statistics = self.replicate(run)
        if self.armed:
            self.tamper(run.target_s3_settings)
        return statistics


def _first_load_file(settings: Any) -> str:
    listed = boto3.client("s3").list_objects_v2(
        Bucket=settings["BucketName"], Prefix=settings["BucketFolder"]
    )
    [written] = [
        entry["Key"] for entry in listed["Contents"] if entry["Key"].endswith("LOAD00000001.parquet")
    ]
    return str(written)


def add_stray_file(settings: Any) -> None:
    """A copy of the run's first file with every id set to 99, as LOAD00000002."""
    s3, bucket, written = boto3.client("s3"), settings["BucketName"], _first_load_file(settings)
    table = pq.read_table(io.BytesIO(s3.get_object(Bucket=bucket, Key=written)["Body"].read()))
    ids = pa.array([STRAY_ID] * table.num_rows, table.schema.field("id").type)
    stray = table.set_column(table.schema.get_field_index("id"), "id", ids)
    body = io.BytesIO()
    pq.write_table(stray, body)
    s3.put_object(Bucket=bucket, Key=written.replace("LOAD00000001", "LOAD00000002"), Body=body.getvalue())


def tamper_from_the_second_run(monkeypatch: pytest.MonkeyPatch, tamper: Tamper) -> list[TamperingMover]:
    """Make every `local run` after the first tamper with its bronze files; the movers, in order."""
    movers: list[TamperingMover] = []

    def mover(source_url: str) -> TamperingMover:
        movers.append(TamperingMover(source_url, armed=len(movers) > 0, tamper=tamper))
        return movers[-1]

    # The local stack builds its DMS stand-in's mover through this name, once per `local run`.
    monkeypatch.setattr("icetide_local.local_stack.replicator_mover", mover)
    return movers


def orders_table(engine: sa.Engine, name: str = "orders") -> sa.Table:
    """An orders table called ``name`` holding (1, tea) and (2, cake)."""
    orders = sa.Table(
        name,
        sa.MetaData(),
        sa.Column("id", sa.Integer, primary_key=True),
        sa.Column("item", sa.String(20)),
    )
    orders.create(engine)
    with engine.begin() as connection:
        connection.execute(orders.insert(), [{"id": 1, "item": "tea"}, {"id": 2, "item": "cake"}])
    return orders


def orders_source(tmp_path: Path) -> tuple[str, sa.Engine, sa.Table]:
    """A SQLite source with an orders table (:func:`orders_table`)."""
    url = f"sqlite:///{tmp_path / 'shop.db'}"
    engine = sa.create_engine(url)
    return url, engine, orders_table(engine)


def _state(workspace) -> dict[str, Any]:
    items = json.loads((workspace / "state" / "control-table.json").read_text())
    [orders] = [item for item in items if item["targetTableName"]["S"] == "shop_orders"]
    return dict(orders)


def add_a_scone(connection: sa.Connection, orders: sa.Table) -> None:
    connection.execute(orders.insert(), [{"id": 3, "item": "scone"}])


def two_runs(
    icetide: Any,
    tmp_path: Path,
    write_tables: Any,
    items: list[dict[str, Any]],
    change: Callable[[sa.Connection, sa.Table], None] = add_a_scone,
    between: Callable[[Path], None] = lambda workspace: None,
    source: tuple[str, sa.Engine, sa.Table] | None = None,
) -> tuple[Path, Any]:
    """`local run` of ``items`` on the orders source (it must succeed), ``change`` at the source,
    ``between(workspace)``, then the second `local run`: the workspace and that run's result."""
    url, engine, orders = source or orders_source(tmp_path)
    workspace = tmp_path / "ws"
    tables_file = write_tables(items)
    first = icetide("local", "run", "--workspace", workspace, "--source", url, "--tables", tables_file)
    assert first.exit_code == 0, first.text
    with engine.begin() as connection:
        change(connection, orders)
    engine.dispose()
    between(workspace)
    return workspace, icetide(
        "local", "run", "--workspace", workspace, "--source", url, "--tables", tables_file
    )


def assert_refused(result: Any, table: str, message: str) -> None:
    """The `local run` failed, ``table`` at the Glue job with BronzeRowCountMismatch: ``message``."""
    assert result.exit_code == 1
    failure = next(line for line in result.out.splitlines() if line.startswith(f"  FAILED {table}:"))
    expected = f"  FAILED {table}: Run Glue job: BronzeRowCountMismatch: {message}"
    assert failure.startswith(expected), failure


def test_a_stray_bronze_file_fails_the_run_before_the_commit(tmp_path, write_tables, icetide, monkeypatch):
    movers = tamper_from_the_second_run(monkeypatch, add_stray_file)
    before: dict[str, Any] = {}

    def remember(workspace: Path) -> None:
        before["snapshot"] = silver_table(workspace, "shop_orders").current_snapshot().snapshot_id
        assert _state(workspace)["watermark"] == {"N": "2"}

    workspace, second = two_runs(icetide, tmp_path, write_tables, [SHOP_ORDERS_ITEM], between=remember)

    assert [mover.armed for mover in movers] == [False, True]
    # gte 2 read rows 2 and 3; the stray copy of that file adds two more.
    assert_refused(
        second, "shop_orders", "the full-load (LOAD) files hold 4 row(s) but DMS reported 2 (--expected_rows"
    )
    silver = silver_table(workspace, "shop_orders")
    assert silver.current_snapshot().snapshot_id == before["snapshot"]
    rows = silver.scan(selected_fields=("id", "item")).to_arrow().to_pylist()
    assert sorted((row["id"], row["item"]) for row in rows) == [(1, "tea"), (2, "cake")]
    state_after = _state(workspace)
    assert state_after["watermark"] == {"N": "2"}
    assert state_after["lastRunStatus"] == {"S": "FAILED"}
    assert state_after["lastFailedState"] == {"S": "Run Glue job"}


def lose_a_cdc_file_once_the_task_stopped(
    monkeypatch: pytest.MonkeyPatch, table: str, lost: list[str]
) -> None:
    """ReadTaskStatistics runs as before; then, in a run of ``table``, the newest CDC file of the
    run's folder is deleted (a lifecycle rule or a hand, after the task stopped and before the job
    reads), its key in ``lost``."""
    real = read_task_statistics.handler

    def then_lose(event: dict[str, Any], context: Any) -> Any:
        result = real(event, context)
        if event["plan"]["targetTableName"] != table:
            return result
        bucket, folder = event["plan"]["bronzeUri"].removeprefix("s3://").split("/", 1)
        s3 = boto3.client("s3")
        listed = [
            entry["Key"] for entry in s3.list_objects_v2(Bucket=bucket, Prefix=folder).get("Contents", [])
        ]
        cdc_files = sorted(key for key in listed if not key.rsplit("/", 1)[-1].startswith("LOAD"))
        if cdc_files:
            s3.delete_object(Bucket=bucket, Key=cdc_files[-1])
            lost.append(cdc_files[-1])
        return result

    monkeypatch.setattr(read_task_statistics, "handler", then_lose)


def add_filtered_changes(connection: sa.Connection, orders: sa.Table) -> None:
    """A scone (id 3), and an insert and an update of id 100, which the filter keeps out."""
    connection.execute(orders.insert(), [{"id": 3, "item": "scone"}, {"id": 100, "item": "filtered out"}])
    connection.execute(orders.update().where(orders.c.id == 100).values(item="still filtered out"))


# A cdc table with a source filter (id <= 50), of its own source table beside orders.
FILTERED_ORDERS = {
    **CDC_ORDERS,
    "targetTableName": "cdc_filtered_orders",
    "sourceTable": "filtered_orders",
    "filtercolumn": "id",
    "filteroperator": "lte",
    "startvalue": 50,
}


def test_cdc_runs_are_refused_for_a_lost_file_and_not_for_changes_their_filter_keeps_out(
    tmp_path, write_tables, icetide, monkeypatch
):
    """Two cdc tables of one workspace, the same two runs each (their failures are told apart by
    table):

    - cdc_orders loses its CDC file after its task stopped. The CDC rows left are within DMS's
      counts (which only bound them): the number of files the run's folder held once its task had
      stopped tells. Refused.
    - cdc_filtered_orders has a source filter: DMS counts the changes of rows the filter drops among
      the table's Inserts/Updates (actions performed on the table), but writes none of them. The
      run's rows are fewer than its counters say, and it is healthy: it commits.
    """
    lost: list[str] = []
    url, engine, orders = orders_source(tmp_path)
    filtered = orders_table(engine, "filtered_orders")

    def change(connection: sa.Connection, orders: sa.Table) -> None:
        add_a_scone(connection, orders)
        add_filtered_changes(connection, filtered)

    def arm(workspace: Path) -> None:
        lose_a_cdc_file_once_the_task_stopped(monkeypatch, "cdc_orders", lost)

    workspace, second = two_runs(
        icetide,
        tmp_path,
        write_tables,
        [CDC_ORDERS, FILTERED_ORDERS],
        change=change,
        between=arm,
        source=(url, engine, orders),
    )

    assert len(lost) == 1, lost
    assert_refused(
        second,
        "cdc_orders",
        "the run's folder holds 0 bronze file(s) but held 1 once its DMS task had stopped",
    )
    rows = silver_table(workspace, "cdc_orders").scan(selected_fields=("id", "item")).to_arrow().to_pylist()
    assert sorted((row["id"], row["item"]) for row in rows) == [(1, "tea"), (2, "cake")], "lost file"
    assert "FAILED cdc_filtered_orders" not in second.out, "filtered changes"
    scan = silver_table(workspace, "cdc_filtered_orders").scan(selected_fields=("id", "item"))
    rows = scan.to_arrow().to_pylist()
    assert sorted((row["id"], row["item"]) for row in rows) == [(1, "tea"), (2, "cake"), (3, "scone")], (
        "filtered changes"
    )
