"""Fixtures for the local stack's tests: source databases (SQLite, and a real PostgreSQL server),
a directory standing for the bronze bucket, and DMS task inputs written the way DMS documents them."""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import sqlalchemy as sa

from icetide_local.standins.dms.replicator import ReplicationResult, run_full_load
from icetide_local.standins.dms.s3_target import LocalDirectorySink
from local.dms_cdc import selection_rule

BUCKET_FOLDER = "bronze/orders/orders-20261121T0700Z"


@pytest.fixture(scope="session")
def postgres_url(postgres_server: str) -> str:
    """The run's PostgreSQL server (tests/conftest.py); it fails (never skips) if it cannot start."""
    return postgres_server


@dataclass
class SourceDatabase:
    """A source database for one test: where it is, and the schema its tables go into."""

    dialect: str
    url: str
    engine: sa.Engine
    schema: str

    def create_table(
        self, name: str, *columns: sa.Column[Any], rows: Sequence[dict[str, Any]] = ()
    ) -> sa.Table:
        table = sa.Table(name, sa.MetaData(), *columns, schema=self.schema)
        table.create(self.engine)
        if rows:
            with self.engine.begin() as connection:
                connection.execute(table.insert(), list(rows))
        return table

    def has_table(self, name: str) -> bool:
        return sa.inspect(self.engine).has_table(name, schema=self.schema)

    def count(self, table: sa.Table) -> int:
        with self.engine.connect() as connection:
            return int(connection.execute(sa.select(sa.func.count()).select_from(table)).scalar_one())


@pytest.fixture
def sqlite_source(tmp_path) -> Iterator[SourceDatabase]:
    """A SQLite file; its only schema is ``main``, the name DMS selection rules then use."""
    url = f"sqlite:///{tmp_path / 'source.db'}"
    engine = sa.create_engine(url)
    yield SourceDatabase("sqlite", url, engine, "main")
    engine.dispose()


@pytest.fixture
def postgresql_source(postgres_url) -> Iterator[SourceDatabase]:
    """A fresh schema in the session's PostgreSQL server, dropped afterwards."""
    schema = f"src_{uuid.uuid4().hex[:12]}"
    engine = sa.create_engine(postgres_url)
    with engine.begin() as connection:
        connection.execute(sa.schema.CreateSchema(schema))
    yield SourceDatabase("postgresql", postgres_url, engine, schema)
    with engine.begin() as connection:
        connection.execute(sa.schema.DropSchema(schema, cascade=True))
    engine.dispose()


@pytest.fixture(params=["sqlite", pytest.param("postgresql", marks=pytest.mark.postgres)])
def source_db(request) -> SourceDatabase:
    """The same test against SQLite (the local default) and PostgreSQL (a real DMS source)."""
    return request.getfixturevalue(f"{request.param}_source")


@pytest.fixture
def s3_settings() -> dict[str, Any]:
    """A run's S3 target endpoint settings, as docs/contracts.md says create_replication_task sets them."""
    return {
        "BucketName": "raw",
        "BucketFolder": BUCKET_FOLDER,
        "DataFormat": "parquet",
        "ParquetVersion": "parquet-2-0",
        "TimestampColumnName": "dms_timestamp",
        "IncludeOpForFullLoad": True,
        "AddColumnName": True,
        "EncryptionMode": "SSE_S3",
    }


@pytest.fixture
def table_mapping() -> Callable[..., dict[str, Any]]:
    """Builds a DMS table mapping with one include rule, in the JSON shape of the DMS user guide."""

    def build(schema: str, table: str, *filters: dict[str, Any]) -> dict[str, Any]:
        return {"rules": [selection_rule(schema, table, *filters)]}

    return build


@dataclass
class BronzeBucket:
    """A directory standing for the raw bucket, and readers of what the DMS stand-in wrote there."""

    root: Path

    @property
    def sink(self) -> LocalDirectorySink:
        return LocalDirectorySink(self.root)

    def table_dir(self, schema: str, table: str) -> Path:
        return self.root / BUCKET_FOLDER / schema / table

    def file_names(self, schema: str, table: str) -> list[str]:
        return sorted(path.name for path in self.table_dir(schema, table).iterdir())

    def read(self, schema: str, table: str) -> pa.Table:
        files = sorted(self.table_dir(schema, table).glob("*.parquet"))
        return pa.concat_tables(pq.read_table(path) for path in files)

    def ids(self, schema: str, table: str) -> set[int]:
        if not self.table_dir(schema, table).exists():
            return set()
        return set(self.read(schema, table).column("id").to_pylist())


@pytest.fixture
def bronze(tmp_path) -> BronzeBucket:
    return BronzeBucket(tmp_path / "bucket")


@pytest.fixture
def full_load(bronze, table_mapping, s3_settings) -> Callable[..., ReplicationResult]:
    """Runs the DMS stand-in on one table of a source database, writing into ``bronze``."""

    def run(
        source: SourceDatabase, table: str, *filters: dict[str, Any], **options: Any
    ) -> ReplicationResult:
        mapping = table_mapping(source.schema, table, *filters)
        return run_full_load(mapping, s3_settings, source.url, bronze.sink, **options)

    return run
