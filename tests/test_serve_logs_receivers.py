"""`toolscore serve`'s receivers take OTLP logs (gRPC `LogsService/Export`, HTTP `POST /v1/logs`, protobuf and JSON,
gzip): the GenAI events go to the pipeline, the other records are answered in OTLP's partial success and counted;
authentication and size limits hold as for traces. Receivers on 127.0.0.1 in front of a real `CollectorPipeline`."""

from __future__ import annotations

import gzip
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass

import grpc
import pytest
from google.protobuf import json_format
from google.rpc import code_pb2
from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
from opentelemetry.proto.collector.logs.v1.logs_service_pb2 import (
    ExportLogsServiceRequest,
    ExportLogsServiceResponse,
)
from opentelemetry.proto.collector.logs.v1.logs_service_pb2_grpc import LogsServiceStub
from opentelemetry.proto.common.v1.common_pb2 import AnyValue, KeyValue

from tests.genai_log_exports import Captured, capture, otlp_json
from tests.pipeline_builders import TRAVEL, Recording, registry_with, wait_until
from tests.serve_receiver_support import TOKEN, http_call, reply_status, sdk_spans
from toolscore.collector.pipeline import PipelineConfig
from toolscore.collector.serve._health import HealthState
from toolscore.collector.serve._pipeline import CollectorPipeline
from toolscore.collector.serve.receivers import ReceiverConfig
from toolscore.collector.serve.receivers._grpc_receiver import GrpcReceiver, start_grpc_receiver
from toolscore.collector.serve.receivers._http_receiver import HttpReceiver, start_http_receiver

PROTOBUF, JSON = "application/x-protobuf", "application/json"


@dataclass
class _Serve:
    pipeline: CollectorPipeline
    telemetry: Recording
    grpc: GrpcReceiver
    http: HttpReceiver

    def received(self) -> int:
        return self.telemetry.counts["log_records:received"]


@contextmanager
def _serve(**receiver: object) -> Iterator[_Serve]:
    telemetry = Recording()
    config = ReceiverConfig(grpc_endpoint="127.0.0.1:0", http_endpoint="127.0.0.1:0", **receiver)  # type: ignore[arg-type]
    with registry_with(TRAVEL) as registry:
        pipeline = CollectorPipeline(registry, None, PipelineConfig(settle_ms=20), telemetry)
        grpc_receiver = start_grpc_receiver(pipeline, config, telemetry=telemetry)
        http_receiver = start_http_receiver(pipeline, config, HealthState(), telemetry=telemetry)
        try:
            yield _Serve(pipeline, telemetry, grpc_receiver, http_receiver)
        finally:
            grpc_receiver.stop(0)
            http_receiver.stop(0)
            pipeline.shutdown(5)


@pytest.fixture(scope="module")
def captured() -> Captured:
    return capture()


def _mixed(captured: Captured) -> ExportLogsServiceRequest:
    """The run's two GenAI records, a plain log line and toolscore's own evaluation event coming back."""
    request = ExportLogsServiceRequest.FromString(captured.logs_pb())
    records = request.resource_logs[0].scope_logs[0].log_records
    chat = records[0]
    plain = records.add(time_unix_nano=chat.observed_time_unix_nano, body=AnyValue(string_value="retrying"))
    plain.trace_id, plain.span_id = chat.trace_id, chat.span_id
    evaluation = records.add(
        observed_time_unix_nano=chat.observed_time_unix_nano, event_name="gen_ai.evaluation.result"
    )
    evaluation.attributes.append(KeyValue(key="gen_ai.evaluation.name", value=AnyValue(string_value="trajectory")))
    return request


def _http_logs(port: int, body: bytes, content_type: str, **headers: str) -> ExportLogsServiceResponse:
    reply = http_call(port, body, content_type=content_type, headers=headers, path="/v1/logs")
    assert reply.status == 200, reply.body
    assert reply.headers["content-type"] == content_type
    response = ExportLogsServiceResponse()
    return json_format.Parse(reply.body, response) if content_type == JSON else response.FromString(reply.body)


@pytest.mark.parametrize(
    ("content_type", "gzipped"),
    [(PROTOBUF, False), (JSON, False), (PROTOBUF, True), (JSON, True)],
    ids=["protobuf", "json", "protobuf-gzip", "json-gzip"],
)
def test_http_takes_the_genai_events_of_a_logs_export(captured: Captured, content_type: str, gzipped: bool) -> None:
    body = (
        captured.logs_pb()
        if content_type == PROTOBUF
        else otlp_json(ExportLogsServiceRequest.FromString(captured.logs_pb())).encode()
    )
    headers = {"Content-Encoding": "gzip"} if gzipped else {}
    with _serve() as serve:
        response = _http_logs(serve.http.port, gzip.compress(body) if gzipped else body, content_type, **headers)
        assert not response.HasField("partial_success")
        assert wait_until(lambda: serve.received() == 2)


def test_grpc_takes_the_genai_events_of_a_logs_export(captured: Captured) -> None:
    with _serve() as serve, grpc.insecure_channel(f"127.0.0.1:{serve.grpc.port}") as channel:
        request = ExportLogsServiceRequest.FromString(captured.logs_pb())
        response = LogsServiceStub(channel).Export(request, timeout=5)
        assert not response.HasField("partial_success")
        assert wait_until(lambda: serve.received() == 2)


def test_a_mixed_batch_is_a_partial_success_saying_why_over_grpc_and_http(captured: Captured) -> None:
    mixed = _mixed(captured)
    with _serve() as serve, grpc.insecure_channel(f"127.0.0.1:{serve.grpc.port}") as channel:
        answers = [
            LogsServiceStub(channel).Export(mixed, timeout=5).partial_success,
            _http_logs(serve.http.port, mixed.SerializeToString(), PROTOBUF).partial_success,
            _http_logs(serve.http.port, otlp_json(mixed).encode(), JSON).partial_success,
        ]
        assert wait_until(lambda: serve.received() == 6)
        counts = dict(serve.telemetry.counts)
    for answer in answers:
        assert answer.rejected_log_records == 2
        assert answer.error_message.startswith("2 log record(s) not read: 1 toolscore's own gen_ai.evaluation.result")
        assert "1 not a GenAI event toolscore reads" in answer.error_message
    assert counts["log_records:refused:not_genai_event"] == 3
    assert counts["log_records:refused:evaluation_result"] == 3


def test_logs_need_the_bearer_token_as_traces_do(captured: Captured) -> None:
    body = captured.logs_pb()
    with _serve(bearer_token=TOKEN) as serve, grpc.insecure_channel(f"127.0.0.1:{serve.grpc.port}") as channel:
        refused = http_call(serve.http.port, body, path="/v1/logs")
        with pytest.raises(grpc.RpcError) as caught:
            LogsServiceStub(channel).Export(ExportLogsServiceRequest.FromString(body), timeout=5)
        assert serve.received() == 0
        _http_logs(serve.http.port, body, PROTOBUF, Authorization=f"Bearer {TOKEN}")
        metadata = (("authorization", f"Bearer {TOKEN}"),)
        LogsServiceStub(channel).Export(ExportLogsServiceRequest.FromString(body), timeout=5, metadata=metadata)
        assert wait_until(lambda: serve.received() == 4)
    assert refused.status == 401
    assert caught.value.code() is grpc.StatusCode.UNAUTHENTICATED  # type: ignore[attr-defined]
    assert serve.telemetry.counts["refused:unauthenticated"] == 2


def test_logs_are_held_to_the_request_limits(captured: Captured) -> None:
    request = _mixed(captured)  # 4 records in 2 blocks
    body = request.SerializeToString()
    with _serve(max_spans_per_request=3) as serve, grpc.insecure_channel(f"127.0.0.1:{serve.grpc.port}") as channel:
        too_many = http_call(serve.http.port, body, path="/v1/logs")
        with pytest.raises(grpc.RpcError) as caught:
            LogsServiceStub(channel).Export(request, timeout=5)
    assert too_many.status == 400
    assert reply_status(too_many).message.startswith("the request holds more than 3 log records, over the limit")
    assert caught.value.code() is grpc.StatusCode.INVALID_ARGUMENT  # type: ignore[attr-defined]
    with (
        _serve(max_message_bytes=len(body) - 1) as serve,
        grpc.insecure_channel(f"127.0.0.1:{serve.grpc.port}") as channel,
    ):
        too_large = http_call(serve.http.port, body, path="/v1/logs")
        with pytest.raises(grpc.RpcError) as caught:
            LogsServiceStub(channel).Export(request, timeout=5)
    assert too_large.status == 413
    assert caught.value.code() is grpc.StatusCode.RESOURCE_EXHAUSTED  # type: ignore[attr-defined]
    assert serve.telemetry.counts["refused:too_large"] == 2
    assert serve.received() == 0


def test_a_trace_export_sent_to_the_logs_endpoint_is_refused_naming_it() -> None:
    traces = encode_spans(sdk_spans("search")).SerializeToString()
    with _serve() as serve:
        reply = http_call(serve.http.port, traces, path="/v1/logs")
        wrong_method = http_call(serve.http.port, method="GET", path="/v1/logs")
    assert reply.status == 400
    status = reply_status(reply)
    assert status.code == code_pb2.INVALID_ARGUMENT
    assert "an OTLP trace export (ExportTraceServiceRequest) sent to the logs endpoint" in status.message
    assert wrong_method.status == 405


@pytest.mark.parametrize(
    ("body", "message"),
    [
        (b'{"resourceLogs": [{"x": "\xff"}]}', "byte 25: invalid UTF-8 (invalid start byte): OTLP/JSON must be UTF-8"),
        (b'{"resourceLogs": []}\n{"b": ]}', "byte 21: invalid JSON: Extra data at line 2 column 1"),
    ],
)
def test_a_logs_body_that_is_not_json_is_400_naming_its_place_once(body: bytes, message: str) -> None:
    with _serve() as serve:
        reply = http_call(serve.http.port, body, content_type="application/json", path="/v1/logs")
    assert reply.status == 400
    assert reply_status(reply).message == message
