"""A protobuf export of another OTLP signal (metrics, logs) told apart from a trace export.

On the wire, the three exports share their outer shape: field 1 holds a resource block, which holds
scope blocks, which hold the records. So `ExportTraceServiceRequest` parses many a metrics or logs
export without error, into spans without a usable id (a `.pb` file of metrics reads as a trace of no
spans, and an evaluation of it passes), or fails on a field deep inside, naming a span field the
file never had. The "no resource_spans" rule the receivers apply does not catch them: they have one.

Asked only once reading the bytes as traces found no span (or failed), so a trace file never pays for
it. The bytes count as another signal's export only when every record of it carries what that signal
always sets and a trace export's bytes do not: a log record's timestamp (fixed64 fields 1 and 11, which
a span's trace id and events, both length-delimited, never fill); a metric's name and its data.
"""

from __future__ import annotations

from google.protobuf.message import DecodeError
from opentelemetry.proto.collector.logs.v1.logs_service_pb2 import ExportLogsServiceRequest
from opentelemetry.proto.collector.metrics.v1.metrics_service_pb2 import ExportMetricsServiceRequest

__all__ = ["LOGS_EXPORT", "other_signal"]

LOGS_EXPORT = "an OTLP logs export (ExportLogsServiceRequest)"


def other_signal(data: bytes) -> str | None:
    """What `data` is instead of a trace export (`an OTLP metrics export (ExportMetricsServiceRequest)`),
    or None when it is not recognisably a metrics or logs export either."""
    if _is_metrics(data):
        return "an OTLP metrics export (ExportMetricsServiceRequest)"
    if _is_logs(data):
        return LOGS_EXPORT
    return None


def _is_metrics(data: bytes) -> bool:
    try:
        request = ExportMetricsServiceRequest.FromString(data)
    except DecodeError:
        return False
    metrics = [m for r in request.resource_metrics for s in r.scope_metrics for m in s.metrics]
    return bool(metrics) and all(m.name and m.WhichOneof("data") for m in metrics)


def _is_logs(data: bytes) -> bool:
    try:
        request = ExportLogsServiceRequest.FromString(data)
    except DecodeError:
        return False
    records = [record for r in request.resource_logs for s in r.scope_logs for record in s.log_records]
    return bool(records) and all(record.time_unix_nano or record.observed_time_unix_nano for record in records)
