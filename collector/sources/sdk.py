"""OpenTelemetry SDK `ReadableSpan` → `SpanRecord`, for the in-process span processor.

The records equal what the same spans give after an OTLP round trip: span kinds use the OTLP
numbering (the SDK's `SpanKind` starts at INTERNAL = 0, OTLP at UNSPECIFIED = 0), and attribute
sequences, which the SDK freezes into tuples, become lists. Resource attributes are converted once
per `Resource` object (one per provider, in practice) and the dict is shared by its spans.
"""

from __future__ import annotations

import threading
from collections.abc import Mapping, Sequence
from typing import Any

from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import ReadableSpan

from toolscore.collector.sources.errors import DecodeStats
from toolscore.collector.spans import SpanEvent, SpanRecord

__all__ = ["spans_from_readable"]

_RESOURCE_CACHE_SIZE = 32
"""Resources whose converted attributes are kept; a process rarely has more than one or two."""

_resource_cache: dict[int, tuple[Resource, dict[str, Any]]] = {}
_resource_lock = threading.Lock()


def _plain(attributes: Mapping[str, Any] | None) -> dict[str, Any]:
    # The SDK stores sequence values as tuples; OTLP decoding (and JSON) gives lists.
    if not attributes:
        return {}
    return {key: list(value) if type(value) is tuple else value for key, value in attributes.items()}


def _resource_attributes(resource: Resource | None) -> dict[str, Any]:
    """Converted once per Resource object; the entry keeps the Resource alive so its id stays unique."""
    if resource is None:
        return {}
    cached = _resource_cache.get(id(resource))
    if cached is not None and cached[0] is resource:
        return cached[1]
    converted = _plain(resource.attributes)
    with _resource_lock:
        if len(_resource_cache) >= _RESOURCE_CACHE_SIZE:
            _resource_cache.clear()
        _resource_cache[id(resource)] = (resource, converted)
    return converted


def spans_from_readable(spans: Sequence[ReadableSpan], stats: DecodeStats | None = None) -> list[SpanRecord]:
    """Records for finished SDK spans; spans without a valid context are skipped and counted."""
    out: list[SpanRecord] = []
    for span in spans:
        context = span.context
        if context is None or not context.trace_id or not context.span_id:
            if stats is not None:
                stats.skip("bad_span_id", f"span {span.name!r} has no valid span context")
            continue
        parent = span.parent
        status = span.status
        scope = span.instrumentation_scope
        out.append(
            SpanRecord(
                f"{context.trace_id:032x}",
                f"{context.span_id:016x}",
                f"{parent.span_id:016x}" if parent is not None else None,
                span.name,
                span.kind.value + 1,
                span.start_time or 0,
                span.end_time or 0,
                status.status_code.value,
                status.description or "",
                _plain(span.attributes),
                [SpanEvent(e.name, e.timestamp, _plain(e.attributes)) for e in span.events] if span.events else [],
                _resource_attributes(span.resource),
                scope.name if scope is not None else "",
            )
        )
    if stats is not None:
        stats.spans += len(out)
    return out
