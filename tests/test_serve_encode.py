"""Requests assembled from spans serialized one at a time parse back to what was received, envelope and all."""

from __future__ import annotations

from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.proto.common.v1.common_pb2 import AnyValue, KeyValue
from opentelemetry.proto.trace.v1.trace_pb2 import Span

from toolscore.collector.serve.carrier import ResourceBlock, ScopeBlock
from toolscore.collector.serve.encode import encode_request, encode_span


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


def _blocks(request: ExportTraceServiceRequest) -> list[tuple[ScopeBlock, list[bytes]]]:
    blocks = []
    for resource_spans in request.resource_spans:
        resource = ResourceBlock(resource_spans)
        for scope_spans in resource_spans.scope_spans:
            blocks.append((ScopeBlock(resource, scope_spans), [encode_span(span) for span in scope_spans.spans]))
    return blocks


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
