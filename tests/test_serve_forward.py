"""The forwarder against real downstream receivers: delivery, retries, outages, bounded queue, counted drops."""

from __future__ import annotations

import logging
import threading
import time
from collections import Counter
from collections.abc import Iterator

import grpc
import pytest
from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import InMemoryMetricReader
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from tests.otlp_downstream import GrpcDownstream, HttpDownstream, spans_of
from tests.pipeline_builders import wait_until
from toolscore.collector.serve.forward import ForwardConfig
from toolscore.collector.serve.forward._config import parse_headers
from toolscore.collector.serve.forward._forwarder import Forwarder
from toolscore.collector.telemetry import create_telemetry

FAST = {"backoff_initial_s": 0.02, "backoff_max_s": 0.1, "max_retry_s": 10.0, "timeout_s": 2.0}


class Counts:
    """A `ForwardTelemetry` keeping its counts."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.counts: Counter[str] = Counter()

    def spans_forwarded(self, n: int) -> None:
        with self.lock:
            self.counts["sent"] += n

    def spans_forward_dropped(self, n: int, reason: str) -> None:
        with self.lock:
            self.counts[f"dropped:{reason}"] += n

    def forward_retried(self) -> None:
        with self.lock:
            self.counts["retries"] += 1


def sdk_request(n: int, service: str = "shop") -> ExportTraceServiceRequest:
    """`n` spans from the real SDK, encoded by the SDK's own OTLP encoder."""
    exporter = InMemorySpanExporter()
    provider = TracerProvider(resource=Resource.create({"service.name": service}))
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    tracer = provider.get_tracer("forward-tests")
    for i in range(n):
        tracer.start_span(f"span {i}").end()
    provider.shutdown()
    return encode_spans(exporter.get_finished_spans())


@pytest.fixture
def downstream() -> Iterator[GrpcDownstream]:
    server = GrpcDownstream()
    yield server
    server.stop()


def test_grpc_request_arrives_once_with_configured_headers(downstream: GrpcDownstream) -> None:
    counts = Counts()
    config = ForwardConfig(endpoint=downstream.endpoint, headers={"x-api-key": "k1"}, **FAST)
    forwarder = Forwarder(config, counts)
    request = sdk_request(3)
    assert forwarder.submit(request.SerializeToString(), 3)
    assert forwarder.flush(5)
    assert downstream.requests == [request]
    assert downstream.metadata[0]["x-api-key"] == "k1"
    assert counts.counts == {"sent": 3}
    assert forwarder.shutdown(1)


def test_unavailable_downstream_is_retried_until_it_answers(downstream: GrpcDownstream) -> None:
    counts = Counts()
    downstream.fail_next(3, grpc.StatusCode.UNAVAILABLE)
    forwarder = Forwarder(ForwardConfig(endpoint=downstream.endpoint, **FAST), counts)
    forwarder.submit(sdk_request(2).SerializeToString(), 2)
    assert forwarder.flush(5)
    assert downstream.calls == 4
    assert len(downstream.span_ids) == 2
    assert counts.counts == {"sent": 2, "retries": 3}
    forwarder.shutdown(1)


def test_stopped_downstream_gets_the_spans_once_it_is_back(downstream: GrpcDownstream) -> None:
    counts = Counts()
    forwarder = Forwarder(ForwardConfig(endpoint=downstream.endpoint, **FAST), counts)
    downstream.stop()
    requests = [sdk_request(2) for _ in range(3)]
    for request in requests:
        assert forwarder.submit(request.SerializeToString(), 2)
    assert wait_until(lambda: counts.counts["retries"] >= 2)
    assert downstream.span_ids == []
    downstream.start()
    assert forwarder.flush(10)
    sent = sorted(downstream.span_ids)
    assert sent == sorted(span.span_id for _, _, span in spans_of(requests))
    assert counts.counts["sent"] == 6
    assert not any(key.startswith("dropped") for key in counts.counts)
    forwarder.shutdown(1)


def test_forwarding_resumes_within_the_retry_backoff_after_an_outage_long_enough_to_grow_grpcs_own() -> None:
    """gRPC's channel waits out its own reconnect backoff (1 s, x1.6 a failure) before connecting again: after
    6 s down, forwarding resumed 3-4 s after the downstream came back, though the retries waited at most
    0.25 s x 1.5. The channel's backoff is held to the forwarder's."""
    downstream, counts = GrpcDownstream(), Counts()
    config = ForwardConfig(
        endpoint=downstream.endpoint, backoff_initial_s=0.05, backoff_max_s=0.25, max_retry_s=60, timeout_s=2
    )
    forwarder = Forwarder(config, counts)
    try:
        downstream.stop()
        assert forwarder.submit(sdk_request(2).SerializeToString(), 2)
        time.sleep(6)
        downstream.start()
        back = time.monotonic()
        assert wait_until(lambda: counts.counts["sent"] == 2, 10, poll_s=0.01)
        resumed_s = time.monotonic() - back
    finally:
        forwarder.shutdown(1)
        downstream.stop()
    assert resumed_s < 1.0


def test_requests_beyond_the_queue_are_counted_as_dropped_and_the_rest_delivered(downstream: GrpcDownstream) -> None:
    counts = Counts()
    config = ForwardConfig(endpoint=downstream.endpoint, queue_max_requests=2, senders=1, **FAST)
    forwarder = Forwarder(config, counts)
    downstream.stop()
    accepted = [forwarder.submit(sdk_request(1).SerializeToString(), 1)]
    assert wait_until(lambda: counts.counts["retries"] >= 1)  # the first is in flight, retrying
    accepted += [forwarder.submit(sdk_request(1).SerializeToString(), 1) for _ in range(4)]
    assert accepted == [True, True, True, False, False]
    assert not forwarder.has_room(1)
    downstream.start()
    assert forwarder.flush(10)
    assert len(downstream.span_ids) == 3
    assert counts.counts["sent"] == 3
    assert counts.counts["dropped:queue_full"] == 2
    forwarder.shutdown(1)


def test_spans_past_the_retry_budget_are_counted_as_exhausted(downstream: GrpcDownstream) -> None:
    counts = Counts()
    downstream.fail_next(100, grpc.StatusCode.UNAVAILABLE)
    config = ForwardConfig(endpoint=downstream.endpoint, **{**FAST, "max_retry_s": 0.2})
    forwarder = Forwarder(config, counts)
    forwarder.submit(sdk_request(4).SerializeToString(), 4)
    assert forwarder.flush(5)
    assert counts.counts["dropped:retries_exhausted"] == 4
    assert counts.counts["sent"] == 0
    assert downstream.requests == []
    forwarder.shutdown(1)


@pytest.mark.parametrize("code", [grpc.StatusCode.INVALID_ARGUMENT, grpc.StatusCode.RESOURCE_EXHAUSTED])
def test_permanent_errors_are_not_retried(downstream: GrpcDownstream, code: grpc.StatusCode) -> None:
    counts = Counts()
    downstream.fail_next(1, code)  # RESOURCE_EXHAUSTED without RetryInfo is not retryable in OTLP
    forwarder = Forwarder(ForwardConfig(endpoint=downstream.endpoint, **FAST), counts)
    forwarder.submit(sdk_request(2).SerializeToString(), 2)
    assert forwarder.flush(5)
    assert downstream.calls == 1
    assert counts.counts == {"dropped:rejected": 2}
    forwarder.shutdown(1)


def test_drop_warnings_are_one_per_reason_in_ten_seconds(
    downstream: GrpcDownstream, caplog: pytest.LogCaptureFixture
) -> None:
    counts = Counts()
    downstream.fail_next(3, grpc.StatusCode.INVALID_ARGUMENT)
    forwarder = Forwarder(ForwardConfig(endpoint=downstream.endpoint, senders=1, **FAST), counts)
    with caplog.at_level(logging.WARNING, logger="toolscore.serve.forward"):
        for _ in range(3):
            forwarder.submit(sdk_request(2).SerializeToString(), 2)
        assert forwarder.flush(5)
    assert counts.counts == {"dropped:rejected": 6}
    assert [r.getMessage().split(":")[0] for r in caplog.records] == ["dropped 2 spans (rejected)"]
    forwarder.shutdown(1)


def test_resource_exhausted_with_retry_info_waits_as_told(downstream: GrpcDownstream) -> None:
    counts = Counts()
    downstream.fail_next(1, grpc.StatusCode.RESOURCE_EXHAUSTED, retry_after_s=0.3)
    config = ForwardConfig(endpoint=downstream.endpoint, **{**FAST, "backoff_initial_s": 5.0})
    forwarder = Forwarder(config, counts)
    start = time.monotonic()
    forwarder.submit(sdk_request(1).SerializeToString(), 1)
    assert forwarder.flush(5)
    assert 0.3 <= time.monotonic() - start < 4.0  # the server's 0.3 s, not the 5 s backoff
    assert counts.counts == {"sent": 1, "retries": 1}
    forwarder.shutdown(1)


def test_partial_success_counts_the_rejected_spans(downstream: GrpcDownstream) -> None:
    counts = Counts()
    downstream.rejected_spans = 1
    forwarder = Forwarder(ForwardConfig(endpoint=downstream.endpoint, **FAST), counts)
    forwarder.submit(sdk_request(3).SerializeToString(), 3)
    assert forwarder.flush(5)
    assert counts.counts == {"sent": 2, "dropped:rejected": 1}
    forwarder.shutdown(1)


def test_shutdown_counts_what_it_could_not_send(downstream: GrpcDownstream, caplog: pytest.LogCaptureFixture) -> None:
    counts = Counts()
    downstream.stop()
    forwarder = Forwarder(ForwardConfig(endpoint=downstream.endpoint, senders=1, **FAST), counts)
    for _ in range(3):
        forwarder.submit(sdk_request(2).SerializeToString(), 2)
    with caplog.at_level(logging.WARNING, logger="toolscore.serve.forward"):
        assert not forwarder.shutdown(0.3)
    assert counts.counts["dropped:shutdown"] == 6
    # the per-drop warnings are rate-limited; the last line says the whole loss
    assert "forwarding dropped 6 spans in all since start (shutdown: 6)" in caplog.text
    assert not forwarder.submit(sdk_request(1).SerializeToString(), 1)
    assert counts.counts["dropped:shutdown"] == 7


def test_http_downstream_gets_gzip_protobuf_after_a_503() -> None:
    server = HttpDownstream()
    counts = Counts()
    server.fail_next(1, 503, retry_after_s=0.05)
    config = ForwardConfig(
        endpoint=server.endpoint, protocol="http/protobuf", compression="gzip", headers={"authorization": "t"}, **FAST
    )
    forwarder = Forwarder(config, counts)
    request = sdk_request(5)
    forwarder.submit(request.SerializeToString(), 5)
    try:
        assert forwarder.flush(5)
        assert server.requests == [request]
        assert server.metadata[0]["authorization"] == "t"
        assert server.metadata[0]["content-type"] == "application/x-protobuf"
        assert counts.counts == {"sent": 5, "retries": 1}
    finally:
        forwarder.shutdown(1)
        server.stop()


def test_http_client_error_is_not_retried() -> None:
    server = HttpDownstream()
    counts = Counts()
    server.fail_next(1, 400)
    forwarder = Forwarder(ForwardConfig(endpoint=server.endpoint, protocol="http/protobuf", **FAST), counts)
    forwarder.submit(sdk_request(2).SerializeToString(), 2)
    try:
        assert forwarder.flush(5)
        assert server.calls == 1
        assert counts.counts == {"dropped:rejected": 2}
    finally:
        forwarder.shutdown(1)
        server.stop()


def test_drops_reach_the_metrics(downstream: GrpcDownstream) -> None:
    reader = InMemoryMetricReader()
    provider = MeterProvider(metric_readers=[reader])
    downstream.fail_next(1, grpc.StatusCode.INVALID_ARGUMENT)
    config = ForwardConfig(endpoint=downstream.endpoint, senders=1, **FAST)  # the first request meets the failure
    forwarder = Forwarder(config, create_telemetry(provider))  # type: ignore[arg-type]
    forwarder.submit(sdk_request(2).SerializeToString(), 2)
    forwarder.submit(sdk_request(3).SerializeToString(), 3)
    assert forwarder.flush(5)
    data = reader.get_metrics_data()
    assert data is not None
    points = {
        tuple(sorted((p.attributes or {}).items())): p.value  # type: ignore[union-attr]
        for rm in data.resource_metrics
        for sm in rm.scope_metrics
        for m in sm.metrics
        if m.name == "toolscore.forward.spans"
        for p in m.data.data_points
    }
    assert points == {
        (("toolscore.forward.outcome", "sent"),): 3,
        (("toolscore.forward.drop.reason", "rejected"), ("toolscore.forward.outcome", "dropped")): 2,
    }
    forwarder.shutdown(1)
    provider.shutdown()


def test_config_from_the_standard_otlp_variables(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", "http://collector:4318/")
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_PROTOCOL", "http/protobuf")
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_HEADERS", "api-key=a%20b,bad")
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_TRACES_TIMEOUT", "2500")
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_COMPRESSION", "gzip")
    config = ForwardConfig.from_env(queue_max_requests=7)
    assert (config.endpoint, config.protocol, config.headers) == (
        "http://collector:4318/v1/traces",
        "http/protobuf",
        {"api-key": "a b"},
    )
    assert (config.timeout_s, config.compression, config.queue_max_requests) == (2.5, "gzip", 7)
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "https://traces.example:443/custom")
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_COMPRESSION", "brotli")
    config = ForwardConfig.from_env()
    assert (config.endpoint, config.compression) == ("https://traces.example:443/custom", "none")


def test_a_refused_otlp_variable_is_logged_by_name_with_the_key_and_the_reason(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "http://collector:4318/v1/traces")  # with grpc
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_COMPRESSION", "deflate")
    monkeypatch.delenv("OTEL_EXPORTER_OTLP_TRACES_COMPRESSION", raising=False)
    with caplog.at_level(logging.WARNING, logger="toolscore.collector.env"):
        config = ForwardConfig.from_env()
    assert (config.endpoint, config.compression) == (None, "none")
    assert "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT ignored, forward.endpoint keeps its default: endpoint " in caplog.text
    assert "has a path (/v1/traces), but the protocol is grpc" in caplog.text
    expected = "OTEL_EXPORTER_OTLP_COMPRESSION ignored, forward.compression keeps its default: expected 'none' or "
    assert expected + "'gzip', got 'deflate'" in caplog.text
    assert "validation error" not in caplog.text


def test_no_endpoint_means_no_forwarding(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("OTEL_EXPORTER_OTLP_ENDPOINT", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"):
        monkeypatch.delenv(name, raising=False)
    config = ForwardConfig.from_env()
    assert not config.enabled
    with pytest.raises(ValueError, match="endpoint is unset"):
        Forwarder(config)
    assert parse_headers("a=1, b = x%3Dy ,=z") == {"a": "1", "b": "x=y"}
