"""Runtime state of the LLM judge: a concurrency limit and a verdict cache, shared by equal judges.

Scorers are frozen values of their parameters, and callers freely build several equal ones (the
batch CLI parses a scorer per request line). Equal judges are one judge, so they share one
`SharedState`, found by their parameters and kept while a judge holds it or it is among the most
recently used configurations. The limit must hold across threads and event loops (the CLI runs a
new loop per window, the collector a loop on a worker thread), which `asyncio.Semaphore` cannot
do: it binds to the first loop that waits on it.
"""

from __future__ import annotations

import asyncio
import threading
import weakref
from collections import OrderedDict
from collections.abc import Hashable
from typing import Any, Generic, TypeVar

__all__ = ["LRU", "Limiter", "SharedState", "shared_state"]

V = TypeVar("V")


class Limiter:
    """A counting semaphore usable from any thread and any event loop (asyncio's binds to one loop)."""

    def __init__(self, limit: int) -> None:
        self._limit = limit
        self._busy = 0
        self._lock = threading.Lock()
        self._waiters: list[tuple[asyncio.AbstractEventLoop, asyncio.Future[None]]] = []

    async def __aenter__(self) -> None:
        loop = asyncio.get_running_loop()
        with self._lock:
            if self._busy < self._limit and not self._waiters:
                self._busy += 1
                return
            waiter = (loop, loop.create_future())
            self._waiters.append(waiter)
        try:
            await waiter[1]
        except asyncio.CancelledError:
            with self._lock:
                queued = waiter in self._waiters
                if queued:
                    self._waiters.remove(waiter)
            if not queued and waiter[1].done() and not waiter[1].cancelled():
                self._release()  # the slot was handed over just as we were cancelled
            raise

    async def __aexit__(self, *exc: object) -> None:
        self._release()

    def _release(self) -> None:
        with self._lock:
            while self._waiters:
                loop, future = self._waiters.pop(0)
                try:
                    loop.call_soon_threadsafe(self._grant, future)  # the slot passes on; _busy is unchanged
                    return
                except RuntimeError:  # that loop is closed: its waiter is gone
                    continue
            self._busy -= 1

    def _grant(self, future: asyncio.Future[None]) -> None:
        if future.cancelled():
            self._release()
        else:
            future.set_result(None)


class LRU(Generic[V]):
    """A thread-safe bounded mapping; the least recently used entry goes first. Size 0 keeps nothing."""

    def __init__(self, size: int) -> None:
        self._size = size
        self._items: OrderedDict[str, V] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, key: str) -> V | None:
        with self._lock:
            value = self._items.get(key)
            if value is not None:
                self._items.move_to_end(key)
            return value

    def put(self, key: str, value: V) -> None:
        if self._size <= 0:
            return
        with self._lock:
            self._items[key] = value
            self._items.move_to_end(key)
            while len(self._items) > self._size:
                self._items.popitem(last=False)


class SharedState:
    """The cache and the limit of one judge configuration."""

    __slots__ = ("__weakref__", "cache", "limiter")

    def __init__(self, max_concurrency: int, cache_size: int) -> None:
        self.limiter = Limiter(max_concurrency)
        self.cache: LRU[Any] = LRU(cache_size)


_STATES: weakref.WeakValueDictionary[Hashable, SharedState] = weakref.WeakValueDictionary()
_RECENT: OrderedDict[Hashable, SharedState] = OrderedDict()
_RECENT_CONFIGS = 32
"""States kept alive after their last judge is gone, so a cache outlives short-lived judges (CLI windows)."""
_STATES_LOCK = threading.Lock()


def shared_state(key: Hashable, max_concurrency: int, cache_size: int) -> SharedState:
    """The state of the judges whose parameters make `key`; created on first use."""
    with _STATES_LOCK:
        state = _STATES.get(key)
        if state is None:
            state = _STATES[key] = SharedState(max_concurrency, cache_size)
        _RECENT[key] = state
        _RECENT.move_to_end(key)
        while len(_RECENT) > _RECENT_CONFIGS:
            _RECENT.popitem(last=False)
        return state
