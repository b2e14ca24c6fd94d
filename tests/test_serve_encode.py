"""Requests assembled from spans serialized one at a time parse back to what was received, envelope and all;
the spans' received bytes are found in the request exactly as the protobuf runtime lists the spans."""

from __future__ import annotations

import itertools
import random

import pytest
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.proto.common.v1.common_pb2 import AnyValue, KeyValue
from opentelemetry.proto.trace.v1.trace_pb2 import Span

from toolscore.collector.serve._carrier import ResourceBlock, ScopeBlock
from toolscore.collector.serve._encode import (
    Encoded,
    count_spans,
    encode_request,
    encode_span,
    span_entries,
    without_spans,
)
from toolscore.collector.serve._prefilter import span_offsets
from toolscore.collector.serve.receivers._otlp_export import BadPayload, parse_proto_request


def _span(n: int, text: str = "") -> Span:
    span = Span(
        trace_id=bytes([n]) * 16, span_id=bytes([n]) * 8, name=f"execute_tool {n}", kind=Span.SPAN_KIND_INTERNAL
    )
    span.attributes.append(KeyValue(key="gen_ai.tool.call.arguments", value=AnyValue(string_value=text)))
    span.events.add(name="e", time_unix_nano=n)
    return span


def _received() -> ExportTraceServiceRequest:
    """Two resources (one with no resource attributes), three scopes, schema urls on some, spans of
    every length class a varint prefix has (under 128 bytes, under 16 KiB, beyond)."""
    request = ExportTraceServiceRequest()
    first = request.resource_spans.add(schema_url="https://opentelemetry.io/schemas/1.26.0")
    first.resource.attributes.append(KeyValue(key="service.name", value=AnyValue(string_value="travel")))
    scope = first.scope_spans.add(schema_url="https://opentelemetry.io/schemas/1.27.0")
    scope.scope.name, scope.scope.version = "openai-agents", "0.9"
    scope.spans.extend([_span(1), _span(2, "x" * 300)])
    other = first.scope_spans.add()
    other.scope.name = "pydantic-ai"
    other.spans.extend([_span(3, "y" * 20_000)])
    second = request.resource_spans.add()
    second.scope_spans.add().spans.extend([_span(4)])
    return request


def _blocks(request: ExportTraceServiceRequest, data: bytes | None = None) -> list[tuple[ScopeBlock, list[Encoded]]]:
    """The request's spans by block: serialized one by one, or (with `data`) found in its bytes."""
    entries = iter(span_entries(data) or ()) if data is not None else None
    blocks: list[tuple[ScopeBlock, list[Encoded]]] = []
    for resource_spans in request.resource_spans:
        resource = ResourceBlock(resource_spans)
        for scope_spans in resource_spans.scope_spans:
            spans = [encode_span(span) if entries is None else next(entries) for span in scope_spans.spans]
            blocks.append((ScopeBlock(resource, scope_spans), spans))
    return blocks


def _spans(request: ExportTraceServiceRequest) -> list[Span]:
    return [span for resource in request.resource_spans for scope in resource.scope_spans for span in scope.spans]


def _field(number: int, payload: bytes) -> bytes:
    """A length-delimited field numbered under 16."""
    size, prefix = len(payload), bytearray()
    while size >= 0x80:
        prefix.append(size & 0x7F | 0x80)
        size >>= 7
    return bytes([number << 3 | 2, *prefix, size]) + payload


def test_the_request_parses_back_to_the_received_one() -> None:
    received = _received()
    assert ExportTraceServiceRequest.FromString(encode_request(_blocks(received))) == received


def test_blocks_of_one_resource_share_one_resource_entry() -> None:
    received = _received()
    blocks = _blocks(received)
    first, pydantic_ai, second = blocks
    rebuilt = ExportTraceServiceRequest.FromString(encode_request([second, first, (pydantic_ai[0], [])]))
    assert [len(r.scope_spans) for r in rebuilt.resource_spans] == [1, 2]  # in the order resources first came
    assert rebuilt.resource_spans[0].resource == received.resource_spans[1].resource
    assert [s.scope.name for s in rebuilt.resource_spans[1].scope_spans] == ["openai-agents", "pydantic-ai"]
    assert list(rebuilt.resource_spans[1].scope_spans[1].spans) == []


def test_nothing_to_send_is_an_empty_request() -> None:
    assert encode_request([]) == b""
    assert ExportTraceServiceRequest.FromString(b"") == ExportTraceServiceRequest()


def test_span_entries_are_each_span_framed_as_received() -> None:
    received = _received()
    data = received.SerializeToString()
    entries = span_entries(data)
    assert entries is not None
    assert [bytes(entry) for entry in entries] == [encode_span(span) for span in _spans(received)]
    assert ExportTraceServiceRequest.FromString(encode_request(_blocks(received, data))) == received


def test_span_entries_skip_fields_they_do_not_know_and_keep_a_span_as_sent() -> None:
    """Unknown fields of every wire type around the spans; a span whose fields are out of the canonical
    order, which serializing it again would reorder: its entry is the sender's bytes."""
    span = _span(5).SerializeToString()
    nameless = _span(5)
    nameless.name = ""
    reordered = nameless.SerializeToString() + Span(name="execute_tool 5").SerializeToString()  # name (5) last
    assert Span.FromString(reordered) == _span(5)
    assert reordered != span
    unknown = b"\xf8\x3e\x07" + b"\x89\x3f" + bytes(8) + b"\x95\x3f" + bytes(4) + _field(15, b"junk")  # 999, 1001..
    scope = _field(1, b"\x0a\x01s") + unknown + _field(2, span) + unknown + _field(2, reordered)
    data = _field(1, unknown + _field(2, scope) + unknown)
    request = ExportTraceServiceRequest.FromString(data)
    assert [span.name for span in _spans(request)] == ["execute_tool 5", "execute_tool 5"]
    entries = span_entries(data)
    assert entries is not None
    assert [bytes(entry) for entry in entries] == [_field(2, span), _field(2, reordered)]


def test_bytes_that_do_not_walk_give_no_entries() -> None:
    data = _received().SerializeToString()
    assert span_entries(data[:-3]) is None  # cut inside the last span
    assert span_entries(b"\x0e\x00") is None  # wire type 6 does not exist
    assert span_entries(b"\x0b\x00") is None  # a group that never ends
    assert span_entries(b"") == []
    for bad in (data[:-3], b"\x0e\x00", b"\x0b\x00", b"\x3c", b"\x3b\x4c"):  # ...an end of no group, or another
        assert count_spans(bad, 100) is None


def test_spans_and_blocks_are_counted_on_the_wire() -> None:
    data = _received().SerializeToString()
    assert count_spans(data, 100) == (4, 5)  # 2 resources and 3 scopes
    assert count_spans(data, 5) == (4, 5)
    assert count_spans(b"", 100) == (0, 0)
    # upb keeps unknown groups, so the walk skips them (field 7 holding a varint and an empty group 9)
    group = bytes([7 << 3 | 3]) + b"\x08\x01" + bytes([9 << 3 | 3, 9 << 3 | 4]) + bytes([7 << 3 | 4])
    grouped = group + data + group
    assert _spans(ExportTraceServiceRequest.FromString(grouped)) == _spans(_received())
    assert count_spans(grouped, 100) == (4, 5)
    assert [bytes(e) for e in span_entries(grouped) or ()] == [bytes(e) for e in span_entries(data) or ()]
    nested = b"\x0b" * 100_000 + b"\x0c" * 100_000  # deeper than any stack; upb refuses it (depth 100)
    assert count_spans(nested + data, 100) == (4, 5)
    with pytest.raises(BadPayload, match="not a valid OTLP ExportTraceServiceRequest"):
        parse_proto_request(nested + data, 100)


def test_counting_stops_past_the_limit_without_walking_the_rest() -> None:
    """A million empty spans (two bytes each) are counted to the limit + 1; the junk after them is never reached."""
    empty_spans = _field(1, _field(2, b"\x12\x00" * 1_000_000 + b"\xff"))
    assert count_spans(empty_spans, 10) == (11, 2)
    assert count_spans(_field(1, b"\x12\x00" * 1_000 + b"\xff"), 10) == (0, 11)  # empty scopes
    assert count_spans(b"\x0a\x00" * 1_000 + b"\xff", 10) == (0, 11)  # empty resources
    assert count_spans(_received().SerializeToString(), 3) == (0, 4)


def _without(request: ExportTraceServiceRequest, cut: set[int]) -> ExportTraceServiceRequest:
    """`request` without the spans at `cut` (request order), a scope left with no span and a resource left with
    no scope left out: what `without_spans` must give, built with the protobuf runtime."""
    out = ExportTraceServiceRequest()
    k = 0
    for resource_spans in request.resource_spans:
        kept_resource = ExportTraceServiceRequest().resource_spans.add()
        kept_resource.CopyFrom(resource_spans)
        del kept_resource.scope_spans[:]
        for scope_spans in resource_spans.scope_spans:
            kept = [span for i, span in enumerate(scope_spans.spans, k) if i not in cut]
            dropped = len(scope_spans.spans) - len(kept)
            k += len(scope_spans.spans)
            if kept or not dropped:
                scope = kept_resource.scope_spans.add()
                scope.CopyFrom(scope_spans)
                del scope.spans[:]
                scope.spans.extend(kept)
        if kept_resource.scope_spans or not resource_spans.scope_spans:
            out.resource_spans.add().CopyFrom(kept_resource)
    return out


@pytest.mark.parametrize("cut", [set(c) for n in range(5) for c in itertools.combinations(range(4), n)], ids=str)
def test_a_request_without_some_spans_parses_as_the_received_one_without_them(cut: set[int]) -> None:
    request = _received()
    data = request.SerializeToString()
    rest = without_spans(data, _span_offsets(data), sorted(cut))
    assert ExportTraceServiceRequest.FromString(rest) == _without(request, cut)
    if not cut:
        assert rest == data
    kept = [span for i, span in enumerate(_spans(request)) if i not in cut]
    assert [bytes(entry) for entry in span_entries(rest) or ()] == [encode_span(span) for span in kept]


def test_random_requests_without_random_spans_parse_as_expected() -> None:
    rng = random.Random(11)
    for _ in range(300):
        request = ExportTraceServiceRequest()
        n = 0
        for r in range(rng.randint(1, 3)):
            resource_spans = request.resource_spans.add(schema_url="s" * rng.randint(0, 2))
            if rng.random() < 0.7:
                resource_spans.resource.attributes.add(key="service.name").value.string_value = f"svc{r}"
            for s in range(rng.randint(0, 3)):
                scope_spans = resource_spans.scope_spans.add()
                scope_spans.scope.name = f"scope{s}"
                for _ in range(rng.randint(0, 4)):
                    n += 1
                    scope_spans.spans.append(_span(n % 250, "z" * rng.choice([0, 10, 200, 20_000])))
        data = request.SerializeToString()
        cut = {i for i in range(n) if rng.random() < 0.4}
        rest = without_spans(data, _span_offsets(data), sorted(cut))
        assert ExportTraceServiceRequest.FromString(rest) == _without(request, cut)


def test_a_span_to_leave_out_outside_every_scope_is_an_error() -> None:
    data = _received().SerializeToString()
    offsets = _span_offsets(data)
    with pytest.raises(ValueError, match="in no scope"):
        without_spans(data, [*offsets, (len(data) + 1, len(data) + 2)], [len(offsets)])
    with pytest.raises((IndexError, ValueError)):
        without_spans(data[:-3], offsets, [0])


def _span_offsets(data: bytes) -> list[tuple[int, int]]:
    offsets = span_offsets(data)
    assert offsets is not None
    return offsets
