"""The field rules every OTLP/JSON document follows, whatever its signal: one place for the span reader
(`otlp_json`), the logs reader (`otlp_logs`) and the receivers (`serve.otlp_json_request`, `serve.otlp_logs_export`).

The encoding is the protobuf JSON mapping with OTLP's exceptions (ids are hex: `otlp_json_ids`; enums are
integers). As the OTLP spec allows for receivers, field names are accepted in lowerCamelCase and in the
proto's snake_case, 64-bit integers as JSON strings or numbers, and enums also by name. Errors raise
`SpanDecodeError` with the path of the bad field (`resourceSpans[0].scopeSpans[1].spans[3].kind`).
"""

from __future__ import annotations

import base64
import binascii
import json
from collections.abc import Mapping
from typing import Any, Literal

from toolscore.collector.sources.errors import MAX_ECHO_CHARS, SpanDecodeError, capped
from toolscore.collector.sources.wire import MAX_NESTING

__all__ = [
    "ATTRIBUTE_VALUE_DEPTH",
    "decode_json_any_value",
    "json_attributes",
    "json_counts",
    "json_field",
    "json_int",
    "json_list",
    "json_loads",
    "json_obj",
]

ATTRIBUTE_VALUE_DEPTH = 3
"""How deep a span's attribute value sits among protobuf messages (Span > KeyValue > AnyValue), as the
protobuf runtime counts toward `MAX_NESTING` when it parses the span."""


def json_field(obj: Mapping[str, Any], camel: str, snake: str) -> Any:
    """`obj[camel]`, or `obj[snake]` when the lowerCamelCase name is absent (the spec accepts both)."""
    value = obj.get(camel)
    return obj.get(snake) if value is None else value


def json_int(value: Any, path: str, enums: Mapping[str, int] | None = None) -> int:
    """An integer field: a JSON number, a decimal string (64-bit values), or an enum's name; absent is 0."""
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
    raise SpanDecodeError(f"expected an integer, got {value!r}", field=path)


def json_obj(value: Any, path: str) -> Mapping[str, Any]:
    """An object field; absent (or null) is empty."""
    if value is None:
        return {}
    if not isinstance(value, Mapping):
        raise SpanDecodeError(f"expected an object, got {type(value).__name__}", field=path)
    return value


def json_list(value: Any, path: str) -> list[Any]:
    """A repeated field; absent (or null) is empty."""
    if value is None:
        return []
    if not isinstance(value, list):
        raise SpanDecodeError(f"expected a list, got {type(value).__name__}", field=path)
    return value


def _bytes(value: Any, path: str) -> bytes:
    """Proto JSON bytes: standard or URL-safe base64, padding optional."""
    if not isinstance(value, str):
        raise SpanDecodeError(f"expected a base64 string, got {type(value).__name__}", field=path)
    text = value.replace("-", "+").replace("_", "/")
    try:
        return base64.b64decode(text + "=" * (-len(text) % 4), validate=True)
    except binascii.Error:
        raise SpanDecodeError(f"not valid base64: {value[:40]!r}", field=path) from None


def decode_json_any_value(value: Any, path: str = "value", depth: int = ATTRIBUTE_VALUE_DEPTH) -> Any:
    """An OTLP/JSON `AnyValue` as a plain Python value; an empty or unknown value decodes to None.

    `depth`: the value's message depth, so that a value nested past `MAX_NESTING` is refused as the
    protobuf runtime refuses it in a request body (a kvlist adds three levels, an array two)."""
    if not isinstance(value, Mapping):
        raise SpanDecodeError(f"expected an AnyValue object, got {type(value).__name__}", field=path)
    if depth > MAX_NESTING:
        reason = f"values nested more than {MAX_NESTING} messages deep, the protobuf runtime's limit"
        raise SpanDecodeError(reason, field=capped(path, MAX_ECHO_CHARS * 2))
    for key, inner in value.items():
        if key in ("stringValue", "string_value"):
            if not isinstance(inner, str):
                raise SpanDecodeError(f"expected a string, got {type(inner).__name__}", field=f"{path}.{key}")
            return inner
        if key in ("intValue", "int_value"):
            return json_int(inner, f"{path}.{key}")
        if key in ("boolValue", "bool_value"):
            if type(inner) is not bool:
                raise SpanDecodeError(f"expected true or false, got {inner!r}", field=f"{path}.{key}")
            return inner
        if key in ("doubleValue", "double_value"):
            try:
                return float(inner)
            except (TypeError, ValueError):
                raise SpanDecodeError(f"expected a number, got {inner!r}", field=f"{path}.{key}") from None
        if key in ("bytesValue", "bytes_value"):
            return _bytes(inner, f"{path}.{key}")
        if key in ("arrayValue", "array_value"):
            items = json_list(inner.get("values") if isinstance(inner, Mapping) else inner, f"{path}.{key}.values")
            return [decode_json_any_value(item, f"{path}.{key}.values[{i}]", depth + 2) for i, item in enumerate(items)]
        if key in ("kvlistValue", "kvlist_value"):
            pairs = json_list(inner.get("values") if isinstance(inner, Mapping) else inner, f"{path}.{key}.values")
            return json_attributes(pairs, f"{path}.{key}.values", depth + 3)
    return None


def json_attributes(key_values: Any, path: str, depth: int = ATTRIBUTE_VALUE_DEPTH) -> dict[str, Any]:
    """A `repeated KeyValue` as a dict; `depth`: that of its values (see `decode_json_any_value`)."""
    out: dict[str, Any] = {}
    for i, kv in enumerate(json_list(key_values, path)):
        if not isinstance(kv, Mapping) or not isinstance(kv.get("key"), str):
            raise SpanDecodeError("expected a {key, value} object with a string key", field=f"{path}[{i}]")
        value = kv.get("value")
        if type(value) is dict:
            text = value.get("stringValue")
            if type(text) is str:
                out[kv["key"]] = text
                continue
        out[kv["key"]] = None if value is None else decode_json_any_value(value, f"{path}[{i}].value", depth)
    return out


def json_loads(data: bytes | str, locate: Literal["line", "byte"] = "line") -> Any:
    """The JSON document in `data`; a `SpanDecodeError` saying what is wrong and where.

    `locate`: a syntax error by its line and column (files, JSON Lines), or by its byte (a request body,
    whose sender counts bytes; the line is added when it is not the first).
    """
    try:
        return json.loads(data)
    except json.JSONDecodeError as exc:
        if locate == "line":
            raise SpanDecodeError(f"invalid JSON: {exc.msg} at column {exc.colno}", line=exc.lineno) from None
        at = f" at line {exc.lineno} column {exc.colno}" if exc.lineno > 1 else ""  # line 1: the offset says it
        raise SpanDecodeError(f"invalid JSON: {exc.msg}{at}", offset=exc.pos) from None
    except UnicodeDecodeError as exc:  # the offset is said once, before the message
        raise SpanDecodeError(f"invalid UTF-8 ({exc.reason}): OTLP/JSON must be UTF-8", offset=exc.start) from None
    except RecursionError:
        raise SpanDecodeError("invalid JSON: nested too deeply") from None


def json_counts(
    document: Mapping[str, Any], outer: tuple[str, str], inner: tuple[str, str], leaf: tuple[str, str]
) -> tuple[int, int]:
    """(records, resource and scope blocks) of a parsed export, skipping what is malformed (named when read),
    for a receiver's `max_spans_per_request` before it builds anything: `outer`, `inner`, `leaf` are the
    (camel, snake) names of the resource blocks, their scope blocks and the records (spans, log records)."""
    records = blocks = 0
    resources = json_field(document, *outer)
    for resource in resources if isinstance(resources, list) else ():
        scopes = json_field(resource, *inner) if isinstance(resource, Mapping) else None
        for scope in scopes if isinstance(scopes, list) else ():
            found = json_field(scope, *leaf) if isinstance(scope, Mapping) else None
            records += len(found) if isinstance(found, list) else 0
        blocks += 1 + (len(scopes) if isinstance(scopes, list) else 0)
    return records, blocks
