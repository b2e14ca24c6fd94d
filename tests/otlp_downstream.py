"""Real downstream OTLP receivers on 127.0.0.1: of traces for the forwarding tests (gRPC and HTTP/protobuf),
and of logs and metrics for toolscore's own telemetry (gRPC).

Each records every request it accepted. The trace receivers can be told to fail the next calls (a status
code, with or without RetryInfo), or be stopped and started again on the same port, to stage outages.
"""

from __future__ import annotations

import gzip
import threading
from collections.abc import Iterator
from concurrent import futures
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import grpc
from google.protobuf.duration_pb2 import Duration
from google.rpc import error_details_pb2, status_pb2
from opentelemetry.proto.collector.logs.v1 import logs_service_pb2, logs_service_pb2_grpc
from opentelemetry.proto.collector.metrics.v1 import metrics_service_pb2, metrics_service_pb2_grpc
from opentelemetry.proto.collector.trace.v1 import trace_service_pb2_grpc
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceRequest,
    ExportTraceServiceResponse,
)
from opentelemetry.proto.logs.v1.logs_pb2 import LogRecord


def spans_of(requests: list[ExportTraceServiceRequest]) -> Iterator[tuple[Any, Any, Any]]:
    """(resource_spans, scope_spans, span) for every span of the requests."""
    for request in requests:
        for resource_spans in request.resource_spans:
            for scope_spans in resource_spans.scope_spans:
                for span in scope_spans.spans:
                    yield resource_spans, scope_spans, span


class _Script:
    """What the next calls answer: a queue of failures (code, retry-after seconds or None), then success."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.failures: list[tuple[Any, float | None]] = []
        self.requests: list[ExportTraceServiceRequest] = []
        self.metadata: list[dict[str, str]] = []
        self.calls = 0
        self.rejected_spans = 0

    def fail_next(self, times: int, code: Any, retry_after_s: float | None = None) -> None:
        with self.lock:
            self.failures.extend([(code, retry_after_s)] * times)

    def next_failure(self) -> tuple[Any, float | None] | None:
        with self.lock:
            self.calls += 1
            return self.failures.pop(0) if self.failures else None

    def record(self, request: ExportTraceServiceRequest, metadata: dict[str, str]) -> ExportTraceServiceResponse:
        with self.lock:
            self.requests.append(request)
            self.metadata.append(metadata)
            response = ExportTraceServiceResponse()
            if self.rejected_spans:
                response.partial_success.rejected_spans = self.rejected_spans
                response.partial_success.error_message = "some spans refused"
            return response

    @property
    def span_ids(self) -> list[bytes]:
        with self.lock:
            return [span.span_id for _, _, span in spans_of(self.requests)]


class GrpcDownstream(_Script, trace_service_pb2_grpc.TraceServiceServicer):  # type: ignore[misc]
    """A `TraceService` on 127.0.0.1; `stop()` and `start()` stage an outage on the same port."""

    def __init__(self) -> None:
        super().__init__()
        self.port = 0
        self._server: grpc.Server | None = None
        self.start()

    def start(self) -> None:
        server = grpc.server(futures.ThreadPoolExecutor(max_workers=4))
        trace_service_pb2_grpc.add_TraceServiceServicer_to_server(self, server)
        self.port = server.add_insecure_port(f"127.0.0.1:{self.port}")
        server.start()
        self._server = server

    def stop(self) -> None:
        if self._server is not None:
            self._server.stop(0).wait()
            self._server = None

    @property
    def endpoint(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def Export(self, request: ExportTraceServiceRequest, context: Any) -> ExportTraceServiceResponse:
        failure = self.next_failure()
        if failure is not None:
            code, retry_after = failure
            if retry_after is not None:
                info = error_details_pb2.RetryInfo(retry_delay=Duration(nanos=int(retry_after * 1e9)))
                status = status_pb2.Status(code=code.value[0], message="slow down")
                status.details.add().Pack(info)
                context.set_trailing_metadata((("grpc-status-details-bin", status.SerializeToString()),))
            context.abort(code, f"scripted {code.name}")
        metadata = {key: value for key, value in context.invocation_metadata() if isinstance(value, str)}
        return self.record(request, metadata)


class HttpDownstream(_Script):
    """`POST /v1/traces` on 127.0.0.1; failures are HTTP statuses, with `Retry-After` when given.

    `bodies` keeps the accepted requests as received (decompressed), byte for byte.
    """

    def __init__(self) -> None:
        super().__init__()
        self.bodies: list[bytes] = []
        script = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers["Content-Length"]))
                if self.headers.get("Content-Encoding") == "gzip":
                    body = gzip.decompress(body)
                failure = script.next_failure()
                if failure is not None:
                    status, retry_after = failure
                    self.send_response(status)
                    if retry_after is not None:
                        self.send_header("Retry-After", str(retry_after))
                    self.send_header("Content-Length", "0")
                    self.end_headers()
                    return
                request = ExportTraceServiceRequest.FromString(body)
                script.bodies.append(body)
                response = script.record(request, {k.lower(): v for k, v in self.headers.items()})
                data = response.SerializeToString()
                self.send_response(200)
                self.send_header("Content-Type", "application/x-protobuf")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, format: str, *args: Any) -> None:
                pass

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.port = self._server.server_address[1]
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)
        self._thread.start()

    @property
    def endpoint(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1/traces"

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()


class TelemetryReceiver(logs_service_pb2_grpc.LogsServiceServicer, metrics_service_pb2_grpc.MetricsServiceServicer):  # type: ignore[misc]
    """OTLP/gRPC `LogsService` and `MetricsService` on 127.0.0.1, keeping every request (what an OpenTelemetry
    Collector would get of toolscore's evaluation events and metrics)."""

    def __init__(self) -> None:
        self.logs: list[logs_service_pb2.ExportLogsServiceRequest] = []
        self.metrics: list[metrics_service_pb2.ExportMetricsServiceRequest] = []
        self._server = grpc.server(futures.ThreadPoolExecutor(max_workers=2))
        logs_service_pb2_grpc.add_LogsServiceServicer_to_server(self, self._server)
        metrics_service_pb2_grpc.add_MetricsServiceServicer_to_server(self, self._server)
        self.port = self._server.add_insecure_port("127.0.0.1:0")
        self._server.start()

    @property
    def endpoint(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def Export(self, request: Any, context: Any) -> Any:
        if isinstance(request, logs_service_pb2.ExportLogsServiceRequest):
            self.logs.append(request)
            return logs_service_pb2.ExportLogsServiceResponse()
        self.metrics.append(request)
        return metrics_service_pb2.ExportMetricsServiceResponse()

    def log_records(self) -> list[LogRecord]:
        """Every log record received so far, in arrival order."""
        return [
            r for req in list(self.logs) for rl in req.resource_logs for sl in rl.scope_logs for r in sl.log_records
        ]

    def metric_names(self) -> set[str]:
        """Every metric name received so far."""
        return {
            m.name
            for req in list(self.metrics)
            for rm in req.resource_metrics
            for s in rm.scope_metrics
            for m in s.metrics
        }

    def stop(self) -> None:
        self._server.stop(grace=None)
