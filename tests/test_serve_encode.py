"""Requests assembled from spans serialized one at a time parse back to what was received, envelope and all;
the spans' received bytes are found in the request exactly as the protobuf runtime lists the spans."""

from __future__ import annotations

from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.proto.common.v1.common_pb2 import AnyValue, KeyValue
from opentelemetry.proto.trace.v1.trace_pb2 import Span

from toolscore.collector.serve.carrier import ResourceBlock, ScopeBlock
from toolscore.collector.serve.encode import Encoded, encode_request, encode_span, span_entries


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
    assert span_entries(b"\x0b\x00") is None  # wire type 3 (a group) is not OTLP
    assert span_entries(b"") == []
