"""Receive: the bounded hand-off from the threads that end spans to the pipeline's worker thread.

`offer` is all a span-ending thread ever runs: a length check, a deque append (atomic in CPython)
and an event set. It never blocks and never raises; when the queue is full it says so and the caller
passes the span straight on, so a span is never lost, only left unscored. Drops and arrivals are
counted with `itertools.count` (whose `next` is atomic) and reported by the worker in batches, so
the span path never touches the metrics API. A caller whose span was refused notes its ids
(`note_refused`, a bounded deque of its own) so that the worker can flag the run it belonged to.
Once closed (at shutdown, when no worker reads it any more), the queue is emptied by whoever finds
items in it, `take_all` giving each item to one taker: a caller whose `offer` raced the close takes
what is left itself (`Engine.stranded`), so its span is not stranded.
"""

from __future__ import annotations

import itertools
import threading
import time
from collections import deque
from collections.abc import Callable, Sequence
from typing import Generic, TypeVar

__all__ = ["Intake", "RefusedNote"]

C = TypeVar("C")

RefusedNote = tuple[str, str, str | None]
"""(trace id, span id, parent span id or None) of a span the queue refused."""


class Intake(Generic[C]):
    """A bounded multi-producer, single-consumer queue of (carrier, arrival time in monotonic ns)."""

    def __init__(self, size: int, wake: threading.Event, clock: Callable[[], int] = time.monotonic_ns) -> None:
        self._size = size
        self._clock = clock
        self._items: deque[tuple[C, int]] = deque()
        self._wake = wake
        self._offered = itertools.count()
        self._dropped = itertools.count()
        self.skips: itertools.count[int] = itertools.count()
        """Advanced (`next`) once per span its caller passed on unread (the pre-filter, `markers`); the worker
        reports them in batches. The count itself, so the compiled gate (`span_gate`) counts with no call."""
        self._reported_skipped = 0
        self._reported_offered = 0
        self._reported_dropped = 0
        self._closed = False
        self._refused: deque[RefusedNote] = deque()
        self._unnoted = itertools.count()
        self._reported_unnoted = 0

    def offer(self, carrier: C) -> bool:
        """Queue a span for the worker; False when the queue is full (the caller passes it on itself)."""
        next(self._offered)
        if len(self._items) >= self._size:
            next(self._dropped)
            return False
        self._items.append((carrier, self._clock()))
        if not self._wake.is_set():  # set() takes a lock and may wake a thread: once per drain is enough
            self._wake.set()
        return True

    def skipped_since_last(self) -> int:
        """Spans counted in `skips` since the previous call (worker thread only)."""
        skipped = _peek(self.skips)
        delta, self._reported_skipped = skipped - self._reported_skipped, skipped
        return delta

    def note_refused(self, trace_id: str, span_id: str, parent_id: str | None) -> None:
        """Remember the ids of a span `offer` refused, for the worker (`refused_since_last`); never blocks.

        Run only when refusing, so a queued span costs nothing more. Bounded like the queue: with `size`
        notes not taken yet, the span is counted instead.
        """
        if len(self._refused) < self._size:
            self._refused.append((trace_id, span_id, parent_id))
        else:
            next(self._unnoted)

    def extend(self, carriers: Sequence[C]) -> None:
        """Queue every span of a request the caller admitted whole, past the size if need be.

        For a caller that bounds the queue per request (`serve` refuses a request that does not fit
        beside what is queued, and takes any one into an empty queue): cutting an admitted request at
        the size would leave the rest of its runs unscored, as an OpenTelemetry Collector's 8,192-span
        batches were against a 2,048-span queue.
        """
        deque(itertools.islice(self._offered, len(carriers)), maxlen=0)  # counted: a count has no `+= n`
        arrived = self._clock()
        self._items.extend([(carrier, arrived) for carrier in carriers])
        if not self._wake.is_set():
            self._wake.set()

    def close(self) -> None:
        """No worker reads the queue from now on: what is left, and what comes, is for `take_all` callers."""
        self._closed = True

    @property
    def closed(self) -> bool:
        return self._closed

    def take_all(self) -> list[tuple[C, int]]:
        """Every queued item, oldest first; any thread, several at once: each item goes to one caller."""
        items = self._items
        out: list[tuple[C, int]] = []
        while True:
            try:
                out.append(items.popleft())  # atomic: a racing taker gets the item or IndexError
            except IndexError:
                return out

    def drain(self, limit: int) -> list[tuple[C, int]]:
        """Up to `limit` queued items, oldest first (worker thread only)."""
        items = self._items
        out: list[tuple[C, int]] = []
        for _ in range(min(limit, len(items))):
            out.append(items.popleft())
        return out

    def __len__(self) -> int:
        return len(self._items)

    def counts_since_last(self) -> tuple[int, int]:
        """(offered, dropped) since the previous call (worker thread only)."""
        offered = _peek(self._offered)
        dropped = _peek(self._dropped)
        delta = (offered - self._reported_offered, dropped - self._reported_dropped)
        self._reported_offered, self._reported_dropped = offered, dropped
        return delta

    def refused_since_last(self) -> tuple[list[RefusedNote], int]:
        """(spans noted, refused spans that found the notes full) since the previous call (worker thread only)."""
        notes = self._refused
        taken = [notes.popleft() for _ in range(len(notes))]
        unnoted = _peek(self._unnoted)
        delta, self._reported_unnoted = unnoted - self._reported_unnoted, unnoted
        return taken, delta


def _peek(counter: itertools.count[int]) -> int:
    """The next value a counter would give, read from its repr (`count(5)`) without advancing it."""
    return int(repr(counter)[6:-1])
