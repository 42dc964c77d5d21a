"""The DMS stand-in captures changes as DMS does, on SQLite (its own triggers) and PostgreSQL (a slot).

Driven through boto3 against moto as the product's Lambdas drive DMS: a ``full-load-and-cdc`` task,
then ``cdc`` tasks each starting from the previous task's ``RecoveryCheckpoint`` and stopping at a
``CdcStopPosition``. PostgreSQL's default replica identity puts only the key into a D row.
"""

from __future__ import annotations

import datetime as dt
import decimal
import re
from collections.abc import Iterator
from typing import Any

import boto3
import pyarrow.parquet as pq
import pytest
import sqlalchemy as sa
from botocore.exceptions import ClientError
from moto import mock_aws

from icetide_local.standins.dms.cdc import lsn_value
from icetide_local.standins.dms.data_mover import replicator_mover
from icetide_local.standins.dms.lifecycle import FATAL_ERROR, STOPPED_AT_SERVER_TIME, DmsLifecycle
from icetide_local.standins.dms.replicator import run_replication
from local.dms_cdc import (
    TIMESTAMP_COLUMN,
    DmsCdcDriver,
    TaskOutcome,
    cdc_mapping,
    drop_slot,
    execute,
    include_column_rule,
    selection_rule,
    stop_at_next_second,
)

CDC_COLUMNS = ["Op", TIMESTAMP_COLUMN, "id", "item", "qty", "AR_H_CHANGE_SEQ"]
ID_AT_MOST_50 = {"filter-type": "source", "column-name": "id",
                 "filter-conditions": [{"filter-operator": "lte", "value": "50"}]}  # fmt: skip


@pytest.fixture
def orders(source_db) -> sa.Table:
    source_db.create_table(
        "other", sa.Column("id", sa.Integer, primary_key=True), sa.Column("note", sa.String(20))
    )
    return source_db.create_table(
        "orders",
        sa.Column("id", sa.Integer, primary_key=True),
        sa.Column("item", sa.String(20)),
        sa.Column("qty", sa.Integer),
        rows=[{"id": 1, "item": "tea", "qty": 1}, {"id": 2, "item": "cake", "qty": 2},
              {"id": 3, "item": "scone", "qty": 3}],
    )  # fmt: skip


@pytest.fixture
def dms(source_db, monkeypatch) -> Iterator[DmsCdcDriver]:
    monkeypatch.setenv("AWS_DEFAULT_REGION", "eu-west-1")
    slot = f"icetide_{source_db.schema}"
    with mock_aws(), DmsLifecycle(mover=replicator_mover(source_db.url)).install():
        yield DmsCdcDriver(boto3.Session(region_name="eu-west-1"), source_db.url, slot)
    drop_slot(source_db, slot)


def position(outcome: TaskOutcome) -> int:
    """Where a task's reading ended, as a number (an LSN on PostgreSQL, a change-log seq on SQLite)."""
    _, _, at = outcome.described["RecoveryCheckpoint"].rpartition("#")
    return lsn_value(at) if "/" in at else int(at)


def deleted(source_db, key: int, item: str, qty: int) -> tuple[Any, ...]:
    """A D row: the row before deletion on SQLite; only the key under PostgreSQL's default replica
    identity."""
    if source_db.dialect == "postgresql":
        return ("D", key, None, None)
    return ("D", key, item, qty)


def assert_cdc_file_shape(outcome: TaskOutcome, stop: str) -> None:
    stop_text = stop.removeprefix("server_time:").replace("T", " ")
    names = outcome.file_names("orders")
    assert all(re.fullmatch(r"\d{8}-\d{9}\.parquet", name) for name in names), names
    assert names == sorted(set(names))
    times = [time for (time,) in outcome.rows("orders", TIMESTAMP_COLUMN)]
    assert all(re.fullmatch(r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d\.\d{6}", time) for time in times), times
    assert times == sorted(times) and times[-1] <= stop_text
    sequences = [sequence for (sequence,) in outcome.rows("orders", "AR_H_CHANGE_SEQ")]
    assert all(re.fullmatch(r"\d{35}", sequence) for sequence in sequences), sequences
    assert sequences == sorted(sequences) and len(set(sequences)) == len(sequences)
    for _, contents in outcome.files["orders"]:
        assert contents.column_names == CDC_COLUMNS


def test_windows_of_changes_follow_each_other_from_checkpoint_to_checkpoint(source_db, orders, dms):
    mapping = cdc_mapping(source_db.schema, "orders", ID_AT_MOST_50)

    stop_0 = stop_at_next_second()
    load = dms.run("full-load-and-cdc", mapping, stop=stop_0)

    execute(
        source_db,
        "INSERT INTO {schema}.orders VALUES (4, 'jam', 4)",
        "UPDATE {schema}.orders SET qty = 20 WHERE id = 2",
        "DELETE FROM {schema}.orders WHERE id = 3",
        "INSERT INTO {schema}.orders VALUES (5, 'bun', 5)",
        "UPDATE {schema}.orders SET qty = 50 WHERE id = 5",
        "DELETE FROM {schema}.orders WHERE id = 5",
        "DELETE FROM {schema}.orders WHERE id = 1",
        "INSERT INTO {schema}.orders VALUES (1, 'green tea', 10)",
        "INSERT INTO {schema}.orders VALUES (100, 'filtered out', 1)",
        "INSERT INTO {schema}.other VALUES (1, 'not selected')",
    )
    stop_1 = stop_at_next_second()
    first = dms.run("cdc", mapping, start=load.described["RecoveryCheckpoint"], stop=stop_1)
    stop_1_again = stop_at_next_second()  # a stop of its own, ahead of its start as icetide sets it
    again = dms.run("cdc", mapping, start=load.described["RecoveryCheckpoint"], stop=stop_1_again)

    execute(source_db, "UPDATE {schema}.orders SET qty = 40 WHERE id = 4")
    execute(source_db, "INSERT INTO {schema}.orders VALUES (6, 'pie', 6)")
    stop_2 = stop_at_next_second()
    assert "LastFailureMessage" not in first.described, first.described["LastFailureMessage"]
    second = dms.run("cdc", mapping, start=first.described["RecoveryCheckpoint"], stop=stop_2)

    # The full load, with AR_H_CHANGE_SEQ null; nothing changed after it, so no CDC file.
    assert load.file_names("orders") == ["LOAD00000001.parquet"]
    assert load.rows("orders", "Op", "id", "item", "qty", "AR_H_CHANGE_SEQ") == [
        ("I", 1, "tea", 1, None), ("I", 2, "cake", 2, None), ("I", 3, "scone", 3, None),
    ]  # fmt: skip
    assert load.files["orders"][0][1].column_names == CDC_COLUMNS
    expected_first = [
        ("I", 4, "jam", 4),
        ("U", 2, "cake", 20),
        deleted(source_db, 3, "scone", 3),
        ("I", 5, "bun", 5),
        ("U", 5, "bun", 50),
        deleted(source_db, 5, "bun", 50),
        deleted(source_db, 1, "tea", 1),
        ("I", 1, "green tea", 10),
    ]
    assert first.rows("orders", "Op", "id", "item", "qty") == expected_first
    assert again.rows("orders", "Op", "id", "item", "qty") == expected_first
    assert second.rows("orders", "Op", "id", "item", "qty") == [("U", 4, "jam", 40), ("I", 6, "pie", 6)]
    assert "other" not in first.files
    assert_cdc_file_shape(first, stop_1)
    assert_cdc_file_shape(second, stop_2)
    assert first.rows("orders", TIMESTAMP_COLUMN, "AR_H_CHANGE_SEQ") == again.rows(
        "orders", TIMESTAMP_COLUMN, "AR_H_CHANGE_SEQ"
    )

    for outcome, stop in ((load, stop_0), (first, stop_1), (again, stop_1_again), (second, stop_2)):
        described = outcome.described
        assert (described["Status"], described["StopReason"]) == ("stopped", STOPPED_AT_SERVER_TIME)
        assert described["CdcStopPosition"] == stop
        assert described["RecoveryCheckpoint"].startswith("checkpoint:V1#icetide#")
        assert described["ReplicationTaskStartDate"] is not None
    assert first.described["CdcStartPosition"] == load.described["RecoveryCheckpoint"]
    # Read later, `again` may end further on (PostgreSQL: commits of other tables since), never sooner.
    assert position(again) >= position(first)
    assert second.described["RecoveryCheckpoint"] != first.described["RecoveryCheckpoint"]
    if source_db.dialect == "sqlite":  # no slot: a full-load-and-cdc task starts where its load does
        assert "CdcStartPosition" not in load.described

    def counts(outcome: TaskOutcome) -> tuple[int, int, int, int, str]:
        entry = outcome.table_statistics("orders")
        return (
            entry["FullLoadRows"],
            entry["Inserts"],
            entry["Updates"],
            entry["Deletes"],
            entry["TableState"],
        )

    assert counts(load) == (3, 0, 0, 0, "Table completed")
    # Inserts counts the change the filter keeps out of the files (id 100) too: DMS documents its
    # counters as actions performed on the table, not as rows written (replicator.ChangeCounting).
    assert counts(first) == (0, 4, 2, 3, "Table completed")
    assert counts(again) == counts(first)
    assert counts(second) == (0, 1, 1, 0, "Table completed")


def test_a_cdc_task_without_a_stop_position_keeps_running(source_db, orders, dms):
    load = dms.run("full-load-and-cdc", cdc_mapping(source_db.schema, "orders"))
    assert load.described["Status"] == "running"
    assert load.described["RecoveryCheckpoint"].startswith("checkpoint:V1#icetide#")
    assert load.table_statistics("orders")["FullLoadRows"] == 3


@pytest.mark.parametrize(
    ("start", "message"),
    [
        (None, "a cdc task needs CdcStartPosition"),
        ("checkpoint:V1#27#000000D5/54000148:0:0", "is not a checkpoint of the DMS stand-in"),
        ("checkpoint:V1#icetide#oracle#42", "is a checkpoint of a oracle source"),
        ("checkpoint:V1#icetide#sqlite#x", "has an unreadable position"),
    ],
    ids=["missing", "foreign", "other-source", "garbled"],
)
def test_a_cdc_task_that_cannot_start_where_it_is_told_fails(source_db, orders, dms, start, message):
    if start is not None and "sqlite#x" in start and source_db.dialect == "postgresql":
        start = "checkpoint:V1#icetide#postgres#nonsense"
    if start is not None and source_db.dialect == "postgresql":
        # The endpoint names a slot: DMS refuses to run a task created with an invalid start position.
        message = "created with a valid CdcStartPosition"
    dms.run("full-load-and-cdc", cdc_mapping(source_db.schema, "orders"), stop=stop_at_next_second())
    failed = dms.run("cdc", cdc_mapping(source_db.schema, "orders"), start=start, stop=stop_at_next_second())
    assert (failed.described["Status"], failed.described["StopReason"]) == ("failed", FATAL_ERROR)
    assert message in failed.described["LastFailureMessage"]
    assert failed.files == {}


def test_a_checkpoint_ahead_of_the_source_fails_the_task(source_db, orders, dms):
    load = dms.run("full-load-and-cdc", cdc_mapping(source_db.schema, "orders"), stop=stop_at_next_second())
    kind, _, position = load.described["RecoveryCheckpoint"].rpartition("#")
    ahead = f"{kind}#{'FF/0' if source_db.dialect == 'postgresql' else int(position) + 1000}"
    failed = dms.run("cdc", cdc_mapping(source_db.schema, "orders"), start=ahead, stop=stop_at_next_second())
    assert failed.described["Status"] == "failed"
    assert "beyond the last change" in failed.described["LastFailureMessage"]


def test_a_key_only_extraction_writes_the_included_columns_only(source_db, orders, dms):
    schema = source_db.schema
    mapping = {
        "rules": [
            selection_rule(schema, "orders", ID_AT_MOST_50),
            include_column_rule(2, schema, "orders", "id"),
        ]
    }
    execute(source_db, "INSERT INTO {schema}.orders VALUES (51, 'over the filter', 1)")
    keys = dms.run("full-load", mapping)
    assert keys.files["orders"][0][1].column_names == ["Op", TIMESTAMP_COLUMN, "id"]
    assert keys.rows("orders", "Op", "id") == [("I", 1), ("I", 2), ("I", 3)]


def test_include_column_applies_to_change_rows_too(source_db, orders, dms):
    schema = source_db.schema
    keep = [include_column_rule(3, schema, "orders", "qty"), include_column_rule(4, schema, "orders", "id")]
    mapping = {"rules": [*cdc_mapping(schema, "orders")["rules"], *keep]}
    load = dms.run("full-load-and-cdc", mapping, stop=stop_at_next_second())
    execute(source_db, "UPDATE {schema}.orders SET qty = 7, item = 'hidden' WHERE id = 2")
    changes = dms.run("cdc", mapping, start=load.described["RecoveryCheckpoint"], stop=stop_at_next_second())
    assert load.files["orders"][0][1].column_names == ["Op", TIMESTAMP_COLUMN, "id", "qty", "AR_H_CHANGE_SEQ"]
    assert changes.files["orders"][0][1].column_names == [
        "Op",
        TIMESTAMP_COLUMN,
        "id",
        "qty",
        "AR_H_CHANGE_SEQ",
    ]
    assert changes.rows("orders", "Op", "id", "qty") == [("U", 2, 7)]


def test_a_transformation_the_stand_in_does_not_honour_is_refused_when_the_task_is_created(
    source_db, orders, dms
):
    rename = {**include_column_rule(2, source_db.schema, "orders", "item"), "rule-name": "rename-item",
              "rule-action": "rename", "value": "product"}  # fmt: skip
    with pytest.raises(ClientError) as refused:
        dms.run("full-load", {"rules": [selection_rule(source_db.schema, "orders"), rename]})
    assert refused.value.response["Error"]["Code"] == "InvalidParameterValueException"
    assert (
        "rule rename-item: transformation rule-action 'rename'" in refused.value.response["Error"]["Message"]
    )


def test_a_change_committed_while_the_load_runs_is_in_the_tasks_cdc_file(
    source_db, orders, bronze, s3_settings
):
    """Capture starts before the load reads: a change made as the load starts is not lost."""
    changed: list[dt.datetime] = []

    def clock() -> dt.datetime:
        if not changed:
            execute(source_db, "UPDATE {schema}.orders SET qty = 30 WHERE id = 3")
            changed.append(dt.datetime.now(dt.UTC))
        return dt.datetime.now(dt.UTC)

    result = run_replication(
        cdc_mapping(source_db.schema, "orders"),
        s3_settings,
        source_db.url,
        bronze.sink,
        migration_type="full-load-and-cdc",
        slot_name=f"icetide_{source_db.schema}",
        clock=clock,
    )
    try:
        [table] = result.tables
        cdc_name, load_name = bronze.file_names(source_db.schema, "orders")  # digits sort before L
        assert load_name == "LOAD00000001.parquet"
        assert re.fullmatch(r"\d{8}-\d{9}\.parquet", cdc_name)
        cdc_file = pq.read_table(bronze.table_dir(source_db.schema, "orders") / cdc_name)
        assert [(r["Op"], r["id"], r["qty"]) for r in cdc_file.to_pylist()] == [("U", 3, 30)]
        assert (table.full_load_rows, table.inserts, table.updates, table.deletes) == (3, 0, 1, 0)
    finally:
        drop_slot(source_db, f"icetide_{source_db.schema}")


TYPED_COLUMNS = (
    sa.Column("big", sa.BigInteger),
    sa.Column("small", sa.SmallInteger),
    sa.Column("amount", sa.Numeric(10, 2)),
    sa.Column("ratio", sa.Float),
    sa.Column("flag", sa.Boolean),
    sa.Column("label", sa.String(20)),
    sa.Column("body", sa.Text),
    sa.Column("at", sa.DateTime),
    sa.Column("at_utc", sa.DateTime(timezone=True)),
    sa.Column("day", sa.Date),
    sa.Column("clock", sa.Time),
    sa.Column("blob", sa.LargeBinary),
    sa.Column("doc", sa.JSON),
)
TYPED_VALUES = {
    "big": 2**40, "small": -7, "amount": decimal.Decimal("12.34"), "ratio": 0.1 + 0.2, "flag": True,
    "label": "it's \"quoted\"", "body": "line\nbreak", "at": dt.datetime(2026, 11, 21, 7, 0, 5, 123456),
    "at_utc": dt.datetime(2026, 11, 21, 7, 0, 5, 654321, tzinfo=dt.UTC), "day": dt.date(2026, 2, 28),
    "clock": dt.time(23, 59, 58, 999999), "blob": b"\x00\x01'\xff", "doc": {"a": [1, "b"]},
}  # fmt: skip


def test_change_rows_have_the_types_and_values_of_load_rows(source_db, dms):
    table = source_db.create_table(
        "typed",
        sa.Column("id", sa.Integer, primary_key=True),
        *(sa.Column(column.name, column.type) for column in TYPED_COLUMNS),
        rows=[{"id": 1, **TYPED_VALUES}],
    )
    mapping = cdc_mapping(source_db.schema, "typed")
    load = dms.run("full-load-and-cdc", mapping, stop=stop_at_next_second())
    with source_db.engine.begin() as connection:
        connection.execute(table.insert(), [{"id": 2, **TYPED_VALUES}])
        connection.execute(table.insert(), [{"id": 3}])
    changes = dms.run("cdc", mapping, start=load.described["RecoveryCheckpoint"], stop=stop_at_next_second())

    [(_, loaded)] = load.files["typed"]
    [(_, changed)] = changes.files["typed"]
    assert changed.schema.remove_metadata() == loaded.schema.remove_metadata()
    [load_row] = loaded.to_pylist()
    inserted, empty = changed.to_pylist()
    source_columns = [column.name for column in TYPED_COLUMNS]
    assert [inserted[name] for name in source_columns] == [load_row[name] for name in source_columns]
    assert inserted["ratio"] == 0.1 + 0.2 and inserted["blob"] == b"\x00\x01'\xff"
    assert [empty[name] for name in source_columns] == [None] * len(source_columns)
