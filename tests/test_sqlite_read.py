"""A read-only look at a WAL-mode SQLite file leaves it, and its directory, as it found them."""

from __future__ import annotations

import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from toolscore.collector.sqlite_read import connect_read_only


def _wal_database(path: Path) -> None:
    """A WAL-mode file with one row, closed: as a stopped collector leaves its store (no -wal, no -shm)."""
    db = sqlite3.connect(path, isolation_level=None)
    db.execute("PRAGMA journal_mode=WAL")
    db.execute("CREATE TABLE t (x INTEGER)")
    db.execute("INSERT INTO t VALUES (1)")
    db.close()


def _read(path: Path) -> list[int]:
    db = connect_read_only(path)
    try:
        return [x for (x,) in db.execute("SELECT x FROM t ORDER BY x")]
    finally:
        db.close()


def test_a_look_at_an_idle_store_leaves_no_file_and_changes_none(tmp_path: Path) -> None:
    path = tmp_path / "store.db"
    _wal_database(path)
    before = (path.read_bytes(), path.stat().st_mtime_ns)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["store.db"]
    assert _read(path) == [1]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["store.db"]  # mode=ro alone leaves -wal and -shm
    assert (path.read_bytes(), path.stat().st_mtime_ns) == before


def test_the_connection_cannot_write(tmp_path: Path) -> None:
    path = tmp_path / "store.db"
    _wal_database(path)
    db = connect_read_only(path)
    try:
        with pytest.raises(sqlite3.OperationalError, match="readonly"):
            db.execute("INSERT INTO t VALUES (2)")
    finally:
        db.close()
    assert _read(path) == [1]


def test_a_look_beside_a_writer_sees_its_commits_and_leaves_its_files(tmp_path: Path) -> None:
    path = tmp_path / "store.db"
    _wal_database(path)
    writer = sqlite3.connect(path, isolation_level=None)
    try:
        writer.execute("INSERT INTO t VALUES (2)")  # in the log, not yet in the file
        assert _read(path) == [1, 2]
        assert {p.name for p in tmp_path.iterdir()} == {"store.db", "store.db-wal", "store.db-shm"}
        writer.execute("INSERT INTO t VALUES (3)")
    finally:
        writer.close()
    assert _read(path) == [1, 2, 3]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["store.db"]


@pytest.mark.integration
def test_the_log_of_a_writer_that_died_is_read_and_left_unapplied(tmp_path: Path) -> None:
    """A checkpoint would write the database: the look leaves that to the next writer."""
    path = tmp_path / "store.db"
    _wal_database(path)
    died = (
        "import os, sqlite3, sys; db = sqlite3.connect(sys.argv[1], isolation_level=None); "
        "db.execute('INSERT INTO t VALUES (2)'); os._exit(0)"
    )
    subprocess.run([sys.executable, "-c", died, str(path)], check=True, timeout=60)
    files = {p.name: p.read_bytes() for p in tmp_path.iterdir()}
    assert set(files) == {"store.db", "store.db-wal", "store.db-shm"}
    assert _read(path) == [1, 2]
    assert {p.name: p.read_bytes() for p in tmp_path.iterdir() if p.name != "store.db-shm"} == {
        name: data for name, data in files.items() if name != "store.db-shm"
    }


def test_no_file_is_created_where_there_is_none(tmp_path: Path) -> None:
    with pytest.raises(sqlite3.OperationalError):
        connect_read_only(tmp_path / "none.db")
    assert list(tmp_path.iterdir()) == []
