"""OpenTelemetry SDK `ReadableSpan` → `SpanRecord`, for the in-process span processor.

The records equal what the same spans give after an OTLP round trip: span kinds use the OTLP
numbering (the SDK's `SpanKind` starts at INTERNAL = 0, OTLP at UNSPECIFIED = 0), and attribute
sequences, which the SDK freezes into tuples, become lists. Resource attributes are converted once
per `Resource` object (one per provider, in practice) and the dict is shared by its spans.

`record_from_readable` runs on the in-process pipeline's worker for every span an application ends,
so it reads an ended span's attributes straight from the SDK's own dict: `span.attributes` wraps it in
a `BoundedAttributes` mapping whose items are fetched one Python call at a time, several times the
cost of the C-level copy that suffices when no value is a sequence.
"""

from __future__ import annotations

import threading
from collections.abc import Mapping, Sequence
from typing import Any

from opentelemetry.attributes import BoundedAttributes
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.trace import SpanKind, StatusCode

from toolscore.collector.forks import on_fork
from toolscore.collector.sources.errors import DecodeStats
from toolscore.collector.spans import SpanEvent, SpanRecord

__all__ = ["frozen_attributes", "record_from_readable", "resource_attributes", "spans_from_readable"]

_RESOURCE_CACHE_SIZE = 32
"""Resources whose converted attributes are kept; a process rarely has more than one or two."""

_resource_cache: dict[int, tuple[Resource, dict[str, Any]]] = {}
_resource_lock = threading.Lock()


def _after_fork() -> None:
    global _resource_lock  # noqa: PLW0603 - a forked child's lock may be held by a thread it does not have
    _resource_lock = threading.Lock()


on_fork(after_in_child=_after_fork)


def _plain(attributes: Mapping[str, Any] | None) -> dict[str, Any]:
    # The SDK stores sequence values as tuples; OTLP decoding (and JSON) gives lists.
    if not attributes:
        return {}
    return {key: list(value) if type(value) is tuple else value for key, value in attributes.items()}


_OTLP_KIND = {id(kind): kind.value + 1 for kind in SpanKind}
"""SDK `SpanKind` → OTLP number, by the member's id: an enum member hashes through `Enum.__hash__`, a Python call."""
_STATUS_CODE = {id(code): code.value for code in StatusCode}

_last_trace: tuple[int, str] = (0, "")
"""The last trace id converted and its hex: a trace's spans mostly end one after another. One tuple, replaced
whole, so a thread reading it never sees one trace's id beside another's hex."""


def frozen_attributes(span: ReadableSpan) -> dict[str, Any] | None:
    """The SDK's own attribute dict of an ended span (frozen from then on); None for any other span.

    Read-only: it belongs to the span. Reading it directly skips `BoundedAttributes`' Python-level
    item access, which costs more than the rest of a span's conversion.
    """
    held = getattr(span, "_attributes", None)
    if type(held) is BoundedAttributes and getattr(held, "_immutable", False):
        values = getattr(held, "_dict", None)
        if type(values) is dict:
            return values
    return None


def _span_attributes(span: ReadableSpan) -> dict[str, Any]:
    """`_plain(span.attributes)`, copied at C speed when nothing needs converting."""
    values = frozen_attributes(span)
    if values is None:
        return _plain(span.attributes)
    if tuple in map(type, values.values()):
        return {key: list(value) if type(value) is tuple else value for key, value in values.items()}
    return values.copy()


def resource_attributes(resource: Resource | None) -> dict[str, Any]:
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


def record_from_readable(span: ReadableSpan) -> SpanRecord | None:
    """The record of one finished SDK span; None when it has no valid span context.

    A span the SDK ended is an exact `ReadableSpan`, whose fields are read directly: its properties
    copy (`events` builds a tuple through `BoundedList`'s Python iterator) and cost more than the
    rest of the conversion. Any other implementation goes through the public properties.
    """
    if type(span) is ReadableSpan:
        context, parent, status, scope = span._context, span._parent, span._status, span._instrumentation_scope
        events: Sequence[Any] = span._events or ()
        name, kind, start, end, resource = span._name, span._kind, span._start_time, span._end_time, span._resource
    else:
        context, parent, status, scope = span.context, span.parent, span.status, span.instrumentation_scope
        events = span.events
        name, kind, start, end, resource = span.name, span.kind, span.start_time, span.end_time, span.resource
    if context is None or not context.trace_id or not context.span_id:
        return None
    global _last_trace  # noqa: PLW0603 - a cache of one entry, replaced whole
    trace_id, last = context.trace_id, _last_trace
    if last[0] == trace_id:
        trace_hex = last[1]
    else:
        trace_hex = f"{trace_id:032x}"
        _last_trace = (trace_id, trace_hex)
    return SpanRecord(
        trace_hex,
        f"{context.span_id:016x}",
        f"{parent.span_id:016x}" if parent is not None else None,
        name,
        _OTLP_KIND[id(kind)],
        start or 0,
        end or 0,
        _STATUS_CODE[id(status.status_code)],
        status.description or "",
        _span_attributes(span),
        tuple([SpanEvent(e.name, e.timestamp, _plain(e.attributes)) for e in events]) if events else (),
        resource_attributes(resource),
        scope.name if scope is not None else "",
    )


def spans_from_readable(spans: Sequence[ReadableSpan], stats: DecodeStats | None = None) -> list[SpanRecord]:
    """Records for finished SDK spans; spans without a valid context are skipped and counted."""
    out: list[SpanRecord] = []
    for span in spans:
        record = record_from_readable(span)
        if record is None:
            if stats is not None:
                stats.skip("bad_span_id", f"span {span.name!r} has no valid span context")
            continue
        out.append(record)
    if stats is not None:
        stats.spans += len(out)
    return out
