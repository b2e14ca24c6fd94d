"""The embedded default store: one SQLite file in WAL mode, survives restarts, no server to run.

Several processes may open the same file (WAL lets readers run beside the one writer); writes take
the database's write lock up front (`BEGIN IMMEDIATE`) so the read-check-write of optimistic
concurrency cannot interleave with another writer's, and `busy_timeout_ms` bounds the wait for it: a
write transaction another process holds open fails the call with `StoreTimeout` once it has passed.
Within a process one connection is shared behind a lock, whose wait is bounded the same way.

A connection must not cross `os.fork()` (SQLite's own rule: the child would share the parent's locks and
file handles). So the connection is closed before a fork, while the store's lock is taken and the
connection idle (`ForkSafeLock`), and each process opens it again on its next call; one that was busy
past the wait crosses the fork, and the child leaves it alone (`abandon`) and opens its own.

Opened `read_only` (the CLI's `list`, `get` and `history`), the store is an existing file looked at through
`sqlite_read`: no directory, file or table is created, no write lock is taken (so none is waited for behind a
writer), a log a writer left is neither checkpointed into the file nor removed, and a store nobody has open is
left without `-wal`/`-shm` files; every write fails.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from toolscore.collector.forks import ForkSafeLock, abandon
from toolscore.collector.registry._errors import StoreTimeout
from toolscore.collector.registry.stores._sql_base import Cursor, SqlStore
from toolscore.collector.sqlite_read import connect_read_only

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
    """`ExpectationStore` in a SQLite file (created with its parent directory when missing, unless `read_only`)."""

    def __init__(
        self, path: str | Path = ".toolscore/registry.db", *, busy_timeout_ms: int = 5000, read_only: bool = False
    ) -> None:
        """`read_only`: an existing store, left as it is (see the module docstring); one without the registry's
        tables fails here (`NoRegistryTables`) rather than at its first call."""
        self.path = Path(path)
        self.timeout_s = busy_timeout_ms / 1000
        self._in_memory = str(path) == ":memory:"  # private to the process: a child's copy is its own
        self._read_only = read_only
        if not self._in_memory and not read_only:
            self.path.parent.mkdir(parents=True, exist_ok=True)
        self._busy_timeout_ms = int(busy_timeout_ms)
        self._lock = ForkSafeLock(before_fork=self._park, after_in_child=self._disown)
        self._closed = False
        self._conn: sqlite3.Connection | None = self._open()
        if read_only:
            try:
                self._check_tables()
            except BaseException:
                self.close()
                raise
            return
        with self._write() as cur:
            for statement in _SCHEMA.replace("{p}", self.prefix).split(";"):
                if statement.strip():
                    cur.execute(statement)

    def _missing(self, cur: Cursor, names: tuple[str, ...]) -> list[str]:
        cur.execute("SELECT name FROM sqlite_master WHERE type IN ('table', 'index')")
        present = {str(name) for (name,) in cur.fetchall()}
        return [name for name in names if self.prefix + name not in present]

    def _open(self) -> sqlite3.Connection:
        if self._read_only:
            conn = connect_read_only(self.path, check_same_thread=False)
            conn.isolation_level = None
        else:
            conn = sqlite3.connect(
                str(self.path), timeout=self._busy_timeout_ms / 1000, isolation_level=None, check_same_thread=False
            )
            conn.execute("PRAGMA journal_mode=WAL")
            conn.execute("PRAGMA synchronous=NORMAL")
        conn.execute(f"PRAGMA busy_timeout={self._busy_timeout_ms}")
        return conn

    def _connection(self) -> sqlite3.Connection:
        """The shared connection, opened again after a fork put it away."""
        if self._conn is None:
            if self._closed:
                raise sqlite3.ProgrammingError("Cannot operate on a closed database.")
            self._conn = self._open()
        return self._conn

    def _park(self) -> None:
        """Before a fork (the connection idle): close it, so that the child inherits none of it."""
        if self._conn is not None and not self._in_memory:
            self._conn.close()
            self._conn = None

    def _disown(self) -> None:
        """In a forked child: a connection that crossed the fork busy is the parent's; the child opens its own."""
        if self._conn is not None and not self._in_memory:
            abandon(self._conn)
            self._conn = None

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
            yield self._connection().cursor()

    @contextmanager
    def _write(self) -> Iterator[Cursor]:
        with self._turn(), self._busy_is_timeout():
            conn = self._connection()
            cur = conn.cursor()
            cur.execute("BEGIN IMMEDIATE")
            try:
                yield cur
            except BaseException:
                conn.rollback()
                raise
            conn.commit()

    def close(self) -> None:
        with self._lock:
            self._closed = True
            if self._conn is not None:
                self._conn.close()
                self._conn = None
