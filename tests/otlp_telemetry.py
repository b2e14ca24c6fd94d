"""A real OTLP/gRPC receiver of logs and metrics on 127.0.0.1, for the self-telemetry tests."""

from __future__ import annotations

from collections.abc import Iterator
from concurrent import futures
from typing import Any

import grpc
import pytest
from opentelemetry.proto.collector.logs.v1 import logs_service_pb2, logs_service_pb2_grpc
from opentelemetry.proto.collector.metrics.v1 import metrics_service_pb2, metrics_service_pb2_grpc


class OtlpTelemetrySink(logs_service_pb2_grpc.LogsServiceServicer, metrics_service_pb2_grpc.MetricsServiceServicer):
    """An OTLP/gRPC receiver that keeps what it is sent."""

    def __init__(self) -> None:
        self.logs: list[Any] = []
        self.metrics: list[Any] = []

    def Export(self, request: Any, context: Any) -> Any:
        if isinstance(request, logs_service_pb2.ExportLogsServiceRequest):
            self.logs.append(request)
            return logs_service_pb2.ExportLogsServiceResponse()
        self.metrics.append(request)
        return metrics_service_pb2.ExportMetricsServiceResponse()


@pytest.fixture
def otlp_collector() -> Iterator[tuple[str, OtlpTelemetrySink]]:
    collector = OtlpTelemetrySink()
    server = grpc.server(futures.ThreadPoolExecutor(max_workers=2))
    logs_service_pb2_grpc.add_LogsServiceServicer_to_server(collector, server)
    metrics_service_pb2_grpc.add_MetricsServiceServicer_to_server(collector, server)
    port = server.add_insecure_port("127.0.0.1:0")
    server.start()
    yield f"http://127.0.0.1:{port}", collector
    server.stop(grace=None)


def metric_names(sink: OtlpTelemetrySink) -> set[str]:
    """Every metric name the sink was sent."""
    return {m.name for req in sink.metrics for rm in req.resource_metrics for s in rm.scope_metrics for m in s.metrics}


def log_records(sink: OtlpTelemetrySink) -> list[Any]:
    """Every log record the sink was sent, in order."""
    return [r for req in sink.logs for rl in req.resource_logs for sl in rl.scope_logs for r in sl.log_records]
