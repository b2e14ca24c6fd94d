"""`StorePoll`: the thread on which a registry follows its store, woken by a change notification or the interval.

Other replicas and processes write the store too; nothing tells this one, except PostgreSQL's notifications
(`wait_for_change`), which are lost when the listening connection drops. So the poll runs `sync` every
`interval_s` whatever happens, and at once when a notification arrives. A store that has not been read yet
(`wait_for_store`) is polled on the interval alone: it has no connection to listen on.

A forked child has none of its parent's threads: the registry gives it a poll of its own (`renewed`).
`Loop` is the thread's start and stop, which the file watch (`files.FileWatcher`) shares.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Self

__all__ = ["Loop", "StorePoll", "WaitForChange"]

WaitForChange = Callable[[float, threading.Event], object]
"""A store's `wait_for_change(timeout_s, stop)`: returns on a change notification, after `timeout_s`, or once
`stop` is set."""


class Loop:
    """A daemon thread running `_run` until `stop` is called; `_run` returns once `self._stop` is set."""

    def __init__(self, name: str) -> None:
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name=name, daemon=True)

    def start(self) -> Self:
        self._thread.start()
        return self

    def stop(self) -> None:
        """Idempotent; returns once the thread has exited (the work in progress finishes first)."""
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join()

    def _run(self) -> None:
        raise NotImplementedError


class StorePoll(Loop):
    """Calls `sync()` on a daemon thread after each wait: `waiter()`'s when it gives one, else `interval_s`."""

    def __init__(self, sync: Callable[[], None], waiter: Callable[[], WaitForChange | None], interval_s: float) -> None:
        self._sync = sync
        self._waiter = waiter
        self._interval_s = interval_s
        super().__init__("toolscore-registry-poll")

    def renewed(self) -> StorePoll:
        """The same poll, not started, for a forked child."""
        return StorePoll(self._sync, self._waiter, self._interval_s)

    def _run(self) -> None:
        stop = self._stop
        while not stop.is_set():
            wait_for_change = self._waiter()
            if wait_for_change is not None:
                wait_for_change(self._interval_s, stop)
            elif stop.wait(self._interval_s):
                return
            if stop.is_set():
                return
            self._sync()
