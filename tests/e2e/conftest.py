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
from icetide_local.postgres import temporary_postgres


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
def postgres_url() -> Iterator[str]:
    """A throwaway PostgreSQL server for the session (installed and started by icetide_local.postgres)."""
    with temporary_postgres(database="icetide_e2e") as url:
        yield url


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
