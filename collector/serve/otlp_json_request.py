"""OTLP/JSON body → `ExportTraceServiceRequest`, because the forwarder sends protobuf messages on.

`google.protobuf.json_format` alone cannot read OTLP/JSON: OTLP writes trace and span ids as hex, where
the protobuf JSON mapping expects base64. So the ids are taken out and converted here, and the rest of
each resource, scope, span and link is handed to `json_format` (which accepts lowerCamelCase and
snake_case names, 64-bit integers as strings or numbers, enums as integers or names, and, with
`ignore_unknown_fields`, skips fields it does not know, as the OTLP spec requires of receivers).
Messages are parsed one at a time so that an error names where it is
(`resourceSpans[0].scopeSpans[1].spans[3]: Failed to parse name field ...`).

A malformed document (not JSON, not UTF-8, a field of the wrong type) fails as a whole, like a protobuf
request that does not decode. A span whose ids cannot identify it is left out and counted instead, so
the sender gets a partial success and the other spans of the batch are kept. Link ids are not checked
beyond being hex, as the protobuf path forwards them unchecked: the OTel API records links to an invalid
(all-zero) span context when they carry attributes, and JSON exporters write those ids as zeros. A link
whose id is not hex at all cannot be converted, so that link alone is dropped and said in the answer.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from google.protobuf import json_format
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

from toolscore.collector.serve.otlp_export import BadPayload, check_span_limit
from toolscore.collector.sources.errors import echo
from toolscore.collector.sources.wire import MAX_NESTING

__all__ = ["JsonDecodeResult", "request_from_json"]

_HEX32 = re.compile(r"[0-9a-fA-F]{32}").fullmatch
_HEX16 = re.compile(r"[0-9a-fA-F]{16}").fullmatch
_HEX = re.compile(r"(?:[0-9a-fA-F]{2})*").fullmatch
_MAX_EXAMPLES = 3
_TOO_DEEP = "Message too deep."  # json_format, once the runtime's depth limit is passed
_ID_KEYS = ("traceId", "trace_id", "spanId", "span_id", "parentSpanId", "parent_span_id", "links")


def _summary(count: int, examples: list[str], what: str) -> str:
    more = "" if count <= len(examples) else f"; and {count - len(examples)} more"
    return f"{count} {what}: " + "; ".join(examples) + more


@dataclass
class JsonDecodeResult:
    """The request with every usable span, and what was left out."""

    request: ExportTraceServiceRequest
    rejected_spans: int = 0
    examples: list[str] = field(default_factory=list)
    dropped_links: int = 0
    """Links left out of kept spans (their ids are not hex): a warning in the answer, not a rejected span."""
    link_examples: list[str] = field(default_factory=list)

    def reject(self, detail: str) -> None:
        self.rejected_spans += 1
        if len(self.examples) < _MAX_EXAMPLES:
            self.examples.append(detail)

    def drop_link(self, detail: str) -> None:
        self.dropped_links += 1
        if len(self.link_examples) < _MAX_EXAMPLES:
            self.link_examples.append(detail)

    @property
    def error_message(self) -> str:
        parts = []
        if self.rejected_spans:
            parts.append(_summary(self.rejected_spans, self.examples, "span(s) rejected"))
        if self.dropped_links:
            parts.append(_summary(self.dropped_links, self.link_examples, "link(s) dropped, their spans kept"))
        return "; ".join(parts)


def _get(obj: Mapping[str, Any], camel: str, snake: str) -> Any:
    value = obj.get(camel)
    return obj.get(snake) if value is None else value


def _list(value: Any, path: str) -> list[Any]:
    if value is None:
        return []
    if not isinstance(value, list):
        raise BadPayload(f"expected a list, got {type(value).__name__}", field=path)
    return value


def _obj(value: Any, path: str) -> Mapping[str, Any]:
    if value is None:
        return {}
    if not isinstance(value, Mapping):
        raise BadPayload(f"expected an object, got {type(value).__name__}", field=path)
    return value


def _merge(obj: Mapping[str, Any], message: Any, path: str) -> None:
    try:
        json_format.ParseDict(obj, message, ignore_unknown_fields=True)
    except json_format.ParseError as exc:
        reason = str(exc).rstrip(".")
        if _TOO_DEEP in reason:  # one "Failed to parse ... field:" per level before it: say it once
            first = reason.split(": ", 1)[0]
            reason = f"{first}: messages nested more than {MAX_NESTING} deep, the protobuf runtime's limit"
        raise BadPayload(reason, field=path) from None


def _schema_url(obj: Mapping[str, Any], out: Any, path: str) -> None:
    """Set through `json_format` like the other fields, so that a value that is not a string, or holds a
    lone surrogate (which a protobuf string cannot), is refused naming the field rather than converted."""
    value = _get(obj, "schemaUrl", "schema_url")
    if value is not None:
        _merge({"schemaUrl": value}, out, path)


def _id(value: Any, name: str, *, hex_len: int, optional: bool = False) -> bytes | str:
    """The id's bytes, or why it cannot identify a span (OTLP/JSON ids are hex, not base64)."""
    if optional and not value:
        return b""
    match = _HEX32 if hex_len == 32 else _HEX16
    if not isinstance(value, str) or not match(value):
        return f"{name} {echo(value)} is not {hex_len} hex digits (OTLP/JSON ids are hex, not base64)"
    if not optional and value.strip("0") == "":
        return f"{name} {echo(value)} is all zeros, which is not a valid id"
    return bytes.fromhex(value)


def _link_id(value: Any, name: str) -> bytes | str:
    """The bytes of a link's id, unchecked as the protobuf path leaves them, or why it has none (not hex)."""
    if not value:
        return b""
    if isinstance(value, str) and _HEX(value):
        return bytes.fromhex(value)
    return f"{name} {echo(value)} is not hex (OTLP/JSON ids are hex, not base64)"


def _named(path: str, name: Any) -> str:
    """A span's place, and its name when it has one (a span without one is not called `None`)."""
    return path if name is None else f"{path} {echo(name)}"


def _span(span: Any, path: str, out: Any, result: JsonDecodeResult) -> str | None:
    """Fill `out` from one OTLP/JSON span; the reason it is rejected, or None."""
    span = _obj(span, path)
    trace_id = _id(_get(span, "traceId", "trace_id"), "traceId", hex_len=32)
    span_id = _id(_get(span, "spanId", "span_id"), "spanId", hex_len=16)
    parent_id = _id(_get(span, "parentSpanId", "parent_span_id"), "parentSpanId", hex_len=16, optional=True)
    for value in (trace_id, span_id, parent_id):
        if isinstance(value, str):
            return value
    _merge({k: v for k, v in span.items() if k not in _ID_KEYS}, out, path)
    out.trace_id, out.span_id, out.parent_span_id = trace_id, span_id, parent_id
    for i, item in enumerate(_list(span.get("links"), f"{path}.links")):
        link = _obj(item, f"{path}.links[{i}]")
        link_trace = _link_id(_get(link, "traceId", "trace_id"), f"links[{i}].traceId")
        link_span = _link_id(_get(link, "spanId", "span_id"), f"links[{i}].spanId")
        problem = next((value for value in (link_trace, link_span) if isinstance(value, str)), None)
        if problem is not None:
            result.drop_link(f"{_named(path, span.get('name'))}: {problem}")
            continue
        out_link = out.links.add()
        _merge({k: v for k, v in link.items() if k not in _ID_KEYS}, out_link, f"{path}.links[{i}]")
        out_link.trace_id, out_link.span_id = link_trace, link_span
    return None


def _scope_spans(scope_spans: Any, path: str, out: Any, result: JsonDecodeResult) -> None:
    scope_spans = _obj(scope_spans, path)
    _merge(_obj(scope_spans.get("scope"), f"{path}.scope"), out.scope, f"{path}.scope")
    _schema_url(scope_spans, out, path)
    for i, span in enumerate(_list(scope_spans.get("spans"), f"{path}.spans")):
        out_span = out.spans.add()
        reason = _span(span, f"{path}.spans[{i}]", out_span, result)
        if reason is not None:
            del out.spans[-1]
            name = span.get("name") if isinstance(span, Mapping) else None
            result.reject(f"{_named(f'{path}.spans[{i}]', name)}: {reason}")


def _document(data: bytes) -> Any:
    try:
        return json.loads(data)
    except UnicodeDecodeError as exc:  # BadPayload puts the offset first: the message does not repeat it
        raise BadPayload(f"invalid UTF-8 ({exc.reason}): OTLP/JSON must be UTF-8", offset=exc.start) from None
    except json.JSONDecodeError as exc:
        at = f" at line {exc.lineno} column {exc.colno}" if exc.lineno > 1 else ""  # line 1: the offset says it
        raise BadPayload(f"invalid JSON: {exc.msg}{at}", offset=exc.pos) from None
    except RecursionError:
        raise BadPayload("invalid JSON: nested too deeply") from None


def _counts(document: Mapping[str, Any]) -> tuple[int, int]:
    """(spans, resource and scope blocks) of a parsed document, skipping what is malformed (named later)."""
    spans = blocks = 0
    resources = _get(document, "resourceSpans", "resource_spans")
    for resource_spans in resources if isinstance(resources, list) else ():
        scopes = _get(resource_spans, "scopeSpans", "scope_spans") if isinstance(resource_spans, Mapping) else None
        for scope_spans in scopes if isinstance(scopes, list) else ():
            found = scope_spans.get("spans") if isinstance(scope_spans, Mapping) else None
            spans += len(found) if isinstance(found, list) else 0
        blocks += 1 + (len(scopes) if isinstance(scopes, list) else 0)
    return spans, blocks


def request_from_json(data: bytes, max_spans: int | None = None) -> JsonDecodeResult:
    """Decode an OTLP/HTTP `application/json` body; raises `BadPayload` naming what is wrong and where.

    `max_spans`: refuse a document of more spans (or blocks) before a message is built for any of them.
    """
    document = _obj(_document(data) if data.strip() else {}, "(document)")
    if max_spans is not None:
        check_span_limit(*_counts(document), max_spans)
    result = JsonDecodeResult(ExportTraceServiceRequest())
    for r, item in enumerate(_list(_get(document, "resourceSpans", "resource_spans"), "resourceSpans")):
        path = f"resourceSpans[{r}]"
        resource_spans = _obj(item, path)
        out = result.request.resource_spans.add()
        _merge(_obj(resource_spans.get("resource"), f"{path}.resource"), out.resource, f"{path}.resource")
        _schema_url(resource_spans, out, path)
        scopes = _list(_get(resource_spans, "scopeSpans", "scope_spans"), f"{path}.scopeSpans")
        for s, scope_spans in enumerate(scopes):
            _scope_spans(scope_spans, f"{path}.scopeSpans[{s}]", out.scope_spans.add(), result)
    return result
