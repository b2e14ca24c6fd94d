"""`Snapshot`: the expectations a registry matches runs against, as last read from its store.

Changes are applied in commit order, a batch at a time: each batch builds a new `ExpectationIndex`
aside and swaps it in with one assignment, so `match` (lock-free) sees the old set or the new one, never
a mix, and runs in flight keep the index they started with. A stored document this version cannot read
leaves the name at its last readable version (or matching nothing) and is listed in `unreadable`.
Subscribers are told of every change applied, in order.

Not locked itself: the registry applies reads of its store, and adds or removes subscribers, under its
own lock; readers only take `index`.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable

from toolscore.collector.registry.matching import ExpectationIndex
from toolscore.collector.registry.model import Expectation
from toolscore.collector.registry.store import Change
from toolscore.collector.registry.validation import unreadable_problem

__all__ = ["Snapshot"]

_log = logging.getLogger("toolscore.registry")


class Snapshot:
    """The expectations as of change `seq`, their index, and who is told of the changes applied next."""

    def __init__(self) -> None:
        self.seq = 0
        """The `seq` of the last change applied."""
        self.expectations: dict[str, Expectation] = {}
        self.index = ExpectationIndex()
        self.unreadable: dict[str, str] = {}
        """Names whose stored document cannot be read, with why."""
        self.subscribers: list[Callable[[Change], None]] = []

    def replace(self, seq: int, stored: Iterable[Expectation]) -> None:
        """Take a whole set read from the store, as of change `seq` (subscribers are not told)."""
        expectations = {exp.name: self._readable(exp, None) for exp in stored}
        self.seq, self.expectations, self.index = seq, expectations, ExpectationIndex(expectations.values())

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
            for callback in list(self.subscribers):
                try:
                    callback(change)
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
