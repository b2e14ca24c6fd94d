"""OTLP export requests assembled from spans serialized one at a time, framed by hand.

The sink keeps every released span as its own bytes, and a request is those bytes joined under their
resource and scope. A span that reaches the sink unchanged is the very bytes it was received as
(`span_entries` finds them in the received request); a scored run span, changed, is serialized by the
protobuf runtime. Building a request message instead copies every span into it, sizing it (for the
byte limit) writes it once, and the forwarder serializes it again: more than twice the cost of
serializing each span alone, and finding a span's received bytes costs less than serializing it. Only
the three envelope messages are written here; everything inside them is either the sender's bytes or
the runtime's output.

    ExportTraceServiceRequest { repeated ResourceSpans resource_spans = 1; }
    ResourceSpans { Resource resource = 1; repeated ScopeSpans scope_spans = 2; string schema_url = 3; }
    ScopeSpans    { InstrumentationScope scope = 1; repeated Span spans = 2; string schema_url = 3; }
"""

from __future__ import annotations

import bisect
import sys
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from opentelemetry.proto.trace.v1.trace_pb2 import Span

if TYPE_CHECKING:
    from toolscore.collector.serve._carrier import ResourceBlock, ScopeBlock

__all__ = [
    "Encoded",
    "count_spans",
    "encode_request",
    "encode_span",
    "entries",
    "entry_span",
    "field",
    "span_entries",
    "span_entry",
    "span_message",
    "varint",
    "without_ranges",
    "without_spans",
]

Encoded = bytes | memoryview
"""One framed `ScopeSpans.spans` entry: serialized here, or a view into the request it was received in."""

# Tags of length-delimited fields (field number << 3 | 2), the same bytes in all three messages.
_FIELD_1, _FIELD_2, _FIELD_3 = b"\x0a", b"\x12", b"\x1a"


_ONE_BYTE = [bytes((n,)) for n in range(0x80)]


def varint(n: int) -> bytes:
    """A non-negative integer as a protobuf varint."""
    if n < 0x80:
        return _ONE_BYTE[n]
    if n < 0x4000:  # most spans
        return bytes(((n & 0x7F) | 0x80, n >> 7))
    out = bytearray()
    while n >= 0x80:
        out.append((n & 0x7F) | 0x80)
        n >>= 7
    out.append(n)
    return bytes(out)


def field(tag: bytes, payload: bytes) -> bytes:
    """A length-delimited field: its tag, the payload's length, the payload."""
    return tag + varint(len(payload)) + payload


def encode_span(span: Any) -> bytes:
    """A protobuf `Span` as one `spans` entry of a `ScopeSpans`: serialized, tagged and length-prefixed."""
    return span_entry(span.SerializeToString())


def span_entry(span: bytes) -> bytes:
    """A serialized `Span` as one `spans` entry of a `ScopeSpans`: tagged and length-prefixed."""
    return field(_FIELD_2, span)


def entry_span(entry: Encoded) -> bytes | None:
    """The serialized `Span` inside one framed `spans` entry (`span_entries`); None when `entry` is not
    exactly one `spans` field."""
    data = bytes(entry)  # a no-op for bytes
    if not data or data[:1] != _FIELD_2:
        return None
    try:
        size, start = _read_varint(data, 1)
    except IndexError:
        return None
    return data[start:] if start + size == len(data) else None


def span_message(entry: Encoded) -> Any:
    """The protobuf `Span` of one framed `spans` entry (`span_entries`)."""
    span = entry_span(entry)
    if span is None:
        raise ValueError("not one framed ScopeSpans.spans entry")
    return Span.FromString(span)


def _read_varint(data: bytes, pos: int) -> tuple[int, int]:
    """(value, position after it); raises IndexError past the end."""
    result = shift = 0
    while True:
        byte = data[pos]
        pos += 1
        result |= (byte & 0x7F) << shift
        if byte < 0x80:
            return result, pos
        shift += 7


def _skip(data: bytes, pos: int, key: int, at: int) -> int:
    """The position after the value of field `key` (tag at `at`) when it is not length-delimited.

    A group is skipped through its end tag: upb keeps unknown groups, so a request holding one parses.
    Nested groups are followed with a list, not recursion, so no nesting depth can overflow the stack.
    """
    wire = key & 7
    if wire == 0:
        return _read_varint(data, pos)[1]
    if wire == 1:
        return pos + 8
    if wire == 5:
        return pos + 4
    if wire != 3:  # an end of group with no start (4); 6 and 7 are invalid
        raise ValueError(f"wire type {wire} at byte {at}")
    open_groups = [key >> 3]
    while open_groups:
        at = pos
        key, pos = _read_varint(data, pos)
        wire = key & 7
        if wire == 3:
            open_groups.append(key >> 3)
        elif wire == 4:
            if key >> 3 != open_groups.pop():
                raise ValueError(f"end of group {key >> 3} at byte {at} inside another group")
        elif wire == 2:
            size, pos = _read_varint(data, pos)
            pos += size
        else:
            pos = _skip(data, pos, key, at)
    return pos


def entries(data: bytes, start: int, end: int, tag: int, limit: int = sys.maxsize) -> list[tuple[int, int, int]]:
    """(tag start, body start, body end) of every length-delimited field `tag` in data[start:end], in order.

    Stops once it has found more than `limit` of them (the rest is then not walked).
    """
    found: list[tuple[int, int, int]] = []
    pos = start
    while pos < end:
        at = pos
        key = data[pos]  # one-byte tags and (below) lengths inline: most of them are
        if key < 0x80:
            pos += 1
        else:
            key, pos = _read_varint(data, pos)
        wire = key & 7
        if wire == 2:
            size = data[pos]
            if size < 0x80:
                pos += 1
            elif data[pos + 1] < 0x80:  # spans of 128 bytes to 16 KiB
                size = (size & 0x7F) | data[pos + 1] << 7
                pos += 2
            else:
                size, pos = _read_varint(data, pos)
            if key == tag:
                found.append((at, pos, pos + size))
                if len(found) > limit:
                    return found
            pos += size
        else:
            pos = _skip(data, pos, key, at)
    if pos != end:
        raise ValueError(f"a field runs past byte {end}")
    return found


def count_spans(data: bytes, limit: int) -> tuple[int, int] | None:
    """(spans, resource and scope blocks) of a serialized `ExportTraceServiceRequest`, without parsing it.

    Each is counted up to `limit + 1`, where the walk stops: the count is there to refuse a request
    before the protobuf runtime builds a message per entry (about 170 bytes per empty span), so what it
    costs must not grow with the request either. None when the bytes do not walk.
    """
    try:
        resources = entries(data, 0, len(data), 0x0A, limit)  # resource_spans = 1
        blocks, spans = len(resources), 0
        for _, start, end in resources:
            if blocks > limit or spans > limit:
                break
            scopes = entries(data, start, end, 0x12, limit - blocks)  # scope_spans = 2
            blocks += len(scopes)
            for _, scope_start, scope_end in scopes:
                if blocks > limit or spans > limit:
                    break
                spans += len(entries(data, scope_start, scope_end, 0x12, limit - spans))  # spans = 2
    except (IndexError, ValueError):
        return None
    return spans, blocks


def span_entries(data: bytes) -> list[memoryview] | None:
    """Every span of a serialized `ExportTraceServiceRequest` as its framed `spans` entry, in request order.

    The order is the order the protobuf runtime lists them in (repeated fields keep wire order), so
    the n-th entry is the bytes of the n-th span of the parsed request. Views, not copies: they keep
    `data` alive. None when the bytes do not walk (the caller then serializes each span itself).
    """
    view = memoryview(data)
    spans: list[memoryview] = []
    try:
        for _, start, end in entries(data, 0, len(data), 0x0A):  # resource_spans = 1
            for _, scope_start, scope_end in entries(data, start, end, 0x12):  # scope_spans = 2
                spans += [view[at:stop] for at, _, stop in entries(data, scope_start, scope_end, 0x12)]  # spans = 2
    except (IndexError, ValueError):
        return None
    return spans


def without_spans(data: bytes, offsets: Sequence[tuple[int, int]], cut: Sequence[int]) -> bytes:
    """A serialized `ExportTraceServiceRequest` without some of its spans, everything else as received.

    `offsets` are the (start, end) of every framed `spans` entry of `data`, in request order (`span_offsets`),
    `cut` the indices of those to leave out, ascending. Only the scope and resource entries around a cut span
    are framed again (a scope left with no span, and a resource left with no scope, are left out); the rest
    is copied as it is. For a request whose spans part ways: the pre-filter holds the rest of it as one
    request, forwarded as such, rather than as one piece per span. Raises IndexError or ValueError when the
    bytes do not walk.
    """
    starts = [start for start, _ in offsets]
    out: list[bytes] = []
    copied = k = 0  # data[:copied] is in `out`; cut[k] is the next span to leave out
    for at, start, end in entries(data, 0, len(data), 0x0A):  # resource_spans = 1
        if k == len(cut) or offsets[cut[k]][0] >= end:
            continue
        parts: list[bytes] = []
        scopes = kept_scopes = 0
        done = start
        for scope_at, scope_start, scope_end in entries(data, start, end, 0x12):  # scope_spans = 2
            scopes += 1
            if k == len(cut) or offsets[cut[k]][0] >= scope_end:
                kept_scopes += 1
                continue
            first, last = bisect.bisect_left(starts, scope_start), bisect.bisect_left(starts, scope_end)
            dropped = k
            while k < len(cut) and cut[k] < last:
                if cut[k] < first:
                    raise ValueError(f"span {cut[k]} to leave out is in no scope of the request")
                k += 1
            parts.append(data[done:scope_at])
            if k - dropped < last - first:
                kept_scopes += 1
                payload = without_ranges(data, scope_start, scope_end, [offsets[i] for i in cut[dropped:k]])
                parts += (_FIELD_2, varint(len(payload)), payload)
            done = scope_end
        parts.append(data[done:end])
        out.append(data[copied:at])
        if kept_scopes or not scopes:
            payload = b"".join(parts)
            out += (_FIELD_1, varint(len(payload)), payload)
        copied = end
    if k != len(cut):
        raise ValueError(f"span {cut[k]} to leave out is in no scope of the request")
    out.append(data[copied:])
    return b"".join(out)


def without_ranges(data: bytes, start: int, end: int, cuts: Sequence[tuple[int, int]]) -> bytes:
    """data[start:end] without the ranges `cuts` (ascending, within it): a message without some of its entries."""
    pieces: list[bytes] = []
    at = start
    for cut_start, cut_end in cuts:
        if cut_start > at:
            pieces.append(data[at:cut_start])
        at = cut_end
    pieces.append(data[at:end])
    return b"".join(pieces)


def encode_request(blocks: Sequence[tuple[ScopeBlock, Sequence[Encoded]]]) -> bytes:
    """A serialized `ExportTraceServiceRequest` of the blocks' encoded spans, one entry per resource and scope.

    Lengths are summed rather than nested messages joined, so the spans' bytes are copied once, into
    the request.
    """
    resources: dict[int, tuple[ResourceBlock, list[tuple[ScopeBlock, Sequence[Encoded]]]]] = {}
    for block, spans in blocks:
        entry = resources.get(id(block.resource))
        if entry is None:
            entry = resources[id(block.resource)] = (block.resource, [])
        entry[1].append((block, spans))
    out: list[Encoded] = []
    for resource, scopes in resources.values():
        received = resource.message
        head = field(_FIELD_1, received.resource.SerializeToString()) if received.HasField("resource") else b""
        tail = field(_FIELD_3, received.schema_url.encode()) if received.schema_url else b""
        parts: list[Encoded] = [_FIELD_1, b"", head]
        for block, spans in scopes:
            scope = block.message
            scope_head = field(_FIELD_1, scope.scope.SerializeToString()) if scope.HasField("scope") else b""
            scope_tail = field(_FIELD_3, scope.schema_url.encode()) if scope.schema_url else b""
            size = len(scope_head) + sum(map(len, spans)) + len(scope_tail)
            parts += (_FIELD_2, varint(size), scope_head, *spans, scope_tail)
        parts.append(tail)
        parts[1] = varint(sum(map(len, parts)) - 1)  # the body: everything after the tag
        out += parts
    return b"".join(out)
