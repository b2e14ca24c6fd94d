"""OTLP metrics and logs exports as the OTel SDK's exporters encode them: bytes that share a trace
export's outer shape, which the file reader and the receivers must refuse as another signal's export."""

from __future__ import annotations

from opentelemetry.exporter.otlp.proto.common._log_encoder import encode_logs
from opentelemetry.exporter.otlp.proto.common.metrics_encoder import encode_metrics
from opentelemetry.sdk._logs import LoggerProvider
from opentelemetry.sdk._logs.export import InMemoryLogRecordExporter, SimpleLogRecordProcessor
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import InMemoryMetricReader
from opentelemetry.sdk.resources import Resource


def metrics_export() -> bytes:
    """What the OTel SDK's OTLP metrics exporter sends: a counter and a histogram of an agent's tool calls."""
    reader = InMemoryMetricReader()
    provider = MeterProvider(resource=Resource.create({"service.name": "agent"}), metric_readers=[reader])
    meter = provider.get_meter("agent")
    meter.create_counter("tool.calls").add(3, {"tool": "search"})
    meter.create_histogram("tool.duration", unit="ms").record(12.5)
    data = reader.get_metrics_data()
    assert data is not None
    provider.shutdown()
    return bytes(encode_metrics(data).SerializeToString())


def logs_export() -> bytes:
    """What the OTel SDK's OTLP logs exporter sends: one log record, inside a span's context or not."""
    exporter = InMemoryLogRecordExporter()
    provider = LoggerProvider(resource=Resource.create({"service.name": "agent"}))
    provider.add_log_record_processor(SimpleLogRecordProcessor(exporter))
    provider.get_logger("agent").emit(body="calling search", severity_text="INFO", attributes={"tool": "search"})
    provider.shutdown()
    return bytes(encode_logs(exporter.get_finished_logs()).SerializeToString())
