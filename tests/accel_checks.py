"""For tests holding compiled code to its pure-Python reference: what a call gives (its value, or the type of what
it raises), and how much memory a piece of work leaves behind (no reference kept on any path)."""

from __future__ import annotations

import gc
import tracemalloc
from collections.abc import Callable
from typing import Any


def bytes_kept(work: Callable[[], None], rounds: int, warm_up: int = 5) -> int:
    """The traced memory `rounds` calls of `work` leave allocated, after `warm_up` calls outside the measure (caches
    and interned values filled). tracemalloc sees every object a C extension makes through Python's allocator, so
    one reference kept per call shows as `rounds` times an object's size."""
    for _ in range(warm_up):
        work()
    gc.collect()
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        for _ in range(rounds):
            work()
        gc.collect()
        return int(tracemalloc.get_traced_memory()[0] - before)
    finally:
        tracemalloc.stop()


def outcome(function: Callable[..., Any], *args: Any) -> Any:
    """What `function(*args)` returns, or the type of what it raises: two paths agree when their outcomes are equal."""
    try:
        return function(*args)
    except Exception as exc:
        return type(exc)
