"""A metrics or logs export sent to the trace receivers (an exporter pointed at the wrong path or service).

Its bytes parse as a trace export of spans without ids, which would be skipped one by one and the
export answered as a success: the sender would never learn that its data went nowhere. The receivers
refuse it as what it is, over gRPC and HTTP, and serve the next trace export as usual.
"""

from __future__ import annotations

from collections.abc import Callable

import grpc
import pytest
from google.rpc import code_pb2
from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
from opentelemetry.proto.collector.trace.v1.trace_service_pb2_grpc import TraceServiceStub

from tests.metric_reader import Meters
from tests.serve_receiver_support import RecordingIngest, http_call, reply_status, sdk_spans
from tests.signal_exports import logs_export, metrics_export
from toolscore.collector.serve._health import HealthState
from toolscore.collector.serve.receivers import ReceiverConfig
from toolscore.collector.serve.receivers._grpc_receiver import start_grpc_receiver
from toolscore.collector.serve.receivers._http_receiver import start_http_receiver

EXPORT = "/opentelemetry.proto.collector.trace.v1.TraceService/Export"

OTHER_SIGNALS = pytest.mark.parametrize(
    ("export", "what"),
    [
        (metrics_export, "an OTLP metrics export (ExportMetricsServiceRequest)"),
        (logs_export, "an OTLP logs export (ExportLogsServiceRequest)"),
    ],
    ids=["metrics", "logs"],
)


def _refusal(data: bytes, what: str) -> str:
    return f"not an OTLP trace export: {what} of {len(data)} bytes, without resource_spans"


@OTHER_SIGNALS
def test_grpc_refuses_another_signals_export_naming_it_and_serves_the_next_trace_export(
    meters: Meters, export: Callable[[], bytes], what: str
) -> None:
    ingest, data = RecordingIngest(), export()
    receiver = start_grpc_receiver(ingest, ReceiverConfig(grpc_endpoint="127.0.0.1:0"), telemetry=meters.telemetry)
    try:
        with grpc.insecure_channel(f"127.0.0.1:{receiver.port}") as channel:
            call = channel.unary_unary(EXPORT, request_serializer=None, response_deserializer=None)
            with pytest.raises(grpc.RpcError) as caught:
                call(data, timeout=5)
            assert caught.value.code() is grpc.StatusCode.INVALID_ARGUMENT  # type: ignore[attr-defined]
            assert caught.value.details() == _refusal(data, what)  # type: ignore[attr-defined]
            TraceServiceStub(channel).Export(encode_spans(sdk_spans("after")), timeout=5)
    finally:
        receiver.stop(0)
    assert ingest.span_names() == ["after"]
    assert meters.refused() == {"invalid": 1}


@OTHER_SIGNALS
def test_http_refuses_another_signals_export_naming_it_and_serves_the_next_trace_export(
    meters: Meters, export: Callable[[], bytes], what: str
) -> None:
    ingest, data = RecordingIngest(), export()
    settings = ReceiverConfig(http_endpoint="127.0.0.1:0")
    receiver = start_http_receiver(ingest, settings, HealthState(), telemetry=meters.telemetry)
    try:
        refused = http_call(receiver.port, data)
        accepted = http_call(receiver.port, encode_spans(sdk_spans("after")).SerializeToString())
    finally:
        receiver.stop(0)
    assert refused.status == 400
    status = reply_status(refused)
    assert (status.code, status.message) == (code_pb2.INVALID_ARGUMENT, _refusal(data, what))
    assert accepted.status == 200
    assert ingest.span_names() == ["after"]
    assert meters.refused() == {"invalid": 1}


def test_a_trace_export_whose_spans_all_lack_ids_is_still_taken() -> None:
    """Told apart from another signal's export: handed to the ingest, which skips and counts its spans."""
    ingest = RecordingIngest()
    request = encode_spans(sdk_spans("no ids"))
    span = request.resource_spans[0].scope_spans[0].spans[0]
    span.trace_id, span.span_id = b"", b""
    receiver = start_http_receiver(ingest, ReceiverConfig(http_endpoint="127.0.0.1:0"), HealthState())
    try:
        reply = http_call(receiver.port, request.SerializeToString())
    finally:
        receiver.stop(0)
    assert reply.status == 200
    assert ingest.span_names() == ["no ids"]
