"""The collector's carrier: a received protobuf `Span`, the resource and scope block it came in, its bytes.

The engine never looks inside a carrier; the sink needs the block to put a released span back into a
request with the right `Resource` and `InstrumentationScope`, and `decode` needs the block's decoded
resource attributes, which are computed once per block (on the worker thread) and shared by its spans.
The span's received bytes (its framed entry in the request, `encode.span_entries`), when known, are
what the sink forwards for a span it did not change. A span held for its run's scores is copied out
of its request (`held_carrier`), so that it does not keep the whole request alive while it waits.
"""

from __future__ import annotations

from typing import Any

from toolscore.collector.pipeline.group import item_bytes, record_bytes
from toolscore.collector.serve._encode import span_message
from toolscore.collector.sources._accel import decode_span_entry
from toolscore.collector.sources.otlp_proto import resource_attributes, span_record
from toolscore.collector.spans import SpanRecord

__all__ = ["Carrier", "ResourceBlock", "ScopeBlock", "carrier_bytes", "decode_carrier", "held_carrier"]


class ResourceBlock:
    """One received `ResourceSpans`: its resource, decoded lazily once for all its spans."""

    __slots__ = ("_attributes", "_detached", "message")

    def __init__(self, message: Any, attributes: dict[str, Any] | None = None) -> None:
        self.message = message
        self._attributes = attributes
        self._detached: ResourceBlock | None = None

    @property
    def attributes(self) -> dict[str, Any]:
        if self._attributes is None:
            self._attributes = resource_attributes(self.message.resource)
        return self._attributes

    def detached(self) -> ResourceBlock:
        """The block without its request: its resource and schema URL copied, no spans (see `held_carrier`)."""
        if self._detached is None:
            received = self.message
            message = type(received)(schema_url=received.schema_url)
            if received.HasField("resource"):
                message.resource.CopyFrom(received.resource)
            self._detached = ResourceBlock(message, self._attributes)
        return self._detached


class ScopeBlock:
    """One received `ScopeSpans` and the resource block around it."""

    __slots__ = ("_detached", "message", "resource", "scope_name")

    def __init__(self, resource: ResourceBlock, message: Any) -> None:
        self.resource = resource
        self.message = message
        self.scope_name: str = message.scope.name
        self._detached: ScopeBlock | None = None

    def detached(self) -> ScopeBlock:
        """The block without its request: scope and schema URL copied, no spans, once for all its held spans."""
        if self._detached is None:
            received = self.message
            message = type(received)(schema_url=received.schema_url)
            if received.HasField("scope"):
                message.scope.CopyFrom(received.scope)
            self._detached = ScopeBlock(self.resource.detached(), message)
        return self._detached


Carrier = tuple[Any, ScopeBlock, "bytes | memoryview | None"]
"""(protobuf `Span`, the block it was received in, its received bytes or None); one plain tuple per span.
A held span (`held_carrier`) with received bytes keeps those and no message: None in its place."""


def decode_carrier(carrier: Carrier) -> SpanRecord:
    """The engine's `decode`: the span as a `SpanRecord` (its ids were checked on ingest), from its received
    bytes by the compiled decoder where it is built and takes them, else from its message."""
    span, block, data = carrier
    if data is not None and decode_span_entry is not None:
        record = decode_span_entry(data, block.resource.attributes, block.scope_name)
        if record is not None:
            return record
    if span is None:  # held, or read from a request's bytes alone: its message is parsed only now
        assert data is not None
        span = span_message(data)
    return span_record(span, block.resource.attributes, block.scope_name)


def held_carrier(carrier: Carrier) -> Carrier:
    """The engine's `hold`: a span waiting for its run's scores, copied out of its request.

    Any message of a parsed request keeps the whole of it alive (the protobuf runtime frees a request's
    messages together), and so would a view of its bytes: a run span held as received would keep every
    span of its request, parsed, until its run settles or `max_hold_ms` passes, up to ~50 times
    `max_message_bytes` per held span (docs/serve.md, "Memory per request"), while `max_pending_bytes` counts
    the span's own bytes. Its received bytes are copied instead (the sink appends the scores to them,
    `enrich_bytes`) and its resource and scope once per block; without received bytes, its message is.
    """
    span, block, data = carrier
    if data is not None:
        return (None, block.detached(), bytes(data))
    held = type(span)()
    held.CopyFrom(span)
    return (held, block.detached(), None)


def carrier_bytes(carrier: Carrier, record: SpanRecord) -> int:
    """The engine's `size`: the span's bytes as received, for its text, and its record's `item_bytes`
    (`record_bytes` when the bytes are not known).

    The received size stands for the text rather than the record's text counted again (a walk of its
    attributes): the record holds the same strings, decoded, and the bytes' framing is a few per item.
    """
    data = carrier[2]
    return len(data) + item_bytes(record) if data is not None else record_bytes(record)
