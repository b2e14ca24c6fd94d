"""The collector's carrier: a received protobuf `Span`, the resource and scope block it came in, its bytes.

The engine never looks inside a carrier; the sink needs the block to put a released span back into a
request with the right `Resource` and `InstrumentationScope`, and `decode` needs the block's decoded
resource attributes, which are computed once per block (on the worker thread) and shared by its spans.
The span's received bytes (its framed entry in the request, `encode.span_entries`), when known, are
what the sink forwards for a span it did not change.
"""

from __future__ import annotations

from typing import Any

from toolscore.collector.pipeline.group import record_bytes
from toolscore.collector.sources.otlp_proto import resource_attributes, span_record
from toolscore.collector.spans import SpanRecord

__all__ = ["Carrier", "ResourceBlock", "ScopeBlock", "carrier_bytes", "decode_carrier", "held_carrier"]


class ResourceBlock:
    """One received `ResourceSpans`: its resource, decoded lazily once for all its spans."""

    __slots__ = ("_attributes", "message")

    def __init__(self, message: Any) -> None:
        self.message = message
        self._attributes: dict[str, Any] | None = None

    @property
    def attributes(self) -> dict[str, Any]:
        if self._attributes is None:
            self._attributes = resource_attributes(self.message.resource)
        return self._attributes


class ScopeBlock:
    """One received `ScopeSpans` and the resource block around it."""

    __slots__ = ("message", "resource", "scope_name")

    def __init__(self, resource: ResourceBlock, message: Any) -> None:
        self.resource = resource
        self.message = message
        self.scope_name: str = message.scope.name


Carrier = tuple[Any, ScopeBlock, "bytes | memoryview | None"]
"""(protobuf `Span`, the block it was received in, its received bytes or None); one plain tuple per span."""


def decode_carrier(carrier: Carrier) -> SpanRecord:
    """The engine's `decode`: the span as a `SpanRecord` (its ids were checked on ingest)."""
    span, block, _ = carrier
    return span_record(span, block.resource.attributes, block.scope_name)


def held_carrier(carrier: Carrier) -> Carrier:
    """The engine's `hold`: a run span waiting for its scores keeps no view of the request's bytes.

    A scored run span is changed and serialized again, so its received bytes would only keep the
    whole request alive while the run settles (or waits for a judge).
    """
    span, block, _ = carrier
    return (span, block, None)


def carrier_bytes(carrier: Carrier, record: SpanRecord) -> int:
    """The engine's `size`: the span's bytes as received (the text of its record when they are not known).

    Free where counting the record's text would walk its attributes once more, and close to it: the
    record holds the same strings, decoded.
    """
    data = carrier[2]
    return len(data) if data is not None else record_bytes(record)
