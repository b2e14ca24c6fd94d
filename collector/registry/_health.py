"""`StoreHealth`: whether the registry can read its store, told once when that changes.

While the store is unreachable (PostgreSQL restarting, a network partition) the registry keeps
matching with the snapshot it read last and retries at every poll. What an operator needs then is one
line when reads start failing, one when they work again, a reminder now and then, and a number to
alert on (`sync_age_s`): not a traceback per poll.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable

from toolscore.collector.forks import ForkSafeLock

__all__ = ["REMIND_EVERY_S", "StoreHealth", "describe_error"]

REMIND_EVERY_S = 300.0
"""While reads keep failing, the outage is logged again (WARNING) this often; other failures go to DEBUG."""

_log = logging.getLogger("toolscore.registry")


def describe_error(exc: BaseException) -> str:
    """One line: the error's type and message, whitespace collapsed (driver messages span lines)."""
    text = " ".join(str(exc).split())
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


class StoreHealth:
    """The outcome of the registry's reads of its store; safe for concurrent use."""

    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self._clock = clock
        self._lock = ForkSafeLock()
        self._last_read = clock()
        self._failing_since: float | None = None
        self._last_logged = 0.0
        self._failures = 0
        self._error: str | None = None

    @property
    def error(self) -> str | None:
        """Why the last read failed, while reads are failing; None when the last one worked."""
        return self._error if self._failing_since is not None else None

    @property
    def failures(self) -> int:
        """Reads that failed since the last one that worked."""
        return self._failures

    def sync_age_s(self) -> float:
        """Seconds since the last successful read (since creation when there has been none)."""
        return max(0.0, self._clock() - self._last_read)

    def read_ok(self) -> None:
        with self._lock:
            now, since, failures = self._clock(), self._failing_since, self._failures
            self._last_read, self._failing_since, self._failures = now, None, 0
        if since is not None:
            _log.warning("registry store readable again after %.1f s (%d failed reads)", now - since, failures)

    def read_failed(self, exc: BaseException, meanwhile: str) -> None:
        """A read failed; `meanwhile` says what matching uses instead (for the log)."""
        error = describe_error(exc)
        with self._lock:
            now = self._clock()
            first = self._failing_since is None
            if first:
                self._failing_since = now
            self._failures += 1
            self._error = error
            remind = not first and now - self._last_logged >= REMIND_EVERY_S
            if first or remind:
                self._last_logged = now
            since = self._failing_since if self._failing_since is not None else now
        if first:
            _log.error("registry store unreachable (%s); %s; retrying at every poll", error, meanwhile)
        elif remind:
            _log.warning("registry store still unreachable after %.0f s (%s); %s", now - since, error, meanwhile)
        else:
            _log.debug("registry store read failed again: %s", error)
