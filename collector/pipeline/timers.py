"""Deadlines for the worker: when a run has settled, a trace has gone idle, a run span must be let go.

Every kind of deadline is "some event + a fixed delay", so within one kind, re-arming a key moves it
to the back and the queue stays sorted by deadline: an ordered dict does what a heap would, in O(1)
per arm and cancel, with no stale entries to skip (groupbytrace's ring buffer has the same idea).
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Hashable
from typing import Generic, TypeVar

__all__ = ["Deadlines"]

K = TypeVar("K", bound=Hashable)


class Deadlines(Generic[K]):
    """Keys due `delay_ns` after they were (last) armed; worker thread only."""

    def __init__(self, delay_ns: int) -> None:
        self.delay_ns = delay_ns
        self._due: OrderedDict[K, int] = OrderedDict()

    def arm(self, key: K, now_ns: int) -> None:
        """(Re)start the key's delay from `now_ns`; a key armed again moves behind all the others."""
        self._due[key] = now_ns + self.delay_ns
        self._due.move_to_end(key)

    def arm_once(self, key: K, now_ns: int) -> None:
        """Start the key's delay unless it is already running (for deadlines that never move)."""
        if key not in self._due:
            self._due[key] = now_ns + self.delay_ns

    def cancel(self, key: K) -> None:
        self._due.pop(key, None)

    def __contains__(self, key: object) -> bool:
        return key in self._due

    def __len__(self) -> int:
        return len(self._due)

    def next_ns(self) -> int | None:
        """The earliest deadline, or None when nothing is armed."""
        for due in self._due.values():
            return due
        return None

    def pop_due(self, now_ns: int) -> list[K]:
        """Keys whose deadline has passed, earliest first; they are disarmed."""
        out: list[K] = []
        due = self._due
        while due:
            key, when = next(iter(due.items()))
            if when > now_ns:
                break
            del due[key]
            out.append(key)
        return out

    def keys(self) -> list[K]:
        return list(self._due)

    def clear(self) -> None:
        self._due.clear()
