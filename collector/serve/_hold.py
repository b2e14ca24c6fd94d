"""`PlainHold`: the plain spans of traces that showed no agent marker yet, held until their trace decides.

Behind a Collector a trace's spans do not arrive in the order they ended: several services' exporters,
batches and retries interleave them, and a plain span (HTTP, database: no marker) can come before its
trace's first agent span and still be one extraction walks through (on the path from a tool call up to its
run). Forwarding it unread, as the pre-filter does with the spans of traces that are not an agent's, would
misread that run. So the pre-filter holds those spans, as cheap bytes, until their trace decides:

    plain spans of a trace not known to be an agent's ─→ held: a request whole, as received (unread), the
    │                                                    rest of a request whose other spans went to the
    │                                                    engine (`without_spans`), or single spans as their
    │                                                    framed bytes (`held_carrier`: OTLP/JSON, or a
    │                                                    request with spans refused for their ids)
    ├ a later span (or GenAI event) of the trace shows a marker ─→ `take`: to the engine, in arrival order
    ├ its root (no parent) has come and no span of it for `settle_ms` ─→ released: forwarded untouched
    ├ `hold_ms` after its first held span (its root is elsewhere, or never comes) ─→ released the same way
    └ more than `max_bytes` held in all ─→ the oldest request's spans released, counted dropped
                                           (`prefilter_hold_bytes`: their trace, if an agent's, may be misread)

The root rule is the engine's own: without the pre-filter a trace whose root has come finishes once no span
of it has come for `settle_ms`, and a span after that is a straggler, so holding until then changes no run
the engine would have scored. A request held whole goes on as received once every trace in it is released;
it is parsed (split into its spans) only when one of its traces turns out to be an agent's. Every held span
leaves once: to the engine (which forwards it) or to the forwarder. A daemon thread releases what is due;
`flush` and `close` release everything.
"""

from __future__ import annotations

import heapq
import itertools
import threading
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field

from toolscore.collector.serve._carrier import Carrier, held_carrier
from toolscore.collector.telemetry import PipelineTelemetry

__all__ = ["PlainHold"]

_PARCEL_BYTES = 200
"""What a held request costs besides its bytes: its parcel and its slots in the index."""
_TRACE_BYTES = 250
"""What each trace of a held request costs: its entry in the index, its count and heap entries."""
_SPAN_BYTES = 150
"""What a span held alone costs besides its bytes: its tuple and list slot (its block is shared)."""
_NEVER = 1 << 62


@dataclass(slots=True, eq=False)
class _Parcel:
    """One request's held spans: whole (`data`) until one of its traces is taken, then `split` per trace."""

    data: bytes | None
    spans: int
    """Spans in the request."""
    counts: dict[bytes, int]
    """Spans per trace not yet released or taken."""
    size: int
    roots: set[bytes]
    """The traces whose root span is in the request."""
    at_ns: int = 0
    """When it was held: the first and last span time of the traces it alone holds."""
    split: dict[bytes, list[Carrier]] | None = None


@dataclass(slots=True)
class _Trace:
    """A trace held in more than one request (its first request alone stands for it until then)."""

    parcels: list[_Parcel] = field(default_factory=list)
    first_ns: int = 0
    last_ns: int = 0
    root: bool = False


_PARCEL_SETTLED, _PARCEL_HELD, _TRACE_SETTLED, _TRACE_HELD = range(4)
"""What a deadline is for: a request's rooted traces, all its traces, or a trace held in several requests
(`settle_ms` after its last span, its root having come; `hold_ms` after its first)."""


@dataclass(slots=True)
class _Out:
    """What leaves the hold, done outside its lock: requests forwarded whole, spans released, spans dropped."""

    whole: list[tuple[bytes, int]] = field(default_factory=list)
    spans: list[Carrier] = field(default_factory=list)
    dropped: int = 0


class PlainHold:
    """Holds plain spans of undecided traces (see the module docstring); safe for concurrent use.

    Most plain traces come whole in one request, root included, and go on with it: such a request is indexed
    by its traces (each maps to the request itself) with two deadlines for the request, not several objects and
    deadlines per trace. Only a trace that shows up in a second request gets its own `_Trace` and deadlines.
    """

    def __init__(
        self,
        *,
        settle_ms: float,
        hold_ms: float,
        max_bytes: int,
        forward: Callable[[bytes, int], object],
        release: Callable[[Sequence[Carrier]], None],
        split: Callable[[bytes], list[tuple[bytes, Carrier]]],
        telemetry: PipelineTelemetry,
        clock: Callable[[], int] = time.monotonic_ns,
    ) -> None:
        self._settle_ns = int(settle_ms * 1_000_000)
        self._hold_ns = int(hold_ms * 1_000_000)
        self._max_bytes = max_bytes
        self._forward = forward
        self._release = release
        self._split = split
        self._telemetry = telemetry
        self._clock = clock
        self._traces: dict[bytes, _Trace | _Parcel] = {}
        """Each held trace: the request holding it while it is the only one, else its `_Trace`."""
        self._parcels: dict[_Parcel, None] = {}
        """Held requests, oldest first."""
        self._bytes = 0
        self._deadlines: list[tuple[int, int, int, _Parcel | bytes]] = []
        """A heap of (when, sequence, what for, request or trace id): when to look at a request's or a trace's
        spans again; an entry whose request or trace has gone since is passed over."""
        self._sequence = itertools.count()
        self._cond = threading.Condition()
        self._stopped = False
        self._thread = threading.Thread(target=self._run, name="toolscore-prefilter-hold", daemon=True)
        self._thread.start()

    @property
    def held_bytes(self) -> int:
        return self._bytes

    def __contains__(self, trace_id: object) -> bool:
        return trace_id in self._traces

    def hold_request(self, data: bytes, counts: dict[bytes, int], roots: set[bytes], spans: int) -> None:
        """Hold a request as received: its spans per trace id (the hold owns the dict from then on), the trace ids
        of its roots, and how many spans it has."""
        size = len(data) + _PARCEL_BYTES + _TRACE_BYTES * len(counts)
        self._add(_Parcel(data, spans, counts, size, roots))

    def hold_spans(self, carriers: Sequence[Carrier]) -> None:
        """Hold single spans (of a request whose other spans went on), copied out of it as their bytes."""
        split: dict[bytes, list[Carrier]] = {}
        roots = set()
        size = _PARCEL_BYTES
        for carrier in carriers:
            span = carrier[0]
            trace_id = span.trace_id
            held = held_carrier(carrier)
            split.setdefault(trace_id, []).append(held)
            if not span.parent_span_id:
                roots.add(trace_id)
            data = held[2]
            size += _SPAN_BYTES + (len(data) if data is not None else span.ByteSize())
        counts = {trace_id: len(spans) for trace_id, spans in split.items()}
        self._add(_Parcel(None, len(carriers), counts, size + _TRACE_BYTES * len(counts), roots, split=split))

    def held(self, trace_ids: Iterable[bytes]) -> int:
        """How many spans of these traces are held now."""
        with self._cond:
            traces = self._traces
            return sum(
                parcel.counts.get(trace_id, 0)
                for trace_id in trace_ids
                if (entry := traces.get(trace_id)) is not None
                for parcel in _parcels_of(entry)
            )

    def take(self, trace_ids: Iterable[bytes]) -> list[Carrier]:
        """The held spans of these traces (now known to be an agent's), in arrival order, for the engine."""
        out = _Out()
        taken: list[Carrier] = []
        with self._cond:
            for trace_id in trace_ids:
                entry = self._traces.pop(trace_id, None)
                if entry is None:
                    continue
                for parcel in _parcels_of(entry):
                    if parcel.split is None:
                        self._split_parcel(parcel, out)
                    assert parcel.split is not None
                    taken += parcel.split.pop(trace_id, ())
                    self._done(parcel, trace_id)
        self._send(out)
        return taken

    def flush(self) -> None:
        """Release everything held now, as if every trace had decided."""
        out = _Out()
        with self._cond:
            for trace_id in list(self._traces):
                self._decide(trace_id, out)
        self._send(out)

    def close(self) -> None:
        """Stop the release thread and release everything held. Idempotent."""
        with self._cond:
            self._stopped = True
            self._cond.notify_all()
        self._thread.join(1.0)
        self.flush()

    # -- under the lock ------------------------------------------------------------------------------

    def _add(self, parcel: _Parcel) -> None:
        out = _Out()
        with self._cond:
            held = not self._stopped and self._index(parcel, out)
        if not held:  # a request that raced the shutdown goes on at once: nothing is held past `close`
            if parcel.split is None:
                out.whole.append((parcel.data or b"", parcel.spans))
            else:
                out.spans = [carrier for spans in parcel.split.values() for carrier in spans]
        self._send(out)

    def _index(self, parcel: _Parcel, out: _Out) -> bool:
        """Hold `parcel` under its traces, then evict past `max_bytes`; True (it is held)."""
        now = parcel.at_ns = self._clock()
        traces = self._traces
        earliest = self._next_ns()
        known = parcel.counts.keys() & traces.keys()
        traces.update(dict.fromkeys(parcel.counts.keys() - known if known else parcel.counts, parcel))
        for trace_id in known:  # a trace held in an earlier request as well
            self._again(trace_id, parcel, now)
        if parcel.roots:
            self._deadline(now + self._settle_ns, _PARCEL_SETTLED, parcel)
        self._deadline(now + self._hold_ns, _PARCEL_HELD, parcel)
        self._parcels[parcel] = None
        self._bytes += parcel.size
        while self._bytes > self._max_bytes and len(self._parcels) > 1:
            self._evict(next(iter(self._parcels)), out)
        if self._next_ns() < earliest:
            self._cond.notify()
        return True

    def _again(self, trace_id: bytes, parcel: _Parcel, now: int) -> None:
        """A span of a trace held before: from a second request on, the trace has deadlines of its own."""
        traces = self._traces
        entry = traces[trace_id]
        if isinstance(entry, _Parcel):
            first = entry
            entry = traces[trace_id] = _Trace([first], first.at_ns, first.at_ns, trace_id in first.roots)
            self._deadline(first.at_ns + self._hold_ns, _TRACE_HELD, trace_id)
        entry.parcels.append(parcel)
        entry.last_ns = now
        if not entry.root and trace_id in parcel.roots:
            entry.root = True
        if entry.root:
            self._deadline(now + self._settle_ns, _TRACE_SETTLED, trace_id)

    def _deadline(self, at: int, kind: int, key: _Parcel | bytes) -> None:
        heapq.heappush(self._deadlines, (at, next(self._sequence), kind, key))

    def _next_ns(self) -> int:
        """When the release thread must next look (`_NEVER` when nothing is held)."""
        return self._deadlines[0][0] if self._deadlines else _NEVER

    def _due(self, now: int, out: _Out) -> None:
        """Release the traces whose time has come."""
        traces, deadlines = self._traces, self._deadlines
        while deadlines and deadlines[0][0] <= now:
            _, _, kind, key = heapq.heappop(deadlines)
            if isinstance(key, _Parcel):  # the traces only this request holds: rooted ones, or all of them
                owned = [t for t in (key.roots if kind == _PARCEL_SETTLED else key.counts) if traces.get(t) is key]
                if key.split is None and owned:  # the usual case: still whole, and goes on whole once they leave
                    counts = key.counts
                    for trace_id in owned:
                        del traces[trace_id]
                        del counts[trace_id]
                    if not counts:
                        self._gone(key, out)
                else:
                    for trace_id in owned:
                        self._decide(trace_id, out)
                continue
            trace = traces.get(key)
            if not isinstance(trace, _Trace):  # gone since (or held again, in one request)
                continue
            if kind == _TRACE_HELD:
                if trace.first_ns + self._hold_ns <= now:  # else it is the entry of an earlier trace of that id
                    self._decide(key, out)
            elif trace.root and trace.last_ns + self._settle_ns <= now:  # else a later span's own deadline comes
                self._decide(key, out)

    def _decide(self, trace_id: bytes, out: _Out) -> None:
        """The trace showed no marker in time: its held spans go on as received."""
        entry = self._traces.pop(trace_id, None)
        if entry is None:
            return
        for parcel in _parcels_of(entry):
            if parcel.split is not None:
                out.spans += parcel.split.pop(trace_id, ())
            self._done(parcel, trace_id, out)

    def _done(self, parcel: _Parcel, trace_id: bytes, out: _Out | None = None) -> None:
        """`trace_id` has left `parcel`; a request whose traces have all left goes on whole, when still whole."""
        parcel.counts.pop(trace_id, None)
        if not parcel.counts:
            self._gone(parcel, out)

    def _gone(self, parcel: _Parcel, out: _Out | None) -> None:
        """Every trace of `parcel` has left it: it goes on whole when still whole, and is held no more."""
        if parcel.data is not None and out is not None:
            out.whole.append((parcel.data, parcel.spans))
        if self._parcels.pop(parcel, 0) is None:
            self._bytes -= parcel.size

    def _split_parcel(self, parcel: _Parcel, out: _Out) -> None:
        """Parse a request held whole into its spans by trace; those of traces already released go on now."""
        assert parcel.data is not None
        split: dict[bytes, list[Carrier]] = {}
        for trace_id, carrier in self._split(parcel.data):
            split.setdefault(trace_id, []).append(carrier)
        for trace_id in [trace_id for trace_id in split if trace_id not in parcel.counts]:
            out.spans += split.pop(trace_id)
        parcel.split = split
        parcel.data = None

    def _evict(self, parcel: _Parcel, out: _Out) -> None:
        """Over `max_bytes`: the oldest request's spans go on unread, counted dropped."""
        out.dropped += sum(parcel.counts.values())
        traces = self._traces
        for trace_id in list(parcel.counts):
            if parcel.split is not None:
                out.spans += parcel.split.pop(trace_id, ())
            entry = traces.get(trace_id)
            if entry is parcel:
                del traces[trace_id]
            elif isinstance(entry, _Trace):
                entry.parcels.remove(parcel)
                if not entry.parcels:
                    del traces[trace_id]
            self._done(parcel, trace_id, out)  # a request still whole goes on as received

    # -- outside the lock ----------------------------------------------------------------------------

    def _send(self, out: _Out) -> None:
        telemetry = self._telemetry
        for data, spans in out.whole:
            telemetry.spans_received(spans)
            self._forward(data, spans)
            telemetry.spans_passed(spans)
        if out.spans:
            telemetry.spans_received(len(out.spans))
            self._release(out.spans)
            telemetry.spans_passed(len(out.spans))
        if out.dropped:
            telemetry.spans_dropped(out.dropped, "prefilter_hold_bytes")

    def _run(self) -> None:
        while True:
            out = _Out()
            with self._cond:
                while not self._stopped:
                    now = self._clock()
                    at = self._next_ns()
                    if at <= now:
                        break
                    self._cond.wait(None if at == _NEVER else (at - now) / 1e9)
                if self._stopped:
                    return
                self._due(now, out)
            self._send(out)


def _parcels_of(entry: _Trace | _Parcel) -> Sequence[_Parcel]:
    return (entry,) if isinstance(entry, _Parcel) else entry.parcels
