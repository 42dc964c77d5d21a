"""The DMS stand-in writes the files a DMS full load to an S3 parquet target writes.

From the AWS DMS user guide ("Using Amazon S3 as a target"): files ``LOAD00000001.parquet`` and on,
numbered in hexadecimal, under ``<BucketFolder>/<schema>/<table>/``; ``Op`` first, and only with
``IncludeOpForFullLoad``; the ``TimestampColumnName`` column is a ``yyyy-MM-dd HH:mm:ss.SSSSSS``
string holding the transfer time; a table's folder appears only when it has rows.
"""

from __future__ import annotations

import datetime as dt
import re

import boto3
import pyarrow.parquet as pq
import pytest
import sqlalchemy as sa
from moto import mock_aws

from icetide_local.standins.dms.replicator import (
    TABLE_COMPLETED,
    TABLE_ERROR,
    full_load_file_name,
    run_full_load,
)
from icetide_local.standins.dms.source import SourceUnreachable

ELEVEN_ROWS = [{"id": n, "name": f"item {n}"} for n in range(1, 12)]
FIXED_TRANSFER_TIME = dt.datetime(2026, 11, 21, 7, 0, 5, 123456, tzinfo=dt.UTC)


@pytest.fixture
def items(source_db) -> sa.Table:
    return source_db.create_table(
        "items",
        sa.Column("id", sa.Integer, primary_key=True),
        sa.Column("name", sa.String(50)),
        rows=ELEVEN_ROWS,
    )


@pytest.mark.parametrize(
    ("sequence", "name"),
    [(1, "LOAD00000001.parquet"), (9, "LOAD00000009.parquet"), (10, "LOAD0000000A.parquet"),
     (16, "LOAD00000010.parquet"), (255, "LOAD000000FF.parquet")],
)  # fmt: skip
def test_full_load_files_are_numbered_in_hexadecimal(sequence, name):
    assert full_load_file_name(sequence) == name


def test_one_row_per_file_gives_eleven_files_named_in_hexadecimal(source_db, items, full_load, bronze):
    result = full_load(source_db, "items", max_rows_per_file=1)
    assert bronze.file_names(source_db.schema, "items") == [
        "LOAD00000001.parquet", "LOAD00000002.parquet", "LOAD00000003.parquet", "LOAD00000004.parquet",
        "LOAD00000005.parquet", "LOAD00000006.parquet", "LOAD00000007.parquet", "LOAD00000008.parquet",
        "LOAD00000009.parquet", "LOAD0000000A.parquet", "LOAD0000000B.parquet",
    ]  # fmt: skip
    assert result.tables[0].full_load_rows == 11
    assert len(result.tables[0].files) == 11


def test_files_hold_at_most_max_rows_even_when_batches_straddle_them(source_db, items, full_load, bronze):
    result = full_load(source_db, "items", max_rows_per_file=4, batch_rows=3)
    table_dir = bronze.table_dir(source_db.schema, "items")
    rows_per_file = {
        name: pq.read_metadata(table_dir / name).num_rows
        for name in bronze.file_names(source_db.schema, "items")
    }
    assert rows_per_file == {"LOAD00000001.parquet": 4, "LOAD00000002.parquet": 4, "LOAD00000003.parquet": 3}
    assert bronze.ids(source_db.schema, "items") == set(range(1, 12))
    assert result.tables[0].files == tuple((table_dir / name).as_uri() for name in rows_per_file)


def test_op_is_the_first_column_when_include_op_for_full_load(source_db, items, full_load, bronze):
    full_load(source_db, "items")
    written = bronze.read(source_db.schema, "items")
    assert written.column_names == ["Op", "dms_timestamp", "id", "name"]
    assert set(written.column("Op").to_pylist()) == {"I"}


@pytest.mark.parametrize(
    ("overrides", "columns"),
    [
        ({"IncludeOpForFullLoad": False}, ["dms_timestamp", "id", "name"]),
        ({"IncludeOpForFullLoad": "false"}, ["dms_timestamp", "id", "name"]),
        ({"IncludeOpForFullLoad": False, "TimestampColumnName": ""}, ["id", "name"]),
        ({"TimestampColumnName": "transfer_ts"}, ["Op", "transfer_ts", "id", "name"]),
    ],
)
def test_dms_columns_follow_the_target_settings(
    source_db, items, bronze, table_mapping, s3_settings, overrides, columns
):
    run_full_load(
        table_mapping(source_db.schema, "items"), {**s3_settings, **overrides}, source_db.url, bronze.sink
    )
    assert bronze.read(source_db.schema, "items").column_names == columns


def test_the_timestamp_column_holds_the_transfer_time_in_dms_format(source_db, items, full_load, bronze):
    full_load(source_db, "items", clock=lambda: FIXED_TRANSFER_TIME)
    assert set(bronze.read(source_db.schema, "items").column("dms_timestamp").to_pylist()) == {
        "2026-11-21 07:00:05.123456"
    }


def test_the_transfer_time_is_written_in_utc(source_db, items, full_load, bronze):
    nine_am_in_plus_two = dt.datetime(
        2026, 11, 21, 9, 0, 5, 123456, tzinfo=dt.timezone(dt.timedelta(hours=2))
    )
    full_load(source_db, "items", clock=lambda: nine_am_in_plus_two)
    assert set(bronze.read(source_db.schema, "items").column("dms_timestamp").to_pylist()) == {
        "2026-11-21 07:00:05.123456"
    }


def test_the_real_clock_gives_the_dms_timestamp_shape(source_db, items, full_load, bronze):
    full_load(source_db, "items")
    values = bronze.read(source_db.schema, "items").column("dms_timestamp").to_pylist()
    assert all(re.fullmatch(r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d\.\d{6}", value) for value in values), values


def test_a_missing_table_is_a_table_error_and_the_others_still_load(source_db, items, bronze, s3_settings):
    mapping = {
        "rules": [
            {"rule-type": "selection", "rule-id": "1", "rule-name": "1", "rule-action": "include",
             "object-locator": {"schema-name": source_db.schema, "table-name": "no_such_table"}},
            {"rule-type": "selection", "rule-id": "2", "rule-name": "2", "rule-action": "include",
             "object-locator": {"schema-name": source_db.schema, "table-name": "items"}},
        ]
    }  # fmt: skip
    result = run_full_load(mapping, s3_settings, source_db.url, bronze.sink)
    missing, loaded = result.tables
    assert (missing.table, missing.state, missing.full_load_rows) == ("no_such_table", TABLE_ERROR, 0)
    assert f"{source_db.schema}.no_such_table does not exist" in (missing.error_message or "")
    assert (loaded.table, loaded.state, loaded.full_load_rows) == ("items", TABLE_COMPLETED, 11)
    assert (result.tables_loaded, result.tables_errored, result.full_load_rows) == (1, 1, 11)
    assert not bronze.table_dir(source_db.schema, "no_such_table").exists()


def test_statistics_carry_what_describe_table_statistics_reports(source_db, items, full_load):
    stats = full_load(source_db, "items", clock=lambda: FIXED_TRANSFER_TIME).tables[0]
    assert (stats.schema, stats.table, stats.full_load_rows, stats.state, stats.error_message) == (
        source_db.schema,
        "items",
        11,
        "Table completed",
        None,
    )
    assert (stats.started_at, stats.finished_at) == (FIXED_TRANSFER_TIME, FIXED_TRANSFER_TIME)


def test_a_source_column_named_like_a_dms_column_is_a_table_error(source_db, full_load, bronze):
    source_db.create_table(
        "clash",
        sa.Column("id", sa.Integer, primary_key=True),
        sa.Column("Op", sa.String(1)),
        rows=[{"id": 1, "Op": "x"}],
    )
    stats = full_load(source_db, "clash").tables[0]
    assert stats.state == TABLE_ERROR
    assert "'Op'" in stats.error_message
    assert not bronze.table_dir(source_db.schema, "clash").exists()


def test_the_default_sink_puts_objects_into_the_settings_bucket_with_sse(
    sqlite_source, table_mapping, s3_settings
):
    sqlite_source.create_table(
        "items", sa.Column("id", sa.Integer, primary_key=True), rows=[{"id": 1}, {"id": 2}]
    )
    with mock_aws():
        s3 = boto3.client("s3", region_name="eu-west-1")
        s3.create_bucket(Bucket="raw", CreateBucketConfiguration={"LocationConstraint": "eu-west-1"})
        result = run_full_load(
            table_mapping("main", "items"), s3_settings, sqlite_source.url, max_rows_per_file=1
        )
        listed = s3.list_objects_v2(Bucket="raw")["Contents"]
        keys = sorted(entry["Key"] for entry in listed)
        encryption = s3.head_object(Bucket="raw", Key=keys[0])["ServerSideEncryption"]
    assert keys == [
        "bronze/orders/orders-20261121T0700Z/main/items/LOAD00000001.parquet",
        "bronze/orders/orders-20261121T0700Z/main/items/LOAD00000002.parquet",
    ]
    assert encryption == "AES256"
    assert result.files == tuple(f"s3://raw/{key}" for key in keys)


def test_an_unreachable_postgresql_source_fails_the_run_without_showing_the_password(
    bronze, table_mapping, s3_settings, unused_tcp_port
):
    url = f"postgresql+psycopg://loader:s3cret-pw@127.0.0.1:{unused_tcp_port}/shop"
    with pytest.raises(SourceUnreachable) as raised:
        run_full_load(table_mapping("public", "orders"), s3_settings, url, bronze.sink)
    message = str(raised.value)
    assert f"postgresql+psycopg://loader:***@127.0.0.1:{unused_tcp_port}/shop" in message
    assert "s3cret-pw" not in message
    assert not bronze.root.exists()


def test_a_missing_sqlite_file_is_unreachable_and_is_not_created(
    tmp_path, bronze, table_mapping, s3_settings
):
    missing = tmp_path / "nowhere.db"
    with pytest.raises(SourceUnreachable, match="does not exist"):
        run_full_load(table_mapping("main", "orders"), s3_settings, f"sqlite:///{missing}", bronze.sink)
    assert not missing.exists()
