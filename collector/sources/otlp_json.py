"""OTLP/JSON (`ExportTraceServiceRequest` / `TracesData`) → `SpanRecord`, one document or JSON Lines.

The encoding is the protobuf JSON mapping with OTLP's exceptions: trace and span ids are hex (not
base64), and enums are integers. As the OTLP spec allows for receivers, field names are accepted in
lowerCamelCase and in the proto's snake_case, 64-bit integers as JSON strings or numbers, and enums
also by name. Ids in base64, as protobuf's own JSON mapping writes them (Python's `MessageToJson`, the
tools most Python users reach for), are accepted too and counted (`DecodeStats.base64_ids`): the two
encodings never share a length (hex 32 and 16 characters, base64 22-24 and 11-12). JSON Lines, one
request per line, is what the Collector's file exporter writes with `format: json`. Errors name the path
of the bad field (`resourceSpans[0].scopeSpans[1].spans[3].traceId`).

A file's documents (and each JSON Lines line) must be trace exports (`trace_export`); a request body need
not, since OTLP/JSON receivers ignore fields they do not know.
"""

from __future__ import annotations

import base64
import binascii
import json
import re
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from toolscore.collector.sources.errors import DecodeStats, SpanDecodeError, echo
from toolscore.collector.spans import SpanEvent, SpanRecord

__all__ = [
    "NOT_A_TRACE_EXPORT",
    "decode_json_any_value",
    "json_attributes",
    "json_field",
    "json_int",
    "json_list",
    "json_loads",
    "json_obj",
    "spans_from_json",
    "spans_from_json_bytes",
    "spans_from_json_lines",
    "trace_export",
]

NOT_A_TRACE_EXPORT = "not an OTLP trace export"
"""How `trace_export`'s errors begin, so a caller can tell them from a broken export."""

_HEX32 = re.compile(r"[0-9a-fA-F]{32}").fullmatch
_HEX16 = re.compile(r"[0-9a-fA-F]{16}").fullmatch
_ZERO32, _ZERO16 = "0" * 32, "0" * 16
_KINDS = {
    f"SPAN_KIND_{n}": i for i, n in enumerate(("UNSPECIFIED", "INTERNAL", "SERVER", "CLIENT", "PRODUCER", "CONSUMER"))
}
_STATUS_CODES = {"STATUS_CODE_UNSET": 0, "STATUS_CODE_OK": 1, "STATUS_CODE_ERROR": 2}
_OTHER_SIGNALS = {
    "resourceMetrics": "metrics",
    "resource_metrics": "metrics",
    "resourceLogs": "logs",
    "resource_logs": "logs",
    "resourceProfiles": "profiles",
    "resource_profiles": "profiles",
}


def _get(obj: Mapping[str, Any], camel: str, snake: str) -> Any:
    value = obj.get(camel)
    return obj.get(snake) if value is None else value


def _int(value: Any, path: str, enums: Mapping[str, int] | None = None) -> int:
    if type(value) is int:
        return value
    if value is None:
        return 0
    if isinstance(value, str):
        if enums is not None and value in enums:
            return enums[value]
        try:
            return int(value)
        except ValueError:
            pass
    elif isinstance(value, float) and value.is_integer():
        return int(value)
    raise SpanDecodeError(f"{path}: expected an integer, got {value!r}")


def _obj(value: Any, path: str) -> Mapping[str, Any]:
    if value is None:
        return {}
    if not isinstance(value, Mapping):
        raise SpanDecodeError(f"{path}: expected an object, got {type(value).__name__}")
    return value


def _list(value: Any, path: str) -> list[Any]:
    if value is None:
        return []
    if not isinstance(value, list):
        raise SpanDecodeError(f"{path}: expected a list, got {type(value).__name__}")
    return value


def _bytes(value: Any, path: str) -> bytes:
    """Proto JSON bytes: standard or URL-safe base64, padding optional."""
    if not isinstance(value, str):
        raise SpanDecodeError(f"{path}: expected a base64 string, got {type(value).__name__}")
    text = value.replace("-", "+").replace("_", "/")
    try:
        return base64.b64decode(text + "=" * (-len(text) % 4), validate=True)
    except binascii.Error:
        raise SpanDecodeError(f"{path}: not valid base64: {value[:40]!r}") from None


def decode_json_any_value(value: Any, path: str = "value") -> Any:
    """An OTLP/JSON `AnyValue` as a plain Python value; an empty or unknown value decodes to None."""
    if not isinstance(value, Mapping):
        raise SpanDecodeError(f"{path}: expected an AnyValue object, got {type(value).__name__}")
    for key, inner in value.items():
        if key in ("stringValue", "string_value"):
            if not isinstance(inner, str):
                raise SpanDecodeError(f"{path}.{key}: expected a string, got {type(inner).__name__}")
            return inner
        if key in ("intValue", "int_value"):
            return _int(inner, f"{path}.{key}")
        if key in ("boolValue", "bool_value"):
            if type(inner) is not bool:
                raise SpanDecodeError(f"{path}.{key}: expected true or false, got {inner!r}")
            return inner
        if key in ("doubleValue", "double_value"):
            try:
                return float(inner)
            except (TypeError, ValueError):
                raise SpanDecodeError(f"{path}.{key}: expected a number, got {inner!r}") from None
        if key in ("bytesValue", "bytes_value"):
            return _bytes(inner, f"{path}.{key}")
        if key in ("arrayValue", "array_value"):
            items = _list(inner.get("values") if isinstance(inner, Mapping) else inner, f"{path}.{key}.values")
            return [decode_json_any_value(item, f"{path}.{key}.values[{i}]") for i, item in enumerate(items)]
        if key in ("kvlistValue", "kvlist_value"):
            pairs = _list(inner.get("values") if isinstance(inner, Mapping) else inner, f"{path}.{key}.values")
            return _attributes(pairs, f"{path}.{key}.values")
    return None


def _attributes(key_values: Any, path: str) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for i, kv in enumerate(_list(key_values, path)):
        if not isinstance(kv, Mapping) or not isinstance(kv.get("key"), str):
            raise SpanDecodeError(f"{path}[{i}]: expected a {{key, value}} object with a string key")
        value = kv.get("value")
        if type(value) is dict:
            text = value.get("stringValue")
            if type(text) is str:
                out[kv["key"]] = text
                continue
        out[kv["key"]] = None if value is None else decode_json_any_value(value, f"{path}[{i}].value")
    return out


def _bad_ids(trace_id: Any, span_id: Any, parent_id: Any) -> tuple[str, str] | None:
    if not isinstance(trace_id, str) or not _HEX32(trace_id) or trace_id == _ZERO32:
        return "bad_trace_id", f"traceId {trace_id!r} is not 32 hex digits (or 16 bytes in base64), non-zero"
    if not isinstance(span_id, str) or not _HEX16(span_id) or span_id == _ZERO16:
        return "bad_span_id", f"spanId {span_id!r} is not 16 hex digits (or 8 bytes in base64), non-zero"
    if parent_id and (not isinstance(parent_id, str) or not _HEX16(parent_id)):
        return "bad_parent_span_id", f"parentSpanId {parent_id!r} is not 16 hex digits or empty"
    return None


def _event(event: Mapping[str, Any], path: str) -> SpanEvent:
    return SpanEvent(
        str(event.get("name") or ""),
        _int(_get(event, "timeUnixNano", "time_unix_nano"), f"{path}.timeUnixNano"),
        _attributes(event.get("attributes"), f"{path}.attributes"),
    )


_BASE64_TRACE_ID = (22, 24)
"""Lengths of 16 bytes in base64, unpadded and padded (a span id's 8 bytes: 11 and 12)."""


def _hex(value: Any, size: int) -> Any:
    """A base64 id (standard or URL-safe, padding optional) as hex; anything else as it was, for `_bad_ids`
    to name."""
    if not isinstance(value, str):
        return value
    try:
        raw = base64.b64decode(value.replace("-", "+").replace("_", "/") + "=" * (-len(value) % 4), validate=True)
    except ValueError:
        return value
    return raw.hex() if len(raw) == size else value


def _span(
    span: Any, path: str, resource: dict[str, Any], scope: str, stats: DecodeStats | None = None
) -> SpanRecord | tuple[str, str]:
    if not isinstance(span, Mapping):
        raise SpanDecodeError(f"{path}: expected a span object, got {type(span).__name__}")
    trace_id, span_id = _get(span, "traceId", "trace_id"), _get(span, "spanId", "span_id")
    parent_id = _get(span, "parentSpanId", "parent_span_id")
    if isinstance(trace_id, str) and len(trace_id) in _BASE64_TRACE_ID:  # never a hex id's length: 32 and 16
        trace_id, span_id, parent_id = _hex(trace_id, 16), _hex(span_id, 8), _hex(parent_id, 8) if parent_id else ""
        if stats is not None and not isinstance(_bad_ids(trace_id, span_id, parent_id), tuple):
            stats.base64_ids += 1
    bad = _bad_ids(trace_id, span_id, parent_id)
    if bad is not None:
        return bad
    status = _obj(span.get("status"), f"{path}.status")
    events = tuple(
        _event(_obj(event, f"{path}.events[{i}]"), f"{path}.events[{i}]")
        for i, event in enumerate(_list(span.get("events"), f"{path}.events"))
    )
    return SpanRecord(
        trace_id.lower(),
        span_id.lower(),
        parent_id.lower() if parent_id and parent_id != _ZERO16 else None,  # zeros: a root, as some SDKs send it
        str(span.get("name", "")),
        _int(span.get("kind"), f"{path}.kind", _KINDS),
        _int(_get(span, "startTimeUnixNano", "start_time_unix_nano"), f"{path}.startTimeUnixNano"),
        _int(_get(span, "endTimeUnixNano", "end_time_unix_nano"), f"{path}.endTimeUnixNano"),
        _int(status.get("code"), f"{path}.status.code", _STATUS_CODES),
        str(status.get("message") or ""),
        _attributes(span.get("attributes"), f"{path}.attributes"),
        events,
        resource,
        scope,
    )


def _scope_spans(
    scope_spans: Mapping[str, Any],
    path: str,
    resource: dict[str, Any],
    out: list[SpanRecord],
    stats: DecodeStats | None,
) -> None:
    scope = str(_obj(scope_spans.get("scope"), f"{path}.scope").get("name") or "")
    for i, span in enumerate(_list(scope_spans.get("spans"), f"{path}.spans")):
        record = _span(span, f"{path}.spans[{i}]", resource, scope, stats)
        if isinstance(record, SpanRecord):
            out.append(record)
        elif stats is not None:
            stats.skip(record[0], f"{path}.spans[{i}] {span.get('name')!r}: {record[1]}")


def trace_export(obj: Any) -> Mapping[str, Any]:
    """`obj` when it is an OTLP trace export: an object with `resourceSpans`, or `{}` (an empty export).

    For documents read from files. Any other JSON object (a ground-truth file, a config, another
    signal's export) would otherwise decode as a trace of no spans, and an evaluation of it pass.
    """
    if not isinstance(obj, Mapping):
        raise SpanDecodeError(f"{NOT_A_TRACE_EXPORT}: expected a JSON object, got {type(obj).__name__}")
    if not obj or "resourceSpans" in obj or "resource_spans" in obj:
        return obj
    signal = next((name for key, name in _OTHER_SIGNALS.items() if key in obj), None)
    keys = sorted(map(str, obj))
    shown = ", ".join(echo(key) for key in keys[:4]) + (f", … ({len(keys)} keys)" if len(keys) > 4 else "")
    what = f"an OTLP {signal} export" if signal else f"a JSON object with the keys {shown}"
    raise SpanDecodeError(
        f'{NOT_A_TRACE_EXPORT}: {what}, without resourceSpans (an empty export is {{}} or {{"resourceSpans": []}})'
    )


def spans_from_json(obj: Mapping[str, Any], stats: DecodeStats | None = None) -> list[SpanRecord]:
    """Every span of a decoded OTLP/JSON request, in document order; bad ids are skipped and counted."""
    if not isinstance(obj, Mapping):
        raise SpanDecodeError(f"expected an OTLP/JSON object with resourceSpans, got {type(obj).__name__}")
    out: list[SpanRecord] = []
    for r, item in enumerate(_list(_get(obj, "resourceSpans", "resource_spans"), "resourceSpans")):
        path = f"resourceSpans[{r}]"
        resource_spans = _obj(item, path)
        resource_attrs = _obj(resource_spans.get("resource"), f"{path}.resource").get("attributes")
        resource = _attributes(resource_attrs, f"{path}.resource.attributes")
        for s, scope_spans in enumerate(_list(_get(resource_spans, "scopeSpans", "scope_spans"), f"{path}.scopeSpans")):
            _scope_spans(_obj(scope_spans, f"{path}.scopeSpans[{s}]"), f"{path}.scopeSpans[{s}]", resource, out, stats)
    if stats is not None:
        stats.spans += len(out)
    return out


def _loads(data: bytes | str) -> Any:
    try:
        return json.loads(data)
    except json.JSONDecodeError as exc:
        raise SpanDecodeError(f"invalid JSON: {exc.msg} at column {exc.colno}", line=exc.lineno) from None
    except UnicodeDecodeError as exc:
        raise SpanDecodeError(f"invalid UTF-8 ({exc.reason})", offset=exc.start) from None  # offset: said once
    except RecursionError:
        raise SpanDecodeError("invalid JSON: nested too deeply") from None


def spans_from_json_bytes(data: bytes | str, stats: DecodeStats | None = None) -> list[SpanRecord]:
    """Decode an OTLP/HTTP `application/json` body (or one `.json` document) into span records."""
    return spans_from_json(_loads(data), stats)


def spans_from_json_lines(
    data: bytes | str,
    stats: DecodeStats | None = None,
    errors: list[SpanDecodeError] | None = None,
    read: Callable[[Any], list[SpanRecord]] | None = None,
) -> list[SpanRecord]:
    """One OTLP/JSON request per line, as the Collector's file exporter writes them.

    A bad line (one that is not a `trace_export` too) raises `SpanDecodeError` with its 1-based `line`,
    or, when `errors` is given, is appended there and the other lines are still read. `read` turns one
    line's document into spans (default: `spans_from_json` of a `trace_export`).
    """
    out: list[SpanRecord] = []
    lines: Sequence[bytes | str] = data.split(b"\n") if isinstance(data, bytes) else data.split("\n")
    for line_no, line in enumerate(lines, start=1):  # bytes are decoded line by line: bad UTF-8 costs one line
        if not line.strip():
            continue
        try:
            document = _loads(line)
            out.extend(read(document) if read is not None else spans_from_json(trace_export(document), stats))
        except SpanDecodeError as exc:
            error = SpanDecodeError(exc.message, line=line_no)
            if errors is None:
                raise error from None
            errors.append(error)
    return out


# The field rules of every OTLP/JSON document, shared with the logs reader (`otlp_logs`) rather than copied.
json_field = _get
json_int = _int
json_obj = _obj
json_list = _list
json_attributes = _attributes
json_loads = _loads
