"""PostgreSQL, for several collector replicas sharing one registry (psycopg 3).

Writers are serialized by a transaction-scoped advisory lock, so the change log's `seq` is assigned in
commit order and a replica reading `changes_since(seq)` can never miss a change that committed late
with a lower number. Every write sends `NOTIFY <prefix>changes` (delivered at commit); replicas that
`listen` wake on it instead of waiting for their next poll. The poll stays as the fallback, because a
notification is lost when the listening connection drops; a dropped listener is reconnected with
backoff, and its return counts as a change, so what was missed meanwhile is read at once.

A database that hangs rather than refusing (a session holding a lock on the tables, a server stuck in
recovery) would otherwise hold the poll and every API call for ever: each connection is given a
server-side `statement_timeout` of `query_timeout_s`, so a query that waits or runs longer fails as a
`StoreTimeout`, and the poll reports it as the outage it is. A server that stops answering at all is
bounded on the client's side: connecting gives up after `connect_timeout_s`; TCP keepalives and
`tcp_user_timeout` drop a connection whose peer's host went silent (gone, partitioned) after about
`network_timeout_s` (`tcp_bounds`); and a call that gets no reply `network_timeout_s` past its
`query_timeout_s` (a frozen server, whose host still acknowledges every byte) has its connection shut
down by a `Watchdog`. Each fails the call as a `StoreTimeout` naming the setting, and the connection is
opened again on the next call.

A forked child (gunicorn `--preload`, Celery's prefork pool) inherits the parent's connections, which are
the parent's server sessions: it leaves them alone and opens its own (`_disown`).

Opened `read_only` (the CLI's `list`, `get` and `history`), every session is `default_transaction_read_only`:
the server refuses any write, and the tables are not created (a database without them fails the opening with
`NoRegistryTables`).
"""

from __future__ import annotations

import hashlib
import logging
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager

import psycopg
from psycopg.conninfo import conninfo_to_dict, make_conninfo

from toolscore.collector.forks import ForkSafeLock, abandon
from toolscore.collector.registry._errors import StoreTimeout, StoreUnavailable
from toolscore.collector.registry._health import describe_error
from toolscore.collector.registry.stores._sql_base import Cursor, SqlStore
from toolscore.collector.registry.stores._watchdog import Watchdog

__all__ = ["PostgresStore", "tcp_bounds"]

_STORE = "PostgreSQL registry store"

_SCHEMA = """
CREATE TABLE IF NOT EXISTS {p}expectations (
    name TEXT PRIMARY KEY,
    version BIGINT NOT NULL,
    live BOOLEAN NOT NULL,
    body TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS {p}changes (
    seq BIGSERIAL PRIMARY KEY,
    name TEXT NOT NULL,
    kind TEXT NOT NULL,
    version BIGINT NOT NULL,
    body TEXT NOT NULL,
    at_ns BIGINT NOT NULL
);
CREATE TABLE IF NOT EXISTS {p}meta (
    key TEXT PRIMARY KEY,
    value BIGINT NOT NULL
);
"""

_INDEXES = {
    "changes_by_name": "CREATE INDEX {p}changes_by_name ON {p}changes (name, seq)",
    "expectations_live": 'CREATE INDEX {p}expectations_live ON {p}expectations (name COLLATE "C") WHERE live',
}
"""A name's history, and the live names in code point order (what a page of a list reads). Each is created only
when the catalog lacks it: even with `IF NOT EXISTS`, `CREATE INDEX` first locks its table against writes, which
would make every store opened wait for (and hold up) the writes in progress."""
_RELATIONS = ("expectations", "changes", "meta", *_INDEXES)
"""Every table and index the store needs: when the catalog has them all, opening it takes no lock."""

_log = logging.getLogger("toolscore.registry")

_RELISTEN_FIRST_S = 0.5
_RELISTEN_MAX_S = 30.0
"""Backoff between attempts to reconnect a lost listener: doubling from the first to the max."""

_KEEPALIVES_COUNT = 3


def tcp_bounds(network_timeout_s: float) -> dict[str, int]:
    """libpq's TCP settings for a connection that gives up on a silent peer after about `network_timeout_s`.

    An idle connection (the listener, the shared one between calls) is probed after half of it, then 3 times
    a sixth of it apart; data the peer does not acknowledge for all of it (`tcp_user_timeout`, which on Linux
    also bounds the probes) drops the connection. Without them a dead peer is noticed after the system's
    defaults: two hours of idleness, or some fifteen minutes of retransmissions.
    """
    return {
        "keepalives": 1,
        "keepalives_idle": max(1, round(network_timeout_s / 2)),
        "keepalives_interval": max(1, round(network_timeout_s / (2 * _KEEPALIVES_COUNT))),
        "keepalives_count": _KEEPALIVES_COUNT,
        "tcp_user_timeout": max(1, round(network_timeout_s * 1000)),
    }


class PostgresStore(SqlStore):
    """`ExpectationStore` in PostgreSQL; tables are created on first use (in the search_path's schema)."""

    P = "%s"
    BY_CODE_POINT = ' COLLATE "C"'

    def __init__(
        self,
        dsn: str,
        *,
        table_prefix: str = "toolscore_",
        listen: bool = True,
        connect_timeout_s: float = 10.0,
        query_timeout_s: float = 5.0,
        network_timeout_s: float = 10.0,
        read_only: bool = False,
    ) -> None:
        """TCP settings the DSN gives itself (`keepalives_idle=...`) are kept; the others follow `tcp_bounds`.
        `read_only`: see the module docstring."""
        self.prefix = table_prefix
        self._read_only = read_only
        self.timeout_s = query_timeout_s
        self._connect_timeout_s = max(2, round(connect_timeout_s))  # libpq's unit, and its least
        self._network_timeout_s = network_timeout_s
        given = conninfo_to_dict(dsn)
        tcp = {key: value for key, value in tcp_bounds(network_timeout_s).items() if key not in given}
        self._conninfo = make_conninfo(dsn, connect_timeout=self._connect_timeout_s, **tcp)
        self._watchdog = Watchdog("toolscore-registry-watchdog")
        self._channel = f"{table_prefix}changes"
        # the advisory lock key: one per table set, so two registries in one database do not contend
        self._lock_key = int.from_bytes(
            hashlib.blake2b(table_prefix.encode(), digest_size=8).digest(), "big", signed=True
        )
        self._lock = ForkSafeLock(after_in_child=self._disown)
        self._conn: psycopg.Connection[tuple[object, ...]] | None = None
        self._listener: psycopg.Connection[tuple[object, ...]] | None = None
        self._listen = listen
        self._relisten_at = 0.0
        self._relisten_delay = _RELISTEN_FIRST_S
        try:  # a registry waiting for its store opens it again: leak no connection nor thread per try
            self._conn = conn = self._connect()
            try:
                if read_only:
                    self._check_tables()
                else:
                    self._create_tables()
                if listen:
                    self._listener = self._start_listener()
            except BaseException:
                conn.close()
                raise
        except BaseException:
            self._watchdog.close()
            raise

    def _create_tables(self) -> None:
        """Create what the catalog lacks. Only then is the write lock taken, and the catalog read again under
        it: two replicas opening a new database at once do not both create an index (the second would fail)."""
        with self._read() as cur:
            if not self._missing(cur, _RELATIONS):
                return
        with self._write() as cur:
            cur.execute(_SCHEMA.replace("{p}", self.prefix))
            for name in self._missing(cur, tuple(_INDEXES)):
                cur.execute(_INDEXES[name].replace("{p}", self.prefix))

    def _missing(self, cur: Cursor, names: tuple[str, ...]) -> list[str]:
        """Those of `names` (without the prefix) that the search path's schemas have no table or index of."""
        cur.execute(
            "SELECT name FROM unnest(%s::text[]) WITH ORDINALITY AS n (name, i) WHERE to_regclass(%s || name) IS NULL"
            " ORDER BY i",
            (list(names), self.prefix),
        )
        return [str(name) for (name,) in cur.fetchall()]

    def _start_listener(self) -> psycopg.Connection[tuple[object, ...]]:
        listener = self._connect(autocommit=True)
        try:
            with self._answered(listener):
                listener.execute(f'LISTEN "{self._channel}"')
        except BaseException:
            listener.close()
            raise
        return listener

    def _connect(self, *, autocommit: bool = False) -> psycopg.Connection[tuple[object, ...]]:
        """A connection bounded at every step (see the module's docstring): connecting, each statement (the
        server cancels it past `query_timeout_s`), the network under it, and a server that stops answering."""
        try:
            conn = psycopg.connect(self._conninfo, autocommit=True)
        except psycopg.errors.ConnectionTimeout as exc:
            cause = f"connecting: {describe_error(exc)}"
            raise StoreTimeout(_STORE, self._connect_timeout_s, "registry.store.connect_timeout_s", cause) from exc
        try:
            with self._answered(conn):
                conn.execute(f"SET statement_timeout = {max(1, round(self.timeout_s * 1000))}")
                if self._read_only:
                    conn.execute("SET default_transaction_read_only = on")
            conn.autocommit = autocommit
        except BaseException:
            conn.close()
            raise
        return conn

    @contextmanager
    def _answered(self, conn: psycopg.Connection[tuple[object, ...]]) -> Iterator[None]:
        """The block's calls on `conn`, given up `network_timeout_s` past `query_timeout_s`: by then the server
        would have cancelled its statement and said so, so it is not answering at all. The connection is shut
        down (a `StoreTimeout`), and closed even if a reply made it in time: it is opened again on the next call."""
        seconds = self.timeout_s + self._network_timeout_s
        with self._watchdog.bound(conn.fileno(), seconds) as deadline:
            try:
                yield
            except psycopg.OperationalError as exc:
                if not deadline.passed:
                    raise
                cause = "no reply, not even the statement's cancellation; the connection was dropped"
                raise StoreTimeout(_STORE, seconds, "registry.store.network_timeout_s", cause) from exc
            finally:
                if deadline.passed:
                    conn.close()

    def _timeout(self, cause: str) -> StoreTimeout:
        return StoreTimeout(_STORE, self.timeout_s, "registry.store.query_timeout_s", cause)

    @contextmanager
    def _canceled_is_timeout(self) -> Iterator[None]:
        """A statement the server cancelled (`statement_timeout`) as the `StoreTimeout` it is."""
        try:
            yield
        except psycopg.errors.QueryCanceled as exc:
            raise self._timeout(str(exc).splitlines()[0] if str(exc) else type(exc).__name__) from exc

    def _connection(self) -> psycopg.Connection[tuple[object, ...]]:
        """The shared connection, reopened when it broke (server restart, network)."""
        if self._conn is None or self._conn.closed or self._conn.broken:
            self._conn = self._connect()
        return self._conn

    def _disown(self) -> None:
        """In a forked child: both connections are the parent's sessions, and closing one would send the server a
        Terminate on the parent's socket. They are left alone (`abandon`); the child opens its own on its first
        call, and its listener at its poll's first wait (a change it missed meanwhile is read then)."""
        for inherited in (self._conn, self._listener):
            if inherited is not None:
                abandon(inherited)
        self._conn = self._listener = None
        self._relisten_at, self._relisten_delay = 0.0, _RELISTEN_FIRST_S

    @contextmanager
    def _read(self) -> Iterator[Cursor]:
        with self._turn(), self._canceled_is_timeout():
            conn = self._connection()
            with self._answered(conn), conn.transaction(), conn.cursor() as cur:
                yield cur

    @contextmanager
    def _write(self) -> Iterator[Cursor]:
        with self._turn(), self._canceled_is_timeout():
            conn = self._connection()
            with self._answered(conn), conn.transaction(), conn.cursor() as cur:
                cur.execute("SELECT pg_advisory_xact_lock(%s)", (self._lock_key,))
                yield cur
                cur.execute("SELECT pg_notify(%s, '')", (self._channel,))

    def _relisten(self) -> bool:
        """Try to reconnect the lost listener; on failure the next try waits longer (up to the max)."""
        try:
            self._listener = self._start_listener()
        except (psycopg.Error, StoreUnavailable) as exc:
            delay = self._relisten_delay
            self._relisten_at = time.monotonic() + delay
            self._relisten_delay = min(delay * 2, _RELISTEN_MAX_S)
            # the first failure is worth a line; an outage is the registry's to report (once), not every retry's
            level = logging.WARNING if delay == _RELISTEN_FIRST_S else logging.DEBUG
            _log.log(
                level, "registry change listener not reconnected (%s); retrying in %.1fs", describe_error(exc), delay
            )
            return False
        self._relisten_delay = _RELISTEN_FIRST_S
        _log.info("registry change listener reconnected")
        return True

    def wait_for_change(self, timeout_s: float, stop: threading.Event | None = None) -> bool:
        """Block until a change notification arrives (True) or `timeout_s` passes (False).

        Waits in slices of at most 0.25 s so that `stop` is honoured promptly. Without a listener (it
        was lost), waits until the next reconnect attempt is due; True when it succeeds, since changes
        made while it was away sent notifications nobody heard.
        """
        stop = stop if stop is not None else threading.Event()
        if self._listener is None:
            if not self._listen:
                stop.wait(timeout_s)
                return False
            due = max(0.0, self._relisten_at - time.monotonic())
            if due > 0 and (stop.wait(min(timeout_s, due)) or due > timeout_s):
                return False  # stopped, or the next attempt is not due within this wait
            return self._relisten()
        remaining = timeout_s
        while remaining > 0 and not stop.is_set():
            step = min(remaining, 0.25)
            try:
                if any(True for _ in self._listener.notifies(timeout=step, stop_after=1)):
                    return True
            except psycopg.Error:
                _log.warning("registry change listener lost its connection; reconnecting, polling meanwhile")
                self._listener.close()
                self._listener = None
                self._relisten_at = time.monotonic()  # the first attempt is at once
                return False
            remaining -= step
        return False

    def close(self) -> None:
        with self._lock:
            for conn in (self._conn, self._listener):
                if conn is not None:
                    conn.close()
        self._watchdog.close()
