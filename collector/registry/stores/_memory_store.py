"""A store in process memory: the backing of file-loaded registries and of tests. Lost on exit; a forked
child gets a copy of its own."""

from __future__ import annotations

import bisect
import builtins
from collections.abc import Sequence

from toolscore.collector.forks import ForkSafeLock
from toolscore.collector.registry._errors import ChangesCompacted, NotFound
from toolscore.collector.registry._model import Expectation
from toolscore.collector.registry.stores._store import Change, Write, check_expected_version

__all__ = ["MemoryStore"]


class MemoryStore:
    """`ExpectationStore` over dicts and a change list (in `seq` order), behind one lock."""

    def __init__(self) -> None:
        self._lock = ForkSafeLock()
        self._live: dict[str, Expectation] = {}
        self._last_version: dict[str, int] = {}
        self._log: builtins.list[Change] = []
        self._seq = 0
        self._compacted = 0

    def get(self, name: str) -> Expectation:
        with self._lock:
            try:
                return self._live[name]
            except KeyError:
                raise NotFound(name) from None

    def list(self, name_prefix: str = "", after: str = "", limit: int | None = None) -> builtins.list[Expectation]:
        with self._lock:
            names = sorted(name for name in self._live if name.startswith(name_prefix) and name > after)
            return [self._live[name] for name in names[:limit]]

    def put(self, expectation: Expectation, expected_version: int | None = None) -> tuple[Expectation, Change]:
        with self._lock:
            change = self._put(expectation, expected_version)
            return change.expectation, change

    def delete(self, name: str, expected_version: int | None = None) -> Change:
        with self._lock:
            return self._delete(name, expected_version)

    def write_batch(self, writes: Sequence[Write]) -> builtins.list[Change]:
        with self._lock:
            saved = (dict(self._live), dict(self._last_version), len(self._log), self._seq)
            try:
                return [
                    self._delete(w.name, w.expected_version)
                    if w.expectation is None
                    else self._put(w.expectation, w.expected_version)
                    for w in writes
                ]
            except BaseException:  # all or nothing, as a database transaction
                self._live, self._last_version, self._seq = saved[0], saved[1], saved[3]
                del self._log[saved[2] :]
                raise

    def _put(self, expectation: Expectation, expected_version: int | None) -> Change:
        live = self._live.get(expectation.name)
        check_expected_version(expectation.name, live.version if live else None, expected_version)
        version = self._last_version.get(expectation.name, 0) + 1
        stored = expectation.model_copy(update={"version": version})
        self._seq += 1
        change = Change(self._seq, "updated" if live else "created", stored.name, version, stored)
        self._live[stored.name] = stored
        self._last_version[stored.name] = version
        self._log.append(change)
        return change

    def _delete(self, name: str, expected_version: int | None) -> Change:
        live = self._live.get(name)
        if live is None:
            raise NotFound(name)
        check_expected_version(name, live.version, expected_version)
        version = self._last_version[name] + 1
        self._seq += 1
        change = Change(self._seq, "deleted", name, version, live)
        del self._live[name]
        self._last_version[name] = version
        self._log.append(change)
        return change

    def history(self, name: str) -> builtins.list[Expectation]:
        with self._lock:
            versions = [c.expectation for c in self._log if c.name == name and c.kind != "deleted"]
        if not versions:
            raise NotFound(name)
        return versions

    def history_changes(self, name: str, after_seq: int = 0, limit: int | None = None) -> builtins.list[Change]:
        with self._lock:
            changes = [c for c in self._log if c.name == name and c.seq > after_seq]
        if not changes and after_seq == 0:
            raise NotFound(name)
        return changes if limit is None else changes[:limit]

    def changes_since(self, seq: int, limit: int | None = None) -> builtins.list[Change]:
        with self._lock:
            if seq < self._compacted:
                raise ChangesCompacted(seq, self._compacted)
            start = bisect.bisect_right(self._log, seq, key=lambda change: change.seq)
            return self._log[start : None if limit is None else start + limit]

    def latest_seq(self) -> int:
        with self._lock:
            return self._seq

    def compacted_seq(self) -> int:
        with self._lock:
            return self._compacted

    def compact(self, keep: int, max_removed: int) -> int:
        with self._lock:
            cutoff = self._seq - keep
            if cutoff <= self._compacted:
                return 0
            current = {(name, exp.version) for name, exp in self._live.items()}
            removed = [
                c.seq
                for c in self._log
                if c.seq <= cutoff and (c.kind == "deleted" or (c.name, c.version) not in current)
            ][:max_removed]
            gone = set(removed)
            self._log = [c for c in self._log if c.seq not in gone]
            self._compacted = max(self._compacted, cutoff if len(removed) < max_removed else removed[-1])
            return len(removed)

    def close(self) -> None:
        pass
