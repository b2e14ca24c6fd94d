"""OTLP/gRPC receiver: the real OTel SDK exporter and raw grpc calls against it on 127.0.0.1."""

from __future__ import annotations

import logging
import re
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import grpc
import pytest
from google.rpc import code_pb2, error_details_pb2, status_pb2
from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
from opentelemetry.exporter.otlp.proto.grpc.exporter import Compression
from opentelemetry.exporter.otlp.proto.grpc.trace_exporter import OTLPSpanExporter
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.proto.collector.trace.v1.trace_service_pb2_grpc import TraceServiceStub
from opentelemetry.sdk.trace.export import SpanExportResult

from tests.certs import self_signed_certificate
from tests.metric_reader import Meters
from tests.pipeline_builders import wait_until
from tests.serve_receiver_support import TOKEN, RecordingIngest, nested_attribute_request, sdk_spans
from toolscore.collector.serve._limited_log import LimitedLog
from toolscore.collector.serve.receivers import ReceiverConfig
from toolscore.collector.serve.receivers._grpc_gate import BearerAuth, CallSlots, refusal_pool
from toolscore.collector.serve.receivers._grpc_receiver import GrpcReceiver, TraceServiceReceiver, start_grpc_receiver
from toolscore.collector.serve.receivers._ingest import IngestResult
from toolscore.collector.serve.receivers._otlp_export import ReceiverTelemetry, decode_slots
from toolscore.collector.telemetry.base import NoopTelemetry

EXPORT = "/opentelemetry.proto.collector.trace.v1.TraceService/Export"


@pytest.fixture
def ingest() -> RecordingIngest:
    return RecordingIngest()


def _start(ingest: RecordingIngest, meters: Meters | None = None, **config: object) -> GrpcReceiver:
    settings = ReceiverConfig(grpc_endpoint="127.0.0.1:0", **config)  # type: ignore[arg-type]
    return start_grpc_receiver(ingest, settings, telemetry=meters.telemetry if meters is not None else None)


@pytest.fixture
def receiver(ingest: RecordingIngest, meters: Meters) -> Iterator[GrpcReceiver]:
    running = _start(ingest, meters)
    yield running
    running.stop(0)


@pytest.fixture
def channel(receiver: GrpcReceiver) -> Iterator[grpc.Channel]:
    with grpc.insecure_channel(f"127.0.0.1:{receiver.port}") as opened:
        yield opened


def _request(*names: str) -> ExportTraceServiceRequest:
    return encode_spans(sdk_spans(*names))


def _raw_export(channel: grpc.Channel, payload: bytes) -> bytes:
    call = channel.unary_unary(EXPORT, request_serializer=None, response_deserializer=None)
    return call(payload, timeout=5)  # type: ignore[no-any-return]


def _status_details(error: grpc.RpcError) -> status_pb2.Status:
    trailers = dict(error.trailing_metadata())  # type: ignore[attr-defined]
    return status_pb2.Status.FromString(trailers["grpc-status-details-bin"])


def test_sdk_exporter_delivers_spans_to_the_ingest(receiver: GrpcReceiver, ingest: RecordingIngest) -> None:
    exporter = OTLPSpanExporter(endpoint=f"127.0.0.1:{receiver.port}", insecure=True)
    try:
        assert exporter.export(sdk_spans("search", "book")) is SpanExportResult.SUCCESS
    finally:
        exporter.shutdown()
    assert ingest.span_names() == ["search", "book"]
    resource = ingest.requests[0].resource_spans[0].resource
    assert {kv.key: kv.value.string_value for kv in resource.attributes}["service.name"] == "agent"


def test_sdk_exporter_with_gzip_is_decompressed(receiver: GrpcReceiver, ingest: RecordingIngest) -> None:
    exporter = OTLPSpanExporter(endpoint=f"127.0.0.1:{receiver.port}", insecure=True, compression=Compression.Gzip)
    try:
        assert exporter.export(sdk_spans("zipped")) is SpanExportResult.SUCCESS
    finally:
        exporter.shutdown()
    assert ingest.span_names() == ["zipped"]


def test_full_success_leaves_partial_success_unset(channel: grpc.Channel, ingest: RecordingIngest) -> None:
    response = TraceServiceStub(channel).Export(_request("a"), timeout=5)
    assert not response.HasField("partial_success")


def test_rejected_spans_are_a_partial_success(channel: grpc.Channel, ingest: RecordingIngest) -> None:
    ingest.results.append(IngestResult(rejected_spans=2, error_message="2 spans with bad ids"))
    response = TraceServiceStub(channel).Export(_request("a", "b", "c"), timeout=5)
    assert response.partial_success.rejected_spans == 2
    assert response.partial_success.error_message == "2 spans with bad ids"


@pytest.mark.parametrize("when", ["read", "unread"])
def test_overload_is_resource_exhausted_with_retry_info(
    channel: grpc.Channel, ingest: RecordingIngest, when: str, meters: Meters
) -> None:
    ingest.overload_next(when, 2.5)
    with pytest.raises(grpc.RpcError) as caught:
        TraceServiceStub(channel).Export(_request("a"), timeout=5)
    assert caught.value.code() is grpc.StatusCode.RESOURCE_EXHAUSTED  # type: ignore[attr-defined]
    status = _status_details(caught.value)
    assert status.code == code_pb2.RESOURCE_EXHAUSTED
    info = error_details_pb2.RetryInfo()
    assert status.details[0].Unpack(info)
    assert info.retry_delay.ToNanoseconds() == 2_500_000_000
    trailers = dict(caught.value.trailing_metadata())  # type: ignore[attr-defined]
    assert error_details_pb2.RetryInfo.FromString(trailers["google.rpc.retryinfo-bin"]) == info
    assert len(ingest.requests) == (1 if when == "read" else 0)
    assert meters.refused() == {}, "overload is counted by the ingest that decided it, not twice"


@pytest.mark.parametrize("when", ["read", "unread"])
def test_sdk_exporter_retries_after_the_overload_delay(
    receiver: GrpcReceiver, ingest: RecordingIngest, when: str
) -> None:
    ingest.overload_next(when, 0.3)
    exporter = OTLPSpanExporter(endpoint=f"127.0.0.1:{receiver.port}", insecure=True)
    started = time.monotonic()
    try:
        assert exporter.export(sdk_spans("retried")) is SpanExportResult.SUCCESS
    finally:
        exporter.shutdown()
    assert time.monotonic() - started >= 0.3
    assert ingest.span_names() == (["retried", "retried"] if when == "read" else ["retried"])


def test_a_request_refused_unread_is_not_parsed(channel: grpc.Channel, ingest: RecordingIngest) -> None:
    """Bytes that would be INVALID_ARGUMENT get RESOURCE_EXHAUSTED: the refusal came before the message."""
    ingest.refusals.append(IngestResult(overloaded=True))
    with pytest.raises(grpc.RpcError) as caught:
        _raw_export(channel, b"\x0a\xff\xff\xff\xff\x0f garbage" * 100_000)
    assert caught.value.code() is grpc.StatusCode.RESOURCE_EXHAUSTED  # type: ignore[attr-defined]
    with pytest.raises(grpc.RpcError) as caught:
        _raw_export(channel, b"\x0a\xff\xff\xff\xff\x0f garbage")
    assert caught.value.code() is grpc.StatusCode.INVALID_ARGUMENT  # type: ignore[attr-defined]
    response = TraceServiceStub(channel).Export(_request("after"), timeout=5)  # the channel still serves
    assert not response.HasField("partial_success")
    assert ingest.span_names() == ["after"]


def test_garbage_bytes_are_invalid_argument_naming_the_fault(
    channel: grpc.Channel, ingest: RecordingIngest, meters: Meters
) -> None:
    with pytest.raises(grpc.RpcError) as caught:
        _raw_export(channel, b"\x0a\xff\xff\xff\xff\x0f garbage")
    assert caught.value.code() is grpc.StatusCode.INVALID_ARGUMENT  # type: ignore[attr-defined]
    assert "byte 1" in caught.value.details()  # type: ignore[attr-defined]
    assert "resource_spans: length" in caught.value.details()  # type: ignore[attr-defined]
    bad_request = error_details_pb2.BadRequest()
    assert _status_details(caught.value).details[0].Unpack(bad_request)
    assert bad_request.field_violations[0].field == "byte 1"
    assert ingest.requests == []
    assert (meters.refused(), meters.refused_spans()) == ({"invalid": 1}, {})


def test_bytes_without_resource_spans_are_invalid_argument(channel: grpc.Channel) -> None:
    with pytest.raises(grpc.RpcError) as caught:
        _raw_export(channel, b"\x78\x01")  # field 15, varint 1: parses, but is no trace request
    assert caught.value.code() is grpc.StatusCode.INVALID_ARGUMENT  # type: ignore[attr-defined]
    assert "without resource_spans" in caught.value.details()  # type: ignore[attr-defined]


def test_invalid_utf8_in_a_string_is_invalid_argument(channel: grpc.Channel) -> None:
    payload = bytearray(_request("caf\u00e9").SerializeToString())
    at = payload.index("caf\u00e9".encode())
    payload[at + 3] = 0xFF  # the first byte of é's two
    with pytest.raises(grpc.RpcError) as caught:
        _raw_export(channel, bytes(payload))
    assert caught.value.code() is grpc.StatusCode.INVALID_ARGUMENT  # type: ignore[attr-defined]
    assert "not valid UTF-8" in caught.value.details()  # type: ignore[attr-defined]


def test_nesting_past_the_runtime_limit_is_invalid_argument_saying_so(
    channel: grpc.Channel, caplog: pytest.LogCaptureFixture
) -> None:
    with pytest.raises(grpc.RpcError) as caught:
        _raw_export(channel, nested_attribute_request(10_000))
    assert caught.value.code() is grpc.StatusCode.INVALID_ARGUMENT  # type: ignore[attr-defined]
    assert "nested more than 100 deep" in caught.value.details()  # type: ignore[attr-defined]
    assert not [record for record in caplog.records if record.levelname == "ERROR"]


def test_empty_request_is_a_success(channel: grpc.Channel, ingest: RecordingIngest) -> None:
    assert _raw_export(channel, b"") == b""
    assert len(ingest.requests) == 1


def test_oversized_message_is_refused_counted_and_the_next_one_served(ingest: RecordingIngest, meters: Meters) -> None:
    over, beyond = _request("x" * 2500), _request("z" * 5000)  # the name goes in twice: as name and tool name
    assert 4000 < over.ByteSize() < 8000 < beyond.ByteSize()
    receiver = _start(ingest, meters, max_message_bytes=4000)
    exporter = OTLPSpanExporter(
        endpoint=f"127.0.0.1:{receiver.port}", insecure=True, compression=Compression.Gzip, timeout=0.5
    )  # too short a deadline for a second try: one export, one attempt
    try:
        with grpc.insecure_channel(f"127.0.0.1:{receiver.port}") as channel:
            stub = TraceServiceStub(channel)
            with pytest.raises(grpc.RpcError) as caught:
                stub.Export(over, timeout=5)
            assert caught.value.code() is grpc.StatusCode.RESOURCE_EXHAUSTED  # type: ignore[attr-defined]
            assert "over the 4000-byte limit (receiver.max_message_bytes)" in caught.value.details()  # type: ignore[attr-defined]
            assert meters.refused() == {"too_large": 1}
            # a few hundred bytes gzipped, 6 KB once grpc has decompressed it: the limit is on the latter
            assert exporter.export(sdk_spans("y" * 3000)) is SpanExportResult.FAILURE
            assert meters.refused() == {"too_large": 2}
            with pytest.raises(grpc.RpcError) as unseen:  # over twice the limit: grpc refuses it unseen
                stub.Export(beyond, timeout=5)
            assert unseen.value.code() is grpc.StatusCode.RESOURCE_EXHAUSTED  # type: ignore[attr-defined]
            assert "larger than max" in unseen.value.details()  # type: ignore[attr-defined]
            stub.Export(_request("small"), timeout=5)
    finally:
        exporter.shutdown()
        receiver.stop(0)
    assert ingest.span_names() == ["small"]
    assert meters.refused() == {"too_large": 2}, "toolscore never hears of grpc's own refusal"
    assert meters.refused_spans() == {}, "refused before its spans were counted"


def test_a_request_over_the_span_limit_is_refused_before_it_is_parsed(ingest: RecordingIngest, meters: Meters) -> None:
    receiver = _start(ingest, meters, max_spans_per_request=3)
    try:
        with grpc.insecure_channel(f"127.0.0.1:{receiver.port}") as channel:
            stub = TraceServiceStub(channel)
            with pytest.raises(grpc.RpcError) as caught:
                stub.Export(_request("a", "b", "c", "d"), timeout=5)
            # Four empty spans, then bytes that do not parse: the count answered before the parse.
            scope = b"\x12\x00" * 4 + b"\xff\xff"
            with pytest.raises(grpc.RpcError) as unparsed:
                _raw_export(channel, bytes((0x0A, len(scope) + 2, 0x12, len(scope))) + scope)
            stub.Export(_request("e", "f", "g"), timeout=5)  # at the limit
            empty_blocks = _request("h").SerializeToString() + b"\x0a\x00" * 3  # 4 resource blocks
            with pytest.raises(grpc.RpcError) as blocks:
                _raw_export(channel, empty_blocks)
            stub.Export(_request("i"), timeout=5)
    finally:
        receiver.stop(0)
    for refused in (caught.value, unparsed.value):
        assert refused.code() is grpc.StatusCode.INVALID_ARGUMENT  # type: ignore[attr-defined]
        assert "the request holds more than 3 spans, over the limit of 3 per request" in refused.details()  # type: ignore[attr-defined]
        assert "receiver.max_spans_per_request" in refused.details()  # type: ignore[attr-defined]
    assert "more than 3 resource and scope blocks" in blocks.value.details()  # type: ignore[attr-defined]
    assert ingest.span_names() == ["e", "f", "g", "i"]
    assert meters.refused() == {"too_many_spans": 3}
    assert meters.refused_spans() == {}, "the wire count stops past the limit: their spans were not counted"


class _HeldIngest(RecordingIngest):
    """A `RecordingIngest` whose `accept` holds the worker thread that calls it until `release` is set."""

    def __init__(self) -> None:
        super().__init__()
        self.entered = threading.Event()
        self.release = threading.Event()

    def accept(self, request: ExportTraceServiceRequest, data: bytes | None = None) -> IngestResult:
        self.entered.set()
        assert self.release.wait(10)
        return super().accept(request, data)


def test_calls_beyond_the_concurrent_call_bound_are_refused_unread_at_once_and_counted(meters: Meters) -> None:
    """One worker, two slots: the running call and one waiting for the worker; a third is refused unread,
    while the worker is still held (the refusal waits for no worker), and the sender retries it."""
    ingest = _HeldIngest()
    receiver = _start(ingest, meters, grpc_max_workers=1, grpc_max_concurrent_calls=2)
    exporter = OTLPSpanExporter(endpoint=f"127.0.0.1:{receiver.port}", insecure=True)
    try:
        with grpc.insecure_channel(f"127.0.0.1:{receiver.port}") as channel:
            export = TraceServiceStub(channel).Export
            running = export.future(_request("running"), timeout=10)
            assert ingest.entered.wait(5)
            second, third = (export.future(_request(name), timeout=10) for name in ("second", "third"))
            assert wait_until(lambda: second.done() or third.done())  # one answered while the worker is held
            refused, waiting = (second, third) if second.done() else (third, second)
            assert_refused_for_a_second(refused)
            assert not waiting.done()
            retried: list[SpanExportResult] = []
            sender = threading.Thread(target=lambda: retried.append(exporter.export(sdk_spans("retried"))))
            sender.start()  # refused too while the two calls hold the slots, then retried after a second
            assert wait_until(lambda: meters.refused().get("too_many_calls", 0) >= 2)
            ingest.release.set()
            assert not running.result(timeout=5).HasField("partial_success")
            assert not waiting.result(timeout=5).HasField("partial_success")
            sender.join(10)
            assert retried == [SpanExportResult.SUCCESS]
    finally:
        ingest.release.set()
        exporter.shutdown()
        receiver.stop(0)
    names = ingest.span_names()
    assert names in (["running", "second", "retried"], ["running", "third", "retried"]), "the refused one unread"
    assert meters.refused_spans() == {}, "refused unread: its spans were not counted"


def assert_refused_for_a_second(call: Any) -> None:
    """The call ended RESOURCE_EXHAUSTED with a one-second `RetryInfo` (`too_many_calls`' answer)."""
    error = call.exception(timeout=5)
    assert isinstance(error, grpc.RpcError)
    assert error.code() is grpc.StatusCode.RESOURCE_EXHAUSTED  # type: ignore[attr-defined]
    info = error_details_pb2.RetryInfo()
    assert _status_details(error).details[0].Unpack(info)
    assert info.retry_delay.ToNanoseconds() == 1_000_000_000


class _HeldRefusals:
    """Receiver telemetry that holds the refusal thread inside its first count until `release` is set."""

    def __init__(self, counted: ReceiverTelemetry) -> None:
        self.counted = counted
        self.entered = threading.Event()
        self.release = threading.Event()

    def request_refused(self, reason: str, spans: int | None = None) -> None:
        if threading.current_thread().name.startswith("toolscore-otlp-grpc-refusals"):
            self.entered.set()
            assert self.release.wait(10)
        self.counted.request_refused(reason, spans)

    def spans_refused(self, n: int, reason: str) -> None:
        self.counted.spans_refused(n, reason)


def test_refusals_past_the_refusal_threads_bound_are_answered_at_once_and_counted(meters: Meters) -> None:
    """One call holds the one slot, and the refusal thread is held inside the first refusal: as many refusals
    may wait for it as there are call slots, so a flood of further calls is refused at once, on grpc's own
    thread, with the same retry delay and under the same reason, rather than queueing behind it without bound."""
    ingest, telemetry = _HeldIngest(), _HeldRefusals(meters.telemetry)
    config = ReceiverConfig(grpc_endpoint="127.0.0.1:0", grpc_max_workers=1, grpc_max_concurrent_calls=1)
    receiver = start_grpc_receiver(ingest, config, telemetry=telemetry)
    try:
        with grpc.insecure_channel(f"127.0.0.1:{receiver.port}") as channel:
            export = TraceServiceStub(channel).Export
            running = export.future(_request("running"), timeout=10)
            assert ingest.entered.wait(5)
            waiting = export.future(_request("waiting"), timeout=10)
            assert telemetry.entered.wait(5)  # its refusal holds the refusal thread
            flood = [export.future(_request(f"flood-{i}"), timeout=10) for i in range(50)]
            for call in flood:
                assert_refused_for_a_second(call)
            assert not waiting.done()
            assert meters.refused() == {"too_many_calls": 50}
            telemetry.release.set()
            late = waiting.exception(timeout=5)
            assert isinstance(late, grpc.RpcError)
            assert late.code() is grpc.StatusCode.RESOURCE_EXHAUSTED  # type: ignore[attr-defined]
            ingest.release.set()
            assert not running.result(timeout=5).HasField("partial_success")
    finally:
        telemetry.release.set()
        ingest.release.set()
        receiver.stop(0)
    assert meters.refused() == {"too_many_calls": 51}
    assert ingest.span_names() == ["running"]


def test_a_call_cancelled_while_it_waited_for_a_worker_gives_its_slot_back(meters: Meters) -> None:
    """grpc skips a unary handler whose call ended while it waited: the stream one it calls still returns the slot."""
    ingest = _HeldIngest()
    receiver = _start(ingest, meters, grpc_max_workers=1, grpc_max_concurrent_calls=2)
    try:
        with grpc.insecure_channel(f"127.0.0.1:{receiver.port}") as channel:
            export = TraceServiceStub(channel).Export
            running = export.future(_request("running"), timeout=10)
            assert ingest.entered.wait(5)
            with pytest.raises(grpc.RpcError) as caught:
                export(_request("gave up"), timeout=0.3)  # waits for the worker past its deadline
            assert caught.value.code() is grpc.StatusCode.DEADLINE_EXCEEDED  # type: ignore[attr-defined]
            ingest.release.set()
            running.result(timeout=5)
            ingest.release.clear()
            ingest.entered.clear()
            held = export.future(_request("held"), timeout=10)  # both slots are free again: both taken
            assert ingest.entered.wait(5)
            second = export.future(_request("second"), timeout=10)
            ingest.release.set()
            held.result(timeout=5)
            second.result(timeout=5)
    finally:
        ingest.release.set()
        receiver.stop(0)
    assert ingest.span_names() == ["running", "held", "second"]
    assert meters.refused() == {}


def test_a_call_without_a_request_message_is_unimplemented_and_counted(
    channel: grpc.Channel, ingest: RecordingIngest, meters: Meters
) -> None:
    with pytest.raises(grpc.RpcError) as caught:
        channel.stream_unary(EXPORT)(iter(()), timeout=5)
    assert caught.value.code() is grpc.StatusCode.UNIMPLEMENTED  # type: ignore[attr-defined]
    assert "requires exactly one request message" in caught.value.details()  # type: ignore[attr-defined]
    assert ingest.requests == []
    assert meters.refused() == {"unsupported": 1}


def test_good_requests_between_bad_ones_reach_the_ingest(channel: grpc.Channel, ingest: RecordingIngest) -> None:
    stub = TraceServiceStub(channel)
    for i, bad in enumerate((b"\xff" * 64, b"\x0a\x05abc", b"\x78\x01", bytes(range(256)))):
        with pytest.raises(grpc.RpcError):
            _raw_export(channel, bad)
        stub.Export(_request(f"good-{i}"), timeout=5)
    assert ingest.span_names() == ["good-0", "good-1", "good-2", "good-3"]


def test_an_ingest_that_raises_is_an_internal_error(meters: Meters) -> None:
    broken = RecordingIngest()

    def explode(request: ExportTraceServiceRequest, data: bytes | None = None) -> IngestResult:
        raise RuntimeError("boom")

    broken.accept = explode  # type: ignore[method-assign]
    receiver = _start(broken, meters)
    try:
        with grpc.insecure_channel(f"127.0.0.1:{receiver.port}") as other:
            with pytest.raises(grpc.RpcError) as caught:
                TraceServiceStub(other).Export(_request("a"), timeout=5)
            assert caught.value.code() is grpc.StatusCode.INTERNAL  # type: ignore[attr-defined]
    finally:
        receiver.stop(0)
    assert (meters.refused(), meters.refused_spans()) == ({"internal": 1}, {"internal": 1})


# -- auth and TLS --------------------------------------------------------------------------------------


def test_bearer_token_is_required_when_configured(ingest: RecordingIngest, meters: Meters) -> None:
    receiver = _start(ingest, meters, bearer_token=TOKEN)
    try:
        with grpc.insecure_channel(f"127.0.0.1:{receiver.port}") as channel:
            stub = TraceServiceStub(channel)
            for value in ("Bearer wrong", TOKEN, f"Basic {TOKEN}", f"Bearer{TOKEN}", f"Bearer {TOKEN}x"):
                with pytest.raises(grpc.RpcError) as caught:
                    stub.Export(_request("refused"), metadata=(("authorization", value),), timeout=5)
                assert caught.value.code() is grpc.StatusCode.UNAUTHENTICATED  # type: ignore[attr-defined]
            with pytest.raises(grpc.RpcError) as caught:
                stub.Export(_request("refused"), timeout=5)
            assert caught.value.code() is grpc.StatusCode.UNAUTHENTICATED  # type: ignore[attr-defined]
            for scheme in ("bearer", "BEARER"):  # the scheme is case-insensitive (RFC 9110 §11.1)
                stub.Export(_request(scheme), metadata=(("authorization", f"{scheme} {TOKEN}"),), timeout=5)
        exporter = OTLPSpanExporter(
            endpoint=f"127.0.0.1:{receiver.port}", insecure=True, headers={"authorization": f"Bearer {TOKEN}"}
        )
        try:
            assert exporter.export(sdk_spans("allowed")) is SpanExportResult.SUCCESS
        finally:
            exporter.shutdown()
    finally:
        receiver.stop(0)
    assert ingest.span_names() == ["bearer", "BEARER", "allowed"]
    assert meters.refused() == {"unauthenticated": 6}


def test_refusals_are_logged_once_per_reason_naming_the_peer_and_counted_every_time(
    ingest: RecordingIngest, meters: Meters, caplog: pytest.LogCaptureFixture
) -> None:
    receiver = _start(ingest, meters, bearer_token=TOKEN)
    auth = (("authorization", f"Bearer {TOKEN}"),)
    try:
        with (
            caplog.at_level(logging.INFO, logger="toolscore.collector.serve.receivers._grpc_receiver"),
            grpc.insecure_channel(f"127.0.0.1:{receiver.port}") as channel,
        ):
            garbage = channel.unary_unary(EXPORT, request_serializer=None, response_deserializer=None)
            for _ in range(5):
                for call in (
                    lambda: TraceServiceStub(channel).Export(_request("refused"), timeout=5),
                    lambda: garbage(b"\xff" * 64, metadata=auth, timeout=5),
                    lambda: channel.stream_unary(EXPORT)(iter(()), metadata=auth, timeout=5),
                ):
                    with pytest.raises(grpc.RpcError):
                        call()
    finally:
        receiver.stop(0)
    lines = [re.sub(r":\d+: ", ":<port>: ", r.getMessage()) for r in caplog.records if "refused" in r.getMessage()]
    assert lines == [
        "OTLP/gRPC export refused from ipv4:127.0.0.1:<port>: missing or wrong bearer token: send "
        "`authorization: Bearer <token>` metadata",
        "OTLP/gRPC export refused from ipv4:127.0.0.1:<port>: byte 0: not a valid OTLP ExportTraceServiceRequest "
        "(64 bytes): message: field tag: varint longer than 10 bytes",
        "OTLP/gRPC export refused from ipv4:127.0.0.1:<port>: "
        '"/opentelemetry.proto.collector.trace.v1.TraceService/Export" requires exactly one request message.',
    ]
    assert meters.refused() == {"unauthenticated": 5, "invalid": 5, "unsupported": 5}


_LOGGER = "toolscore.collector.serve.receivers._grpc_receiver"


def _logged(caplog: pytest.LogCaptureFixture) -> list[tuple[int, str]]:
    return [(r.levelno, re.sub(r":\d+: ", ":<port>: ", r.getMessage())) for r in caplog.records if r.name == _LOGGER]


def test_overload_is_logged_at_warning_once_per_reason_with_the_queues_state(
    receiver: GrpcReceiver, channel: grpc.Channel, ingest: RecordingIngest, caplog: pytest.LogCaptureFixture
) -> None:
    """Read or refused unread, an overloaded call is logged at WARNING with the peer, the delay, the reason and
    the ingest's queues, at most once per reason in each interval; `shutdown`, expected while stopping, at INFO."""
    with caplog.at_level(logging.INFO, logger=_LOGGER):
        for when in ("read", "unread", "unread"):
            ingest.overload_next(when, 2.5, reason="queue_full")
            with pytest.raises(grpc.RpcError):
                TraceServiceStub(channel).Export(_request("a"), timeout=5)
        ingest.overload_next("read", 1.0, reason="shutdown")
        with pytest.raises(grpc.RpcError):
            TraceServiceStub(channel).Export(_request("b"), timeout=5)
    assert _logged(caplog) == [
        (
            logging.WARNING,
            "OTLP/gRPC export refused from ipv4:127.0.0.1:<port>: RESOURCE_EXHAUSTED, retry in 2.5s "
            "(overloaded: queue_full; 1 requests taken)",
        ),
        (
            logging.INFO,
            "OTLP/gRPC export refused from ipv4:127.0.0.1:<port>: RESOURCE_EXHAUSTED, retry in 1s "
            "(overloaded: shutdown; 2 requests taken)",
        ),
    ]
    assert ingest.loads == 2, "the queues' state is asked for the lines written, not for the refusals held back"


def test_calls_beyond_the_call_bound_are_logged_at_warning(meters: Meters, caplog: pytest.LogCaptureFixture) -> None:
    ingest = _HeldIngest()
    receiver = _start(ingest, meters, grpc_max_workers=1, grpc_max_concurrent_calls=1)
    try:
        with (
            caplog.at_level(logging.WARNING, logger=_LOGGER),
            grpc.insecure_channel(f"127.0.0.1:{receiver.port}") as channel,
        ):
            export = TraceServiceStub(channel).Export
            running = export.future(_request("running"), timeout=10)
            assert ingest.entered.wait(5)
            for name in ("refused", "again"):
                assert_refused_for_a_second(export.future(_request(name), timeout=10))
            ingest.release.set()
            assert not running.result(timeout=5).HasField("partial_success")
    finally:
        ingest.release.set()
        receiver.stop(0)
    assert _logged(caplog) == [
        (
            logging.WARNING,
            "OTLP/gRPC export refused from ipv4:127.0.0.1:<port>: RESOURCE_EXHAUSTED, retry in 1s "
            "(overloaded: too_many_calls; calls taken: 1 of 1 (receiver.grpc_max_concurrent_calls))",
        )
    ]
    assert meters.refused() == {"too_many_calls": 2}


@dataclass(frozen=True)
class _Call:
    """What grpc tells an interceptor of a call: its method and metadata."""

    method: str = EXPORT
    invocation_metadata: tuple[tuple[str, str], ...] = ()


class _Aborted(Exception):
    pass


class _CountedContext:
    """The servicer context of one call from 127.0.0.1, reduced to what a refusal uses, counting `peer()`."""

    def __init__(self) -> None:
        self.peers = 0

    def peer(self) -> str:
        self.peers += 1
        return "ipv4:127.0.0.1:5000"

    def abort(self, code: grpc.StatusCode, details: str) -> None:
        raise _Aborted(code, details)


def test_a_refusal_held_back_from_the_log_does_not_ask_for_the_peer(
    ingest: RecordingIngest, caplog: pytest.LogCaptureFixture
) -> None:
    """A flood of bad calls costs a limiter check each, not a line each: only a refusal whose line goes out asks
    grpc for the peer, in the servicer (`too_large`) as in the authentication interceptor (`unauthenticated`).
    Both are driven as grpc drives them, each call handed its own context."""
    log = LimitedLog(logging.getLogger(_LOGGER), every_s=60.0)  # the flood falls within one interval
    pool = refusal_pool(1)
    slots = CallSlots(1, NoopTelemetry(), pool, log)
    servicer = TraceServiceReceiver(
        ingest, 100, decode_slots(1), NoopTelemetry(), slots=slots, max_bytes=8, refusal_log=log
    )
    auth = BearerAuth(TOKEN, NoopTelemetry(), pool, log)
    contexts = [_CountedContext() for _ in range(20)]
    try:
        with caplog.at_level(logging.INFO, logger=_LOGGER):
            for context in contexts[:10]:
                assert slots.intercept_service(lambda call: "admitted", _Call()) == "admitted"
                with pytest.raises(_Aborted):
                    servicer.Export(iter([b"\0" * 9]), context)
            for context in contexts[10:]:
                denied = auth.intercept_service(lambda call: "admitted", _Call())
                with pytest.raises(_Aborted):
                    denied.stream_unary(iter(()), context)
    finally:
        pool.shutdown(wait=False)
    assert [context.peers for context in contexts] == [1] + [0] * 9 + [1] + [0] * 9
    assert _logged(caplog) == [
        (
            logging.INFO,
            "OTLP/gRPC export refused from ipv4:127.0.0.1:<port>: the request is 9 bytes, over the 8-byte limit "
            "(receiver.max_message_bytes): send smaller batches",
        ),
        (
            logging.INFO,
            "OTLP/gRPC export refused from ipv4:127.0.0.1:<port>: missing or wrong bearer token: send "
            "`authorization: Bearer <token>` metadata",
        ),
    ]


def test_authentication_comes_before_the_overload_answer(ingest: RecordingIngest) -> None:
    receiver = _start(ingest, bearer_token=TOKEN)
    ingest.refusals.append(IngestResult(overloaded=True))
    try:
        with grpc.insecure_channel(f"127.0.0.1:{receiver.port}") as channel:
            stub = TraceServiceStub(channel)
            with pytest.raises(grpc.RpcError) as caught:
                stub.Export(_request("stranger"), timeout=5)
            assert caught.value.code() is grpc.StatusCode.UNAUTHENTICATED  # type: ignore[attr-defined]
            assert ingest.refusals  # a stranger's call did not even ask
            with pytest.raises(grpc.RpcError) as caught:
                stub.Export(_request("known"), metadata=(("authorization", f"Bearer {TOKEN}"),), timeout=5)
            assert caught.value.code() is grpc.StatusCode.RESOURCE_EXHAUSTED  # type: ignore[attr-defined]
    finally:
        receiver.stop(0)
    assert ingest.requests == []


def test_tls_receiver_serves_a_client_trusting_its_certificate(ingest: RecordingIngest, tmp_path: Path) -> None:
    cert, key = self_signed_certificate(tmp_path)
    receiver = _start(ingest, tls_cert_file=str(cert), tls_key_file=str(key))
    assert receiver.tls
    try:
        credentials = grpc.ssl_channel_credentials(root_certificates=cert.read_bytes())
        exporter = OTLPSpanExporter(endpoint=f"localhost:{receiver.port}", insecure=False, credentials=credentials)
        try:
            assert exporter.export(sdk_spans("private")) is SpanExportResult.SUCCESS
        finally:
            exporter.shutdown()
        with grpc.insecure_channel(f"127.0.0.1:{receiver.port}") as plain, pytest.raises(grpc.RpcError):
            TraceServiceStub(plain).Export(_request("plain"), timeout=2)
    finally:
        receiver.stop(0)
    assert ingest.span_names() == ["private"]


def test_a_taken_port_fails_to_start(receiver: GrpcReceiver, ingest: RecordingIngest) -> None:
    with pytest.raises(OSError, match=r"Address already in use"):
        start_grpc_receiver(ingest, ReceiverConfig(grpc_endpoint=f"127.0.0.1:{receiver.port}"))


def test_stop_is_idempotent_and_closes_the_port(ingest: RecordingIngest) -> None:
    receiver = _start(ingest)
    receiver.stop(0.5)
    receiver.stop(0.5)
    with grpc.insecure_channel(f"127.0.0.1:{receiver.port}") as channel, pytest.raises(grpc.RpcError) as caught:
        TraceServiceStub(channel).Export(_request("late"), timeout=1)
    assert caught.value.code() in (grpc.StatusCode.UNAVAILABLE, grpc.StatusCode.DEADLINE_EXCEEDED)  # type: ignore[attr-defined]


def test_a_stopped_receiver_leaves_no_thread_behind(ingest: RecordingIngest) -> None:
    """`toolscore serve` restarted in-process, or a test, must not collect idle call threads: grpc's `stop` ends
    the server but not the pool it was given."""

    def ours() -> list[threading.Thread]:
        return [t for t in threading.enumerate() if t.name.startswith("toolscore-otlp-grpc")]

    before = set(ours())
    receiver = _start(ingest)
    try:
        with grpc.insecure_channel(f"127.0.0.1:{receiver.port}") as channel:
            TraceServiceStub(channel).Export(_request("one"), timeout=5)
        assert set(ours()) - before, "a call ran on one of the receiver's threads"
    finally:
        receiver.stop(0)
    assert wait_until(lambda: not set(ours()) - before), [t.name for t in set(ours()) - before]
