"""Helpers for the OTLP receiver tests: a recording `Ingest` (the receivers' caller side), SDK spans,
OTLP/JSON builders, raw HTTP requests and their error replies, and every kind of bad OTLP/HTTP request."""

from __future__ import annotations

import gzip
import http.client
import json
import threading
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from google.protobuf import json_format
from google.rpc import status_pb2
from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from toolscore.collector.serve.receivers._ingest import IngestResult

TRACE_ID = "5b8efff798038103d269b633813fc60c"
TOKEN = "s3cret-token"


@dataclass
class RecordingIngest:
    """Records every request it is handed; answers the queued `results` first, then full success.

    `refusals` are answered, one per call, to the receivers' question before they read a request.
    """

    results: list[IngestResult] = field(default_factory=list)
    refusals: list[IngestResult] = field(default_factory=list)
    loads: int = 0
    """How often `load` was asked (only for a log line about an overload refusal)."""
    data: list[bytes | None] = field(default_factory=list)
    requests: list[ExportTraceServiceRequest] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def accept(self, request: ExportTraceServiceRequest, data: bytes | None = None) -> IngestResult:
        with self.lock:
            self.requests.append(request)
            self.data.append(data)
            return self.results.pop(0) if self.results else IngestResult()

    def accept_bytes(self, data: bytes, max_spans: int) -> IngestResult | None:
        return None  # it records every request parsed

    def refusal(self) -> IngestResult | None:
        with self.lock:
            return self.refusals.pop(0) if self.refusals else None

    def load(self) -> str:
        with self.lock:
            self.loads += 1
            return f"{len(self.requests)} requests taken"

    def overload_next(self, when: str, retry_after_s: float, reason: str = "") -> None:
        """Refuse the next request as overloaded: once it is read (`accept`, when "read") or before (`refusal`)."""
        with self.lock:
            answers = self.results if when == "read" else self.refusals
            answers.append(IngestResult(overloaded=True, retry_after_s=retry_after_s, reason=reason))

    def span_names(self) -> list[str]:
        with self.lock:
            return [
                span.name
                for request in self.requests
                for resource_spans in request.resource_spans
                for scope_spans in resource_spans.scope_spans
                for span in scope_spans.spans
            ]


def sdk_spans(*names: str) -> Sequence[ReadableSpan]:
    """Finished spans from the real SDK, one root span per name."""
    exporter = InMemorySpanExporter()
    provider = TracerProvider(resource=Resource.create({"service.name": "agent"}))
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    tracer = provider.get_tracer("receiver-test")
    for name in names:
        with tracer.start_as_current_span(name) as span:
            span.set_attribute("gen_ai.tool.name", name)
    provider.shutdown()
    return exporter.get_finished_spans()


def json_span(name: str, span_id: str = "eee19b7ec3c1b174", trace_id: str = TRACE_ID, **extra: Any) -> dict[str, Any]:
    return {
        "traceId": trace_id,
        "spanId": span_id,
        "name": name,
        "kind": 3,
        "startTimeUnixNano": "1700000000000000000",
        "endTimeUnixNano": "1700000001000000000",
        "attributes": [{"key": "gen_ai.tool.name", "value": {"stringValue": name}}],
        **extra,
    }


def json_request(*spans: dict[str, Any]) -> dict[str, Any]:
    return {
        "resourceSpans": [
            {
                "resource": {"attributes": [{"key": "service.name", "value": {"stringValue": "agent"}}]},
                "scopeSpans": [{"scope": {"name": "receiver-test"}, "spans": list(spans)}],
            }
        ]
    }


@dataclass
class Reply:
    status: int
    headers: dict[str, str]
    body: bytes


def http_call(
    port: int,
    body: bytes = b"",
    *,
    content_type: str | None = "application/x-protobuf",
    headers: dict[str, str] | None = None,
    method: str = "POST",
    path: str = "/v1/traces",
) -> Reply:
    """One request on a fresh connection; the reply with lower-cased header names."""
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    try:
        all_headers = dict(headers or {})
        if content_type is not None:
            all_headers["Content-Type"] = content_type
        connection.request(method, path, body=body if method != "GET" else None, headers=all_headers)
        response = connection.getresponse()
        return Reply(response.status, {k.lower(): v for k, v in response.getheaders()}, response.read())
    finally:
        connection.close()


def _length_field(number: int, payload: bytes) -> bytes:
    """A length-delimited protobuf field, written by hand: the runtime cannot build what it refuses to parse."""
    out = bytearray()
    for varint in (number << 3 | 2, len(payload)):
        rest = varint
        while rest >= 0x80:
            out.append(rest & 0x7F | 0x80)
            rest >>= 7
        out.append(rest)
    return bytes(out) + payload


def nested_attribute_request(levels: int) -> bytes:
    """An export request with one span whose attribute value is key-value lists nested `levels` deep."""
    value = _length_field(1, b"leaf")  # AnyValue.string_value
    for _ in range(levels):  # AnyValue.kvlist_value { values { key, value } }
        value = _length_field(6, _length_field(1, _length_field(1, b"k") + _length_field(2, value)))
    span = (
        _length_field(1, bytes.fromhex(TRACE_ID))
        + _length_field(2, bytes.fromhex("eee19b7ec3c1b174"))
        + _length_field(5, b"deep")
        + _length_field(9, _length_field(1, b"nested") + _length_field(2, value))
    )
    return _length_field(1, _length_field(2, _length_field(2, span)))


def reply_status(reply: Reply) -> status_pb2.Status:
    """The `google.rpc.Status` of an OTLP/HTTP error reply, in the encoding of its request."""
    if reply.headers["content-type"] == "application/json":
        return json_format.Parse(reply.body, status_pb2.Status())
    assert reply.headers["content-type"] == "application/x-protobuf"
    return status_pb2.Status.FromString(reply.body)


def gzip_bomb(limit: int) -> bytes:
    """About 3 KB that expand to fifty times `limit` (3 MB for 64 KiB)."""
    return gzip.compress(b"\0" * (50 * limit))


BadHttpCase = tuple[str, bytes, str, dict[str, str], int, str]
"""(case, body, content type ("": none), headers, expected status, text the error message contains)."""


def http_bad_cases(limit: int) -> list[BadHttpCase]:
    """Every kind of bad OTLP/HTTP request, for a receiver whose `max_message_bytes` is `limit`."""
    gzipped = gzip.compress(encode_spans(sdk_spans("cut")).SerializeToString())
    gz = {"Content-Encoding": "gzip"}
    return [
        ("garbage protobuf", b"\xff\xfe\xfd garbage", "application/x-protobuf", {}, 400, "not a valid OTLP"),
        ("garbage json", b"{not json", "application/json", {}, 400, "invalid JSON"),
        ("wrong content type", b"<xml/>", "text/xml", {}, 415, "Content-Type 'text/xml'"),
        ("no content type", b"x", "", {}, 415, "Content-Type"),
        ("unknown encoding", b"x", "application/x-protobuf", {"Content-Encoding": "br"}, 415, "'br'"),
        ("truncated gzip", gzipped[: len(gzipped) // 2], "application/x-protobuf", gz, 400, "gzip"),
        ("not gzip", b"plain", "application/x-protobuf", gz, 400, "not valid gzip"),
        ("gzip bomb", gzip_bomb(limit), "application/x-protobuf", gz, 413, f"more than {limit} bytes"),
        ("oversized", b"\0" * (limit + 1), "application/x-protobuf", {}, 413, f"{limit}-byte limit"),
        ("invalid utf-8 json", b'{"resourceSpans": [{"x": "\xff"}]}', "application/json", {}, 400, "invalid UTF-8"),
        ("wrong json type", _json({"resourceSpans": {"a": 1}}), "application/json", {}, 400, "resourceSpans: expected"),
        ("surrogate url", _json({"resourceSpans": [{"schemaUrl": "\ud800"}]}), "application/json", {}, 400, "Url"),
    ]  # fmt: skip


def _json(document: object) -> bytes:
    return json.dumps(document).encode()
