"""OTLP export requests assembled from spans serialized one at a time, framed by hand.

The sink keeps every released span as its own bytes, serialized by the protobuf runtime as the span
is released, and a request is those bytes joined under their resource and scope. Building a request
message instead copies every span into it, sizing it (for the byte limit) writes it once, and the
forwarder serializes it again: 3.2 µs per span against 1.2 (measured on bench_extract's requests).
Only the three envelope messages are written here; everything inside them is the runtime's output.

    ExportTraceServiceRequest { repeated ResourceSpans resource_spans = 1; }
    ResourceSpans { Resource resource = 1; repeated ScopeSpans scope_spans = 2; string schema_url = 3; }
    ScopeSpans    { InstrumentationScope scope = 1; repeated Span spans = 2; string schema_url = 3; }
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from toolscore.collector.serve.carrier import ResourceBlock, ScopeBlock

__all__ = ["encode_request", "encode_span"]

# Tags of length-delimited fields (field number << 3 | 2), the same bytes in all three messages.
_FIELD_1, _FIELD_2, _FIELD_3 = b"\x0a", b"\x12", b"\x1a"


def _varint(n: int) -> bytes:
    if n < 0x80:
        return bytes((n,))
    if n < 0x4000:  # most spans
        return bytes(((n & 0x7F) | 0x80, n >> 7))
    out = bytearray()
    while n >= 0x80:
        out.append((n & 0x7F) | 0x80)
        n >>= 7
    out.append(n)
    return bytes(out)


def _field(tag: bytes, payload: bytes) -> bytes:
    return tag + _varint(len(payload)) + payload


def encode_span(span: Any) -> bytes:
    """A protobuf `Span` as one `spans` entry of a `ScopeSpans`: serialized, tagged and length-prefixed."""
    data: bytes = span.SerializeToString()
    return _field(_FIELD_2, data)


def encode_request(blocks: Sequence[tuple[ScopeBlock, list[bytes]]]) -> bytes:
    """A serialized `ExportTraceServiceRequest` of the blocks' encoded spans, one entry per resource and scope.

    Lengths are summed rather than nested messages joined, so the spans' bytes are copied once, into
    the request.
    """
    resources: dict[int, tuple[ResourceBlock, list[tuple[ScopeBlock, list[bytes]]]]] = {}
    for block, spans in blocks:
        entry = resources.get(id(block.resource))
        if entry is None:
            entry = resources[id(block.resource)] = (block.resource, [])
        entry[1].append((block, spans))
    out: list[bytes] = []
    for resource, scopes in resources.values():
        received = resource.message
        head = _field(_FIELD_1, received.resource.SerializeToString()) if received.HasField("resource") else b""
        tail = _field(_FIELD_3, received.schema_url.encode()) if received.schema_url else b""
        parts = [_FIELD_1, b"", head]
        for block, spans in scopes:
            scope = block.message
            scope_head = _field(_FIELD_1, scope.scope.SerializeToString()) if scope.HasField("scope") else b""
            scope_tail = _field(_FIELD_3, scope.schema_url.encode()) if scope.schema_url else b""
            size = len(scope_head) + sum(map(len, spans)) + len(scope_tail)
            parts += (_FIELD_2, _varint(size), scope_head, *spans, scope_tail)
        parts.append(tail)
        parts[1] = _varint(sum(map(len, parts)) - 1)  # the body: everything after the tag
        out += parts
    return b"".join(out)
