"""A real PostgreSQL server for the tests: `initdb` into a temporary directory, `pg_ctl start` on a free
127.0.0.1 port. One server serves the whole session (`postgres_server`), and each test gets its own
schema of it (`postgres_dsn`, via `search_path`), so tests never see each other's tables; a test that
stops and restarts the server gets one of its own (`own_postgres`). Fails when no PostgreSQL binaries
are installed (`.ci/install-postgres` installs them).
"""

from __future__ import annotations

import glob
import os
import shutil
import signal
import subprocess
import tempfile
import urllib.parse
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from tests.serve_harness import free_port

__all__ = [
    "POSTGRES_PARAM",
    "PostgresServer",
    "own_postgres",
    "postgres_dsn",
    "postgres_icu_dsn",
    "postgres_server",
    "postgres_url",
]


def _bin_dir() -> Path | None:
    candidates = sorted(glob.glob("/usr/lib/postgresql/*/bin/initdb"), key=lambda p: int(Path(p).parts[-3]))
    if candidates:
        return Path(candidates[-1]).parent
    found = shutil.which("initdb")
    return Path(found).resolve().parent if found else None


def _as_server_user(argv: list[str]) -> list[str]:
    """initdb refuses to run as root: run the server as the `postgres` system user then."""
    if os.geteuid() != 0:
        return argv
    return ["runuser", "-u", "postgres", "--", *argv]


class PostgresServer:
    """A throwaway cluster (superuser `toolscore`, trust auth, database `postgres`) that can be stopped
    and started again on the same port, as a database restart or failover looks to its clients."""

    def __init__(self) -> None:
        bin_dir = _bin_dir()
        if bin_dir is None:
            pytest.fail("PostgreSQL is not installed: `make test` installs it with .ci/install-postgres")
        self._pg_ctl = str(bin_dir / "pg_ctl")
        self.root = Path(tempfile.mkdtemp(prefix="toolscore-pg-"))
        if os.geteuid() == 0:
            shutil.chown(self.root, "postgres", "postgres")
        self.data, self.port = self.root / "data", free_port()
        initdb = [str(bin_dir / "initdb"), "-D", str(self.data), "-U", "toolscore", "-A", "trust", "--no-sync"]
        subprocess.run(_as_server_user(initdb), check=True, capture_output=True)

    @property
    def dsn(self) -> str:
        return f"host=127.0.0.1 port={self.port} user=toolscore dbname=postgres"

    def start(self) -> None:
        options = f"-p {self.port} -k {self.root} -c listen_addresses=127.0.0.1 -c fsync=off -c max_connections=200"
        log = self.root / "log"
        start = [self._pg_ctl, "-D", str(self.data), "-l", str(log), "-w", "-t", "60", "-o", options, "start"]
        result = subprocess.run(_as_server_user(start), check=False, capture_output=True, text=True)
        if result.returncode != 0:
            pytest.fail(f"pg_ctl start failed: {result.stderr}\n{log.read_text() if log.exists() else ''}")

    def stop(self) -> None:
        """A fast shutdown: sessions are terminated, as in a restart."""
        stop = [self._pg_ctl, "-D", str(self.data), "-m", "fast", "-w", "stop"]
        subprocess.run(_as_server_user(stop), check=False, capture_output=True)

    def remove(self) -> None:
        self.stop()
        shutil.rmtree(self.root, ignore_errors=True)

    @contextmanager
    def frozen(self) -> Iterator[None]:
        """The server stopped (SIGSTOP), postmaster and every backend, until the block ends (SIGCONT): its host
        still acknowledges every byte, and nothing answers, as with a hung process or a paused VM."""
        postmaster = int((self.data / "postmaster.pid").read_text().split()[0])
        processes = [postmaster, *_children(postmaster)]  # the postmaster first: it forks no backend once stopped
        for pid in processes:
            os.kill(pid, signal.SIGSTOP)
        try:
            yield
        finally:
            for pid in reversed(processes):
                os.kill(pid, signal.SIGCONT)


def _children(parent: int) -> list[int]:
    """The processes whose parent is `parent` (from /proc)."""
    found = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:  # the process ended meanwhile
            continue
        if int(fields[1]) == parent:
            found.append(int(stat.parent.name))
    return found


@pytest.fixture(scope="session")
def postgres_server() -> Iterator[str]:
    """The base DSN of the session's server."""
    server = PostgresServer()
    try:
        server.start()
        yield server.dsn
    finally:
        server.remove()


@pytest.fixture
def own_postgres() -> Iterator[PostgresServer]:
    """A started server for this test alone, to stop and start at will."""
    server = PostgresServer()
    try:
        server.start()
        yield server
    finally:
        server.remove()


@pytest.fixture
def postgres_dsn(postgres_server: str) -> Iterator[str]:
    """A DSN whose `search_path` is a fresh schema, dropped after the test."""
    import psycopg

    schema = f"t_{uuid.uuid4().hex[:12]}"
    with psycopg.connect(postgres_server, autocommit=True) as conn:
        conn.execute(f"CREATE SCHEMA {schema}")
    try:
        yield f"{postgres_server} options='-c search_path={schema}'"
    finally:
        with psycopg.connect(postgres_server, autocommit=True) as conn:
            conn.execute(f"DROP SCHEMA {schema} CASCADE")


@pytest.fixture
def postgres_icu_dsn(postgres_server: str) -> Iterator[str]:
    """A DSN of a fresh database whose default collation is ICU's root locale, dropped after the test: one where
    `ORDER BY name` sorts `_b` before `-b` before `a` before `B`, unlike Python."""
    import psycopg

    database = f"icu_{uuid.uuid4().hex[:12]}"
    create = f"CREATE DATABASE {database} ENCODING 'UTF8' LOCALE 'C.UTF-8' LOCALE_PROVIDER icu ICU_LOCALE 'und'"
    with psycopg.connect(postgres_server, autocommit=True) as conn:
        conn.execute(f"{create} TEMPLATE template0".encode())
    try:
        yield postgres_server.replace("dbname=postgres", f"dbname={database}")
    finally:
        with psycopg.connect(postgres_server, autocommit=True) as conn:
            conn.execute(f"DROP DATABASE {database} WITH (FORCE)".encode())


def postgres_url(dsn: str) -> str:
    """The `postgresql://` URL of a key=value DSN (what an operator would pass to `--db`)."""
    from psycopg.conninfo import conninfo_to_dict

    parts = conninfo_to_dict(dsn)
    query = "options=" + urllib.parse.quote(parts["options"], safe="") if "options" in parts else ""
    return f"postgresql://{parts['user']}@{parts['host']}:{parts['port']}/{parts['dbname']}?{query}"


POSTGRES_PARAM = pytest.param("postgres", marks=pytest.mark.integration, id="postgres")
"""The `postgres` case of a test parametrized over stores: it needs the PostgreSQL server, so it is `integration`."""
