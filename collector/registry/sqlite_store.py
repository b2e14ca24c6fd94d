"""The embedded default store: one SQLite file in WAL mode, survives restarts, no server to run.

Several processes may open the same file (WAL lets readers run beside the one writer); writes take
the database's write lock up front (`BEGIN IMMEDIATE`) so the read-check-write of optimistic
concurrency cannot interleave with another writer's, and `busy_timeout_ms` bounds the wait for it: a
write transaction another process holds open fails the call with `StoreTimeout` once it has passed.
Within a process one connection is shared behind a lock, whose wait is bounded the same way.
"""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from toolscore.collector.registry.errors import StoreTimeout
from toolscore.collector.registry.sql_base import Cursor, SqlStore

__all__ = ["TABLES", "SqliteStore"]

_SCHEMA = """
CREATE TABLE IF NOT EXISTS {p}expectations (
    name TEXT PRIMARY KEY,
    version INTEGER NOT NULL,
    live INTEGER NOT NULL,
    body TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS {p}changes (
    seq INTEGER PRIMARY KEY AUTOINCREMENT,
    name TEXT NOT NULL,
    kind TEXT NOT NULL,
    version INTEGER NOT NULL,
    body TEXT NOT NULL,
    at_ns INTEGER NOT NULL
);
CREATE INDEX IF NOT EXISTS {p}changes_by_name ON {p}changes (name, seq);
CREATE INDEX IF NOT EXISTS {p}expectations_live ON {p}expectations (name) WHERE live;
CREATE TABLE IF NOT EXISTS {p}meta (
    key TEXT PRIMARY KEY,
    value INTEGER NOT NULL
);
"""


TABLES = tuple(f"{SqlStore.prefix}{name}" for name in ("expectations", "changes", "meta"))
"""The tables `_SCHEMA` creates, by which the CLI tells a registry file from a score store (`cli.store_files`)."""


class SqliteStore(SqlStore):
    """`ExpectationStore` in a SQLite file (created with its parent directory when missing)."""

    def __init__(self, path: str | Path = ".toolscore/registry.db", *, busy_timeout_ms: int = 5000) -> None:
        self.path = Path(path)
        self.timeout_s = busy_timeout_ms / 1000
        if str(path) != ":memory:":
            self.path.parent.mkdir(parents=True, exist_ok=True)
        self._lock = threading.Lock()
        self._conn = sqlite3.connect(
            str(path), timeout=busy_timeout_ms / 1000, isolation_level=None, check_same_thread=False
        )
        self._conn.execute("PRAGMA journal_mode=WAL")
        self._conn.execute("PRAGMA synchronous=NORMAL")
        self._conn.execute(f"PRAGMA busy_timeout={int(busy_timeout_ms)}")
        with self._write() as cur:
            for statement in _SCHEMA.replace("{p}", self.prefix).split(";"):
                if statement.strip():
                    cur.execute(statement)

    def _timeout(self, cause: str) -> StoreTimeout:
        return StoreTimeout(
            f"SQLite registry store {self.path}", self.timeout_s, "registry.store.busy_timeout_ms", cause
        )

    @contextmanager
    def _busy_is_timeout(self) -> Iterator[None]:
        """SQLITE_BUSY/LOCKED, raised once the busy timeout has passed, as the `StoreTimeout` it is."""
        try:
            yield
        except sqlite3.OperationalError as exc:
            if getattr(exc, "sqlite_errorcode", 0) & 0xFF not in (sqlite3.SQLITE_BUSY, sqlite3.SQLITE_LOCKED):
                raise
            raise self._timeout(f"{exc} (another connection holds a write transaction open)") from exc

    @contextmanager
    def _read(self) -> Iterator[Cursor]:
        with self._turn(), self._busy_is_timeout():
            yield self._conn.cursor()

    @contextmanager
    def _write(self) -> Iterator[Cursor]:
        with self._turn(), self._busy_is_timeout():
            cur = self._conn.cursor()
            cur.execute("BEGIN IMMEDIATE")
            try:
                yield cur
            except BaseException:
                self._conn.rollback()
                raise
            self._conn.commit()

    def close(self) -> None:
        with self._lock:
            self._conn.close()
