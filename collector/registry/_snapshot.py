"""`Snapshot`: the expectations a registry matches runs against, as last read from its store.

Changes are applied in commit order, a batch at a time: each batch builds a new `ExpectationIndex`
aside and swaps it in with one assignment, so `match` (lock-free) sees the old set or the new one, never
a mix, and runs in flight keep the index they started with. A stored document this version cannot read
leaves the name at its last readable version (or matching nothing) and is listed in `unreadable`.
Subscribers are told of every change applied, in order; when the registry had to read the whole set
again because the changes it missed were compacted away, they are told that instead (`on_gap`).

Not locked itself: the registry applies reads of its store, and adds or removes subscribers, under its
own lock; readers only take `index`.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass

from toolscore.collector.registry._errors import ChangesCompacted
from toolscore.collector.registry._matching import ExpectationIndex
from toolscore.collector.registry._model import Expectation
from toolscore.collector.registry._validation import unreadable_problem
from toolscore.collector.registry.stores._store import CHANGE_PAGE_SIZE, Change, ExpectationStore

__all__ = ["Snapshot", "Subscriber"]

_log = logging.getLogger("toolscore.registry")


@dataclass(frozen=True, eq=False)
class Subscriber:
    """Who is told of each change applied, and of a gap: changes missed for good (None: not told)."""

    on_change: Callable[[Change], None]
    on_gap: Callable[[ChangesCompacted], None] | None = None


class Snapshot:
    """The expectations as of change `seq`, their index, and who is told of the changes applied next."""

    def __init__(self) -> None:
        self.seq = 0
        """The `seq` of the last change applied."""
        self.expectations: dict[str, Expectation] = {}
        self.index = ExpectationIndex()
        self.unreadable: dict[str, str] = {}
        """Names whose stored document cannot be read, with why."""
        self.subscribers: list[Subscriber] = []

    def load(self, store: ExpectationStore) -> None:
        """Read the store's whole set (subscribers are not told)."""
        seq = store.latest_seq()  # before list(): a change in between is applied again, harmlessly
        expectations = {exp.name: self._readable(exp, None) for exp in store.list()}
        self.seq, self.expectations, self.index = seq, expectations, ExpectationIndex(expectations.values())

    def catch_up(self, store: ExpectationStore) -> list[Change]:
        """Apply the store's changes since `seq`, read a page at a time; returns them.

        Each page is applied (and its subscribers told) before the next is read, so a long backlog (a
        replica back from a partition) moves forward page by page, each read well within the store's
        query timeout, rather than failing whole at every poll. When the changes since `seq` were
        compacted away, the whole set is read again and the subscribers are told of the gap.
        """
        applied: list[Change] = []
        while True:
            try:
                changes = store.changes_since(self.seq, CHANGE_PAGE_SIZE)
            except ChangesCompacted as gap:
                self._read_whole(store, gap)
                return applied
            if changes:
                self.apply(changes)
                applied.extend(changes)
            if len(changes) < CHANGE_PAGE_SIZE:
                return applied

    def _read_whole(self, store: ExpectationStore, gap: ChangesCompacted) -> None:
        _log.warning(
            "registry at seq %d fell behind its store's change log, compacted up to seq %d (registry.changes_kept);"
            " reading every expectation again",
            gap.seq,
            gap.compacted_seq,
        )
        self.unreadable.clear()
        self.load(store)
        for subscriber in list(self.subscribers):
            if subscriber.on_gap is None:
                continue
            try:
                subscriber.on_gap(gap)
            except Exception:
                _log.exception("registry subscriber failed on a gap in the change log")

    def apply(self, changes: list[Change]) -> None:
        """Swap in the set and index these changes make, then tell the subscribers of each."""
        expectations = dict(self.expectations)
        for change in changes:
            if change.kind == "deleted":
                expectations.pop(change.name, None)
                self.unreadable.pop(change.name, None)
            else:
                expectations[change.name] = self._readable(change.expectation, expectations.get(change.name))
        self.index = ExpectationIndex(expectations.values())
        self.expectations = expectations
        self.seq = changes[-1].seq
        for change in changes:
            for subscriber in list(self.subscribers):
                try:
                    subscriber.on_change(change)
                except Exception:
                    _log.exception("registry subscriber failed on %s of %r", change.kind, change.name)

    def _readable(self, stored: Expectation, previous: Expectation | None) -> Expectation:
        """What the snapshot holds for a stored value: itself, or for an unreadable one the previous value."""
        problem = unreadable_problem(stored)
        if problem is None:
            self.unreadable.pop(stored.name, None)
            return stored
        self.unreadable[stored.name] = problem
        kept = previous is not None and unreadable_problem(previous) is None
        _log.error(
            "expectation %r version %d in the store cannot be read (%s); %s until it is replaced",
            stored.name,
            stored.version,
            problem,
            f"version {previous.version} stays in use" if kept and previous else "it matches no run",
        )
        return previous if kept and previous is not None else stored
