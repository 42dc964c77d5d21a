"""Fixtures for the end-to-end tests: the `icetide` command run in-process, tables files, and a
PostgreSQL server."""

from __future__ import annotations

import json
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import sqlalchemy as sa

from icetide_cli.main import main

E2E_DATABASE = "icetide_e2e"


@dataclass(frozen=True)
class CliResult:
    exit_code: int
    out: str
    err: str

    @property
    def text(self) -> str:
        return self.out + self.err


@pytest.fixture
def icetide(capsys) -> Callable[..., CliResult]:
    """Run `icetide ARGS...` in this process; its exit code and what it printed."""

    def run(*args: object) -> CliResult:
        capsys.readouterr()
        exit_code = main([str(arg) for arg in args])
        captured = capsys.readouterr()
        return CliResult(exit_code, captured.out, captured.err)

    return run


@pytest.fixture
def write_tables(tmp_path) -> Callable[[list[dict[str, Any]]], Path]:
    """Write a tables file (a JSON list of control items) and return its path."""
    counter = iter(range(1, 1000))

    def write(items: list[dict[str, Any]]) -> Path:
        path = tmp_path / f"tables-{next(counter)}.json"
        path.write_text(json.dumps(items), encoding="utf-8")
        return path

    return write


@pytest.fixture(scope="session")
def postgres_url(postgres_server: str) -> str:
    """A database of its own on the run's PostgreSQL server (tests/conftest.py): the end-to-end
    tests' replication slot decodes the changes of its database only, none of the tests/local ones."""
    url = sa.engine.make_url(postgres_server)
    engine = sa.create_engine(url, isolation_level="AUTOCOMMIT")
    with engine.connect() as connection:
        connection.execute(sa.text(f"CREATE DATABASE {E2E_DATABASE}"))
    engine.dispose()
    return url.set(database=E2E_DATABASE).render_as_string(hide_password=False)


@pytest.fixture
def pg_schema(postgres_url: str) -> Iterator[tuple[str, sa.Engine]]:
    """A fresh schema of the session's server for one test (dropped after it), and an engine."""
    schema = f"e2e_{uuid.uuid4().hex[:8]}"
    engine = sa.create_engine(postgres_url)
    with engine.begin() as connection:
        connection.execute(sa.schema.CreateSchema(schema))
    yield schema, engine
    with engine.begin() as connection:
        connection.execute(sa.schema.DropSchema(schema, cascade=True))
    engine.dispose()
