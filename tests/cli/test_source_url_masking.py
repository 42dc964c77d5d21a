"""A `--source` URL the CLI refuses is shown without its password, whatever the command."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from icetide_local.standins.dms.source import masked_url

PASSWORD = "s3cret-Pa55"
# URLs SQLAlchemy cannot read (a missing ":" or "/", a port that is no number): no parser names
# their password, yet it is there.
UNREADABLE = [
    f"postgresql//etl:{PASSWORD}@db.internal:5432/shop",
    f"postgresql:/etl:{PASSWORD}@db.internal/shop",
    f"postgresql+psycopg://etl:{PASSWORD}@db.internal:fivefourthreetwo/shop",
    f"etl:{PASSWORD}@db.internal/shop",
]


def _commands(workspace: Path, tables: Path, source: str) -> dict[str, tuple[str, ...]]:
    return {
        "local run": (
            "local",
            "run",
            "--workspace",
            str(workspace),
            "--source",
            source,
            "--tables",
            str(tables),
        ),
        "run": ("run", "--workspace", str(workspace), "--source", source, "--tables", str(tables)),
        "reload": (
            "reload",
            "orders",
            "--workspace",
            str(workspace),
            "--source",
            source,
            "--tables",
            str(tables),
        ),
        "verify": ("verify", "orders", "--workspace", str(workspace), "--source", source),
    }


@pytest.mark.parametrize("source", UNREADABLE)
@pytest.mark.parametrize("command", ["local run", "run", "reload", "verify"])
def test_a_refused_source_url_is_shown_without_its_password(
    tmp_path, icetide, make_workspace, command, source
):
    tables = tmp_path / "tables.json"
    tables.write_text(
        json.dumps([{"targetTableName": "orders", "sourceSchema": "main", "sourceTable": "orders"}])
    )

    # An existing workspace: reload and verify look for it before they read --source.
    workspace = make_workspace([])

    result = icetide(*_commands(workspace, tables, source)[command])

    assert result.exit_code == 2
    assert "is not a SQLAlchemy database URL" in result.err
    assert PASSWORD not in result.err + result.out
    assert "***@db.internal" in result.err


@pytest.mark.parametrize(
    ("url", "shown"),
    [
        (
            f"postgresql+psycopg://etl:{PASSWORD}@db.internal:5432/shop",
            "postgresql+psycopg://etl:***@db.internal:5432/shop",
        ),
        ("sqlite:///shop.db", "sqlite:///shop.db"),
        (f"postgresql//etl:{PASSWORD}@db.internal/shop", "***@db.internal/shop"),
        ("shop.db", "shop.db"),
    ],
)
def test_masked_url_hides_a_password_a_parser_finds_and_one_it_cannot(url, shown):
    assert masked_url(url) == shown
