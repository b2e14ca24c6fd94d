"""What the SQL stores share: the two tables, the write algorithm and the decoding of rows.

Tables (names prefixed per store): `<p>expectations` holds one row per name ever written — the last
version, whether it is live, and the last live document — `<p>changes` is the append-only log
(seq, name, kind, version, document), and `<p>meta` holds `compacted_seq`, up to which the log may have
been compacted; `<p>expectations_live` indexes the live names in code point order, so that a page of a
list is a range of it rather than the whole table. A write is one transaction that reads the name's row,
applies the optimistic-concurrency rule, upserts the row and appends to the log; the dialects only supply
how a write transaction is opened (SQLite `BEGIN IMMEDIATE`, PostgreSQL an advisory lock, which also
keeps `seq` in commit order so replicas reading `changes_since` never skip a late commit).

Every call is bounded in time: the dialect makes its own query give up after `timeout_s` (SQLite's busy
timeout, PostgreSQL's `statement_timeout`), and a call waits at most as long for its turn at the
process's one connection (`_turn`), so the calls queued behind a hung query fail too, each within about
twice the timeout, instead of piling up behind it for ever.
"""

from __future__ import annotations

import builtins
import json
import time
from collections.abc import Iterator, Sequence
from contextlib import AbstractContextManager, contextmanager
from typing import Any, Protocol

from toolscore.collector.forks import ForkSafeLock
from toolscore.collector.registry._errors import ChangesCompacted, NoRegistryTables, NotFound, StoreTimeout
from toolscore.collector.registry._model import Expectation
from toolscore.collector.registry._validation import parse_stored
from toolscore.collector.registry.stores._store import Change, ChangeKind, Write, check_expected_version

__all__ = ["Cursor", "SqlStore", "prefix_end"]


class Cursor(Protocol):
    def execute(self, query: Any, params: Sequence[Any] = ..., /) -> Any: ...
    def fetchone(self) -> Any: ...
    def fetchall(self) -> builtins.list[Any]: ...


def _decode(name: str, body: str | dict[str, Any], version: int) -> Expectation:
    """A row's document; one that is not JSON or does not validate becomes `parse_stored`'s stand-in."""
    try:
        data = json.loads(body) if isinstance(body, str) else body
    except ValueError as exc:
        data = f"not JSON: {exc}"
    return parse_stored(name, data, version)


def _encode(expectation: Expectation) -> str:
    return json.dumps(expectation.to_dict(with_version=False), sort_keys=True, separators=(",", ":"))


_COMPACTABLE = (
    "SELECT c.seq FROM {p}changes c WHERE c.seq <= ? AND NOT EXISTS (SELECT 1 FROM {p}expectations e "
    "WHERE e.name = c.name AND e.live AND e.version = c.version) ORDER BY c.seq LIMIT ?"
)
"""The oldest changes up to a cutoff, but for the change that made each live expectation's current version."""

_MIN_TURN_WAIT_S = 1.0
"""A call waits at least this long for its turn, so that a zero timeout does not fail it behind a quick call."""


def prefix_end(prefix: str) -> str | None:
    """The least string above every string that starts with `prefix` (by code point), so that a prefix is a
    range of an index: `prefix <= name < prefix_end(prefix)`. None (no upper bound) for an empty prefix, or
    one of nothing but the last code point."""
    stem = prefix.rstrip("\U0010ffff")
    if not stem:
        return None
    following = ord(stem[-1]) + 1
    if 0xD800 <= following <= 0xDFFF:  # surrogates are no characters of a name, and cannot be encoded
        following = 0xE000
    return stem[:-1] + chr(following)


class SqlStore:
    """`ExpectationStore` over DB-API cursors; subclasses provide `_read`, `_write`, `_timeout` and `P`."""

    P = "?"
    BY_CODE_POINT = ""
    """What makes the dialect compare names by code point, as Python compares `str` and page tokens are
    compared: SQLite's default (BINARY, over UTF-8) does; PostgreSQL's depends on the database's locale."""
    prefix = "toolscore_"
    timeout_s = 5.0
    """How long one query may wait or run, and how long a call waits for its turn at the connection."""
    _lock: ForkSafeLock

    @contextmanager
    def _turn(self) -> Iterator[None]:
        """This process's turn at the store's one connection, waited for at most `timeout_s`."""
        if not self._lock.acquire(timeout=max(self.timeout_s, _MIN_TURN_WAIT_S)):
            raise self._timeout("the calls ahead of this one in this process are still waiting for it")
        try:
            yield
        finally:
            self._lock.release()

    def _timeout(self, cause: str) -> StoreTimeout:
        """The error of a call that gave up waiting: names the store and the setting that bounds the wait."""
        raise NotImplementedError

    def _read(self) -> AbstractContextManager[Cursor]:
        raise NotImplementedError

    def _write(self) -> AbstractContextManager[Cursor]:
        """A cursor in a write transaction that excludes other writers; commits on success."""
        raise NotImplementedError

    def _missing(self, cur: Cursor, names: tuple[str, ...]) -> builtins.list[str]:
        """Those of `names` (without the prefix) that the database has no table or index of."""
        raise NotImplementedError

    def _check_tables(self) -> None:
        """What a store opened read-only does instead of creating its tables: one that lacks those the reads
        use fails when it is opened, not at its first call, with `NoRegistryTables` (told by the catalog). The
        probe after it is what a role that may not read them fails on, with the database's own error."""
        with self._read() as cur:
            missing = self._missing(cur, ("expectations", "changes"))
            if not missing:
                cur.execute(self._sql("SELECT 1 FROM {p}expectations, {p}changes LIMIT 0"))
                cur.fetchall()
        if missing:
            raise NoRegistryTables(self.prefix, [self.prefix + name for name in missing])

    def _sql(self, text: str) -> str:
        return text.replace("{p}", self.prefix).replace("?", self.P)

    def get(self, name: str) -> Expectation:
        with self._read() as cur:
            cur.execute(self._sql("SELECT body, version FROM {p}expectations WHERE name = ? AND live"), (name,))
            row = cur.fetchone()
        if row is None:
            raise NotFound(name)
        return _decode(name, row[0], row[1])

    def list(self, name_prefix: str = "", after: str = "", limit: int | None = None) -> builtins.list[Expectation]:
        """A range of the live names' index, read from where the page starts: a page costs its own rows,
        whatever the registry's size. Names compare by code point in every dialect (`BY_CODE_POINT`)."""
        column = "name" + self.BY_CODE_POINT
        conditions: builtins.list[str] = ["live"]
        params: builtins.list[object] = []
        for operator, bound in ((">", after), (">=", name_prefix), ("<", prefix_end(name_prefix))):
            if bound:
                conditions.append(f"{column} {operator} ?")
                params.append(bound)
        query = f"SELECT name, body, version FROM {{p}}expectations WHERE {' AND '.join(conditions)} ORDER BY {column}"
        if limit is not None:
            query += " LIMIT ?"
            params.append(limit)
        with self._read() as cur:
            cur.execute(self._sql(query), params)
            rows = cur.fetchall()
        return [_decode(name, body, version) for name, body, version in rows]

    def put(self, expectation: Expectation, expected_version: int | None = None) -> tuple[Expectation, Change]:
        with self._write() as cur:
            change = self._put(cur, expectation, expected_version)
        return change.expectation, change

    def delete(self, name: str, expected_version: int | None = None) -> Change:
        with self._write() as cur:
            return self._delete(cur, name, expected_version)

    def write_batch(self, writes: Sequence[Write]) -> builtins.list[Change]:
        with self._write() as cur:  # a check that fails raises inside the transaction: nothing is kept
            return [
                self._delete(cur, w.name, w.expected_version)
                if w.expectation is None
                else self._put(cur, w.expectation, w.expected_version)
                for w in writes
            ]

    def _put(self, cur: Cursor, expectation: Expectation, expected_version: int | None) -> Change:
        body = _encode(expectation)
        last, live = self._row(cur, expectation.name)
        check_expected_version(expectation.name, last if live else None, expected_version)
        version = last + 1
        cur.execute(
            self._sql(
                "INSERT INTO {p}expectations (name, version, live, body) VALUES (?, ?, TRUE, ?) "
                "ON CONFLICT (name) DO UPDATE SET version = excluded.version, live = TRUE, body = excluded.body"
            ),
            (expectation.name, version, body),
        )
        kind: ChangeKind = "updated" if live else "created"
        seq = self._append(cur, expectation.name, kind, version, body)
        stored = expectation.model_copy(update={"version": version})
        return Change(seq, kind, stored.name, version, stored)

    def _delete(self, cur: Cursor, name: str, expected_version: int | None) -> Change:
        last, live = self._row(cur, name)
        if not live:
            raise NotFound(name)
        check_expected_version(name, last, expected_version)
        cur.execute(self._sql("SELECT body FROM {p}expectations WHERE name = ?"), (name,))
        body = cur.fetchone()[0]
        cur.execute(self._sql("UPDATE {p}expectations SET version = ?, live = FALSE WHERE name = ?"), (last + 1, name))
        seq = self._append(cur, name, "deleted", last + 1, body)
        return Change(seq, "deleted", name, last + 1, _decode(name, body, last))

    def history(self, name: str) -> builtins.list[Expectation]:
        with self._read() as cur:
            cur.execute(
                self._sql("SELECT body, version FROM {p}changes WHERE name = ? AND kind <> 'deleted' ORDER BY seq"),
                (name,),
            )
            rows = cur.fetchall()
        if not rows:
            raise NotFound(name)
        return [_decode(name, body, version) for body, version in rows]

    def history_changes(self, name: str, after_seq: int = 0, limit: int | None = None) -> builtins.list[Change]:
        query = "SELECT seq, kind, name, version, body FROM {p}changes WHERE name = ? AND seq > ? ORDER BY seq"
        with self._read() as cur:
            if limit is None:
                cur.execute(self._sql(query), (name, after_seq))
            else:
                cur.execute(self._sql(query + " LIMIT ?"), (name, after_seq, limit))
            rows = cur.fetchall()
        if not rows and after_seq == 0:
            raise NotFound(name)
        return list(self._changes(rows))

    def changes_since(self, seq: int, limit: int | None = None) -> builtins.list[Change]:
        query = "SELECT seq, kind, name, version, body FROM {p}changes WHERE seq > ? ORDER BY seq"
        with self._read() as cur:
            if limit is None:
                cur.execute(self._sql(query), (seq,))
            else:
                cur.execute(self._sql(query + " LIMIT ?"), (seq, limit))
            rows = cur.fetchall()
            # read after the rows: compaction moves it and deletes in one transaction, so a value still
            # at or below `seq` now was so when the rows were read, and none after `seq` was missing
            compacted = self._compacted(cur)
        if seq < compacted:
            raise ChangesCompacted(seq, compacted)
        return list(self._changes(rows))

    def compacted_seq(self) -> int:
        with self._read() as cur:
            return self._compacted(cur)

    def compact(self, keep: int, max_removed: int) -> int:
        with self._read() as cur:  # the usual case, nothing to do, takes no write lock
            if self._cutoff(cur, keep) <= self._compacted(cur):
                return 0
        with self._write() as cur:
            cutoff, before = self._cutoff(cur, keep), self._compacted(cur)
            if cutoff <= before:
                return 0
            cur.execute(
                self._sql("DELETE FROM {p}changes WHERE seq IN (" + _COMPACTABLE + ") RETURNING seq"),
                (cutoff, max_removed),
            )
            removed = [int(row[0]) for row in cur.fetchall()]
            reached = cutoff if len(removed) < max_removed else max(removed)
            cur.execute(
                self._sql(
                    "INSERT INTO {p}meta (key, value) VALUES ('compacted_seq', ?) "
                    "ON CONFLICT (key) DO UPDATE SET value = excluded.value"
                ),
                (max(before, reached),),
            )
        return len(removed)

    def _cutoff(self, cur: Cursor, keep: int) -> int:
        """The `seq` up to which changes are past keeping."""
        cur.execute(self._sql("SELECT COALESCE(MAX(seq), 0) FROM {p}changes"))
        return int(cur.fetchone()[0]) - keep

    def _compacted(self, cur: Cursor) -> int:
        cur.execute(self._sql("SELECT value FROM {p}meta WHERE key = 'compacted_seq'"))
        row = cur.fetchone()
        return 0 if row is None else int(row[0])

    def latest_seq(self) -> int:
        with self._read() as cur:
            cur.execute(self._sql("SELECT COALESCE(MAX(seq), 0) FROM {p}changes"))
            return int(cur.fetchone()[0])

    def _row(self, cur: Cursor, name: str) -> tuple[int, bool]:
        """(last version, live) of a name; (0, False) when it was never written."""
        cur.execute(self._sql("SELECT version, live FROM {p}expectations WHERE name = ?"), (name,))
        row = cur.fetchone()
        return (0, False) if row is None else (int(row[0]), bool(row[1]))

    def _append(self, cur: Cursor, name: str, kind: ChangeKind, version: int, body: str) -> int:
        cur.execute(
            self._sql("INSERT INTO {p}changes (name, kind, version, body, at_ns) VALUES (?, ?, ?, ?, ?) RETURNING seq"),
            (name, kind, version, body, time.time_ns()),
        )
        return int(cur.fetchone()[0])

    @staticmethod
    def _changes(rows: builtins.list[Any]) -> Iterator[Change]:
        for seq, kind, name, version, body in rows:
            # a deletion row holds the last live document, whose version is one below the deletion's
            exp = _decode(name, body, version - 1 if kind == "deleted" else version)
            yield Change(int(seq), kind, name, int(version), exp)
