"""The worker thread's lifecycle: wake on work or on the next deadline, flush on request, stop once.

Kept apart from the data flow (`engine`) because the hard part here is time: a flush or shutdown must
return within its timeout whatever the work does, be safe to call from any thread and any number of
times, and never leave the caller waiting on a thread that has stopped.

A forked child (see `toolscore.collector.forks`) gets a worker of its own. The worker's step holds an
outer `ForkSafeLock`, so the forking thread waits for the step to end (within the forks' one bound,
`FORK_LOCK_WAIT_S`) and the child inherits no lock the worker held; the child starts a fresh thread on
fresh state (`after_fork`): the parent's pending work stays the parent's, and is not done twice.
"""

from __future__ import annotations

import logging
import threading
import time
from collections import deque
from dataclasses import dataclass, field

from toolscore.collector.forks import ForkSafeLock, on_fork

__all__ = ["Worker"]

_log = logging.getLogger("toolscore.pipeline")

_LINGER_S = 0.001
"""How long the worker lets spans gather after a wake-up; small beside any settle window."""


@dataclass(slots=True)
class _Flush:
    deadline_ns: int
    started: bool = False
    ok: bool = True
    done: threading.Event = field(default_factory=threading.Event)


class Worker:
    """One daemon thread running `step(now_ns)` whenever woken or when `next_deadline_ns` passes.

    Subclasses implement `step`, `next_deadline_ns`, `flush_begin` (finish everything pending now)
    and `flush_waiting` (whether a flush still waits on work in flight; at its deadline
    `flush_give_up` lets go of that work and the flush reports failure). A subclass holding state of
    its own resets it in `after_fork`.
    """

    def __init__(self, name: str) -> None:
        self._name = name
        self._stopping = False
        self._busy = ForkSafeLock(outer=True)
        """Held while the thread works; what a fork waits for."""
        self._fresh_thread()
        # registered after the telemetry's own hooks (made before the worker): its state is renewed first
        on_fork(after_in_child=self._after_fork_in_child)

    def _fresh_thread(self) -> None:
        self._wake = threading.Event()
        self._flushes: deque[_Flush] = deque()
        self._flush_lock = threading.Lock()
        self._stopped = threading.Event()
        self._thread = threading.Thread(target=self._run, name=self._name, daemon=True)

    def start(self) -> None:
        self._thread.start()

    def after_fork(self) -> None:
        """In a forked child, before its thread starts: drop the parent's pending work (the parent does it)."""

    def _after_fork_in_child(self) -> None:
        started, stopping = self._thread.ident is not None, self._stopping
        self._fresh_thread()
        self.after_fork()
        if stopping:  # stopped, or stopping, in the parent: stopped here too
            self._stopped.set()
        elif started:
            self._thread.start()

    # -- for subclasses ------------------------------------------------------------------------------

    def step(self, now_ns: int) -> None:
        raise NotImplementedError

    def backlog(self) -> bool:
        """Whether work is already waiting after a step (then the loop steps again at once)."""
        return False

    def next_deadline_ns(self) -> int | None:
        raise NotImplementedError

    def flush_begin(self, now_ns: int) -> None:
        raise NotImplementedError

    def flush_waiting(self) -> bool:
        raise NotImplementedError

    def flush_give_up(self, now_ns: int) -> None:
        raise NotImplementedError

    # -- the loop ------------------------------------------------------------------------------------

    def _run(self) -> None:
        try:
            backlog = False
            while True:
                if not backlog and self._wake.wait(self._wait_s()) and not self._stopping:
                    time.sleep(_LINGER_S)  # let a burst of ends queue up: one wake-up per batch, not per span
                self._wake.clear()
                with self._busy:
                    try:
                        now = time.monotonic_ns()
                        self.step(now)
                        if self._flushes:
                            self._flush_step(now)
                    except Exception:  # the worker must outlive any bug, or spans would stop flowing
                        _log.exception("toolscore pipeline step failed")
                    backlog = self.backlog()  # after a failed step too: a stale True would spin the loop
                if self._stopping and not self._flushes:
                    return
        finally:
            self._stopped.set()
            with self._flush_lock:
                for flush in self._flushes:
                    flush.done.set()

    def _wait_s(self) -> float | None:
        deadline = self.next_deadline_ns()
        with self._flush_lock:
            flushes = list(self._flushes)
        for flush in flushes:
            deadline = flush.deadline_ns if deadline is None else min(deadline, flush.deadline_ns)
        return None if deadline is None else max(0.0, (deadline - time.monotonic_ns()) / 1e9)

    def _flush_step(self, now: int) -> None:
        with self._flush_lock:
            flushes = list(self._flushes)
        if not all(flush.started for flush in flushes):
            self.flush_begin(now)
            for flush in flushes:
                flush.started = True
        for flush in flushes:
            if self.flush_waiting():
                if now < flush.deadline_ns:
                    return
                self.flush_give_up(now)
                flush.ok = False
            with self._flush_lock:
                self._flushes.popleft()
            flush.done.set()

    # -- callers' side -------------------------------------------------------------------------------

    def flush(self, timeout_s: float) -> bool:
        """Finish everything pending; True when all of it was done within `timeout_s`."""
        if self._stopped.is_set():
            return True
        deadline = time.monotonic_ns() + int(max(timeout_s, 0.0) * 1e9)
        flush = _Flush(deadline)
        with self._flush_lock:
            self._flushes.append(flush)
        self._wake.set()
        finished = flush.done.wait(max(timeout_s, 0.0) + 0.05)
        return finished and flush.ok

    def stop(self, timeout_s: float) -> bool:
        """Flush, then end the thread; True when it ended within `timeout_s`. Idempotent."""
        start = time.monotonic()
        if self._stopping:
            self._stopped.wait(timeout_s)
            return self._stopped.is_set()
        flushed = self.flush(timeout_s)
        self._stopping = True
        self._wake.set()
        self._thread.join(max(0.0, timeout_s - (time.monotonic() - start)) + 0.05)
        return flushed and not self._thread.is_alive()
