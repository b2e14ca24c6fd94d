"""The worker thread's lifecycle: wake on work or on the next deadline, flush on request, stop once.

Kept apart from the data flow (`engine`) because the hard part here is time: a flush or shutdown must
return within its timeout whatever the work does, be safe to call from any thread and any number of
times, and never leave the caller waiting on a thread that has stopped.

Starting the thread is the builder's choice (`start`), so that a test can leave it out and drive time by
hand: feed spans, then call `step(now_ns)` with chosen monotonic times; deadlines are served exactly when
`now_ns` passes them, and nothing happens between calls. Without a thread, `flush` and `stop` do their
work on the caller's thread (`_flush_here`), so a hand-driven engine still finishes and shuts down as a
threaded one does.

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
from collections.abc import Callable
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
    """One daemon thread running `step(now_ns)` whenever woken or when `next_deadline_ns` passes, once `start`ed.

    Subclasses implement `step`, `next_deadline_ns`, `flush_begin` (finish everything pending now)
    and `flush_waiting` (whether a flush still waits on work in flight; at its deadline
    `flush_give_up` lets go of that work and the flush reports failure). A subclass holding state of
    its own resets it in `after_fork`.
    """

    def __init__(self, name: str, clock: Callable[[], int] = time.monotonic_ns) -> None:
        """`clock` is the monotonic time in ns the steps run at; a test driving `step` by hand may give its own
        (a thread steps at the real time: `start` refuses another clock)."""
        self._name = name
        self._clock = clock
        self._started = False
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
        """Start the thread that steps on its own; without it, the builder calls `step(now_ns)` by hand.

        Once only, and not after `stop`; a forked child starts its own thread when the parent had one.
        """
        if self._started or self._stopping:
            raise RuntimeError(f"{self._name}: start() is called once, before stop()")
        if self._clock is not time.monotonic_ns:
            raise RuntimeError(f"{self._name}: a worker on a clock of its own is stepped by hand, not started")
        self._started = True
        self._thread.start()

    @property
    def started(self) -> bool:
        """Whether the thread was started (False: the builder drives `step` by hand)."""
        return self._started

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
        if not self._started:
            return self._flush_here(timeout_s)
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
        if not self._started:
            self._stopped.set()
            return flushed
        self._wake.set()
        self._thread.join(max(0.0, timeout_s - (time.monotonic() - start)) + 0.05)
        return flushed and not self._thread.is_alive()

    def _flush_here(self, timeout_s: float) -> bool:
        """`flush` without a thread: finish everything on the caller's thread, stepping as judge results come.

        Steps run at the worker's clock; `timeout_s` is real time (judges answer in real time).
        """
        deadline = time.monotonic_ns() + int(max(timeout_s, 0.0) * 1e9)
        with self._busy:
            self.flush_begin(self._clock())
        while True:
            self._wake.clear()
            with self._busy:
                self.step(self._clock())
                if not self.flush_waiting():
                    return True
                if time.monotonic_ns() >= deadline:
                    self.flush_give_up(self._clock())
                    return False
            self._wake.wait(max(0.0, (deadline - time.monotonic_ns()) / 1e9))
