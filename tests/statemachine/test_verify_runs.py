"""Verify runs (`icetide verify TABLE --stack`) through the real table-run state machine in moto.

A verify run is an execution named `<table>-verify-<time>`. The fast tests use the harness's
stand-ins (a Glue runner that writes a fixture report) and check what the machine does around the
job: one key-only extraction, the report's location, the lock taken and given back, and nothing
committed or recorded, on success and on failure. The Spark test runs the real Glue job on local
Spark against a silver table a real run built, with a key inserted at the source and another
deleted since, and reads the report the job wrote.
"""

from __future__ import annotations

from datetime import UTC, datetime
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest
import sqlalchemy as sa
from pyiceberg.table import StaticTable

from icetide.run.verify import verify_run_id
from icetide_contracts.verify import Difference, VerifyReport
from icetide_local.local_stack import LocalStack
from icetide_local.standins.dms.lifecycle import DmsLifecycle
from icetide_local.standins.glue import failing_job
from icetide_local.standins.verify_report import verify_report_writer
from icetide_local.stepfunctions import TableRunHarness
from statemachine.orders import FULL_LOAD_ROWS, TABLE, StackFactory, orders_item, orders_replication

VERIFY_RUN = verify_run_id(TABLE, datetime(2026, 11, 21, 7, 30, 15, tzinfo=UTC))
BUCKET = "icetide-raw-local"
# The table's state after its last merge run: a verify run must leave all of it as it is.
LAST_MERGE = {
    "lastRunId": "dbo_orders-20261121T0600Z",
    "lastRunStatus": "SUCCEEDED",
    "lastRunTime": "2026-11-21T06:01:02Z",
    "lastRunStats": {"rowsRead": 3, "rowsInserted": 3},
}


def _verify_stack(make_stack: StackFactory, **runner: Any) -> TableRunHarness:
    stack = make_stack(glue_runner=verify_report_writer(**runner), dms=DmsLifecycle(mover=orders_replication))
    stack.put_control_item(orders_item(**LAST_MERGE))
    return stack


def test_name_of_a_verify_run() -> None:
    assert VERIFY_RUN == "dbo_orders-verify-20261121T073015Z"


def test_a_verify_run_extracts_keys_reports_and_commits_nothing(make_stack: StackFactory) -> None:
    stack = _verify_stack(make_stack, missing=Difference(count=1, first=[{"order_id": 11}]), rows=10)
    before = stack.control_item(TABLE)

    report = stack.run(TABLE, VERIFY_RUN)

    assert report.status == "SUCCEEDED", report.render()
    # Watermark, statistics, status and lock as they were: the lock was taken and given back.
    assert stack.control_item(TABLE) == before
    assert list(report.states_entered[-4:]) == [
        "Verify run?",
        "Release table lock after verify",
        "Verify done",
        "Verified",
    ]
    assert "Commit watermark" not in report.states_entered and "Notify success" not in report.states_entered
    assert stack.notifications() == []
    inventory = stack.dms_inventory()
    assert (inventory.tasks, inventory.instances, inventory.target_endpoints) == ([], [], [])
    # One task: the key columns of the rows the filter selects from its startvalue (not the watermark).
    [extraction] = stack.dms.started_runs
    assert extraction.migration_type == "full-load"
    assert extraction.table_mappings == {
        "rules": [
            {
                "rule-type": "selection",
                "rule-id": "1",
                "rule-name": "1",
                "object-locator": {"schema-name": "dbo", "table-name": "orders"},
                "rule-action": "include",
                "filters": [
                    {
                        "filter-type": "source",
                        "column-name": "updated_at",
                        "filter-conditions": [{"filter-operator": "gte", "value": "2026-01-01 00:00:00"}],
                    }
                ],
            },
            {
                "rule-type": "transformation",
                "rule-id": "2",
                "rule-name": "keep-1",
                "rule-target": "column",
                "object-locator": {"schema-name": "dbo", "table-name": "orders", "column-name": "order_id"},
                "rule-action": "include-column",
            },
        ]
    }
    [job_run] = stack.glue.runs
    report_uri = f"s3://{BUCKET}/manifests/dbo_orders/{VERIFY_RUN}.verify.json"
    assert job_run.arguments is not None
    assert {
        name: job_run.arguments[name] for name in ("--bronze_uri", "--verify_report_uri", "--expected_rows")
    } == {
        "--bronze_uri": f"s3://{BUCKET}/bronze/_verify/dbo_orders/{VERIFY_RUN}/",
        "--verify_report_uri": report_uri,
        "--expected_rows": str(FULL_LOAD_ROWS),
    }
    output = report.output
    assert {key: output[key] for key in ("targetTableName", "runId", "verifyReportUri")} == {
        "targetTableName": TABLE,
        "runId": VERIFY_RUN,
        "verifyReportUri": report_uri,
    }
    written = stack.client("s3").get_object(Bucket=BUCKET, Key=report_uri.split("/", 3)[3])["Body"].read()
    assert VerifyReport.from_text(written).missing == Difference(count=1, first=[{"order_id": 11}])


def test_a_merge_run_still_passes_no_report_location_and_commits(make_stack: StackFactory) -> None:
    stack = make_stack()
    stack.put_control_item(orders_item())

    report = stack.run(TABLE)

    assert report.status == "SUCCEEDED", report.render()
    assert list(report.states_entered[-4:]) == [
        "Delete DMS resources",
        "Verify run?",
        "Notify success",
        "Commit watermark",
    ]
    [job_run] = stack.glue.runs
    assert job_run.arguments["--verify_report_uri"] == ""


def test_a_failed_verify_run_is_told_and_unlocks_but_is_not_recorded(make_stack: StackFactory) -> None:
    stack = make_stack(
        glue_runner=failing_job("the comparison failed"), dms=DmsLifecycle(mover=orders_replication)
    )
    stack.put_control_item(orders_item(**LAST_MERGE))
    before = stack.control_item(TABLE)

    report = stack.run(TABLE, VERIFY_RUN)

    assert report.status == "FAILED", report.render()
    assert report.error == "TableRunFailed"
    assert (report.cause or "").startswith("Run Glue job failed with States.TaskFailed: ")
    assert "Record failure" not in report.states_entered
    # No lastRunStatus FAILED: the table's last merge still stands, and the lock is free.
    assert stack.control_item(TABLE) == before
    [notification] = stack.notifications()
    assert (notification.subject, notification.message["runId"]) == ("icetide run failed", VERIFY_RUN)
    inventory = stack.dms_inventory()
    assert (inventory.tasks, inventory.instances, inventory.target_endpoints) == ([], [], [])


def test_a_table_without_keys_cannot_be_verified_in_aws(make_stack: StackFactory) -> None:
    stack = _verify_stack(make_stack)
    item = orders_item(loadMode="append")
    del item["primaryKeys"]
    stack.put_control_item(item)
    before = stack.control_item(TABLE)

    report = stack.run(TABLE, VERIFY_RUN)

    assert report.status == "FAILED", report.render()
    assert (report.cause or "").startswith("Acquire table lock failed with InvalidControlItem: ")
    assert "primaryKeys: a verify run compares the source's keys with silver's" in (report.cause or "")
    assert stack.control_item(TABLE) == before
    assert stack.dms.started_runs == []


def test_a_verify_run_never_takes_a_lock_another_run_holds(make_stack: StackFactory) -> None:
    stack = _verify_stack(make_stack)
    stack.put_control_item(
        orders_item(**LAST_MERGE, lockHolder="dbo_orders-20261121T0700Z", lockTime="2099-01-01T00:00:00Z")
    )
    before = stack.control_item(TABLE)

    report = stack.run(TABLE, VERIFY_RUN)

    # Refused at the lock, like any run: the execution succeeds saying why, and touches nothing.
    assert report.status == "SUCCEEDED"
    assert report.output["refused"] == "table locked by another run"
    assert report.output["error"] == "TableLocked"
    assert stack.control_item(TABLE) == before


@pytest.mark.spark
def test_the_glue_job_reports_a_key_missing_from_silver_and_one_extra(tmp_path: Path) -> None:
    database = tmp_path / "shop.db"
    engine = sa.create_engine(f"sqlite:///{database}")
    metadata = sa.MetaData()
    orders = sa.Table(
        "orders",
        metadata,
        sa.Column("id", sa.Integer, primary_key=True, autoincrement=False),
        sa.Column("amount", sa.Numeric(10, 2), nullable=False),
        sa.Column("change_no", sa.Integer, nullable=False),
    )
    metadata.create_all(engine)
    with engine.begin() as connection:
        connection.execute(
            orders.insert(), [{"id": n, "amount": Decimal(f"{n}.50"), "change_no": n} for n in range(1, 6)]
        )
    item = {
        "targetTableName": "shop_orders",
        "sourceSchema": "main",
        "sourceTable": "orders",
        "filtercolumn": "change_no",
        "filteroperator": "gte",
        "startvalue": "2",  # row 1 is outside the filter: silver never holds it, and that is no difference
        "primaryKeys": "id",
    }
    with LocalStack(source_url=f"sqlite:///{database}", warehouse=tmp_path / "warehouse") as stack:
        stack.put_control_item(item)
        merged = stack.run("shop_orders", timeout_seconds=600)
        assert merged.status == "SUCCEEDED", merged.render()
        after_merge = stack.control_item("shop_orders")
        silver = tmp_path / "warehouse" / "icetide_silver" / "shop_orders"
        snapshot = StaticTable.from_metadata(str(silver)).current_snapshot()
        with engine.begin() as connection:
            connection.execute(orders.insert(), [{"id": 7, "amount": Decimal("7.50"), "change_no": 7}])
            connection.execute(orders.delete().where(orders.c.id == 3))

        run_id = verify_run_id("shop_orders", datetime(2026, 11, 21, 8, 0, 0, tzinfo=UTC))
        verified = stack.run("shop_orders", run_id, timeout_seconds=600)

        assert verified.status == "SUCCEEDED", verified.render()
        key = f"manifests/shop_orders/{run_id}.verify.json"
        report = VerifyReport.from_text(stack.client("s3").get_object(Bucket=BUCKET, Key=key)["Body"].read())
        assert stack.control_item("shop_orders") == after_merge
    engine.dispose()
    assert report == VerifyReport(
        silver_table="icetide_silver.shop_orders",
        run_id=run_id,
        compared="keys",
        key_columns=["id"],
        source_rows=4,
        silver_rows=4,
        missing=Difference(count=1, first=[{"id": 7}]),
        extra=Difference(count=1, first=[{"id": 3}]),
    )
    # Read, never written: silver's current snapshot is the merge run's.
    assert StaticTable.from_metadata(str(silver)).current_snapshot() == snapshot
