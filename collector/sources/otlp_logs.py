"""OTLP logs exports (`ExportLogsServiceRequest`: protobuf, or OTLP/JSON `resourceLogs`) → GenAI `LogEvent`s.

The records `log_events.refusal` accepts become events of their spans, their attributes and body decoded
as the span readers decode attribute values (`otlp_proto`, `otlp_json_values`), their OTLP/JSON ids read as
a span's (`otlp_json_ids`: hex, or base64); the others are counted in the `LogRefusals` given, by reason.
Resource and scope are not read: an event joins a span that has its own.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from google.protobuf.message import DecodeError
from opentelemetry.proto.collector.logs.v1.logs_service_pb2 import ExportLogsServiceRequest

from toolscore.collector.sources.errors import SpanDecodeError
from toolscore.collector.sources.log_events import LogEvent, LogRefusals, event_name, event_of, refusal
from toolscore.collector.sources.otlp_json_ids import json_id
from toolscore.collector.sources.otlp_json_values import (
    decode_json_any_value,
    json_attributes,
    json_field,
    json_int,
    json_list,
    json_obj,
)
from toolscore.collector.sources.otlp_proto import decode_any_value, proto_attributes
from toolscore.collector.sources.wire import locate_decode_error

__all__ = ["events_from_logs_json", "events_from_logs_request", "is_logs_json", "parse_logs_export", "record_count"]

_TRACE_ID_BYTES, _SPAN_ID_BYTES = 16, 8


def parse_logs_export(data: bytes) -> ExportLogsServiceRequest:
    """`data` as an `ExportLogsServiceRequest`, or a `SpanDecodeError` naming the byte and field at fault."""
    try:
        request: ExportLogsServiceRequest = ExportLogsServiceRequest.FromString(data)
    except DecodeError:
        offset, reason = locate_decode_error(data, ExportLogsServiceRequest.DESCRIPTOR)
        raise SpanDecodeError(
            f"not a valid OTLP ExportLogsServiceRequest ({len(data)} bytes): {reason}", offset=offset
        ) from None
    return request


def record_count(request: ExportLogsServiceRequest) -> int:
    """The log records of a parsed request."""
    return sum(len(scope.log_records) for resource in request.resource_logs for scope in resource.scope_logs)


def _has_span(trace_id: bytes, span_id: bytes) -> bool:
    return len(trace_id) == _TRACE_ID_BYTES and len(span_id) == _SPAN_ID_BYTES and any(trace_id) and any(span_id)


def events_from_logs_request(request: ExportLogsServiceRequest, refusals: LogRefusals) -> list[LogEvent]:
    """The GenAI events of a protobuf logs export, in request order; the other records counted in `refusals`."""
    out: list[LogEvent] = []
    for resource_logs in request.resource_logs:
        for scope_logs in resource_logs.scope_logs:
            for record in scope_logs.log_records:
                attributes = proto_attributes(record.attributes)
                name = event_name(record.event_name, attributes)
                reason = refusal(name, _has_span(record.trace_id, record.span_id))
                if reason is not None:
                    refusals.refuse(reason, name)
                    continue
                body = decode_any_value(record.body) if record.HasField("body") else None
                time_ns = record.time_unix_nano or record.observed_time_unix_nano
                event = event_of(name, time_ns, attributes, body)
                out.append(LogEvent(record.trace_id.hex(), record.span_id.hex(), event))
    return out


def is_logs_json(obj: Any) -> bool:
    """Whether a decoded JSON document is an OTLP/JSON logs export."""
    return isinstance(obj, Mapping) and ("resourceLogs" in obj or "resource_logs" in obj)


def _json_id(value: Any, size: int) -> str | None:
    """A lowercase hex id of `size` bytes; "" for an absent, empty or all-zero one (no span context); None
    for one that is neither hex nor base64 of that size (`otlp_json_ids`)."""
    if not value:
        return ""
    read = json_id(value, size)
    if read is None:
        return None
    return read[0] if read[0].strip("0") else ""


def events_from_logs_json(obj: Mapping[str, Any], refusals: LogRefusals) -> list[LogEvent]:
    """The GenAI events of a decoded OTLP/JSON logs export; raises `SpanDecodeError` naming a bad field."""
    out: list[LogEvent] = []
    for r, resource_logs in enumerate(json_list(json_field(obj, "resourceLogs", "resource_logs"), "resourceLogs")):
        path = f"resourceLogs[{r}]"
        scopes = json_field(json_obj(resource_logs, path), "scopeLogs", "scope_logs")
        for s, scope_logs in enumerate(json_list(scopes, f"{path}.scopeLogs")):
            scope_path = f"{path}.scopeLogs[{s}]"
            records = json_field(json_obj(scope_logs, scope_path), "logRecords", "log_records")
            for i, record in enumerate(json_list(records, f"{scope_path}.logRecords")):
                event = _json_record(json_obj(record, f"{scope_path}.logRecords[{i}]"), f"{scope_path}.logRecords[{i}]")
                if isinstance(event, LogEvent):
                    out.append(event)
                else:
                    refusals.refuse(*event)
    return out


def _json_record(record: Mapping[str, Any], path: str) -> LogEvent | tuple[str, str]:
    """One OTLP/JSON log record as its event, or (why it is refused, its event name)."""
    attributes = json_attributes(record.get("attributes"), f"{path}.attributes")
    name = event_name(str(json_field(record, "eventName", "event_name") or ""), attributes)
    trace_id = _json_id(json_field(record, "traceId", "trace_id"), _TRACE_ID_BYTES)
    span_id = _json_id(json_field(record, "spanId", "span_id"), _SPAN_ID_BYTES)
    reason: str | None
    if trace_id is None or span_id is None:  # no id: `invalid`, if it is a GenAI event at all
        reason = refusal(name, True) or "invalid"
    else:
        reason = refusal(name, bool(trace_id and span_id))
    if reason is not None or not trace_id or not span_id:
        return reason or "no_span_context", name
    body = record.get("body")
    decoded = None if body is None else decode_json_any_value(body, f"{path}.body")
    time_ns = json_int(json_field(record, "timeUnixNano", "time_unix_nano"), f"{path}.timeUnixNano")
    if not time_ns:
        observed = json_field(record, "observedTimeUnixNano", "observed_time_unix_nano")
        time_ns = json_int(observed, f"{path}.observedTimeUnixNano")
    return LogEvent(trace_id, span_id, event_of(name, time_ns, attributes, decoded))
