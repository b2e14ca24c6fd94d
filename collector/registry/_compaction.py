"""`Compaction`: the change log trimmed to its last `changes_kept` changes, so that it does not grow for ever.

Every write appends to the log and nothing else removes from it: a registry edited for years, or a CI
job applying files at every run, would keep every version of every document. The registry's poll
trims it every `COMPACT_EVERY_S` on each replica (the store makes concurrent runs safe), at most
`BATCHES` × `BATCH` changes per run, each batch its own short transaction within the store's query
timeout. Each live expectation keeps the change that made its current version, so its history is never
empty. A follower that fell behind past the trimmed point is told so (`ChangesCompacted`), never handed
a log with a hole in it.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable

from toolscore.collector.registry._health import describe_error
from toolscore.collector.registry.stores._store import ExpectationStore

__all__ = ["BATCH", "BATCHES", "COMPACT_EVERY_S", "Compaction"]

COMPACT_EVERY_S = 60.0
BATCH = 10_000
"""Changes removed per transaction."""
BATCHES = 10
"""Transactions per run: a log far past its limit (a first run on an old registry) is trimmed over several."""

_log = logging.getLogger("toolscore.registry")


class Compaction:
    """Trims `store()`'s log to `keep` changes when due; failing runs are logged once until one succeeds."""

    def __init__(self, store: Callable[[], ExpectationStore], keep: int, clock: Callable[[], float] = time.monotonic):
        self._store = store
        self._keep = keep
        self._clock = clock
        self._due = clock()
        self._failures = 0

    def run(self) -> int:
        """Trim now; returns how many changes were removed. Raises what the store raises."""
        removed = 0
        for _ in range(BATCHES):
            count = self._store().compact(self._keep, BATCH)
            removed += count
            if count < BATCH:
                break
        return removed

    def run_if_due(self) -> None:
        """Trim when `COMPACT_EVERY_S` has passed since the last run (the poll calls this); never raises."""
        now = self._clock()
        if now < self._due:
            return
        self._due = now + COMPACT_EVERY_S
        try:
            removed = self.run()
        except Exception as exc:  # a read-only database role, a timeout: scoring does not depend on it
            self._failures += 1
            # a run follows a read that worked: one failure may be the store going away meanwhile (an
            # outage the poll reports), a second in a row is compaction's own, worth a warning, once
            level = logging.WARNING if self._failures == 2 else logging.DEBUG
            _log.log(
                level,
                "registry change log not compacted (%s); trying again every %.0f s",
                describe_error(exc),
                COMPACT_EVERY_S,
            )
            return
        if self._failures >= 2 or removed:
            _log.info("registry change log compacted: %d changes removed, the last %d kept", removed, self._keep)
        self._failures = 0
