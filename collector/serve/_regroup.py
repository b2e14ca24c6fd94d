"""The collector's sink: released spans go back into OTLP requests, run spans enriched in place.

The received protobuf messages are forwarded as they are (no SDK span is rebuilt): a released span is
buffered as its received bytes (serialized again only when they are not known, or it was enriched)
under its resource/scope block, and the buffer becomes one serialized
`ExportTraceServiceRequest` (`encode.encode_request`) when it holds `batch_max_spans` spans or its
oldest span has waited `batch_timeout_ms`; a request over `batch_max_bytes` is split in halves (the
usual receiver limit is 4 MiB). A scored run span gains the enrichment's attributes (replacing equal
keys) and `gen_ai.evaluation.result` events: appended to its received bytes (`enrich_bytes`), or, when
those are not known or it already holds a key of ours, added to its protobuf message (`enrich_span`).
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Sequence
from typing import Any

from toolscore.collector.pipeline.sink import RunEnrichment
from toolscore.collector.serve._carrier import Carrier, ScopeBlock
from toolscore.collector.serve._encode import Encoded, encode_request, encode_span, span_message
from toolscore.collector.serve._enrich_bytes import appended_entry

__all__ = ["RequestSink", "enrich_span", "set_any_value"]

_log = logging.getLogger("toolscore.serve")

Send = Callable[[bytes, int], object]
"""Where a finished request goes, serialized, with its span count (`Forwarder.submit`)."""


def set_any_value(target: Any, value: Any) -> None:
    """Write a Python value into an OTLP `AnyValue` (bool before int: a bool is an int in Python)."""
    if isinstance(value, str):
        target.string_value = value
    elif isinstance(value, bool):
        target.bool_value = value
    elif isinstance(value, int):
        target.int_value = value
    elif isinstance(value, float):
        target.double_value = value
    elif isinstance(value, list | tuple):
        values = target.array_value.values
        for item in value:
            set_any_value(values.add(), item)
    elif value is not None:
        target.string_value = str(value)


def enrich_span(span: Any, enrichment: RunEnrichment) -> None:
    """Add the enrichment to a protobuf `Span` in place: attributes replace equal keys, events are appended."""
    attributes = span.attributes
    replaced = [i for i, kv in enumerate(attributes) if kv.key in enrichment.attributes]
    for index in reversed(replaced):
        del attributes[index]
    for key, value in enrichment.attributes.items():
        kv = attributes.add()
        kv.key = key
        set_any_value(kv.value, value)
    for event in enrichment.events:
        added = span.events.add()
        added.name = event.name
        added.time_unix_nano = event.time_ns
        for key, value in event.attributes.items():
            kv = added.attributes.add()
            kv.key = key
            set_any_value(kv.value, value)


Blocks = list[tuple[ScopeBlock, list[Encoded]]]
"""Buffered spans, framed (received bytes, or `encode_span`), by the block they were received in."""


def _split(blocks: Blocks, first: int) -> tuple[Blocks, Blocks]:
    """The blocks' spans cut after the first `first` spans, in order."""
    head: Blocks = []
    tail: Blocks = []
    left = first
    for block, spans in blocks:
        if left >= len(spans):
            head.append((block, spans))
        elif left <= 0:
            tail.append((block, spans))
        else:
            head.append((block, spans[:left]))
            tail.append((block, spans[left:]))
        left -= len(spans)
    return head, tail


class RequestSink:
    """`Sink[Carrier]` that batches released spans into requests for `send`; safe from any thread.

    The engine's worker calls it (and the caller of `Engine.shutdown`, for spans left queued); a daemon
    thread sends a buffer that has waited `batch_timeout_ms`.
    """

    def __init__(
        self,
        send: Send,
        batch_max_spans: int = 512,
        batch_timeout_ms: float = 50.0,
        batch_max_bytes: int = 4_000_000,
    ) -> None:
        self._send = send
        self._max = batch_max_spans
        self._max_bytes = batch_max_bytes
        self._timeout_ns = int(batch_timeout_ms * 1_000_000)
        self._blocks: dict[int, tuple[ScopeBlock, list[Encoded]]] = {}
        self._count = 0
        self._oldest_ns = 0
        self._cond = threading.Condition()
        self._stopped = False
        self._thread = threading.Thread(target=self._run, name="toolscore-regroup", daemon=True)
        self._thread.start()

    def release(self, carriers: Sequence[Carrier]) -> None:
        self._add(carriers)

    def release_run(self, carrier: Carrier, enrichment: RunEnrichment) -> None:
        span, block, data = carrier
        if data is not None:
            try:
                enriched = appended_entry(data, enrichment)
            except Exception:  # a value the bytes cannot take: the message path says what
                enriched = None
            if enriched is not None:
                self._add(((span, block, enriched),))
                return
            if span is None:  # held as its bytes only (`held_carrier`)
                span = span_message(data)
        try:
            enrich_span(span, enrichment)
        except Exception:  # forward it unenriched rather than not at all
            _log.exception("could not enrich a run span; forwarding it without scores")
        self._add(((span, block, None),))  # changed: its received bytes are out of date

    def _add(self, carriers: Sequence[Carrier]) -> None:
        encoded = [  # outside the lock
            (encode_span(span) if data is None else data, block) for span, block, data in carriers
        ]
        start = 0
        while start < len(encoded):
            full = None
            with self._cond:
                if not self._count:  # the timer thread looks at least every `batch_timeout_ms`: no wake-up needed
                    self._oldest_ns = time.monotonic_ns()
                chunk = encoded[start : start + max(1, self._max - self._count)]
                start += len(chunk)
                blocks = self._blocks
                for data, block in chunk:
                    entry = blocks.get(id(block))
                    if entry is None:
                        blocks[id(block)] = (block, [data])
                    else:
                        entry[1].append(data)
                self._count += len(chunk)
                if self._count >= self._max:
                    full = self._take()
            if full is not None:
                self._emit(*full)

    def _take(self) -> tuple[Blocks, int]:
        taken = (list(self._blocks.values()), self._count)
        self._blocks = {}
        self._count = 0
        return taken

    def _emit(self, blocks: Blocks, count: int) -> None:
        if not count:
            return
        try:
            request = encode_request(blocks)
            if count > 1 and len(request) > self._max_bytes:
                half = _split(blocks, count // 2)
                self._emit(half[0], count // 2)
                self._emit(half[1], count - count // 2)
                return
            self._send(request, count)
        except Exception:
            _log.exception("could not hand %d spans to the forwarder", count)

    def _run(self) -> None:
        while True:
            with self._cond:
                while not self._stopped:
                    # Idle, it looks again after one timeout rather than being woken by `_add`: waking this
                    # thread for every first span of a buffer cost more than forwarding the span (a buffer
                    # begun meanwhile is still sent `batch_timeout_ms` after its first span).
                    wait_ns = self._timeout_ns
                    if self._count:
                        wait_ns = self._oldest_ns + self._timeout_ns - time.monotonic_ns()
                        if wait_ns <= 0:
                            break
                    self._cond.wait(wait_ns / 1e9)
                if self._stopped:
                    return
                taken = self._take()
            self._emit(*taken)

    def flush(self) -> None:
        """Send whatever is buffered now."""
        with self._cond:
            taken = self._take()
        self._emit(*taken)

    def close(self) -> None:
        """Send what is buffered and stop the timer thread; later spans are sent at once. Idempotent."""
        with self._cond:
            self._stopped = True
            self._max = 1
            self._cond.notify_all()
        self._thread.join(1.0)
        self.flush()
