"""`icetide local run`: a run whose bronze files hold another number of rows than DMS reported fails
before the commit (issue 9, part 8).

The DMS stand-in answers DescribeTableStatistics with the rows it wrote; the state machine passes
that count to the Glue job as ``--expected_rows``. Here a stray parquet file (as a previous run or a
hand could leave it) sits beside the files of the second run. Merged, its row would appear in silver
without existing at the source, and the watermark would jump to its id, past rows never read.
Refused: the run FAILS, silver keeps its snapshot and rows, and the watermark stays.
"""

from __future__ import annotations

import io
import json
from collections.abc import Sequence
from typing import Any

import boto3
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import sqlalchemy as sa

from e2e.helpers import SHOP_ORDERS_ITEM, silver_table
from icetide_local.standins.dms import data_mover, lifecycle

pytestmark = pytest.mark.spark

STRAY_ID = 99


class StrayFileMover:
    """The stand-in's replicator, which, once armed, leaves a stray file beside the files it wrote.

    The stray file is a copy of the run's first file with every id set to 99: what DMS reported
    (the replicator's own count) stays true, the bronze folder does not.
    """

    def __init__(self, source_url: str, *, armed: bool) -> None:
        self.replicate = data_mover.replicator_mover(source_url)
        self.armed = armed

    def __call__(
        self, run: lifecycle.ReplicationTaskRun
    ) -> Sequence[lifecycle.TableStatistics] | lifecycle.MoverResult:
        statistics = self.replicate(run)
        if self.armed:
            self._add_stray_file(run.target_s3_settings)
        return statistics

    @staticmethod
    def _add_stray_file(settings: Any) -> None:
        s3 = boto3.client("s3")
        bucket = settings["BucketName"]
        listed = s3.list_objects_v2(Bucket=bucket, Prefix=settings["BucketFolder"])["Contents"]
        [written] = [entry["Key"] for entry in listed if entry["Key"].endswith("LOAD00000001.parquet")]
        table = pq.read_table(io.BytesIO(s3.get_object(Bucket=bucket, Key=written)["Body"].read()))
        ids = pa.array([STRAY_ID] * table.num_rows, table.schema.field("id").type)
        stray = table.set_column(table.schema.get_field_index("id"), "id", ids)
        body = io.BytesIO()
        pq.write_table(stray, body)
        s3.put_object(
            Bucket=bucket, Key=written.replace("LOAD00000001", "LOAD00000002"), Body=body.getvalue()
        )


def _state(workspace) -> dict[str, Any]:
    items = json.loads((workspace / "state" / "control-table.json").read_text())
    [orders] = [item for item in items if item["targetTableName"]["S"] == "shop_orders"]
    return dict(orders)


def test_a_stray_bronze_file_fails_the_run_before_the_commit(tmp_path, write_tables, icetide, monkeypatch):
    url = f"sqlite:///{tmp_path / 'shop.db'}"
    engine = sa.create_engine(url)
    orders = sa.Table(
        "orders",
        sa.MetaData(),
        sa.Column("id", sa.Integer, primary_key=True),
        sa.Column("item", sa.String(20)),
    )
    orders.create(engine)
    with engine.begin() as connection:
        connection.execute(orders.insert(), [{"id": 1, "item": "tea"}, {"id": 2, "item": "cake"}])
    movers: list[StrayFileMover] = []

    def stray_file_mover(source_url: str) -> StrayFileMover:
        movers.append(StrayFileMover(source_url, armed=len(movers) > 0))  # from the second `local run` on
        return movers[-1]

    # The local stack builds its DMS stand-in's mover through this name, once per `local run`.
    monkeypatch.setattr("icetide_local.local_stack.replicator_mover", stray_file_mover)
    workspace = tmp_path / "ws"
    tables_file = write_tables([SHOP_ORDERS_ITEM])

    first = icetide("local", "run", "--workspace", workspace, "--source", url, "--tables", tables_file)
    assert first.exit_code == 0, first.text
    snapshot_before = silver_table(workspace, "shop_orders").current_snapshot().snapshot_id
    state_before = _state(workspace)
    assert state_before["watermark"] == {"N": "2"}
    with engine.begin() as connection:
        connection.execute(orders.insert(), [{"id": 3, "item": "scone"}])
    engine.dispose()

    second = icetide("local", "run", "--workspace", workspace, "--source", url, "--tables", tables_file)

    assert [mover.armed for mover in movers] == [False, True]
    assert second.exit_code == 1
    failure = next(line for line in second.out.splitlines() if line.startswith("  FAILED shop_orders:"))
    # gte 2 read rows 2 and 3; the stray copy of that file adds two more.
    assert failure.startswith(
        "  FAILED shop_orders: Run Glue job: BronzeRowCountMismatch: the bronze files hold 4 row(s) but "
        "DMS reported 2 (--expected_rows"
    ), failure
    silver = silver_table(workspace, "shop_orders")
    assert silver.current_snapshot().snapshot_id == snapshot_before
    rows = silver.scan(selected_fields=("id", "item")).to_arrow().to_pylist()
    assert sorted((row["id"], row["item"]) for row in rows) == [
        (1, "tea"),
        (2, "cake"),
    ]
    state_after = _state(workspace)
    assert state_after["watermark"] == {"N": "2"}
    assert state_after["lastRunStatus"] == {"S": "FAILED"}
    assert state_after["lastFailedState"] == {"S": "Run Glue job"}
