"""Log lines that senders or an outage can repeat without end, at most one per kind every few seconds.

A broken or hostile sender can make a receiver refuse thousands of requests a second, and a downstream
outage fails every export: a line for each would flood the log (and the disk, and whatever ships it)
while saying nothing new, and bury the lines that do. The counters (`toolscore.refusals`,
`toolscore.forward.dropped`) count every one; the log says what happens and to whom, now and then. The
kinds are a fixed set (refusal or drop reasons), so the state stays small whatever is sent.
"""

from __future__ import annotations

import logging
import threading
import time

__all__ = ["LOG_EVERY_S", "LimitedLog"]

LOG_EVERY_S = 10.0
"""Often enough to see that it goes on and who does it; rare enough that a flood costs a line per kind."""


class LimitedLog:
    """A logger's lines, at most one per key every `every_s` seconds; each line says how many of its key were
    held back since the one before, so the log never reads as if they had stopped. Thread-safe."""

    def __init__(self, logger: logging.Logger, every_s: float = LOG_EVERY_S) -> None:
        self._logger = logger
        self.every_s = every_s
        self._lock = threading.Lock()
        self._last: dict[str, float] = {}
        self._held: dict[str, int] = {}

    def log(self, level: int, key: str, message: str, *args: object) -> bool:
        """Log `message % args` unless a line of `key` went out less than `every_s` ago; True when logged."""
        held = self.take(level, key)
        if held is None:
            return False
        self.emit(level, held, message, *args)
        return True

    def take(self, level: int, key: str) -> int | None:
        """Whether a line of `key` may go out now: None when not (it counts as held back), else how many were
        held back since the last one, for `emit`. For a line that costs something to make: ask first, and
        make it only when it is due, so that a flood costs a check per event and a line per interval."""
        if not self._logger.isEnabledFor(level):
            return None
        now = time.monotonic()
        with self._lock:
            last = self._last.get(key)
            if last is not None and now - last < self.every_s:
                self._held[key] = self._held.get(key, 0) + 1
                return None
            self._last[key] = now
            return self._held.pop(key, 0)

    def emit(self, level: int, held: int, message: str, *args: object) -> None:
        """The line `take` allowed, saying how many (`held`, as `take` returned it) it stands for."""
        if held:
            message += " (and %d more like it since the last such line; at most one every %gs)"
            args = (*args, held, self.every_s)
        self._logger.log(level, message, *args)
