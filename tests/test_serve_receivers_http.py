"""OTLP/HTTP receiver: the real OTel SDK HTTP exporter, OTLP/JSON by hand, and every kind of bad request."""

from __future__ import annotations

import contextlib
import gzip
import http.client
import json
import logging
import re
import select
import socket
import threading
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import grpc
import pytest
from google.rpc import code_pb2, error_details_pb2
from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
from opentelemetry.exporter.otlp.proto.http import Compression
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceRequest,
    ExportTraceServiceResponse,
)
from opentelemetry.proto.collector.trace.v1.trace_service_pb2_grpc import TraceServiceStub
from opentelemetry.sdk.trace.export import SpanExportResult

from tests.certs import self_signed_certificate
from tests.metric_reader import Meters
from tests.serve_receiver_support import (
    TOKEN,
    TRACE_ID,
    RecordingIngest,
    Reply,
    gzip_bomb,
    http_bad_cases,
    http_call,
    json_request,
    json_span,
    nested_attribute_request,
    reply_status,
    sdk_spans,
)
from toolscore.collector.serve._health import HealthState
from toolscore.collector.serve.receivers import ReceiverConfig
from toolscore.collector.serve.receivers._grpc_receiver import start_grpc_receiver
from toolscore.collector.serve.receivers._http_receiver import HttpReceiver, start_http_receiver
from toolscore.collector.serve.receivers._ingest import IngestResult
from toolscore.collector.serve.receivers._otlp_export import decode_slots

LIMIT = 64 * 1024


@pytest.fixture
def ingest() -> RecordingIngest:
    return RecordingIngest()


@pytest.fixture
def health() -> HealthState:
    return HealthState()


def _start(
    ingest: RecordingIngest, health: HealthState | None = None, *, meters: Meters | None = None, **config: object
) -> HttpReceiver:
    settings = ReceiverConfig.model_validate({"http_endpoint": "127.0.0.1:0", "max_message_bytes": LIMIT, **config})
    telemetry = meters.telemetry if meters is not None else None
    return start_http_receiver(ingest, settings, health or HealthState(), telemetry=telemetry)


@pytest.fixture
def receiver(ingest: RecordingIngest, health: HealthState, meters: Meters) -> Iterator[HttpReceiver]:
    running = _start(ingest, health, meters=meters)
    yield running
    running.stop(0)


def _proto(*names: str) -> bytes:
    return encode_spans(sdk_spans(*names)).SerializeToString()


def _json(document: object) -> bytes:
    return json.dumps(document).encode()


def _exporter(port: int, scheme: str = "http", **kwargs: object) -> OTLPSpanExporter:
    return OTLPSpanExporter(endpoint=f"{scheme}://127.0.0.1:{port}/v1/traces", **kwargs)  # type: ignore[arg-type]


# -- the SDK exporter and OTLP/JSON --------------------------------------------------------------------


@pytest.mark.parametrize("compression", [Compression.NoCompression, Compression.Gzip])
def test_sdk_http_exporter_delivers_spans(
    receiver: HttpReceiver, ingest: RecordingIngest, compression: Compression
) -> None:
    exporter = _exporter(receiver.port, compression=compression)
    try:
        assert exporter.export(sdk_spans("search", "book")) is SpanExportResult.SUCCESS
    finally:
        exporter.shutdown()
    assert ingest.span_names() == ["search", "book"]


def test_protobuf_success_answers_an_empty_protobuf_response(receiver: HttpReceiver) -> None:
    reply = http_call(receiver.port, _proto("a"))
    assert (reply.status, reply.headers["content-type"]) == (200, "application/x-protobuf")
    assert not ExportTraceServiceResponse.FromString(reply.body).HasField("partial_success")


def test_json_request_is_converted_with_hex_ids(receiver: HttpReceiver, ingest: RecordingIngest) -> None:
    document = json_request(json_span("lookup", parentSpanId="00f067aa0ba902b7"))
    reply = http_call(receiver.port, _json(document), content_type="application/json; charset=utf-8")
    assert (reply.status, reply.headers["content-type"], json.loads(reply.body)) == (200, "application/json", {})
    span = ingest.requests[0].resource_spans[0].scope_spans[0].spans[0]
    assert (span.trace_id.hex(), span.span_id.hex(), span.parent_span_id.hex()) == (
        TRACE_ID,
        "eee19b7ec3c1b174",
        "00f067aa0ba902b7",
    )
    assert (span.name, span.kind, span.start_time_unix_nano) == ("lookup", 3, 1_700_000_000_000_000_000)


def test_json_spans_with_bad_ids_are_a_partial_success(
    receiver: HttpReceiver, ingest: RecordingIngest, meters: Meters
) -> None:
    document = json_request(json_span("kept"), json_span("short", span_id="abcd"), json_span("b64", trace_id="W47/"))
    reply = http_call(receiver.port, _json(document), content_type="application/json")
    assert reply.status == 200
    partial = json.loads(reply.body)["partialSuccess"]
    assert partial["rejectedSpans"] == "2"
    message = partial["errorMessage"]
    assert "resourceSpans[0].scopeSpans[0].spans[1] 'short': spanId 'abcd' is not 16 hex digits" in message
    assert "spans[2] 'b64': traceId 'W47/'" in message
    assert ingest.span_names() == ["kept"]
    assert (meters.refused_spans(), meters.refused()) == ({"invalid": 2}, {})  # spans left out, request taken


def test_ingest_rejections_add_to_the_receivers_own(receiver: HttpReceiver, ingest: RecordingIngest) -> None:
    ingest.results.append(IngestResult(rejected_spans=1, error_message="1 span dropped by the ingest"))
    document = json_request(json_span("kept"), json_span("bad", span_id="zz"))
    partial = json.loads(http_call(receiver.port, _json(document), content_type="application/json").body)
    assert partial["partialSuccess"]["rejectedSpans"] == "2"
    assert partial["partialSuccess"]["errorMessage"].endswith("; 1 span dropped by the ingest")


def test_protobuf_partial_success_comes_from_the_ingest(receiver: HttpReceiver, ingest: RecordingIngest) -> None:
    ingest.results.append(IngestResult(rejected_spans=3, error_message="bad ids"))
    response = ExportTraceServiceResponse.FromString(http_call(receiver.port, _proto("a")).body)
    assert (response.partial_success.rejected_spans, response.partial_success.error_message) == (3, "bad ids")


def test_an_ingest_that_raises_is_a_500_counted_with_its_spans(ingest: RecordingIngest, meters: Meters) -> None:
    def explode(request: ExportTraceServiceRequest, data: bytes | None = None) -> IngestResult:
        raise RuntimeError("boom")

    ingest.accept = explode  # type: ignore[method-assign]
    receiver = _start(ingest, meters=meters)
    try:
        reply = http_call(receiver.port, _proto("a", "b"))
    finally:
        receiver.stop(0)
    assert reply.status == 500
    assert (meters.refused(), meters.refused_spans()) == ({"internal": 1}, {"internal": 2})


@pytest.mark.parametrize("when", ["read", "unread"])
def test_overload_is_429_with_retry_after_and_retry_info(
    receiver: HttpReceiver, ingest: RecordingIngest, when: str
) -> None:
    ingest.overload_next(when, 2.2)
    reply = http_call(receiver.port, _proto("a"))
    assert (reply.status, reply.headers["retry-after"]) == (429, "3")
    info = error_details_pb2.RetryInfo()
    assert reply_status(reply).details[0].Unpack(info)
    assert info.retry_delay.ToMilliseconds() == 2200
    assert len(ingest.requests) == (1 if when == "read" else 0)


def test_a_body_refused_before_it_is_read_is_dropped_and_the_connection_kept(
    receiver: HttpReceiver, ingest: RecordingIngest
) -> None:
    """Refused before its body is read (as garbage it would be a 400): the body is read and dropped, so the next
    request on the connection is read from where it starts."""
    ingest.refusals.append(IngestResult(overloaded=True, retry_after_s=1.0))
    connection = http.client.HTTPConnection("127.0.0.1", receiver.port, timeout=10)
    try:
        headers = {"Content-Type": "application/x-protobuf"}
        connection.request("POST", "/v1/traces", body=b"\x0a\xff\xff\xff\xff\x0f garbage", headers=headers)
        refused = connection.getresponse()
        assert (refused.status, refused.getheader("Connection")) == (429, None)
        refused.read()
        sock = connection.sock
        connection.request("POST", "/v1/traces", body=_proto("next"), headers=headers)
        assert connection.getresponse().status == 200
        assert connection.sock is sock, "the same connection"
    finally:
        connection.close()
    assert ingest.span_names() == ["next"]


@pytest.mark.parametrize(
    ("headers", "status"),
    [
        ({"Content-Type": "application/x-protobuf"}, 401),
        ({"Content-Type": "text/plain", "Authorization": f"Bearer {TOKEN}"}, 415),
        ({"Content-Type": "application/x-protobuf", "Authorization": f"Bearer {TOKEN}"}, 413),
    ],
)
def test_http_client_reads_a_refusal_sent_before_the_body_and_keeps_its_connection(
    ingest: RecordingIngest, headers: dict[str, str], status: int
) -> None:
    """`http.client` writes a whole body before reading: a refusal decided from the headers alone must wait for
    the body (read and dropped), or the client meets a closed connection instead of the answer."""
    receiver = _start(ingest, bearer_token=TOKEN)
    connection = http.client.HTTPConnection("127.0.0.1", receiver.port, timeout=10)
    try:
        connection.request("POST", "/v1/traces", body=bytes(16 * LIMIT), headers=headers)
        refused = connection.getresponse()
        assert (refused.status, refused.getheader("Connection")) == (status, None), refused.read()
        refused.read()
        sock = connection.sock
        valid = {"Content-Type": "application/x-protobuf", "Authorization": f"Bearer {TOKEN}"}
        connection.request("POST", "/v1/traces", body=_proto("next"), headers=valid)
        assert connection.getresponse().status == 200
        assert connection.sock is sock
    finally:
        connection.close()
        receiver.stop(0)
    assert ingest.span_names() == ["next"]


def test_a_body_refused_unread_past_the_discard_bound_closes_the_connection(ingest: RecordingIngest) -> None:
    """Past `http_max_discard_bytes` the body is left unread, so the connection cannot carry another request."""
    receiver = _start(ingest, http_max_discard_bytes=8)
    try:
        ingest.refusals.append(IngestResult(overloaded=True, retry_after_s=1.0))
        reply = http_call(receiver.port, b"\x0a\xff\xff\xff\xff\x0f garbage")
        assert (reply.status, reply.headers["connection"]) == (429, "close")
        assert http_call(receiver.port, _proto("next")).status == 200
    finally:
        receiver.stop(0)
    assert ingest.span_names() == ["next"]


@pytest.mark.parametrize("when", ["read", "unread"])
def test_sdk_http_exporter_retries_an_overloaded_request(
    receiver: HttpReceiver, ingest: RecordingIngest, when: str
) -> None:
    ingest.overload_next(when, 0.1)
    exporter = _exporter(receiver.port)
    try:
        assert exporter.export(sdk_spans("again")) is SpanExportResult.SUCCESS
    finally:
        exporter.shutdown()
    assert ingest.span_names() == (["again", "again"] if when == "read" else ["again"])


# -- bad input -----------------------------------------------------------------------------------------

_BOMB = gzip_bomb(LIMIT)


@pytest.mark.parametrize(("case", "body", "content_type", "headers", "code", "text"), http_bad_cases(LIMIT))
def test_bad_request_gets_a_clear_error(  # noqa: PLR0917 (the parametrized case)
    receiver: HttpReceiver,
    ingest: RecordingIngest,
    case: str,
    body: bytes,
    content_type: str,
    headers: dict[str, str],
    code: int,
    text: str,
) -> None:
    reply = http_call(receiver.port, body, content_type=content_type or None, headers=headers)
    assert reply.status == code, reply.body
    assert text in reply_status(reply).message
    assert ingest.requests == []


_REASONS = {
    "garbage protobuf": "invalid",
    "garbage json": "invalid",
    "wrong content type": "unsupported",
    "no content type": "unsupported",
    "unknown encoding": "unsupported",
    "truncated gzip": "invalid",
    "not gzip": "invalid",
    "gzip bomb": "too_large",
    "oversized": "too_large",
    "invalid utf-8 json": "invalid",
    "wrong json type": "invalid",
    "surrogate url": "invalid",
}


def test_every_refused_request_is_counted_by_reason(receiver: HttpReceiver, meters: Meters) -> None:
    expected: dict[str, int] = {}
    for case, body, content_type, headers, code, _ in http_bad_cases(LIMIT):
        assert http_call(receiver.port, body, content_type=content_type or None, headers=headers).status == code
        expected[_REASONS[case]] = expected.get(_REASONS[case], 0) + 1
    assert http_call(receiver.port, _proto("taken")).status == 200
    with socket.create_connection(("127.0.0.1", receiver.port), timeout=5) as raw:  # 411: no length
        raw.sendall(_POST + b"\r\n")
        assert raw.recv(4096).startswith(b"HTTP/1.1 411 ")
    reply = _raw(receiver.port, _POST + b"Transfer-Encoding: gzip, chunked\r\n\r\n" + _chunked(_proto("x")))
    assert reply.startswith(b"HTTP/1.1 501 ")
    assert meters.refused() == {**expected, "invalid": expected["invalid"] + 1, "unsupported": 4}
    assert meters.refused_spans() == {}, "none of them was counted before it was refused"


_LOGGER = "toolscore.collector.serve.receivers._http_receiver"


def _refusal_lines(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.name == _LOGGER and r.levelno == logging.INFO]


@pytest.mark.parametrize(("case", "body", "content_type", "headers", "code", "text"), http_bad_cases(LIMIT))
def test_each_refusal_is_logged_naming_the_sender_what_it_sent_and_the_answer(  # noqa: PLR0917 (the parametrized case)
    receiver: HttpReceiver,
    caplog: pytest.LogCaptureFixture,
    case: str,
    body: bytes,
    content_type: str,
    headers: dict[str, str],
    code: int,
    text: str,
) -> None:
    with caplog.at_level(logging.INFO, logger=_LOGGER):
        assert http_call(receiver.port, body, content_type=content_type or None, headers=headers).status == code
    sent = [
        ("Content-Type", content_type),
        ("Content-Encoding", headers.get("Content-Encoding")),
        ("Content-Length", str(len(body))),
    ]
    described = ", ".join(f"{name} {value!r}" for name, value in sent if value)
    (line,) = _refusal_lines(caplog)
    assert re.fullmatch(
        rf"OTLP/HTTP export refused from 127\.0\.0\.1:\d+ \({re.escape(described)}\): {code} .+", line, re.S
    )
    assert text in line


def test_refusals_without_the_token_or_a_length_are_logged_too(
    ingest: RecordingIngest, caplog: pytest.LogCaptureFixture
) -> None:
    guarded = _start(ingest, bearer_token=TOKEN)
    try:
        with caplog.at_level(logging.INFO, logger=_LOGGER):
            assert http_call(guarded.port, b"x").status == 401
            reply = _raw(guarded.port, _POST + f"Authorization: Bearer {TOKEN}\r\n\r\n".encode())
            assert reply.startswith(b"HTTP/1.1 411 ")
    finally:
        guarded.stop(0)
    assert [re.sub(r":\d+ ", ":<port> ", line) for line in _refusal_lines(caplog)] == [
        "OTLP/HTTP export refused from 127.0.0.1:<port> (Content-Type 'application/x-protobuf', Content-Length '1'): "
        "401 missing or wrong bearer token",
        "OTLP/HTTP export refused from 127.0.0.1:<port> (Content-Type 'application/x-protobuf'): "
        "411 a Content-Length or Transfer-Encoding: chunked is required",
    ]


def test_a_sender_refused_again_and_again_is_logged_once_per_reason_and_counted_every_time(
    receiver: HttpReceiver, meters: Meters, caplog: pytest.LogCaptureFixture
) -> None:
    with caplog.at_level(logging.INFO, logger=_LOGGER):
        for _ in range(20):
            assert http_call(receiver.port, b"\0" * (LIMIT + 1)).status == 413
        for _ in range(5):
            assert http_call(receiver.port, b"<xml/>", content_type="text/xml").status == 415
    assert [line.split("): ")[1][:3] for line in _refusal_lines(caplog)] == ["413", "415"]
    assert meters.refused() == {"too_large": 20, "unsupported": 5}


def test_a_refusal_held_back_from_the_log_does_not_describe_what_was_sent(
    receiver: HttpReceiver, caplog: pytest.LogCaptureFixture
) -> None:
    """A flood of bad requests costs a limiter check each, not a line each: only the refusal whose line goes
    out reads the sender's headers for it. Observed through the standard library's own header class, which
    the server parses each request's headers into (`MessageClass`), counting the lookups made in it."""
    made: list[_CountedHeaders] = []

    class Headers(_CountedHeaders):
        def get(self, name: str, failobj: Any = None) -> Any:
            if not self.lookups:  # the request's headers, not the parser's discarded first message
                made.append(self)
            return super().get(name, failobj)

    handler = receiver.server.RequestHandlerClass
    assert isinstance(handler, type)
    receiver.server.RequestHandlerClass = type("CountedHandler", (handler,), {"MessageClass": Headers})
    receiver.server.refusal_log.every_s = 60.0  # the flood falls within one interval, however slow the machine
    with caplog.at_level(logging.INFO, logger=_LOGGER):
        for _ in range(10):
            assert http_call(receiver.port, b"<xml/>", content_type="text/xml").status == 415
    lookups = [headers.lookups for headers in made]
    assert len(lookups) == 10
    assert lookups[1:] == [lookups[1]] * 9, "the refusals held back are answered alike"
    assert lookups[0] > lookups[1], "the line that went out read what the sender said it sent; the others did not"
    (line,) = _refusal_lines(caplog)
    assert re.sub(r":\d+ ", ":<port> ", line) == (
        "OTLP/HTTP export refused from 127.0.0.1:<port> (Content-Type 'text/xml', Content-Length '6'): "
        "415 Content-Type 'text/xml': send application/x-protobuf or application/json"
    )


class _CountedHeaders(http.client.HTTPMessage):
    """The headers of a request, as the standard library parses them, counting the lookups made in them."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.lookups = 0

    def get(self, name: str, failobj: Any = None) -> Any:
        self.lookups += 1
        return super().get(name, failobj)


def test_overload_is_logged_at_warning_once_per_reason_with_the_sender_the_delay_and_the_queues(
    receiver: HttpReceiver, ingest: RecordingIngest, caplog: pytest.LogCaptureFixture
) -> None:
    """Sustained overload needs an operator: its 429s are logged at WARNING, read or unread, at most one line
    per reason in each interval, the next saying how many it stands for. The queues' state is asked only for
    a line that goes out: a refusal held back costs the limiter's check alone."""
    limiter = receiver.server.refusal_log
    limiter.every_s = 60.0  # the flood falls within one interval, however slow the machine
    with caplog.at_level(logging.WARNING, logger=_LOGGER):
        for when in ("read", "unread", "read"):
            ingest.overload_next(when, 2.2, reason="queue_full")
            assert http_call(receiver.port, _proto("a")).status == 429
        ingest.overload_next("unread", 1.0, reason="forward_queue_full")
        assert http_call(receiver.port, _proto("b")).status == 429
        limiter.every_s = 0.01  # ... and the next refusal in the next one
        time.sleep(0.02)
        ingest.overload_next("unread", 2.2, reason="queue_full")
        assert http_call(receiver.port, _proto("c")).status == 429
    lines = [
        re.sub(r":\d+: ", ":<port>: ", r.getMessage())
        for r in caplog.records
        if r.name == _LOGGER and r.levelno == logging.WARNING
    ]
    assert lines == [
        "OTLP/HTTP export refused from 127.0.0.1:<port>: 429, retry in 2.2s (overloaded: queue_full; 1 requests taken)",
        "OTLP/HTTP export refused from 127.0.0.1:<port>: 429, retry in 1s (overloaded: forward_queue_full; "
        "2 requests taken)",
        "OTLP/HTTP export refused from 127.0.0.1:<port>: 429, retry in 2.2s (overloaded: queue_full; 2 requests taken)"
        " (and 2 more like it since the last such line; at most one every 0.01s)",
    ]
    assert ingest.loads == 3


def test_bad_protobuf_error_names_the_byte_and_field(receiver: HttpReceiver) -> None:
    reply = http_call(receiver.port, b"\x0a\xff\xff\xff\xff\x0f")
    status = reply_status(reply)
    assert status.code == code_pb2.INVALID_ARGUMENT
    assert status.message.startswith("byte 1: not a valid OTLP ExportTraceServiceRequest (6 bytes): resource_spans")
    bad_request = error_details_pb2.BadRequest()
    assert status.details[0].Unpack(bad_request)
    assert bad_request.field_violations[0].field == "byte 1"


def test_bad_json_error_names_the_span_path(receiver: HttpReceiver) -> None:
    document = json_request(json_span("ok"), json_span("typo", startTimeUnixNano="soon"))
    status = reply_status(http_call(receiver.port, _json(document), content_type="application/json"))
    assert status.message.startswith("resourceSpans[0].scopeSpans[0].spans[1]: Failed to parse startTimeUnixNano")


@pytest.mark.parametrize("levels", [32, 10_000])
def test_protobuf_nested_past_the_runtime_limit_is_400_saying_so(
    ingest: RecordingIngest, levels: int, caplog: pytest.LogCaptureFixture
) -> None:
    """32 key-value lists are 101 message levels, one past the runtime's 100; 10,000 once broke the locator."""
    receiver = _start(ingest, max_message_bytes=1 << 20)
    try:
        assert http_call(receiver.port, nested_attribute_request(31)).status == 200
        reply = http_call(receiver.port, nested_attribute_request(levels))
    finally:
        receiver.stop(0)
    assert reply.status == 400, reply.body
    message = reply_status(reply).message
    assert "resource_spans.scope_spans.spans.attributes.value.kvlist_value...(" in message
    assert "messages nested more than 100 deep, the protobuf runtime's limit" in message
    assert len(message) < 400
    assert not [record for record in caplog.records if record.levelname == "ERROR"]
    assert ingest.span_names() == ["deep"]


@pytest.mark.parametrize("fmt", ["proto", "json"])
def test_a_request_over_the_span_limit_is_400_and_one_at_it_is_taken(
    ingest: RecordingIngest, fmt: str, meters: Meters
) -> None:
    receiver = _start(ingest, meters=meters, max_spans_per_request=3)

    def send(*names: str, blocks: int = 0) -> Reply:
        if fmt == "proto":
            return http_call(receiver.port, _proto(*names) + b"\x0a\x00" * blocks)
        document = json_request(*(json_span(name, span_id=f"{i + 1:016x}") for i, name in enumerate(names)))
        document["resourceSpans"] += [{}] * blocks
        return http_call(receiver.port, _json(document), content_type="application/json")

    try:
        over, at, too_many_blocks, after = send("a", "b", "c", "d"), send("e", "f", "g"), send("h", blocks=3), send("i")
    finally:
        receiver.stop(0)
    # Protobuf is counted on the wire and only past the limit; JSON once parsed (2 blocks + 3 empty ones).
    held, held_blocks = ("more than 3", "more than 3") if fmt == "proto" else ("4", "5")
    assert over.status == 400
    assert reply_status(over).code == code_pb2.INVALID_ARGUMENT
    assert f"the request holds {held} spans, over the limit of 3 per request" in reply_status(over).message
    assert "(receiver.max_spans_per_request): send smaller batches" in reply_status(over).message
    assert too_many_blocks.status == 400
    assert f"the request holds {held_blocks} resource and scope blocks" in reply_status(too_many_blocks).message
    assert (at.status, after.status) == (200, 200)
    assert ingest.span_names() == ["e", "f", "g", "i"]
    assert meters.refused() == {"too_many_spans": 2}
    # Spans are counted as refused only when they were counted whole: JSON's 4, then 1 (of 5 blocks).
    assert meters.refused_spans() == ({} if fmt == "proto" else {"too_many_spans": 5})


@dataclass
class GatedIngest(RecordingIngest):
    """A `RecordingIngest` whose `accept` signals it was entered, then waits for the gate to open."""

    gate: threading.Event = field(default_factory=threading.Event)
    entered: threading.Semaphore = field(default_factory=lambda: threading.Semaphore(0))

    def accept(self, request: ExportTraceServiceRequest, data: bytes | None = None) -> IngestResult:
        self.entered.release()
        self.gate.wait(10)
        return super().accept(request, data)


def test_the_grpc_and_http_receivers_share_the_decode_slots() -> None:
    ingest = GatedIngest()
    config = ReceiverConfig(grpc_endpoint="127.0.0.1:0", http_endpoint="127.0.0.1:0", max_concurrent_decodes=1)
    slots = decode_slots(config.max_concurrent_decodes)
    grpc_receiver = start_grpc_receiver(ingest, config, slots)
    http_receiver = start_http_receiver(ingest, config, HealthState(), slots)
    try:
        with grpc.insecure_channel(f"127.0.0.1:{grpc_receiver.port}") as channel, ThreadPoolExecutor(2) as pool:
            over_grpc = pool.submit(TraceServiceStub(channel).Export, encode_spans(sdk_spans("grpc")), timeout=10)
            assert ingest.entered.acquire(timeout=10)  # the gRPC request holds the only slot
            over_http = pool.submit(http_call, http_receiver.port, _proto("http"))
            assert not ingest.entered.acquire(timeout=0.5)  # the HTTP request, read, waits for it
            ingest.gate.set()
            assert not over_grpc.result(10).HasField("partial_success")
            assert over_http.result(10).status == 200
    finally:
        ingest.gate.set()
        grpc_receiver.stop(0)
        http_receiver.stop(0)
    assert ingest.span_names() == ["grpc", "http"]


def test_good_requests_between_bad_ones_reach_the_ingest(receiver: HttpReceiver, ingest: RecordingIngest) -> None:
    for i, (case, body, content_type, headers, code, _) in enumerate(http_bad_cases(LIMIT)):
        assert http_call(receiver.port, body, content_type=content_type or None, headers=headers).status == code, case
        assert http_call(receiver.port, _proto(f"good-{i}")).status == 200, case
    assert ingest.span_names() == [f"good-{i}" for i in range(len(http_bad_cases(LIMIT)))]


def test_keep_alive_connection_serves_after_a_bad_request(receiver: HttpReceiver, ingest: RecordingIngest) -> None:
    import http.client

    connection = http.client.HTTPConnection("127.0.0.1", receiver.port, timeout=5)
    try:
        for body in (_proto("one"), b"\xff\xff", _proto("two")):
            connection.request("POST", "/v1/traces", body, {"Content-Type": "application/x-protobuf"})
            connection.getresponse().read()
    finally:
        connection.close()
    assert ingest.span_names() == ["one", "two"]


@pytest.mark.parametrize(
    ("method", "path", "code", "allow"),
    [
        ("GET", "/v1/traces", 405, "POST"),
        ("PUT", "/v1/traces", 405, "POST"),
        ("DELETE", "/v1/traces", 405, "POST"),
        ("HEAD", "/v1/traces", 405, "POST"),
        ("TRACE", "/v1/traces", 405, "POST"),
        ("BREW", "/v1/traces", 405, "POST"),
        ("HEAD", "/healthz", 405, "GET"),
        ("POST", "/healthz", 405, "GET"),
        ("POST", "/v1/metrics", 404, None),
        ("GET", "/", 404, None),
    ],
)
def test_other_methods_and_paths(receiver: HttpReceiver, method: str, path: str, code: int, allow: str | None) -> None:
    reply = http_call(receiver.port, b"x", method=method, path=path)
    assert reply.status == code
    assert reply.headers.get("allow") == allow


def _raw(port: int, request: bytes) -> bytes:
    """Send raw bytes and read the answer until the server closes the connection."""
    with socket.create_connection(("127.0.0.1", port), timeout=5) as raw:
        raw.sendall(request)
        answer = b""
        while chunk := raw.recv(65536):
            answer += chunk
    return answer


def test_head_answer_has_no_body(receiver: HttpReceiver) -> None:
    answer = _raw(receiver.port, b"HEAD /v1/traces HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
    head, _, rest = answer.partition(b"\r\n\r\n")
    assert head.startswith(b"HTTP/1.1 405 ")
    assert b"Allow: POST" in head
    assert rest == b""


_POST = b"POST /v1/traces HTTP/1.1\r\nHost: x\r\nContent-Type: application/x-protobuf\r\n"


@pytest.mark.parametrize(
    ("lengths", "answer", "text"),
    [
        (["\xb2"], b"HTTP/1.1 400 ", b"Content-Length '\xc2\xb2' is not a number"),
        (["-1"], b"HTTP/1.1 400 ", b"is not a number"),
        (["{n}", "40"], b"HTTP/1.1 400 ", b"Content-Length values disagree"),
        (["{n}, 40"], b"HTTP/1.1 400 ", b"Content-Length values disagree"),
        (["9" * 5000], b"HTTP/1.1 413 ", b"a 5000-digit Content-Length"),
        (["{n}", "{n}"], b"HTTP/1.1 200 ", b""),
        (["{n}, 0{n}"], b"HTTP/1.1 200 ", b""),
    ],
)
def test_content_length_is_strict(
    receiver: HttpReceiver, ingest: RecordingIngest, lengths: list[str], answer: bytes, text: bytes
) -> None:
    """RFC 9112 §6.3: a length not in ASCII digits, or lengths that disagree, are 400, not a dropped connection."""
    body = _proto("framed")
    headers = b"".join(
        b"Content-Length: " + value.format(n=len(body)).encode("latin-1", "replace") + b"\r\n" for value in lengths
    )
    reply = _raw(receiver.port, _POST + headers + b"Connection: close\r\n\r\n" + body)
    assert reply.startswith(answer), reply
    assert text in reply
    assert ingest.span_names() == (["framed"] if answer.startswith(b"HTTP/1.1 200") else [])


def test_expect_100_continue_comes_after_the_auth_and_size_checks(ingest: RecordingIngest) -> None:
    receiver = _start(ingest, bearer_token=TOKEN)
    auth = f"Authorization: Bearer {TOKEN}\r\n".encode()
    expect = b"Expect: 100-continue\r\n"
    try:
        stranger = _raw(receiver.port, _POST + b"Content-Length: 10\r\n" + expect + b"\r\n")
        assert stranger.startswith(b"HTTP/1.1 401 ")
        too_big = _raw(receiver.port, _POST + auth + f"Content-Length: {LIMIT + 1}\r\n".encode() + expect + b"\r\n")
        assert too_big.startswith(b"HTTP/1.1 413 ")
        body = _proto("expected")
        with socket.create_connection(("127.0.0.1", receiver.port), timeout=5) as raw:
            raw.sendall(_POST + auth + f"Content-Length: {len(body)}\r\n".encode() + expect + b"\r\n")
            assert raw.recv(4096) == b"HTTP/1.1 100 Continue\r\n\r\n"
            raw.sendall(body)
            assert raw.recv(4096).startswith(b"HTTP/1.1 200 ")
    finally:
        receiver.stop(0)
    assert ingest.span_names() == ["expected"]


def _chunked(*chunks: bytes, trailer: bytes = b"") -> bytes:
    return b"".join(b"%x\r\n%s\r\n" % (len(chunk), chunk) for chunk in chunks) + b"0\r\n" + trailer + b"\r\n"


_CHUNKED = _POST + b"Transfer-Encoding: chunked\r\n"


@pytest.mark.parametrize("gzipped", [False, True])
def test_chunked_bodies_are_read_and_the_connection_kept(
    receiver: HttpReceiver, ingest: RecordingIngest, gzipped: bool
) -> None:
    """Chunk extensions and trailers are ignored; the next request on the connection is read after the trailers."""
    encoding = b"Content-Encoding: gzip\r\n" if gzipped else b""
    first, second = (gzip.compress(body) if gzipped else body for body in (_proto("first"), _proto("second")))
    cut = len(first) // 2
    with socket.create_connection(("127.0.0.1", receiver.port), timeout=5) as raw:
        raw.sendall(_CHUNKED + encoding + b"\r\n" + b"%x;name=value\r\n%s\r\n" % (cut, first[:cut]))
        raw.sendall(_chunked(first[cut:], trailer=b"X-Checksum: 1\r\n"))
        raw.sendall(_CHUNKED + encoding + b"Connection: close\r\n\r\n" + _chunked(second))
        answers = b""
        while chunk := raw.recv(65536):
            answers += chunk
    assert answers.count(b"HTTP/1.1 200 OK\r\n") == 2, answers
    assert ingest.span_names() == ["first", "second"]


def test_chunked_json_is_read(receiver: HttpReceiver, ingest: RecordingIngest) -> None:
    body = _json(json_request(json_span("as-json")))
    head = _CHUNKED.replace(b"x-protobuf", b"json") + b"Connection: close\r\n\r\n"
    reply = _raw(receiver.port, head + _chunked(body[:9], body[9:]))
    assert reply.startswith(b"HTTP/1.1 200 ")
    assert ingest.span_names() == ["as-json"]


def test_a_chunked_body_over_the_limit_is_read_dropped_and_answered_413_on_a_kept_connection(
    receiver: HttpReceiver, ingest: RecordingIngest
) -> None:
    """Within `http_max_discard_bytes`, the rest of the body is read and dropped before the 413, so a client that
    reads nothing before it has sent all (Python's http.client) gets it, and the next request is read whole."""
    with socket.create_connection(("127.0.0.1", receiver.port), timeout=5) as raw:
        raw.sendall(_CHUNKED + b"\r\n" + _chunked(bytes(LIMIT // 2), bytes(LIMIT // 2 + 1), bytes(3 * LIMIT)))
        raw.sendall(_POST + b"Connection: close\r\n" + b"Content-Length: %d\r\n\r\n" % len(_proto("next")))
        raw.sendall(_proto("next"))
        answers = b""
        while chunk := raw.recv(65536):
            answers += chunk
    assert answers.startswith(b"HTTP/1.1 413 "), answers
    first = answers.split(b"HTTP/1.1 ")[1]
    assert f"the chunked body is over the {LIMIT}-byte limit".encode() in first
    assert b"Connection: close" not in first
    assert answers.count(b"HTTP/1.1 200 OK\r\n") == 1
    head = _CHUNKED + b"Content-Encoding: gzip\r\nConnection: close\r\n\r\n"
    gzipped = _raw(receiver.port, head + _chunked(_BOMB))
    assert gzipped.startswith(b"HTTP/1.1 413 ")
    assert ingest.span_names() == ["next"]


def test_a_chunked_body_past_the_discard_bound_is_413_before_it_is_sent(ingest: RecordingIngest) -> None:
    receiver = _start(ingest, http_max_discard_bytes=2 * LIMIT)
    try:
        with socket.create_connection(("127.0.0.1", receiver.port), timeout=5) as raw:
            raw.sendall(_CHUNKED + b"\r\n" + b"%x\r\n" % (LIMIT // 2) + bytes(LIMIT // 2) + b"\r\n")
            raw.sendall(b"%x\r\n" % (2 * LIMIT))  # the announced size passes the discard bound: not sent
            answer = b""
            while chunk := raw.recv(65536):  # the server answers, then closes
                answer += chunk
    finally:
        receiver.stop(0)
    assert answer.startswith(b"HTTP/1.1 413 ")
    assert f"the chunked body is over the {LIMIT}-byte limit".encode() in answer
    assert b"Connection: close" in answer
    assert ingest.requests == []


@pytest.mark.parametrize(
    ("body", "text"),
    [
        (b"zz\r\nab\r\n0\r\n\r\n", b"chunk size b'zz' is not hexadecimal"),
        (b"-2\r\nab\r\n0\r\n\r\n", b"chunk size b'-2' is not hexadecimal"),
        (b"0x2\r\nab\r\n0\r\n\r\n", b"chunk size b'0x2' is not hexadecimal"),
        (b"\xb2\r\nab\r\n0\r\n\r\n", b"is not hexadecimal"),
        (b"\r\n", b"chunk size b'' is not hexadecimal"),
        (b"1\r\nab\r\n0\r\n\r\n", b"the 1-byte chunk is not followed by CRLF"),
        (b"2\nab\r\n0\r\n\r\n", b"bare LF"),
        (b"1" * 5000 + b"\r\n", b"chunk size line longer than 4096 bytes"),
        (b"0\r\n" + b"X-A: b\r\n" * 10_000 + b"\r\n", b"trailers over 65536 bytes"),
    ],
)
def test_malformed_chunked_framing_is_400(
    receiver: HttpReceiver, ingest: RecordingIngest, body: bytes, text: bytes
) -> None:
    reply = _raw(receiver.port, _CHUNKED + b"\r\n" + body)
    assert reply.startswith(b"HTTP/1.1 400 "), reply
    assert text in reply
    assert b"Connection: close" in reply
    assert ingest.requests == []


@pytest.mark.parametrize(
    ("coding", "answer", "text"),
    [
        (b"gzip, chunked", b"HTTP/1.1 501 ", b"only chunked is supported"),
        (b"chunked, gzip", b"HTTP/1.1 400 ", b"chunked must come last"),
        (b"identity", b"HTTP/1.1 400 ", b"chunked must come last"),
    ],
)
def test_other_transfer_codings_are_refused(receiver: HttpReceiver, coding: bytes, answer: bytes, text: bytes) -> None:
    reply = _raw(receiver.port, _POST + b"Transfer-Encoding: " + coding + b"\r\n\r\n" + _chunked(_proto("x")))
    assert reply.startswith(answer), reply
    assert text in reply


def test_chunked_with_a_content_length_is_read_chunked_and_the_connection_closed(
    receiver: HttpReceiver, ingest: RecordingIngest
) -> None:
    """RFC 9112 §6.3: Transfer-Encoding overrides Content-Length, and the connection must not be reused."""
    reply = _raw(receiver.port, _CHUNKED + b"Content-Length: 3\r\n\r\n" + _chunked(_proto("both")))
    assert reply.startswith(b"HTTP/1.1 200 ")
    assert b"Connection: close" in reply
    assert ingest.span_names() == ["both"]


def test_missing_content_length_is_411(receiver: HttpReceiver) -> None:
    with socket.create_connection(("127.0.0.1", receiver.port), timeout=5) as raw:
        raw.sendall(b"POST /v1/traces HTTP/1.1\r\nHost: x\r\nContent-Type: application/x-protobuf\r\n\r\n")
        assert raw.recv(4096).startswith(b"HTTP/1.1 411 ")


# -- health, auth, TLS, connection bounds, stop --------------------------------------------------------


def test_health_endpoints_follow_the_state(receiver: HttpReceiver, health: HealthState) -> None:
    def get(path: str) -> tuple[int, object]:
        reply = http_call(receiver.port, method="GET", path=path, content_type=None)
        return reply.status, json.loads(reply.body)

    assert get("/healthz") == (200, {"status": "live"})
    assert get("/readyz") == (503, {"status": "not ready"})
    health.ready = True
    assert get("/readyz") == (200, {"status": "ready"})
    waiting: list[str] = ["waiting for the registry store: OperationalError: connection refused"]
    health.waiting_for = lambda: waiting[0] if waiting else None
    assert get("/readyz") == (503, {"status": "not ready", "reason": waiting[0]})
    waiting.clear()
    assert get("/readyz") == (200, {"status": "ready"})
    health.live = False
    assert get("/healthz") == (503, {"status": "not live"})
    assert get("/readyz")[0] == 503


def test_bearer_token_is_required_when_configured(ingest: RecordingIngest, meters: Meters) -> None:
    receiver = _start(ingest, meters=meters, bearer_token=TOKEN)
    try:
        refused = ["Bearer wrong", TOKEN, f"Basic {TOKEN}", f"Bearer{TOKEN}", f"Bearer {TOKEN}x"]
        for headers in [{}, *({"Authorization": value} for value in refused)]:
            reply = http_call(receiver.port, _proto("refused"), headers=headers)
            assert (reply.status, reply.headers["www-authenticate"]) == (401, "Bearer")
        for scheme in ("bearer", "BEARER"):  # the scheme is case-insensitive (RFC 9110 §11.1)
            assert (
                http_call(receiver.port, _proto(scheme), headers={"Authorization": f"{scheme}  {TOKEN}"}).status == 200
            )
        assert http_call(receiver.port, method="GET", path="/healthz", content_type=None).status == 200
        exporter = _exporter(receiver.port, headers={"Authorization": f"Bearer {TOKEN}"})
        try:
            assert exporter.export(sdk_spans("allowed")) is SpanExportResult.SUCCESS
        finally:
            exporter.shutdown()
    finally:
        receiver.stop(0)
    assert ingest.span_names() == ["bearer", "BEARER", "allowed"]
    assert meters.refused() == {"unauthenticated": 6}


def test_tls_receiver_serves_the_sdk_exporter(
    ingest: RecordingIngest, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # requests lets these variables override the exporter's `certificate_file` (its session.verify).
    monkeypatch.delenv("REQUESTS_CA_BUNDLE", raising=False)
    monkeypatch.delenv("CURL_CA_BUNDLE", raising=False)
    cert, key = self_signed_certificate(tmp_path)
    receiver = _start(ingest, tls_cert_file=str(cert), tls_key_file=str(key))
    try:
        exporter = _exporter(receiver.port, scheme="https", certificate_file=str(cert))
        try:
            assert exporter.export(sdk_spans("private")) is SpanExportResult.SUCCESS
        finally:
            exporter.shutdown()
        with socket.create_connection(("127.0.0.1", receiver.port), timeout=5) as plain:
            plain.sendall(b"POST /v1/traces HTTP/1.1\r\nContent-Length: 0\r\n\r\n")
            try:
                answer = plain.recv(4096)
            except ConnectionResetError:
                answer = b""
            assert not answer.startswith(b"HTTP/1.1 200")
        assert http_call_tls_health(receiver.port, cert) == 200
    finally:
        receiver.stop(0)
    assert ingest.span_names() == ["private"]


def http_call_tls_health(port: int, cert: Path) -> int:
    import http.client
    import ssl

    context = ssl.create_default_context(cafile=str(cert))
    connection = http.client.HTTPSConnection("127.0.0.1", port, timeout=5, context=context)
    try:
        connection.request("GET", "/healthz")
        return connection.getresponse().status
    finally:
        connection.close()


def test_connections_beyond_the_bound_get_503_and_slots_come_back(ingest: RecordingIngest, meters: Meters) -> None:
    receiver = _start(ingest, meters=meters, http_max_connections=2)
    try:
        idle = [socket.create_connection(("127.0.0.1", receiver.port), timeout=5) for _ in range(2)]
        time.sleep(0.2)
        with socket.create_connection(("127.0.0.1", receiver.port), timeout=5) as third:
            answer = third.recv(4096)
        assert answer.startswith(b"HTTP/1.1 503 ")
        assert b"Retry-After: 1" in answer
        assert meters.refused() == {"too_many_connections": 1}
        for connection in idle:
            connection.close()
        wait_for_a_free_slot(receiver.port)
    finally:
        receiver.stop(0)
    assert "late" in ingest.span_names()


def test_a_flood_of_connections_beyond_the_bound_is_one_warning(
    ingest: RecordingIngest, meters: Meters, caplog: pytest.LogCaptureFixture
) -> None:
    receiver = _start(ingest, meters=meters, http_max_connections=1)
    try:
        with (
            caplog.at_level(logging.WARNING, logger="toolscore.collector.serve.receivers._http_server"),
            socket.create_connection(("127.0.0.1", receiver.port), timeout=5),
        ):
            time.sleep(0.2)
            for _ in range(10):
                with socket.create_connection(("127.0.0.1", receiver.port), timeout=5) as extra:
                    assert extra.recv(4096).startswith(b"HTTP/1.1 503 ")
    finally:
        receiver.stop(0)
    assert meters.refused() == {"too_many_connections": 10}
    lines = [re.sub(r":\d+$", ":<port>", r.getMessage()) for r in caplog.records]
    assert lines == ["HTTP: 1 connections open, refusing one from 127.0.0.1:<port>"]


def wait_for_a_free_slot(port: int) -> None:
    """Export `late` until it is answered 200: the slots held by closed or cut-off clients come free."""
    deadline = time.monotonic() + 5
    while http_call_status(port) != 200:
        assert time.monotonic() < deadline, "connection slots were not released"
        time.sleep(0.05)


def http_call_status(port: int) -> int:
    try:
        return http_call(port, _proto("late")).status
    except (ConnectionError, OSError):
        return 0


def test_idle_connections_are_closed(ingest: RecordingIngest) -> None:
    receiver = _start(ingest, http_idle_timeout_s=0.2)
    try:
        with socket.create_connection(("127.0.0.1", receiver.port), timeout=5) as idle:
            started = time.monotonic()
            assert idle.recv(4096) == b""
            assert time.monotonic() - started < 3
    finally:
        receiver.stop(0)


def _trickle(connections: list[socket.socket], pieces: list[bytes], budget_s: float) -> list[bytes]:
    """Send each connection its `pieces` one per 0.1 s, then a body byte per 0.1 s, until the server answers
    and closes; what each one got (empty if `budget_s` ran out first)."""
    answers = [b""] * len(connections)
    done = [False] * len(connections)
    remaining = [list(p) for p in pieces]
    end = time.monotonic() + budget_s
    while not all(done) and time.monotonic() < end:
        readable, _, _ = select.select([c for c, d in zip(connections, done, strict=True) if not d], [], [], 0.1)
        for i, connection in enumerate(connections):
            if done[i]:
                continue
            if connection in readable:
                chunk = connection.recv(65536)
                answers[i] += chunk
                done[i] = not chunk
            else:
                with contextlib.suppress(OSError):
                    connection.sendall(remaining[i].pop(0) if remaining[i] else b"x")
    return answers


def test_a_request_trickling_in_is_cut_at_its_deadline_and_its_slot_freed(
    ingest: RecordingIngest, meters: Meters
) -> None:
    """Each read comes well within the idle timeout, but the request as a whole takes too long: 408 and closed."""
    receiver = _start(ingest, meters=meters, http_max_connections=2, http_idle_timeout_s=5, http_request_timeout_s=0.5)
    headers = _POST + b"Content-Length: 60000\r\n\r\n"
    try:
        slow_headers, slow_body = (socket.create_connection(("127.0.0.1", receiver.port), timeout=5) for _ in "ab")
        with slow_headers, slow_body:
            pieces = [[headers[i : i + 4] for i in range(0, len(headers), 4)], [headers]]
            answers = _trickle([slow_headers, slow_body], pieces, budget_s=20)
        for answer in answers:
            assert answer.startswith(b"HTTP/1.1 408 Request Timeout\r\n"), answer
            assert b"the request did not arrive within 0.5s" in answer
        assert meters.refused()["timeout"] == 2
        wait_for_a_free_slot(receiver.port)
    finally:
        receiver.stop(0)
    assert ingest.span_names() == ["late"]


def test_stop_closes_idle_keep_alive_connections_and_the_port(ingest: RecordingIngest) -> None:
    receiver = _start(ingest)
    idle = socket.create_connection(("127.0.0.1", receiver.port), timeout=5)
    time.sleep(0.3)  # accepted: its thread now waits for a request line
    try:
        started = time.monotonic()
        receiver.stop(1.0)
        receiver.stop(1.0)
        assert time.monotonic() - started < 2.5
        assert idle.recv(4096) == b""
        with pytest.raises(ConnectionRefusedError):
            socket.create_connection(("127.0.0.1", receiver.port), timeout=1)
    finally:
        idle.close()


def test_a_gigabyte_gzip_bomb_is_refused_at_the_limit(ingest: RecordingIngest) -> None:
    member = gzip.compress(bytes(1 << 20))  # 1 MiB of zeros in about 1 KB; gzip members may be concatenated
    bomb = member * 1024  # about 1 MB on the wire, 1 GiB decompressed
    receiver = _start(ingest, max_message_bytes=len(bomb) + 1)
    try:
        started = time.monotonic()
        reply = http_call(receiver.port, bomb, headers={"Content-Encoding": "gzip"})
        assert time.monotonic() - started < 5
        assert reply.status == 413
        assert f"decompresses to more than {len(bomb) + 1} bytes" in reply_status(reply).message
        assert (
            http_call(receiver.port, gzip.compress(_proto("after")), headers={"Content-Encoding": "gzip"}).status == 200
        )
    finally:
        receiver.stop(0)
    assert ingest.span_names() == ["after"]
