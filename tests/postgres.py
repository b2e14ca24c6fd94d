"""A real PostgreSQL server for the test session: `initdb` into a temporary directory, `pg_ctl start`
on a free 127.0.0.1 port, stopped at the end. Each test gets its own schema (via `search_path`), so
tests never see each other's tables. Skips when no PostgreSQL binaries are installed
(`.ci/install-postgres` installs them).
"""

from __future__ import annotations

import glob
import os
import shutil
import socket
import subprocess
import tempfile
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

__all__ = ["postgres_dsn", "postgres_server"]


def _bin_dir() -> Path | None:
    candidates = sorted(glob.glob("/usr/lib/postgresql/*/bin/initdb"), key=lambda p: int(Path(p).parts[-3]))
    if candidates:
        return Path(candidates[-1]).parent
    found = shutil.which("initdb")
    return Path(found).resolve().parent if found else None


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _as_server_user(argv: list[str]) -> list[str]:
    """initdb refuses to run as root: run the server as the `postgres` system user then."""
    if os.geteuid() != 0:
        return argv
    return ["runuser", "-u", "postgres", "--", *argv]


@pytest.fixture(scope="session")
def postgres_server() -> Iterator[str]:
    """The base DSN of a throwaway server (superuser `toolscore`, trust auth, database `postgres`)."""
    bin_dir = _bin_dir()
    if bin_dir is None:
        pytest.fail("PostgreSQL is not installed: `make test` installs it with .ci/install-postgres")
    root = Path(tempfile.mkdtemp(prefix="toolscore-pg-"))
    if os.geteuid() == 0:
        shutil.chown(root, "postgres", "postgres")
    data, port = root / "data", _free_port()
    pg_ctl = str(bin_dir / "pg_ctl")
    subprocess.run(
        _as_server_user([str(bin_dir / "initdb"), "-D", str(data), "-U", "toolscore", "-A", "trust", "--no-sync"]),
        check=True,
        capture_output=True,
    )
    options = f"-p {port} -k {root} -c listen_addresses=127.0.0.1 -c fsync=off -c max_connections=200"
    start = [pg_ctl, "-D", str(data), "-l", str(root / "log"), "-w", "-t", "60", "-o", options, "start"]
    result = subprocess.run(_as_server_user(start), check=False, capture_output=True, text=True)
    if result.returncode != 0:
        log = (root / "log").read_text() if (root / "log").exists() else ""
        pytest.fail(f"pg_ctl start failed: {result.stderr}\n{log}")
    try:
        yield f"host=127.0.0.1 port={port} user=toolscore dbname=postgres"
    finally:
        stop = [pg_ctl, "-D", str(data), "-m", "fast", "-w", "stop"]
        subprocess.run(_as_server_user(stop), check=False, capture_output=True)
        shutil.rmtree(root, ignore_errors=True)


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
