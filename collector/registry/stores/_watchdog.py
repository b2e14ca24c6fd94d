"""`Watchdog`: a call on a connection that outlives its deadline has the connection's socket shut down.

The server ends a query that waits or runs too long (`statement_timeout`), and TCP keepalives and
`tcp_user_timeout` end a connection whose peer's host stopped acknowledging. Neither ends the wait of a
client whose server froze on a host that is still up (a stopped or stuck process, a paused VM behind a
proxy): its kernel acknowledges every byte, and nothing ever answers. So each call is armed with a
deadline beyond the server's own timeout; at it, one daemon thread shuts the socket down (`shutdown(2)`,
which the call's blocked read returns from), the driver raises, and the caller drops the connection.

The thread is started on first use, and again in a forked child, which has none of the parent's threads
and none of its calls (its lock is a `ForkSafeLock`: the child forgets them before any of its threads runs).
"""

from __future__ import annotations

import os
import socket
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager

from toolscore.collector.forks import ForkSafeLock

__all__ = ["Deadline", "Watchdog"]


class Deadline:
    """One armed call: `passed` once the watchdog has shut its connection down."""

    __slots__ = ("due", "fileno", "passed")

    def __init__(self, due: float, fileno: int) -> None:
        self.due = due
        self.fileno = fileno
        self.passed = False


def _shut_down(fileno: int) -> None:
    """End every read and write on the socket, for every descriptor of it; the descriptor stays the driver's."""
    try:
        with socket.socket(fileno=os.dup(fileno)) as sock:
            sock.shutdown(socket.SHUT_RDWR)
    except OSError:  # already closed, or never a socket: there is no wait to end
        pass


class Watchdog:
    """Shuts down the socket of each call still armed at its deadline; safe for concurrent use."""

    def __init__(self, name: str) -> None:
        self._name = name
        self._lock = ForkSafeLock(after_in_child=self._forget)
        self._closed = False
        self._forget()

    def _forget(self) -> None:
        """No thread and no call armed: a new watchdog's state, and a forked child's."""
        self._armed: set[Deadline] = set()
        self._wake = threading.Event()
        self._thread: threading.Thread | None = None

    @contextmanager
    def bound(self, fileno: int, seconds: float) -> Iterator[Deadline]:
        """Arm a deadline `seconds` from now for the call on socket `fileno` made in the block."""
        deadline = Deadline(time.monotonic() + seconds, fileno)
        with self._lock:
            if self._thread is None and not self._closed:
                self._thread = threading.Thread(target=self._run, args=(self._wake,), name=self._name, daemon=True)
                self._thread.start()
            self._armed.add(deadline)
        self._wake.set()
        try:
            yield deadline
        finally:
            with self._lock:
                self._armed.discard(deadline)

    def close(self) -> None:
        """End the thread (calls armed from now on are not bounded). Idempotent."""
        with self._lock:
            self._closed = True
        self._wake.set()

    def _run(self, wake: threading.Event) -> None:
        while True:
            wake.clear()  # before looking: a call armed from here on wakes the wait below
            with self._lock:
                if self._closed:
                    return
                now = time.monotonic()
                for deadline in [d for d in self._armed if d.due <= now]:
                    self._armed.discard(deadline)
                    deadline.passed = True
                    _shut_down(deadline.fileno)
                next_due = min((d.due for d in self._armed), default=None)
            wake.wait(None if next_due is None else next_due - now)
