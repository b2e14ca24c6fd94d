"""OTLP protobuf (`ExportTraceServiceRequest`) → `SpanRecord`: the receiver's hot path.

Fields are read straight off the generated messages (upb-backed), with no JSON or dict round trip
and no validation model in between: the cost is the protobuf parse plus one wrapper per attribute,
which is what walking the request costs anyway. Resource attributes are decoded once per
`ResourceSpans` and the same dict is shared by its spans.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from google.protobuf.message import DecodeError
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

from toolscore.collector.sources._accel import decode_spans as _compiled_decode
from toolscore.collector.sources.errors import DecodeStats, SpanDecodeError, echo
from toolscore.collector.sources.other_signal import other_signal
from toolscore.collector.sources.otlp_json import NOT_A_TRACE_EXPORT
from toolscore.collector.sources.wire import locate_decode_error
from toolscore.collector.spans import SpanEvent, SpanRecord

__all__ = [
    "count_skipped",
    "decode_any_value",
    "ids_ok",
    "parse_trace_export",
    "proto_attributes",
    "resource_attributes",
    "span_record",
    "spans_from_proto_bytes",
    "spans_from_request",
]

_TRACE_ID_BYTES = 16
_SPAN_ID_BYTES = 8
_ZERO_TRACE_ID = bytes(_TRACE_ID_BYTES)
_ZERO_SPAN_ID = bytes(_SPAN_ID_BYTES)


def decode_any_value(value: Any) -> Any:
    """An OTLP `AnyValue` as a plain Python value: arrays become lists, kvlists dicts, unset None."""
    which = value.WhichOneof("value")
    if which == "string_value":
        return value.string_value
    if which is None:
        return None
    if which == "array_value":
        return [item.string_value or decode_any_value(item) for item in value.array_value.values]
    if which == "kvlist_value":
        return {kv.key: decode_any_value(kv.value) for kv in value.kvlist_value.values}
    return getattr(value, which)


def _attributes(key_values: Iterable[Any]) -> dict[str, Any]:
    # Most values are non-empty strings, and most others non-zero integers (token counts, ports):
    # reading those fields first, and asking `WhichOneof` only when both are empty (a field of another
    # kind reads as its zero), saves a `WhichOneof` and a call per attribute.
    out: dict[str, Any] = {}
    for kv in key_values:
        value = kv.value
        text = value.string_value
        if text:
            out[kv.key] = text
        else:
            number = value.int_value
            out[kv.key] = number if number else decode_any_value(value)
    return out


proto_attributes = _attributes
"""Shared with the logs reader (`otlp_logs`): a log record's attributes are decoded as a span's."""


def ids_ok(span: Any) -> bool:
    """Whether a protobuf span's ids can identify it: 16-byte trace id, 8-byte span (and parent) id, non-zero."""
    return _ids_ok(span.trace_id, span.span_id, span.parent_span_id)


def _ids_ok(trace_id: bytes, span_id: bytes, parent_id: bytes) -> bool:
    return not (
        len(trace_id) != _TRACE_ID_BYTES
        or len(span_id) != _SPAN_ID_BYTES
        or (parent_id and len(parent_id) != _SPAN_ID_BYTES)
        or trace_id == _ZERO_TRACE_ID
        or span_id == _ZERO_SPAN_ID
    )


def count_skipped(span: Any, stats: DecodeStats | None) -> None:
    """Count a span whose ids cannot identify it, with which id is wrong and how."""
    if stats is None:
        return
    trace_id, span_id, parent_id = span.trace_id, span.span_id, span.parent_span_id
    if len(trace_id) != _TRACE_ID_BYTES or trace_id == _ZERO_TRACE_ID:
        reason, detail = "bad_trace_id", f"trace_id is {len(trace_id)} bytes {echo(trace_id) or '(empty)'}"
    elif len(span_id) != _SPAN_ID_BYTES or span_id == _ZERO_SPAN_ID:
        reason, detail = "bad_span_id", f"span_id is {len(span_id)} bytes {echo(span_id) or '(empty)'}"
    else:
        reason, detail = "bad_parent_span_id", f"parent_span_id is {len(parent_id)} bytes {echo(parent_id)}"
    stats.skip(reason, f"span {echo(span.name)}: {detail}; ids must be 16 (trace) or 8 (span) non-zero bytes")


def _events(events: Iterable[Any]) -> tuple[SpanEvent, ...]:
    return tuple([SpanEvent(event.name, event.time_unix_nano, _attributes(event.attributes)) for event in events])


def resource_attributes(resource: Any) -> dict[str, Any]:
    """A protobuf `Resource`'s attributes; decode once per `ResourceSpans` and share among its spans."""
    return _attributes(resource.attributes)


def span_record(span: Any, resource: dict[str, Any], scope: str) -> SpanRecord:
    """One protobuf `Span` (whose ids `ids_ok` accepted) as a record; `resource` is shared, never copied."""
    return _record(span, span.trace_id.hex(), span.span_id, span.parent_span_id, resource=resource, scope=scope)


def _record(
    span: Any, trace_id: str, span_id: bytes, parent_id: bytes, *, resource: dict[str, Any], scope: str
) -> SpanRecord:
    status = span.status
    events = span.events
    return SpanRecord(
        trace_id,
        span_id.hex(),
        parent_id.hex() if parent_id and parent_id != _ZERO_SPAN_ID else None,  # zeros: a root, as some SDKs send it
        span.name,
        span.kind,
        span.start_time_unix_nano,
        span.end_time_unix_nano,
        status.code,
        status.message,
        _attributes(span.attributes),
        _events(events) if events else (),
        resource,
        scope,
    )


def spans_from_request(req: ExportTraceServiceRequest, stats: DecodeStats | None = None) -> list[SpanRecord]:
    """Every span of a request, in request order; spans with unusable ids are skipped and counted."""
    out: list[SpanRecord] = []
    append = out.append
    hexed: dict[bytes, str] = {}  # a request holds few traces, each of many spans
    for resource_spans in req.resource_spans:
        resource = _attributes(resource_spans.resource.attributes)
        for scope_spans in resource_spans.scope_spans:
            scope = scope_spans.scope.name
            for span in scope_spans.spans:
                # `_ids_ok` and `_record`, inlined: two calls less per span on the receiver's hot path.
                trace_id, span_id, parent_id = span.trace_id, span.span_id, span.parent_span_id
                if (
                    len(trace_id) != _TRACE_ID_BYTES
                    or len(span_id) != _SPAN_ID_BYTES
                    or (parent_id and len(parent_id) != _SPAN_ID_BYTES)
                    or trace_id == _ZERO_TRACE_ID
                    or span_id == _ZERO_SPAN_ID
                ):
                    count_skipped(span, stats)
                    continue
                trace_hex = hexed.get(trace_id)
                if trace_hex is None:
                    trace_hex = hexed[trace_id] = trace_id.hex()
                status = span.status
                events = span.events
                append(
                    SpanRecord(
                        trace_hex,
                        span_id.hex(),
                        parent_id.hex() if parent_id and parent_id != _ZERO_SPAN_ID else None,
                        span.name,
                        span.kind,
                        span.start_time_unix_nano,
                        span.end_time_unix_nano,
                        status.code,
                        status.message,
                        _attributes(span.attributes),
                        _events(events) if events else (),
                        resource,
                        scope,
                    )
                )
    if stats is not None:
        stats.spans += len(out)
    return out


def spans_from_proto_bytes(data: bytes, stats: DecodeStats | None = None) -> list[SpanRecord]:
    """Decode an OTLP/HTTP `application/x-protobuf` body (or a `.pb` file) into span records.

    Raises `SpanDecodeError` as `parse_trace_export` does. The compiled decoder (`_accel`), where built,
    gives the same records for a plain export in a fraction of the time; anything else comes here.
    """
    if _compiled_decode is not None:
        spans = _compiled_decode(data)
        if spans is not None:
            if stats is not None:
                stats.spans += len(spans)
            return spans
    return spans_from_request(parse_trace_export(data), stats)


def parse_trace_export(data: bytes) -> ExportTraceServiceRequest:
    """`data` as an `ExportTraceServiceRequest`, or a `SpanDecodeError` saying why it is none: the byte
    offset and field where the encoding breaks, no resource_spans, or another signal's export.

    One function for the receivers (`serve.otlp_export.parse_proto_request`) and the file reader, so
    that the same bytes are refused in the same words whether posted or read. A metrics or logs export
    often parses as resource_spans of spans without ids, which would be skipped one by one and the
    export taken as an empty trace; the costlier `other_signal` check runs only when the request holds
    no span with usable ids (or fails to parse), so a real trace export pays one id check.
    """
    try:
        request: ExportTraceServiceRequest = ExportTraceServiceRequest.FromString(data)
    except DecodeError:
        _refuse_other_signal(data)
        offset, reason = locate_decode_error(data, ExportTraceServiceRequest.DESCRIPTOR)
        raise SpanDecodeError(
            f"not a valid OTLP ExportTraceServiceRequest ({len(data)} bytes): {reason}", offset=offset
        ) from None
    if data and not request.resource_spans:
        # Random bytes often parse as unknown fields; a real export has at least one ResourceSpans.
        raise SpanDecodeError(
            f"{len(data)} bytes decode to a request without resource_spans: not an OTLP trace request"
        )
    if data and not _any_usable_span(request):
        _refuse_other_signal(data)
    return request


def _any_usable_span(request: ExportTraceServiceRequest) -> bool:
    """Whether a span of `request` has ids `spans_from_request` would keep; stops at the first one."""
    return any(
        _ids_ok(span.trace_id, span.span_id, span.parent_span_id)
        for resource_spans in request.resource_spans
        for scope_spans in resource_spans.scope_spans
        for span in scope_spans.spans
    )


def _refuse_other_signal(data: bytes) -> None:
    """Raise when `data`, which holds no usable span, is a metrics or logs export: named as such, not as
    a trace of no spans or a span field it never had (`other_signal`)."""
    what = other_signal(data)
    if what is not None:
        raise SpanDecodeError(f"{NOT_A_TRACE_EXPORT}: {what} of {len(data)} bytes, without resource_spans")
