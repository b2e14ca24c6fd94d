"""One OTLP logs export, whatever the transport: decode its GenAI events, and phrase the answer.

Both receivers share this, as they share `otlp_export` for traces: the same limits (`max_spans_per_request`
counts log records, and resource and scope blocks, before the protobuf runtime builds a message for any),
the same decode errors naming the byte or field at fault, and OTLP's partial success for the records not
read (`ExportLogsPartialSuccess.rejected_log_records` and why: `log_events.LogRefusals.message`). A trace
export sent to the logs endpoint is refused naming it, as a logs export sent to the trace endpoint is
(`sources.other_signal`), rather than answered as a batch of records that are no GenAI events.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any

from opentelemetry.proto.collector.logs.v1.logs_service_pb2 import ExportLogsServiceResponse
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

from toolscore.collector.serve._encode import count_spans
from toolscore.collector.serve.receivers._ingest import Ingest, IngestResult
from toolscore.collector.serve.receivers._otlp_export import BadPayload, check_span_limit
from toolscore.collector.sources.errors import SpanDecodeError, capped
from toolscore.collector.sources.log_events import LogBatch
from toolscore.collector.sources.otlp_json_values import json_counts, json_field, json_loads
from toolscore.collector.sources.otlp_logs import (
    events_from_logs_json,
    events_from_logs_request,
    parse_logs_export,
    record_count,
)
from toolscore.collector.sources.otlp_proto import ids_ok

__all__ = ["accept_logs_safely", "logs_from_json", "logs_from_proto", "logs_response"]

_log = logging.getLogger(__name__)
_RECORDS = "log records"
_LOG_BLOCKS = (("resourceLogs", "resource_logs"), ("scopeLogs", "scope_logs"), ("logRecords", "log_records"))
_TRACES_HERE = "an OTLP trace export (ExportTraceServiceRequest) sent to the logs endpoint: send it to /v1/traces"


def logs_from_proto(data: bytes, max_records: int | None = None) -> LogBatch:
    """A binary logs export's GenAI events and refused records; raises `BadPayload` for one that cannot be read."""
    counted = count_spans(data, max_records) if max_records is not None else None  # the same wire shape as traces
    if counted is not None and max_records is not None:
        check_span_limit(*counted, max_records, exact=False, items=_RECORDS)
    try:
        request = parse_logs_export(data)
    except SpanDecodeError as exc:
        _refuse_trace_export(data)
        raise BadPayload(exc.message, offset=exc.offset) from None
    if data and not request.resource_logs:
        raise BadPayload(f"{len(data)} bytes decode to a request without resource_logs: not an OTLP logs request")
    if counted is None and max_records is not None:
        blocks = len(request.resource_logs) + sum(len(r.scope_logs) for r in request.resource_logs)
        check_span_limit(record_count(request), blocks, max_records, items=_RECORDS)
    records = [record for r in request.resource_logs for s in r.scope_logs for record in s.log_records]
    if records and not any(record.time_unix_nano or record.observed_time_unix_nano for record in records):
        _refuse_trace_export(data)  # every SDK stamps a record's observed time; a span's fields read as none
    batch = LogBatch()
    batch.events = events_from_logs_request(request, batch.refusals)
    return batch


def _refuse_trace_export(data: bytes) -> None:
    """Raise when `data` (which does not parse as logs, or whose records carry no time) is a trace export: a
    span with usable ids. Asked only then, so a logs export never pays for it."""
    try:
        request = ExportTraceServiceRequest.FromString(data)
    except Exception:
        return
    if any(ids_ok(span) for r in request.resource_spans for s in r.scope_spans for span in s.spans):
        raise BadPayload(_TRACES_HERE)


def logs_from_json(data: bytes, max_records: int | None = None) -> LogBatch:
    """An OTLP/JSON logs export's GenAI events and refused records; raises `BadPayload` naming the field at fault."""
    try:
        document = json_loads(data, locate="byte") if data.strip() else {}
    except SpanDecodeError as exc:
        raise BadPayload(exc.reason, offset=exc.offset) from None
    if not isinstance(document, Mapping):
        raise BadPayload(f"expected an OTLP/JSON object with resourceLogs, got {type(document).__name__}")
    if json_field(document, "resourceSpans", "resource_spans") is not None:
        raise BadPayload(_TRACES_HERE.replace("(ExportTraceServiceRequest)", "(resourceSpans)"))
    if max_records is not None:
        check_span_limit(*json_counts(document, *_LOG_BLOCKS), max_records, items=_RECORDS)
    batch = LogBatch()
    try:
        batch.events = events_from_logs_json(document, batch.refusals)
    except SpanDecodeError as exc:
        raise BadPayload(exc.reason, field=exc.field) from None
    return batch


def accept_logs_safely(ingest: Ingest, batch: LogBatch) -> IngestResult | None:
    """`ingest.accept_logs`, or None when it broke its promise not to raise (logged; answer an internal error)."""
    try:
        return ingest.accept_logs(batch)
    except Exception:
        _log.exception("Ingest.accept_logs raised; answering the export with an internal error")
        return None


def logs_response(result: IngestResult) -> Any:
    """The `ExportLogsServiceResponse`: partial success only when records were not read (or something was said)."""
    response = ExportLogsServiceResponse()
    if result.rejected_spans or result.error_message:
        response.partial_success.rejected_log_records = result.rejected_spans
        response.partial_success.error_message = capped(result.error_message)
    return response
