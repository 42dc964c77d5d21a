"""The local stack's own parts, without Spark: the source endpoint, bronze staging, the data mover's
table errors, and `icetide local` argument errors."""

from __future__ import annotations

import json

import boto3
import pytest
import sqlalchemy as sa
from moto import mock_aws

from icetide_local.standins.dms.data_mover import (
    SourceTablesFailed,
    SourceUrlInvalid,
    replicator_mover,
    source_endpoint_settings,
)
from icetide_local.standins.dms.lifecycle import ReplicationTaskRun, TableStatistics
from icetide_local.standins.glue_spark import BronzeUriInvalid, stage_bronze


def test_the_source_endpoint_names_the_database_but_never_the_password():
    settings = source_endpoint_settings("postgresql+psycopg://loader:s3cr3t@db.internal:6543/sales")

    assert settings == {
        "EngineName": "postgres",
        "ServerName": "db.internal",
        "Port": 6543,
        "DatabaseName": "sales",
        "Username": "loader",
    }


def test_a_sqlite_source_is_a_file():
    assert source_endpoint_settings("sqlite:////data/shop.db") == {
        "EngineName": "sqlite",
        "DatabaseName": "/data/shop.db",
    }


def test_a_source_that_is_no_url_is_refused():
    with pytest.raises(SourceUrlInvalid, match=r"'shop\.db' is not a SQLAlchemy database URL"):
        source_endpoint_settings("shop.db")


def test_staging_copies_the_runs_files_only_keeping_their_folders(tmp_path):
    with mock_aws():
        s3 = boto3.client("s3", region_name="us-east-1")
        s3.create_bucket(Bucket="raw")
        s3.put_object(Bucket="raw", Key="bronze/t/run-1/main/t/LOAD00000001.parquet", Body=b"one")
        s3.put_object(Bucket="raw", Key="bronze/t/run-1/main/t/LOAD00000002.parquet", Body=b"two")
        s3.put_object(Bucket="raw", Key="bronze/t/run-10/main/t/LOAD00000001.parquet", Body=b"other run")

        copied = stage_bronze("s3://raw/bronze/t/run-1/", tmp_path)

    assert copied == 2
    assert sorted(str(path.relative_to(tmp_path)) for path in tmp_path.rglob("*.parquet")) == [
        "main/t/LOAD00000001.parquet",
        "main/t/LOAD00000002.parquet",
    ]
    assert (tmp_path / "main/t/LOAD00000002.parquet").read_bytes() == b"two"


def test_staging_needs_an_s3_uri(tmp_path):
    with pytest.raises(BronzeUriInvalid, match="--bronze_uri must be s3://bucket/prefix/"):
        stage_bronze("/local/folder", tmp_path)


def _task_run(*tables: str) -> ReplicationTaskRun:
    rules = [
        {"rule-type": "selection", "rule-id": str(n), "rule-name": str(n), "rule-action": "include",
         "object-locator": {"schema-name": "main", "table-name": table}}
        for n, table in enumerate(tables, start=1)
    ]  # fmt: skip
    return ReplicationTaskRun(
        task_arn="arn:aws:dms:eu-west-1:123456789012:task:t",
        task_identifier="t",
        migration_type="full-load",
        table_mappings={"rules": rules},
        task_settings={},
        source_endpoint={},
        target_s3_settings={"BucketName": "raw", "BucketFolder": "bronze/t/run", "DataFormat": "parquet"},
    )


def test_the_mover_reports_rows_per_table_and_fails_the_task_naming_a_missing_table(tmp_path):
    engine = sa.create_engine(f"sqlite:///{tmp_path / 'src.db'}")
    with engine.begin() as connection:
        connection.execute(sa.text("CREATE TABLE items (id INTEGER PRIMARY KEY, name TEXT)"))
        connection.execute(sa.text("INSERT INTO items VALUES (1, 'a'), (2, 'b'), (3, 'c')"))
    engine.dispose()
    move = replicator_mover(f"sqlite:///{tmp_path / 'src.db'}")

    with mock_aws():
        boto3.client("s3", region_name="us-east-1").create_bucket(Bucket="raw")
        statistics = move(_task_run("items"))
        with pytest.raises(SourceTablesFailed, match=r"main\.ghost does not exist"):
            move(_task_run("items", "ghost"))
        keys = [entry["Key"] for entry in boto3.client("s3").list_objects_v2(Bucket="raw")["Contents"]]

    assert statistics == [TableStatistics(schema="main", table="items", full_load_rows=3)]
    assert "bronze/t/run/main/items/LOAD00000001.parquet" in keys


def test_local_run_refuses_bad_arguments_before_starting_anything(tmp_path, write_tables, icetide):
    tables_file = write_tables([{"targetTableName": "t", "sourceSchema": "main", "sourceTable": "t"}])
    (tmp_path / "broken.json").write_text("[{")

    def local_run(source, tables):
        return icetide("local", "run", "--workspace", tmp_path / "ws", "--source", source, "--tables", tables)

    not_a_url = local_run("shop.db", tables_file)
    not_json = local_run("sqlite:///x.db", tmp_path / "broken.json")
    empty = local_run("sqlite:///x.db", write_tables([]))

    assert (not_a_url.exit_code, not_json.exit_code, empty.exit_code) == (2, 2, 2)
    assert "--source: 'shop.db' is not a SQLAlchemy database URL" in not_a_url.err
    assert f"cannot read control items from {tmp_path / 'broken.json'}: not valid JSON" in not_json.err
    assert "holds no control item" in empty.err
    assert not (tmp_path / "ws").exists()


def test_status_shows_each_tables_run_state(tmp_path, icetide):
    (tmp_path / "state").mkdir()
    items = [
        {"targetTableName": {"S": "orders"}, "watermark": {"N": "42"},
         "lastRunId": {"S": "orders-20261121T0700Z"}, "lastRunStatus": {"S": "SUCCEEDED"},
         "lastRunTime": {"S": "2026-11-21T07:00:09Z"},
         "lastRunStats": {"M": {"rowsRead": {"N": "5"}, "rowsInserted": {"N": "3"}, "rowsUpdated": {"N": "2"},
                                "rowsDeleted": {"N": "0"}}}},
        {"targetTableName": {"S": "prices"}, "lastRunId": {"S": "prices-20261121T0700Z"},
         "lastRunStatus": {"S": "FAILED"}, "lastRunTime": {"S": "2026-11-21T07:00:03Z"},
         "lastFailedState": {"S": "Run Glue job"}, "lastRunError": {"S": "price: decimal(10,2) -> string"}},
    ]  # fmt: skip
    (tmp_path / "state" / "control-table.json").write_text(json.dumps(items))

    as_json = icetide("local", "status", "--workspace", tmp_path, "--json")
    as_table = icetide("local", "status", "--workspace", tmp_path)

    assert as_json.exit_code == 0
    assert json.loads(as_json.out) == [
        {"targetTableName": "orders", "lastRunStatus": "SUCCEEDED", "watermark": 42,
         "lastRunId": "orders-20261121T0700Z", "lastRunTime": "2026-11-21T07:00:09Z",
         "rowsInserted": 3, "rowsUpdated": 2, "rowsDeleted": 0},
        {"targetTableName": "prices", "lastRunStatus": "FAILED", "watermark": None,
         "lastRunId": "prices-20261121T0700Z", "lastRunTime": "2026-11-21T07:00:03Z",
         "rowsInserted": None, "rowsUpdated": None, "rowsDeleted": None,
         "lastFailedState": "Run Glue job", "lastRunError": "price: decimal(10,2) -> string"},
    ]  # fmt: skip
    assert as_table.out.splitlines()[1].split() == [
        "orders", "SUCCEEDED", "42", "orders-20261121T0700Z", "2026-11-21T07:00:09Z", "3", "2", "0"
    ]  # fmt: skip
    assert "prices failed in Run Glue job: price: decimal(10,2) -> string" in as_table.out
