"""`WatchExpectations` streams: the registry's change feed, handed from the thread that applied each change
to each open stream, with a bounded queue per stream.

    Registry.subscribe ─(any thread)─→ Feed.deliver ─(call_soon_threadsafe)─→ asyncio.Queue ─→ stream

A stream subscribes before it reads the backlog (a page at a time, `CHANGE_PAGE_SIZE`), so a change
committed in between arrives twice (once in the backlog, once from the feed) and is sent once, by `seq`;
it sends its response headers once subscribed, so a client that waits for them (`client.Watch`) misses
nothing after them. Subscribing takes the registry's lock, which a poll holds while its store answers, so
it is done in a worker thread like every store call: a slow store never stalls the event loop's other
calls. A client that does not keep up is cut off with where to resume, rather than let its queue grow the
server's memory; and at most `max_streams` are served at once, since each holds a queue and a subscription
that every change applied goes through. A `since_seq` older than the compacted change log, or a server
that fell that far behind itself, ends the stream with OUT_OF_RANGE (`ChangesCompacted`): the client must
list again, and watch from now.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any, NoReturn

import grpc

from toolscore.collector.registry._errors import ChangesCompacted
from toolscore.collector.registry._registry import Registry
from toolscore.collector.registry.api._convert import change_to_proto
from toolscore.collector.registry.api._status import abort_with
from toolscore.collector.registry.stores._store import CHANGE_PAGE_SIZE, Change
from toolscore.registry.v1 import registry_pb2 as pb

__all__ = ["WATCH_SEQ_KEY", "Feed", "Watches"]

WATCH_SEQ_KEY = "toolscore-watch-seq"
"""Initial metadata of a watch: the `seq` it streams after, sent once the server is subscribed."""

_log = logging.getLogger("toolscore.registry")
Run = Callable[..., Awaitable[Any]]
"""The servicer's `_run(context, fn, *args)`: a store call in a worker thread, errors as statuses."""


class Feed:
    """One watch's changes, from the thread that applied them to its stream; at most `limit` wait."""

    def __init__(self, loop: asyncio.AbstractEventLoop, limit: int) -> None:
        self.queue: asyncio.Queue[Change | None] = asyncio.Queue()
        self.limit = limit
        self.overflowed = False
        self.gap: ChangesCompacted | None = None
        """Set when the registry missed changes for good (they were compacted before it read them)."""
        self._loop = loop

    def deliver(self, change: Change) -> None:
        """Called by the registry (any thread)."""
        with contextlib.suppress(RuntimeError):  # the loop is closed: this stream is over
            self._loop.call_soon_threadsafe(self._offer, change)

    def missed(self, gap: ChangesCompacted) -> None:
        """Called by the registry (any thread) when it read its whole set again: this stream has a hole."""
        with contextlib.suppress(RuntimeError):
            self._loop.call_soon_threadsafe(self._end_at_gap, gap)

    def _end_at_gap(self, gap: ChangesCompacted) -> None:
        if self.overflowed or self.gap is not None:
            return
        self.gap = gap  # the stream sends what is queued (all before the hole), then ends saying so
        self.queue.put_nowait(None)

    def _offer(self, change: Change) -> None:
        if self.overflowed or self.gap is not None:
            return
        if self.queue.qsize() >= self.limit:
            self.overflowed = True  # the stream sends what is queued, then ends saying where to resume
            self.queue.put_nowait(None)
            return
        self.queue.put_nowait(change)

    def close(self) -> None:
        self.queue.put_nowait(None)


async def _subscribe(registry: Registry, feed: Feed) -> Callable[[], None]:
    """`Registry.subscribe` in a worker thread: it takes the registry's lock, which a poll holds for as long
    as its store takes to answer, and the event loop serves every other call meanwhile.

    A stream cancelled while it waits (its client went away) unsubscribes once the subscription is made,
    rather than leave the registry feeding a stream that is gone.
    """
    subscribing = asyncio.ensure_future(asyncio.to_thread(registry.subscribe, feed.deliver, feed.missed))
    try:
        return await asyncio.shield(subscribing)
    except asyncio.CancelledError:
        subscribing.add_done_callback(_unsubscribe_when_made)
        raise


def _unsubscribe_when_made(subscribing: asyncio.Future[Callable[[], None]]) -> None:
    if not subscribing.cancelled() and subscribing.exception() is None:
        _off_the_loop(subscribing.result())


def _off_the_loop(unsubscribe: Callable[[], None]) -> None:
    """Unsubscribe in a worker thread (it takes the registry's lock too), not awaited: a stream ending because
    it was cancelled cannot wait for it, and nothing after it depends on it."""
    try:
        asyncio.get_running_loop().run_in_executor(None, unsubscribe)
    except RuntimeError:  # the loop's executor is shut down: the server is stopping, and this wait is short
        unsubscribe()


class Watches:
    """The open watch streams of one server, each fed by the registry's change feed."""

    def __init__(self, registry: Registry, *, queue_size: int, max_streams: int = 100) -> None:
        self._registry = registry
        self._queue_size = queue_size
        self._max_streams = max_streams
        self._feeds: set[Feed] = set()
        self._refusing = False
        self.cut = 0
        """Streams ended because their client fell `queue_size` changes behind."""
        self.refused = 0
        """Streams refused because `max_streams` were open."""

    async def _refuse(self, context: Any) -> NoReturn:
        """RESOURCE_EXHAUSTED saying the limit and how to raise it; logged once until a stream is free again."""
        self.refused += 1
        if not self._refusing:
            self._refusing = True
            _log.warning("registry watches refused: %d are open, the limit (max_watches)", self._max_streams)
        message = (
            f"this registry server already serves {self._max_streams} watches, its limit (max_watches; "
            "`toolscore expectations serve --max-watches`): end one, or retry later"
        )
        await context.abort(grpc.StatusCode.RESOURCE_EXHAUSTED, message)
        raise AssertionError("unreachable: abort raises")

    async def stream(
        self, request: pb.WatchExpectationsRequest, context: Any, run: Run
    ) -> AsyncIterator[pb.WatchExpectationsResponse]:
        """The changes after `since_seq` (or after now), then every new one, until closed or cut off."""
        if len(self._feeds) >= self._max_streams:  # counted and added on the event loop: no race
            await self._refuse(context)
        self._refusing = False
        feed = Feed(asyncio.get_running_loop(), self._queue_size)
        self._feeds.add(feed)  # before the first await, so the count above holds
        unsubscribe: Callable[[], None] | None = None
        try:
            unsubscribe = await _subscribe(self._registry, feed)
            if request.HasField("since_seq"):
                last = request.since_seq
                page = await run(context, self._registry.changes_since, last, CHANGE_PAGE_SIZE)
            else:
                last, page = await run(context, self._registry.latest_seq), []
            await context.send_initial_metadata(((WATCH_SEQ_KEY, str(last)),))  # "subscribed": see `Watch`
            while page:  # the backlog, a page at a time: never the whole log in one read
                for past in page:
                    yield change_to_proto(past)
                    last = past.seq
                if len(page) < CHANGE_PAGE_SIZE:
                    break
                page = await run(context, self._registry.changes_since, last, CHANGE_PAGE_SIZE)
            while (change := await feed.queue.get()) is not None:
                if change.seq > last:
                    yield change_to_proto(change)
                    last = change.seq
        finally:
            self._feeds.discard(feed)
            if unsubscribe is not None:
                _off_the_loop(unsubscribe)
        if feed.overflowed:
            self.cut += 1
            _log.warning("a registry watch fell %d changes behind and was ended at seq %d", feed.limit, last)
            message = f"this watch fell {feed.limit} changes behind; watch again with since_seq={last}"
            await context.abort(grpc.StatusCode.RESOURCE_EXHAUSTED, message)
        if feed.gap is not None:
            await abort_with(context, ChangesCompacted(last, feed.gap.compacted_seq))

    def close(self) -> None:
        """End every stream, so a graceful stop does not wait out its grace period on them."""
        for feed in list(self._feeds):
            feed.close()
