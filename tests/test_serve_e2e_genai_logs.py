"""`toolscore serve` end to end with the GenAI conventions' default form: an openai-v2 run's spans and its log
records, sent by the real OTel SDK exporters (gRPC, HTTP protobuf) or as OTLP/JSON, to a `toolscore serve`
subprocess. The `gen_ai.choice` log record joins the chat span, so the run is scored in the model's order;
every span reaches the downstream as the sender sent it, the scored run span with its scores added."""

from __future__ import annotations

import json
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml
from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
from opentelemetry.exporter.otlp.proto.grpc._log_exporter import OTLPLogExporter as GrpcLogExporter
from opentelemetry.exporter.otlp.proto.grpc.trace_exporter import OTLPSpanExporter as GrpcSpanExporter
from opentelemetry.exporter.otlp.proto.http._log_exporter import OTLPLogExporter as HttpLogExporter
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter as HttpSpanExporter
from opentelemetry.proto.collector.logs.v1.logs_service_pb2 import ExportLogsServiceRequest
from opentelemetry.sdk._logs.export import LogRecordExportResult
from opentelemetry.sdk.trace.export import SpanExportResult

from tests.genai_log_exports import Captured, capture, otlp_json
from tests.openai_v2_events import MODEL_ORDER
from tests.serve_demo_checks import attrs, key, sdk_key
from tests.serve_harness import Downstream, ServeProcess, serve_config

pytestmark = pytest.mark.integration


@pytest.fixture(scope="module")
def collector(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[ServeProcess, Downstream]]:
    tmp = tmp_path_factory.mktemp("serve-genai-logs")
    expectation = {
        "name": "weather-in-order",
        "match": {"agent": "weather"},
        "scorers": [{"type": "trajectory", "mode": "strict", "expected": [{"name": name} for name in MODEL_ORDER]}],
    }
    (tmp / "weather.yaml").write_text(yaml.safe_dump(expectation))
    downstream = Downstream()
    process = ServeProcess(serve_config(tmp, [tmp / "weather.yaml"], downstream, pipeline={"settle_ms": 300}), tmp)
    try:
        process.wait_ready()
        yield process, downstream
    finally:
        status = process.terminate()
        downstream.stop()
    assert status == 0, process.log()


def _send_logs(process: ServeProcess, run: Captured, way: str) -> None:
    if way == "json":
        body = otlp_json(ExportLogsServiceRequest.FromString(run.logs_pb())).encode()
        request = urllib.request.Request(process.http_url + "/v1/logs", body, {"Content-Type": "application/json"})
        with urllib.request.urlopen(request, timeout=10) as response:
            assert (response.status, json.loads(response.read())) == (200, {})
        return
    if way == "grpc":
        exporter: GrpcLogExporter | HttpLogExporter = GrpcLogExporter(endpoint=process.grpc_endpoint, insecure=True)
    else:
        exporter = HttpLogExporter(endpoint=process.http_url + "/v1/logs")
    assert exporter.export(run.logs) is LogRecordExportResult.SUCCESS
    exporter.shutdown()


def _send_spans(process: ServeProcess, run: Captured, way: str) -> None:
    if way == "grpc":
        exporter: GrpcSpanExporter | HttpSpanExporter = GrpcSpanExporter(endpoint=process.grpc_endpoint, insecure=True)
    else:
        exporter = HttpSpanExporter(endpoint=process.http_url + "/v1/traces")
    assert exporter.export(run.spans) is SpanExportResult.SUCCESS
    exporter.shutdown()


def _label(span_attributes: dict[str, object]) -> object:
    labels = [value for name, value in span_attributes.items() if name.endswith(".label")]
    assert len(labels) == 1, span_attributes
    return labels[0]


@pytest.mark.parametrize("way", ["grpc", "http", "json"])
def test_the_choice_log_record_joins_its_chat_span_and_the_run_scores_in_the_models_order(
    collector: tuple[ServeProcess, Downstream], way: str
) -> None:
    process, downstream = collector
    run = capture()
    _send_logs(process, run, way)  # the log records mostly come first: emitted while the chat span is open
    _send_spans(process, run, "http" if way == "json" else way)
    forwarded = {key(span): span for span in downstream.wait_for({sdk_key(span) for span in run.spans})}
    assert len(forwarded) == len(run.spans)
    sent = {key(span): span for r in encode_spans(run.spans).resource_spans for s in r.scope_spans for span in s.spans}
    run_span = next(span for span in run.spans if span.name.startswith("invoke_agent"))
    assert _label(attrs(forwarded[sdk_key(run_span)])) == {"stringValue": "pass"}
    for span_key, span in sent.items():
        if span_key != sdk_key(run_span):  # the others go on byte for byte as sent, the join changed nothing
            assert forwarded[span_key].SerializeToString() == span.SerializeToString()


def test_without_its_log_records_the_same_run_fails_its_order(collector: tuple[ServeProcess, Downstream]) -> None:
    process, downstream = collector
    run = capture()
    _send_spans(process, run, "grpc")
    run_span = next(span for span in run.spans if span.name.startswith("invoke_agent"))
    (forwarded,) = downstream.wait_for({sdk_key(run_span)})
    assert _label(attrs(forwarded)) == {"stringValue": "fail"}


def test_serve_counts_the_log_records_it_read_and_refused(collector: tuple[ServeProcess, Downstream]) -> None:
    process, _ = collector
    with urllib.request.urlopen(f"http://127.0.0.1:{process.metrics_port}/metrics", timeout=10) as response:
        text = response.read().decode()
    received = [line for line in text.splitlines() if line.startswith("toolscore_log_records")]
    assert any('toolscore_log_record_outcome="received"' in line for line in received), received


CAPTURES = Path(__file__).parent / "testdata" / "traces" / "openai-v2-events"


@pytest.mark.parametrize("logs", sorted(CAPTURES.glob("*.logs.pb")), ids=lambda path: path.name)
def test_serve_reads_every_record_of_the_captured_log_exports(
    collector: tuple[ServeProcess, Downstream], logs: Path
) -> None:
    process, _ = collector
    request = urllib.request.Request(
        process.http_url + "/v1/logs", logs.read_bytes(), {"Content-Type": "application/x-protobuf"}
    )
    with urllib.request.urlopen(request, timeout=10) as response:
        assert (response.status, response.read()) == (200, b"")  # no partial success: every record read
