"""OTLP/JSON body → `ExportTraceServiceRequest`, because the forwarder sends protobuf messages on.

The document is read by the one OTLP/JSON trace reader (`sources.otlp_json.read_trace_json`), as a trace
file is: the same walk, the same id rule (hex, or the protobuf JSON mapping's base64: `otlp_json_ids`),
the same spans left out, the same errors naming the field. This module is its sink that builds the
protobuf request: each resource, scope, span and link, without its ids, is handed to `json_format`
(which accepts lowerCamelCase and snake_case names, 64-bit integers as strings or numbers, enums as
integers or names, and, with `ignore_unknown_fields`, skips fields it does not know, as the OTLP spec
requires of receivers), so that every field is forwarded, not only those toolscore reads.

A malformed document (not JSON, not UTF-8, a field of the wrong type) fails as a whole, like a protobuf
request that does not decode. A span whose ids cannot identify it is left out and counted instead, so
the sender gets a partial success and the other spans of the batch are kept. Link ids are not checked
beyond being ids at all, as the protobuf path forwards them unchecked: the OTel API records links to an
invalid (all-zero) span context when they carry attributes, and JSON exporters write those ids as zeros.
A link whose id is not one at all cannot be converted, so that link alone is dropped and said in the answer.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from google.protobuf import json_format
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

from toolscore.collector.serve.receivers._otlp_export import BadPayload, check_span_limit
from toolscore.collector.sources.errors import SpanDecodeError, echo
from toolscore.collector.sources.otlp_json import SPAN_BLOCKS, SpanIds, read_trace_json
from toolscore.collector.sources.otlp_json_ids import id_problem, json_link_id
from toolscore.collector.sources.otlp_json_values import json_counts, json_field, json_list, json_loads, json_obj
from toolscore.collector.sources.wire import MAX_NESTING

__all__ = ["JsonDecodeResult", "request_from_json"]

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
    """Links left out of kept spans (their ids are no ids): a warning in the answer, not a rejected span."""
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


def _merge(obj: Mapping[str, Any], message: Any, path: str) -> None:
    try:
        json_format.ParseDict(obj, message, ignore_unknown_fields=True)
    except json_format.ParseError as exc:
        reason = str(exc).rstrip(".")
        if _TOO_DEEP in reason:  # one "Failed to parse ... field:" per level before it: say it once
            first = reason.split(": ", 1)[0]
            reason = f"{first}: messages nested more than {MAX_NESTING} deep, the protobuf runtime's limit"
        raise SpanDecodeError(reason, field=path) from None


def _schema_url(obj: Mapping[str, Any], out: Any, path: str) -> None:
    """Set through `json_format` like the other fields, so that a value that is not a string, or holds a
    lone surrogate (which a protobuf string cannot), is refused naming the field rather than converted."""
    value = json_field(obj, "schemaUrl", "schema_url")
    if value is not None:
        _merge({"schemaUrl": value}, out, path)


def _named(path: str, name: Any) -> str:
    return path if name is None else f"{path} {echo(name)}"


class _RequestSink:
    """Builds the request from what `read_trace_json` accepts; the left-out spans and links go to `result`."""

    def __init__(self) -> None:
        self.result = JsonDecodeResult(ExportTraceServiceRequest())
        self._resource: Any = None
        self._scope: Any = None

    def resource(self, block: Mapping[str, Any], path: str) -> None:
        self._resource = self.result.request.resource_spans.add()
        _merge(json_obj(block.get("resource"), f"{path}.resource"), self._resource.resource, f"{path}.resource")
        _schema_url(block, self._resource, path)

    def scope(self, block: Mapping[str, Any], path: str) -> None:
        self._scope = self._resource.scope_spans.add()
        _merge(json_obj(block.get("scope"), f"{path}.scope"), self._scope.scope, f"{path}.scope")
        _schema_url(block, self._scope, path)

    def span(self, span: Mapping[str, Any], ids: SpanIds, path: str) -> None:
        out = self._scope.spans.add()
        _merge({k: v for k, v in span.items() if k not in _ID_KEYS}, out, path)
        out.trace_id, out.span_id = bytes.fromhex(ids.trace), bytes.fromhex(ids.span)
        out.parent_span_id = bytes.fromhex(ids.parent)
        for i, item in enumerate(json_list(span.get("links"), f"{path}.links")):
            link = json_obj(item, f"{path}.links[{i}]")
            problem = None
            link_ids = []
            for name, snake, size in (("traceId", "trace_id", 16), ("spanId", "span_id", 8)):
                value = json_field(link, name, snake)
                read = json_link_id(value, size) if value else b""
                if read is None:
                    problem = problem or id_problem(f"links[{i}].{name}", echo(value))
                link_ids.append(read)
            if problem is not None:
                self.result.drop_link(f"{_named(path, span.get('name'))}: {problem}")
                continue
            out_link = out.links.add()
            _merge({k: v for k, v in link.items() if k not in _ID_KEYS}, out_link, f"{path}.links[{i}]")
            out_link.trace_id, out_link.span_id = link_ids

    def reject(self, reason: str, detail: str) -> None:
        self.result.reject(detail)


def request_from_json(data: bytes, max_spans: int | None = None) -> JsonDecodeResult:
    """Decode an OTLP/HTTP `application/json` body; raises `BadPayload` naming what is wrong and where.

    `max_spans`: refuse a document of more spans (or blocks) before a message is built for any of them.
    """
    try:
        document = json_obj(json_loads(data, locate="byte") if data.strip() else {}, "(document)")
        if max_spans is not None:
            check_span_limit(*json_counts(document, *SPAN_BLOCKS), max_spans)
        sink = _RequestSink()
        read_trace_json(document, sink)
    except SpanDecodeError as exc:
        raise BadPayload(exc.reason, field=exc.field, offset=exc.offset) from None
    return sink.result
