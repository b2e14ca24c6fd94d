"""A run's spans and its GenAI log records as the real SDK and openai-v2 record them, in OTLP encodings.

`capture()` runs the agent of `openai_v2_events` once; the helpers encode what it recorded as the OTLP
exporters do (protobuf `ExportTraceServiceRequest` / `ExportLogsServiceRequest`), and as OTLP/JSON (hex ids).
`python -m tests.genai_log_exports DIR` writes one capture to `DIR/run.pb` and `DIR/run.logs.pb`: for a
semantic-conventions mode (`OTEL_SEMCONV_STABILITY_OPT_IN`), which the instrumentation reads once per process.
"""

from __future__ import annotations

import base64
import json
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from google.protobuf import json_format
from opentelemetry.exporter.otlp.proto.common._log_encoder import encode_logs
from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
from opentelemetry.sdk._logs import LoggerProvider, ReadableLogRecord
from opentelemetry.sdk._logs.export import InMemoryLogRecordExporter, SimpleLogRecordProcessor
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from tests.openai_server import OpenAIServer
from tests.openai_v2_events import openai_v2, run_agent

__all__ = ["Captured", "capture", "otlp_json"]


@dataclass(frozen=True)
class Captured:
    spans: tuple[ReadableSpan, ...]
    logs: tuple[ReadableLogRecord, ...]

    def traces_pb(self) -> bytes:
        return bytes(encode_spans(self.spans).SerializeToString())

    def logs_pb(self) -> bytes:
        return bytes(encode_logs(self.logs).SerializeToString())


def capture() -> Captured:
    """One run of the openai-v2 agent, recorded by real SDK providers with in-memory exporters."""
    resource = Resource.create({"service.name": "weather-agent"})
    spans, logs = InMemorySpanExporter(), InMemoryLogRecordExporter()
    tracer_provider = TracerProvider(resource=resource)
    tracer_provider.add_span_processor(SimpleSpanProcessor(spans))
    logger_provider = LoggerProvider(resource=resource)
    logger_provider.add_log_record_processor(SimpleLogRecordProcessor(logs))
    with OpenAIServer() as server, openai_v2(tracer_provider, logger_provider):
        run_agent(tracer_provider, server)
    tracer_provider.shutdown()
    logger_provider.shutdown()
    return Captured(tuple(spans.get_finished_spans()), tuple(logs.get_finished_logs()))


def _hex_ids(value: Any) -> Any:
    """OTLP/JSON writes ids as hex where the protobuf JSON mapping writes base64."""
    if isinstance(value, dict):
        return {
            key: base64.b64decode(item).hex() if key in ("traceId", "spanId", "parentSpanId") else _hex_ids(item)
            for key, item in value.items()
        }
    if isinstance(value, list):
        return [_hex_ids(item) for item in value]
    return value


def otlp_json(message: Any) -> str:
    """A protobuf export request as OTLP/JSON."""
    return json.dumps(_hex_ids(json_format.MessageToDict(message)))


if __name__ == "__main__":
    written = capture()
    directory = Path(sys.argv[1])
    (directory / "run.pb").write_bytes(written.traces_pb())
    (directory / "run.logs.pb").write_bytes(written.logs_pb())
