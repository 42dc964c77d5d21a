"""The throwaway PostgreSQL server: a loopback URL while it runs, nothing left once the context exits."""

from __future__ import annotations

import re
import threading
import time
from pathlib import Path

import pytest
import sqlalchemy as sa

from icetide_local import postgres
from icetide_local.postgres import PostgresBinaries, find_binaries, temporary_postgres

pytestmark = pytest.mark.postgres


def test_the_session_server_is_a_writable_loopback_postgresql(postgres_url):
    assert re.fullmatch(r"postgresql\+psycopg://icetide:[^@]+@127\.0\.0\.1:\d+/icetide_test", postgres_url)
    engine = sa.create_engine(postgres_url)
    try:
        with engine.begin() as connection:
            server_version = connection.execute(sa.text("SHOW server_version_num")).scalar_one()
            database = connection.execute(sa.text("SELECT current_database()")).scalar_one()
    finally:
        engine.dispose()
    assert int(server_version) >= 120000
    assert database == "icetide_test"


def test_the_server_is_gone_after_the_context_and_so_are_its_files():
    with temporary_postgres(database="scratch") as url:
        engine = sa.create_engine(url)
        with engine.connect() as connection:
            data_dir = Path(connection.execute(sa.text("SHOW data_directory")).scalar_one())
        engine.dispose()
        assert data_dir.is_dir()
    assert url.endswith("/scratch")
    gone = sa.create_engine(url, connect_args={"connect_timeout": 3})
    with pytest.raises(sa.exc.OperationalError):
        gone.connect()
    gone.dispose()
    assert not data_dir.exists()


def test_the_server_programs_are_found():
    binaries = find_binaries()
    assert binaries is not None
    assert binaries.initdb.name == "initdb" and binaries.initdb.is_file()
    assert binaries.postgres.name == "postgres" and binaries.postgres.is_file()


def test_two_processes_missing_the_server_programs_install_them_once(monkeypatch, tmp_path):
    """A second server start waits for the first one's install and uses it (dpkg's lock would
    fail a second ``apt-get install`` running at the same time)."""
    installed: list[PostgresBinaries] = []
    installs: list[str] = []
    start = threading.Barrier(2)
    found: dict[str, PostgresBinaries] = {}

    def fake_install(package: str) -> None:
        installs.append(package)
        time.sleep(0.3)  # the other process looks for the programs while this one installs
        installed.append(PostgresBinaries(tmp_path / "bin"))

    monkeypatch.setattr(postgres, "SETUP_LOCK", tmp_path / "setup.lock")
    monkeypatch.setattr(postgres.os, "geteuid", lambda: 0)
    monkeypatch.setattr(postgres, "find_binaries", lambda: installed[0] if installed else None)
    monkeypatch.setattr(postgres, "_apt_install", fake_install)

    def start_server(name: str) -> None:
        start.wait()
        found[name] = postgres.ensure_binaries()

    threads = [threading.Thread(target=start_server, args=(name,)) for name in ("first", "second")]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=10)

    assert installs == ["postgresql"]
    installed_once = PostgresBinaries(tmp_path / "bin")
    assert found == {"first": installed_once, "second": installed_once}
