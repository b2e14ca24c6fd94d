"""Surviving `os.fork()`: gunicorn `--preload`, uWSGI, Celery's prefork pool and `multiprocessing` fork a
process that already set up tracing, and the child gets none of the parent's threads.

A child inherits toolscore's objects as they were, with the worker thread that served them gone and
any lock that thread held at that instant held forever. So an object that runs a thread or shares a
lock registers here to be told around a fork: `before` runs in the forking thread (to bring its own
threads to a point where they hold nothing), `after_in_parent` undoes that, `after_in_child` gives the
child fresh locks and threads. This is what the OpenTelemetry SDK's own processors and readers do
(`os.register_at_fork(after_in_child=...)`); the standard library's `logging` does the same for its
handler locks.

The registration holds its object weakly: forking later does not keep a discarded pipeline alive, and
its hooks then do nothing. `os.register_at_fork` cannot unregister, so each registration costs one
small closure for the life of the process.

A lock that guards state shared with threads (the registry's, a store's connection, the pipeline worker's
step) is a `ForkSafeLock`: the forking thread takes all of them before the fork, so the child inherits
whole state and free locks, and the child's hooks registered with `on_fork` run after they are free. A
connection the child inherits but must not use (its server session is the parent's) is `abandon`ed: held,
never used nor closed.
"""

from __future__ import annotations

import logging
import os
import threading
import time
import weakref
from collections.abc import Callable
from types import MethodType
from typing import Any

__all__ = ["FORK_LOCK_WAIT_S", "ForkSafeLock", "abandon", "on_fork"]

FORK_LOCK_WAIT_S = 5.0
"""The longest `os.fork()` waits for the `ForkSafeLock`s to be free; past it the fork goes ahead with those it
could take, and the child renews the others."""

_TRY_S = 0.05
"""How long one lock is waited for in a round, before the ones taken are let go and all are tried again."""

_log = logging.getLogger("toolscore")


def _weak(method: Callable[[], Any] | None) -> Callable[[], Any] | None:
    if method is None or not isinstance(method, MethodType):
        return method  # a plain function (module state) lives as long as its module anyway
    ref = weakref.WeakMethod(method)

    def call() -> None:
        bound = ref()
        if bound is not None:
            bound()

    return call


def on_fork(
    *,
    before: Callable[[], Any] | None = None,
    after_in_parent: Callable[[], Any] | None = None,
    after_in_child: Callable[[], Any] | None = None,
) -> None:
    """Register callables to run around `os.fork()` (bound methods held weakly); a no-op without fork."""
    if not hasattr(os, "register_at_fork"):
        return
    hooks = {"before": before, "after_in_parent": after_in_parent, "after_in_child": after_in_child}
    os.register_at_fork(**{when: hook for when, method in hooks.items() if (hook := _weak(method)) is not None})


class ForkSafeLock:
    """A lock (reentrant if asked) that a forked child never inherits held by a thread it does not have.

    Before `os.fork()` the forking thread takes every one of them: all, or else none and again after a
    moment, so that locks other threads take in different orders cannot deadlock it (for at most
    `FORK_LOCK_WAIT_S`). An `outer` lock, held by a thread around work that takes the others (the pipeline
    worker's step), is taken before them: the fork waits for that work to end holding nothing it needs.
    With them taken the state each guards is whole, and each owner's `before_fork` runs (a store puts
    away a connection the child must not share). After the fork the parent lets them go; the child lets
    go of the ones taken and renews the others, then runs each `after_in_child` before any hook
    registered with `on_fork`, so those find every lock free. Callbacks are held weakly, as
    `on_fork` holds its methods.
    """

    def __init__(
        self,
        *,
        reentrant: bool = False,
        outer: bool = False,
        before_fork: Callable[[], Any] | None = None,
        after_in_child: Callable[[], Any] | None = None,
    ) -> None:
        self._reentrant = reentrant
        self._outer = outer
        self._lock = self._new()
        self._before_fork = _weak(before_fork)
        self._after_in_child = _weak(after_in_child)
        _locks.add(self)

    def _new(self) -> threading.Lock | threading.RLock:
        return threading.RLock() if self._reentrant else threading.Lock()

    def acquire(self, blocking: bool = True, timeout: float = -1) -> bool:
        return self._lock.acquire(blocking, timeout)

    def release(self) -> None:
        self._lock.release()

    def __enter__(self) -> bool:
        return self._lock.acquire()

    def __exit__(self, *exc_info: object) -> None:
        self._lock.release()


_locks: weakref.WeakSet[ForkSafeLock] = weakref.WeakSet()
_taken: list[ForkSafeLock] = []
"""The locks the forking thread holds, from before the fork until after it."""
_forking = threading.Lock()
"""Held by the forking thread from before the fork until after it: two threads forking at once take turns."""
_abandoned: list[object] = []


def abandon(inherited: object) -> None:
    """Keep a connection a forked child inherited, unused and unclosed, until the process ends: its server
    session is the parent's, which closing it would end (PostgreSQL's Terminate) or disturb (SQLite's locks)."""
    _abandoned.append(inherited)


def _run(callback: Callable[[], Any] | None) -> None:
    if callback is None:
        return
    try:
        callback()
    except Exception:  # one owner's failure must not leave the others' locks and state half renewed
        _log.exception("toolscore fork hook failed")


def _take_all() -> None:
    _forking.acquire()
    locks = sorted(_locks, key=lambda lock: not lock._outer)
    deadline = time.monotonic() + FORK_LOCK_WAIT_S
    while True:
        last = time.monotonic() >= deadline  # then take what is free, and fork
        for lock in locks:
            if lock.acquire(timeout=0 if last else _TRY_S):
                _taken.append(lock)
            elif not last:
                break
        if last or len(_taken) == len(locks):
            break
        for lock in reversed(_taken):
            lock.release()
        _taken.clear()
    for lock in _taken:
        _run(lock._before_fork)


def _let_go_in_parent() -> None:
    for lock in reversed(_taken):
        lock.release()
    _taken.clear()
    _forking.release()


def _renew_in_child() -> None:
    taken = set(map(id, _taken))
    locks = list(_locks)
    for lock in locks:
        if id(lock) in taken:
            lock.release()
        else:  # held, at the fork, by a thread the child does not have
            lock._lock = lock._new()
    _taken.clear()
    _forking.release()
    for lock in locks:
        _run(lock._after_in_child)


# registered at import, before any object's `on_fork`: the locks are taken after every other `before`
# hook (those run last registered first) and are free before every other child hook runs
on_fork(before=_take_all, after_in_parent=_let_go_in_parent, after_in_child=_renew_in_child)
