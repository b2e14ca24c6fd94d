"""`toolscore serve` end to end under bad input: a subprocess taking every kind of bad request, over OTLP/HTTP and
OTLP/gRPC, each followed by a good one from the real OTel SDK exporters, and forwarding to a downstream receiver.

Each bad request gets its own clear answer (status and message); the collector keeps serving; every span of the
good requests, and the good spans of a request with some bad ones, reaches the downstream exactly once, their
runs scored; nothing else does.

Not sent over gRPC: a wrong content type (a gRPC call's is grpc's own, checked by its transport before toolscore
sees the call), truncated gzip (the grpc client compresses what it is given: it cannot send a cut stream) and
JSON (OTLP/gRPC is protobuf only).
"""

from __future__ import annotations

import base64
import json
import os
import urllib.request
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import grpc
import pytest
from google.protobuf import json_format
from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
from opentelemetry.exporter.otlp.proto.grpc.trace_exporter import OTLPSpanExporter as GrpcExporter
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter as HttpExporter
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceRequest,
    ExportTraceServiceResponse,
)
from opentelemetry.proto.collector.trace.v1.trace_service_pb2_grpc import TraceServiceStub
from opentelemetry.proto.trace.v1.trace_pb2 import Span
from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.sdk.trace.export import SpanExportResult

from tests.serve_demo_checks import DEMO_EXPECTATIONS, SpanKey, check_run_span, demo_verdicts, key, sdk_key
from tests.serve_harness import Downstream, ServeProcess, serve_config
from tests.serve_receiver_support import Reply, http_bad_cases, http_call, json_request, json_span, reply_status
from toolscore.collector.cli.demo_runs import DEMO_RUNS, make_demo_spans

pytestmark = pytest.mark.integration

LIMIT = 64 * 1024
"""`receiver.max_message_bytes`: small, so that the oversized requests and the gzip bombs are small too."""
EXPORT = "/opentelemetry.proto.collector.trace.v1.TraceService/Export"
PROTOBUF = "application/x-protobuf"
NOT_JSON = '{"origin": "SFO", "destination": "JF'
"""Arguments cut short, as a size limit in an agent's instrumentation leaves them: text that is not JSON."""
BAD_NAME = "XXXX-not-utf-8"
"""A span name whose bytes are replaced on the wire by ones that are not UTF-8 (protobuf cannot build them)."""


@dataclass
class Expected:
    """What the downstream must receive: each span as sent, and the scores of each run span."""

    spans: dict[SpanKey, Span] = field(default_factory=dict)
    verdicts: dict[SpanKey, dict[str, float]] = field(default_factory=dict)
    args_not_json: set[SpanKey] = field(default_factory=set)
    """Runs whose `search_flights` arguments are not JSON."""

    def add(self, request: ExportTraceServiceRequest, verdicts: dict[SpanKey, dict[str, float]]) -> None:
        for resource_spans in request.resource_spans:
            for scope_spans in resource_spans.scope_spans:
                self.spans.update((key(span), span) for span in scope_spans.spans)
        self.verdicts.update(verdicts)


def _demo_trace(index: int, expected: Expected, **verdicts: dict[str, float]) -> list[ReadableSpan]:
    """A fresh demo trace (of DEMO_RUNS[index]), expected downstream whole as the SDK exporters encode it;
    `verdicts` (by run span name) replace the demo's scores of those runs."""
    trace = make_demo_spans()[index % len(DEMO_RUNS)]
    runs = {
        sdk_key(span): verdicts.get(span.name, demo_verdicts(index, span))
        for span in trace
        if (span.attributes or {}).get("gen_ai.operation.name") == "invoke_agent"
    }
    expected.add(encode_spans(trace), runs)
    return trace


def _demo(index: int, expected: Expected, **verdicts: dict[str, float]) -> ExportTraceServiceRequest:
    """`_demo_trace` as an export request to change before it is sent: changes to its spans are expected
    downstream too (the expected spans are the request's own), spans added to it are not."""
    request = encode_spans(_demo_trace(index, expected, **verdicts))
    expected.add(request, {})
    return request


def _spans(request: ExportTraceServiceRequest) -> list[Span]:
    return [span for rs in request.resource_spans for ss in rs.scope_spans for span in ss.spans]


def _with_bad_ids(request: ExportTraceServiceRequest, span_id: bytes, trace_id: bytes | None = None) -> None:
    """Add a span to the request's first scope under its run span, with ids of the wrong length."""
    run = next(s for s in _spans(request) if s.name.startswith("invoke_agent"))
    bad = request.resource_spans[0].scope_spans[0].spans.add()
    bad.CopyFrom(run)
    bad.name, bad.span_id, bad.parent_span_id = "execute_tool bad-ids", span_id, run.span_id
    bad.trace_id = trace_id if trace_id is not None else run.trace_id


def _args_not_json(expected: Expected) -> ExportTraceServiceRequest:
    """The right booking, but with the `search_flights` call's arguments, on its tool span and in the model's
    message that issued it, as text that is not JSON."""
    request = _demo(0, expected, **{"invoke_agent demo-travel-agent": _ARGS_NOT_JSON_VERDICTS})
    expected.args_not_json.update(key(span) for span in _spans(request) if span.name.startswith("invoke_agent"))
    for span in _spans(request):
        for attribute in span.attributes:
            if attribute.key == "gen_ai.tool.call.arguments" and span.name == "execute_tool search_flights":
                attribute.value.string_value = NOT_JSON
            elif attribute.key == "gen_ai.output.messages" and "search_flights" in attribute.value.string_value:
                messages = json.loads(attribute.value.string_value)
                messages[0]["parts"][0]["arguments"] = NOT_JSON
                attribute.value.string_value = json.dumps(messages)
    return request


def _plain(expected: Expected) -> ExportTraceServiceRequest:
    """A trace of no agent (an HTTP server span and its database call), expected downstream as sent: `serve` holds
    such a request whole from its bytes, unparsed, and forwards it as received."""
    request = ExportTraceServiceRequest()
    scope = request.resource_spans.add().scope_spans.add()
    scope.scope.name = "opentelemetry.instrumentation.flask"
    trace_id, root_id = os.urandom(16), os.urandom(8)
    root = scope.spans.add(trace_id=trace_id, span_id=root_id, name="GET /health", kind=2, end_time_unix_nano=2)
    root.attributes.add(key="http.request.method").value.string_value = "GET"
    query = scope.spans.add(trace_id=trace_id, span_id=os.urandom(8), parent_span_id=root_id, name="SELECT users")
    query.attributes.add(key="db.system.name").value.string_value = "postgresql"
    expected.add(request, {})
    return request


def _not_utf8(request: ExportTraceServiceRequest) -> bytes:
    """The request with its first span's name not UTF-8."""
    _spans(request)[0].name = BAD_NAME
    data = request.SerializeToString()
    assert data.count(BAD_NAME.encode()) == 1
    return data.replace(b"XXXX", b"\xff\xfe\xfd\xfc")


def _http(process: ServeProcess, body: bytes, content_type: str = PROTOBUF, **headers: str) -> Reply:
    return http_call(int(process.http_url.rsplit(":", 1)[1]), body, content_type=content_type or None, headers=headers)


def _grpc_error(process: ServeProcess, payload: bytes, code: grpc.StatusCode, text: str, *, gzip: bool = False) -> None:
    """Export raw bytes over gRPC; the call must fail with `code` and a message containing `text`."""
    compression = grpc.Compression.Gzip if gzip else grpc.Compression.NoCompression
    with grpc.insecure_channel(process.grpc_endpoint) as channel, pytest.raises(grpc.RpcError) as caught:
        channel.unary_unary(EXPORT)(payload, timeout=10, compression=compression)
    assert caught.value.code() is code, caught.value  # type: ignore[attr-defined]
    assert text in caught.value.details()  # type: ignore[attr-defined]


def _grpc_export(process: ServeProcess, request: ExportTraceServiceRequest) -> ExportTraceServiceResponse:
    with grpc.insecure_channel(process.grpc_endpoint) as channel:
        return TraceServiceStub(channel).Export(request, timeout=10)


def _bad_requests(process: ServeProcess, expected: Expected) -> list[tuple[str, Callable[[], None]]]:
    """(case, send it and check the answer) for every kind of bad request, over both transports."""
    return [*_bad_http_requests(process, expected), *_bad_grpc_requests(process, expected)]


def _bad_http_requests(process: ServeProcess, expected: Expected) -> list[tuple[str, Callable[[], None]]]:

    def http_case(body: bytes, content_type: str, headers: dict[str, str], code: int, text: str) -> Callable[[], None]:
        def send() -> None:
            reply = _http(process, body, content_type, **headers)
            assert reply.status == code, reply.body
            assert text in reply_status(reply).message

        return send

    cases = [
        (f"HTTP {case}", http_case(body, content_type, headers, code, text))
        for case, body, content_type, headers, code, text in http_bad_cases(LIMIT)
    ]

    def http_not_utf8() -> None:
        reply = _http(process, _not_utf8(_demo(3, Expected())))
        assert reply.status == 400
        assert ".name: string is not valid UTF-8" in reply_status(reply).message

    def http_plain_not_utf8() -> None:
        reply = _http(process, _not_utf8(_plain(Expected())))
        assert reply.status == 400
        assert ".name: string is not valid UTF-8" in reply_status(reply).message

    def http_plain() -> None:
        reply = _http(process, _plain(expected).SerializeToString())
        assert reply.status == 200
        assert not ExportTraceServiceResponse.FromString(reply.body).HasField("partial_success")

    def http_bad_ids() -> None:
        request = _demo(0, expected)
        _with_bad_ids(request, span_id=bytes.fromhex("0badf00d"))
        reply = _http(process, request.SerializeToString())
        assert reply.status == 200
        partial = ExportTraceServiceResponse.FromString(reply.body).partial_success
        assert partial.rejected_spans == 1
        assert "span 'execute_tool bad-ids': span_id is 4 bytes 0badf00d" in partial.error_message

    def http_json_bad_ids() -> None:
        trace_id = os.urandom(16).hex()
        kept = json_span("kept", span_id=os.urandom(8).hex(), trace_id=trace_id)
        document = json_request(kept, json_span("short", span_id="abcd", trace_id=trace_id))
        expected.add(json_format.ParseDict(_base64_ids(document), ExportTraceServiceRequest()), {})
        reply = _http(process, json.dumps(document).encode(), "application/json")
        assert reply.status == 200
        partial = json.loads(reply.body)["partialSuccess"]
        assert partial["rejectedSpans"] == "1"
        assert "spans[1] 'short': spanId 'abcd' is not 16 hex digits" in partial["errorMessage"]

    def http_args_not_json() -> None:
        reply = _http(process, _args_not_json(expected).SerializeToString())
        assert reply.status == 200
        assert not ExportTraceServiceResponse.FromString(reply.body).HasField("partial_success")

    return [
        *cases,
        ("HTTP protobuf not UTF-8", http_not_utf8),
        ("HTTP protobuf of no agent, not UTF-8", http_plain_not_utf8),
        ("HTTP protobuf of no agent", http_plain),
        ("HTTP ids of the wrong length", http_bad_ids),
        ("HTTP JSON ids of the wrong length", http_json_bad_ids),
        ("HTTP args not JSON", http_args_not_json),
    ]


def _bad_grpc_requests(process: ServeProcess, expected: Expected) -> list[tuple[str, Callable[[], None]]]:
    def grpc_garbage() -> None:
        _grpc_error(process, b"\xff\xfe\xfd garbage", grpc.StatusCode.INVALID_ARGUMENT, "not a valid OTLP")

    def grpc_oversized() -> None:
        message = f"the request is {LIMIT + 1} bytes, over the {LIMIT}-byte limit (receiver.max_message_bytes)"
        _grpc_error(process, b"\0" * (LIMIT + 1), grpc.StatusCode.RESOURCE_EXHAUSTED, message)

    def grpc_gzip_over_the_limit() -> None:
        """Compressed to a few hundred bytes; over the limit once grpc has decompressed it: toolscore refuses it."""
        message = f"the request is {LIMIT + 1} bytes, over the {LIMIT}-byte limit"
        _grpc_error(process, b"\0" * (LIMIT + 1), grpc.StatusCode.RESOURCE_EXHAUSTED, message, gzip=True)

    def grpc_gzip_bomb() -> None:
        """Fifty times the limit once decompressed: past twice the limit, grpc refuses it itself, unread."""
        message = "Decompressed message larger than max"
        _grpc_error(process, b"\0" * (50 * LIMIT), grpc.StatusCode.RESOURCE_EXHAUSTED, message, gzip=True)

    def grpc_not_utf8() -> None:
        data = _not_utf8(_demo(3, Expected()))
        _grpc_error(process, data, grpc.StatusCode.INVALID_ARGUMENT, ".name: string is not valid UTF-8")

    def grpc_plain_not_utf8() -> None:
        data = _not_utf8(_plain(Expected()))
        _grpc_error(process, data, grpc.StatusCode.INVALID_ARGUMENT, ".name: string is not valid UTF-8")

    def grpc_plain() -> None:
        assert not _grpc_export(process, _plain(expected)).HasField("partial_success")

    def grpc_bad_ids() -> None:
        request = _demo(1, expected)
        _with_bad_ids(request, span_id=os.urandom(8), trace_id=os.urandom(20))
        partial = _grpc_export(process, request).partial_success
        assert partial.rejected_spans == 1
        assert "span 'execute_tool bad-ids': trace_id is 20 bytes" in partial.error_message

    def grpc_args_not_json() -> None:
        assert not _grpc_export(process, _args_not_json(expected)).HasField("partial_success")

    return [
        ("gRPC garbage", grpc_garbage),
        ("gRPC oversized", grpc_oversized),
        ("gRPC gzip over the limit", grpc_gzip_over_the_limit),
        ("gRPC gzip bomb", grpc_gzip_bomb),
        ("gRPC not UTF-8", grpc_not_utf8),
        ("gRPC of no agent, not UTF-8", grpc_plain_not_utf8),
        ("gRPC of no agent", grpc_plain),
        ("gRPC ids of the wrong length", grpc_bad_ids),
        ("gRPC args not JSON", grpc_args_not_json),
    ]


_ARGS_NOT_JSON_VERDICTS = {"booking_trajectory": 0.0, "tool_selection": 1.0}
"""The right booking, but for arguments that are not JSON: kept as text, they match no expected arguments."""


def _base64_ids(document: dict[str, Any]) -> dict[str, Any]:
    """An OTLP/JSON document's good spans in protobuf JSON (base64 ids), to compare with what is forwarded."""
    out = json.loads(json.dumps(document))
    for resource in out["resourceSpans"]:
        for scope in resource["scopeSpans"]:
            scope["spans"] = [s for s in scope["spans"] if len(s["spanId"]) == 16]
            for span in scope["spans"]:
                for name in ("traceId", "spanId"):
                    span[name] = base64.b64encode(bytes.fromhex(span[name])).decode()
    return out


def _explanations(span: Span) -> str:
    return " | ".join(
        kv.value.string_value for e in span.events for kv in e.attributes if kv.key == "gen_ai.evaluation.explanation"
    )


def _health(process: ServeProcess, path: str) -> tuple[int, dict[str, Any]]:
    with urllib.request.urlopen(process.http_url + path, timeout=5) as response:
        return response.status, json.loads(response.read())


def test_every_kind_of_bad_request_gets_its_error_and_every_good_span_is_forwarded_once(tmp_path: Path) -> None:
    downstream = Downstream()
    config = serve_config(tmp_path, [DEMO_EXPECTATIONS], downstream, receiver={"max_message_bytes": LIMIT})
    expected = Expected()
    with ServeProcess(config, tmp_path) as process:
        process.wait_ready()
        exporters = [
            GrpcExporter(endpoint=process.grpc_endpoint, insecure=True, timeout=10),
            HttpExporter(endpoint=process.http_url + "/v1/traces", timeout=10),
        ]
        for i, (case, send_bad) in enumerate(_bad_requests(process, expected)):
            send_bad()
            good = _demo_trace(i, expected)
            assert exporters[i % 2].export(good) is SpanExportResult.SUCCESS, f"the good request after {case}"
        for exporter in exporters:
            exporter.shutdown()
        received = downstream.wait_for(set(expected.spans))
        assert _health(process, "/healthz") == (200, {"status": "live"})
        assert _health(process, "/readyz") == (200, {"status": "ready"})
        assert process.terminate() == 0, process.log()
    downstream.stop()
    counts = Counter(key(span) for _, span in downstream.spans())
    assert set(counts) == set(expected.spans), process.log()
    assert set(counts.values()) == {1}, "every good span arrives exactly once, and nothing else"
    for span in received:
        sent = expected.spans[key(span)]
        if key(span) in expected.verdicts:
            check_run_span(span, sent, expected.verdicts[key(span)])
            if key(span) in expected.args_not_json:
                assert f"got text that is not JSON: {json.dumps(NOT_JSON)} -> 0" in _explanations(span)
        else:
            assert span == sent, f"{span.name}: a span that is no run span is forwarded unchanged"
    assert "Traceback" not in process.log()
