"""How much memory a piece of work leaves behind: for tests that show compiled code keeps no reference on any path."""

from __future__ import annotations

import gc
import tracemalloc
from collections.abc import Callable


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
