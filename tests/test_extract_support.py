"""Tiny span builders for the extraction tests: real OTel SDK spans at a fixed epoch.

`Traces` records spans through a real `TracerProvider` into an `InMemorySpanExporter`, and
`records()` converts them with the real `spans_from_readable`, as the in-process processor does.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from opentelemetry import trace
from opentelemetry.context import Context
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import NonRecordingSpan, Span, SpanContext, SpanKind, Status, StatusCode, TraceFlags

from toolscore.collector.sources import spans_from_readable
from toolscore.collector.spans import SpanRecord

EPOCH_NS = 1_700_000_000_000_000_000
"""Every builder time is milliseconds after this instant."""


def ms(value: float) -> int:
    return EPOCH_NS + int(value * 1_000_000)


class Traces:
    """Spans recorded by the real SDK; each `span()` starts and ends one span at given times."""

    def __init__(self, service: str = "extract-tests") -> None:
        self.exporter = InMemorySpanExporter()
        self.provider = TracerProvider(resource=Resource.create({"service.name": service}))
        self.provider.add_span_processor(SimpleSpanProcessor(self.exporter))

    def span(
        self,
        name: str,
        attrs: Mapping[str, Any] | None = None,
        *,
        parent: Span | None = None,
        start: float = 0,
        end: float | None = None,
        scope: str = "tests",
        error: str | None = None,
        events: Sequence[tuple[str, Mapping[str, Any]]] = (),
        kind: SpanKind = SpanKind.INTERNAL,
    ) -> Span:
        context = trace.set_span_in_context(parent) if parent is not None else Context()
        tracer = self.provider.get_tracer(scope)
        span = tracer.start_span(name, context=context, kind=kind, attributes=dict(attrs or {}), start_time=ms(start))
        for event_name, event_attrs in events:
            span.add_event(event_name, dict(event_attrs), timestamp=ms(start))
        if error is not None:
            span.set_status(Status(StatusCode.ERROR, error))
        span.end(end_time=ms(end if end is not None else start + 1))
        return span

    def records(self) -> list[SpanRecord]:
        return spans_from_readable(self.exporter.get_finished_spans())


def missing_parent(trace_of: Span, span_id: int = 0xDEAD) -> Span:
    """A parent that never arrives: same trace as `trace_of`, a span id no exported span has."""
    context = SpanContext(trace_of.get_span_context().trace_id, span_id, True, TraceFlags(1))
    return NonRecordingSpan(context)


def hex_id(span: Span) -> str:
    return format(span.get_span_context().span_id, "016x")


def genai_run(agent: str) -> dict[str, Any]:
    return {"gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": agent}


def genai_tool(name: str, call_id: str | None = None, args: Any = "{}") -> dict[str, Any]:
    attrs: dict[str, Any] = {"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": name}
    if call_id is not None:
        attrs["gen_ai.tool.call.id"] = call_id
    if args is not None:
        attrs["gen_ai.tool.call.arguments"] = args if isinstance(args, str) else json.dumps(args)
    return attrs


def genai_chat(*calls: tuple[str, str, dict[str, Any]]) -> dict[str, Any]:
    """An inference span whose response issued `(call_id, name, args)` calls, in this order."""
    parts = [{"type": "tool_call", "id": cid, "name": name, "arguments": args} for cid, name, args in calls]
    return {
        "gen_ai.operation.name": "chat",
        "gen_ai.output.messages": json.dumps([{"role": "assistant", "parts": parts}]),
    }


def test_builder_places_spans_at_the_fixed_epoch() -> None:
    traces = Traces()
    root = traces.span("root", start=5, end=7)
    traces.span("child", parent=root, start=6)

    records = {r.name: r for r in traces.records()}

    assert (records["root"].start_ns, records["root"].end_ns) == (ms(5), ms(7))
    assert records["child"].parent_id == hex_id(root)
    assert records["child"].trace_id == records["root"].trace_id
