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
"""

from __future__ import annotations

import os
import weakref
from collections.abc import Callable
from types import MethodType
from typing import Any

__all__ = ["on_fork"]


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
