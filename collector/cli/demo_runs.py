"""The agent runs `toolscore demo` sends: GenAI-convention spans made with the real OpenTelemetry SDK.

Each run is an `invoke_agent` span holding one `chat` span per model step (its `gen_ai.output.messages`
lists the tool calls the model issued) and one `execute_tool` span per call. Calls issued in the same
step run in parallel (same start time); a call may invoke another agent, whose run nests under the
`execute_tool` span. The runs match `deploy/expectations/demo.yaml`: some pass, some fail.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass, field
from typing import Any

from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import SpanKind, Tracer, use_span

__all__ = ["DEMO_RUNS", "DEMO_SERVICE", "DemoCall", "DemoRun", "make_demo_spans"]

DEMO_SERVICE = "toolscore-demo"
_MS = 1_000_000


@dataclass(frozen=True)
class DemoCall:
    """One tool call; `agent` makes the tool invoke that agent (a nested run)."""

    tool: str
    args: dict[str, Any]
    result: Any = "ok"
    agent: DemoRun | None = None


@dataclass(frozen=True)
class DemoRun:
    """An agent run: `steps` are model turns, each issuing its calls in parallel."""

    title: str
    agent: str
    prompt: str
    steps: tuple[tuple[DemoCall, ...], ...]
    answer: str = "Done."
    nested: tuple[str, ...] = field(default=())


_BOOKING = DemoRun(
    "booking delegated by the planner",
    "demo-travel-agent",
    "Book the SFO to JFK flight on May 4",
    (
        (DemoCall("search_flights", {"origin": "SFO", "destination": "JFK", "date": "2026-05-04"}, ["UA 123"]),),
        (DemoCall("book_flight", {"flight_id": "UA 123"}, {"confirmation": "K7Q2"}),),
    ),
)

DEMO_RUNS: tuple[DemoRun, ...] = (
    DemoRun(
        "right: search, then book",
        "demo-travel-agent",
        "Book me a flight from SFO to JFK on May 4",
        _BOOKING.steps,
        "Booked UA 123, confirmation K7Q2.",
    ),
    DemoRun(
        "wrong: searched the wrong destination",
        "demo-travel-agent",
        "Book me a flight from SFO to JFK on May 4",
        (
            (DemoCall("search_flights", {"origin": "SFO", "destination": "LAX", "date": "2026-05-04"}, ["AA 9"]),),
            (DemoCall("book_flight", {"flight_id": "AA 9"}, {"confirmation": "Z1"}),),
        ),
        "Booked AA 9.",
    ),
    DemoRun(
        "wrong: looked for hotels, booked nothing",
        "demo-travel-agent",
        "Book me a flight from SFO to JFK on May 4",
        ((DemoCall("search_hotels", {"city": "New York"}, ["The Jane"]),),),
        "Here are some hotels in New York.",
    ),
    DemoRun(
        "right: two cities looked up in parallel",
        "demo-weather-agent",
        "What's the weather in Paris and in Tokyo?",
        (
            (
                DemoCall("get_weather", {"city": "Paris"}, "14C rain"),
                DemoCall("get_weather", {"city": "Tokyo"}, "22C sun"),
            ),
        ),
        "Paris: 14C and rain. Tokyo: 22C and sunny.",
    ),
    DemoRun(
        "wrong: forgot Tokyo",
        "demo-weather-agent",
        "What's the weather in Paris and in Tokyo?",
        ((DemoCall("get_weather", {"city": "Paris"}, "14C rain"),),),
        "Paris: 14C and rain.",
    ),
    DemoRun(
        "right: checks the calendar, then delegates the booking",
        "demo-trip-planner",
        "Plan my New York trip in May",
        (
            (DemoCall("check_calendar", {"month": "2026-05"}, {"free": ["2026-05-04"]}),),
            (DemoCall("delegate_booking", {"request": _BOOKING.prompt}, "booked", agent=_BOOKING),),
        ),
        "You fly on May 4; the flight is booked.",
        nested=(_BOOKING.title,),
    ),
)


def _object(required: tuple[str, ...], **properties: dict[str, Any]) -> dict[str, Any]:
    return {"type": "object", "properties": properties, "required": list(required), "additionalProperties": False}


_STRING = {"type": "string"}
_PARAMETERS: dict[str, dict[str, Any]] = {
    "search_flights": _object(("origin", "destination"), origin=_STRING, destination=_STRING, date=_STRING),
    "book_flight": _object(("flight_id",), flight_id=_STRING),
    "search_hotels": _object(("city",), city=_STRING),
    "get_weather": _object(("city",), city=_STRING),
    "check_calendar": _object(("month",), month=_STRING),
    "delegate_booking": _object(("request",), request=_STRING),
}
"""Each demo tool's JSON Schema, as a framework tells the model (`args_valid` reads them from the trace)."""

_AGENT_TOOLS = {
    "demo-travel-agent": ("search_flights", "book_flight", "search_hotels"),
    "demo-weather-agent": ("get_weather",),
    "demo-trip-planner": ("check_calendar", "delegate_booking"),
}


def _definitions(agent: str) -> str:
    """`gen_ai.tool.definitions`: the tools the agent's model is offered."""
    tools = _AGENT_TOOLS.get(agent, ())
    return json.dumps([{"type": "function", "name": name, "parameters": _PARAMETERS[name]} for name in tools])


def _messages(role: str, parts: list[dict[str, Any]]) -> str:
    return json.dumps([{"role": role, "parts": parts}])


def _chat(tracer: Tracer, t: int, calls: tuple[DemoCall, ...], step: int, run: DemoRun) -> int:
    parts: list[dict[str, Any]] = [
        {"type": "tool_call", "id": f"call_{step}_{i}", "name": c.tool, "arguments": c.args}
        for i, c in enumerate(calls)
    ] or [{"type": "text", "content": run.answer}]
    span = tracer.start_span("chat gpt-4.1", kind=SpanKind.CLIENT, start_time=t)
    span.set_attributes(
        {
            "gen_ai.operation.name": "chat",
            "gen_ai.provider.name": "openai",
            "gen_ai.request.model": "gpt-4.1",
            "gen_ai.output.messages": _messages("assistant", parts),
            "gen_ai.response.finish_reasons": ["tool_calls" if calls else "stop"],
            "gen_ai.tool.definitions": _definitions(run.agent),
        }
    )
    span.end(end_time=t + 300 * _MS)
    return t + 300 * _MS


def _tool(tracer: Tracer, t: int, call: DemoCall, call_id: str) -> int:
    """One `execute_tool` span starting at `t`; returns when it ends (after a nested run, if any)."""
    span = tracer.start_span(f"execute_tool {call.tool}", kind=SpanKind.INTERNAL, start_time=t)
    span.set_attributes(
        {
            "gen_ai.operation.name": "execute_tool",
            "gen_ai.tool.name": call.tool,
            "gen_ai.tool.call.id": call_id,
            "gen_ai.tool.call.arguments": json.dumps(call.args),
            "gen_ai.tool.call.result": json.dumps(call.result),
        }
    )
    end = t + 50 * _MS
    if call.agent is not None:
        with use_span(span, end_on_exit=False):
            end = _run(tracer, t + 5 * _MS, call.agent) + 5 * _MS
    span.end(end_time=end)
    return end


def _run(tracer: Tracer, t: int, run: DemoRun) -> int:
    root = tracer.start_span(f"invoke_agent {run.agent}", kind=SpanKind.INTERNAL, start_time=t)
    root.set_attributes(
        {
            "gen_ai.operation.name": "invoke_agent",
            "gen_ai.agent.name": run.agent,
            "gen_ai.input.messages": _messages("user", [{"type": "text", "content": run.prompt}]),
            "gen_ai.output.messages": _messages("assistant", [{"type": "text", "content": run.answer}]),
        }
    )
    with use_span(root, end_on_exit=False):
        now = t + _MS
        for step, calls in enumerate(run.steps):
            started = _chat(tracer, now, calls, step, run)
            # calls of one step start together: the model issued them in parallel
            now = max(_tool(tracer, started, call, f"call_{step}_{i}") for i, call in enumerate(calls))
        now = _chat(tracer, now, (), len(run.steps), run)
    root.end(end_time=now + _MS)
    return now + _MS


def make_demo_spans(runs: tuple[DemoRun, ...] = DEMO_RUNS) -> list[list[ReadableSpan]]:
    """The spans of each run's trace (one trace per run), ended in the recent past."""
    exporter = InMemorySpanExporter()
    provider = TracerProvider(resource=Resource.create({"service.name": DEMO_SERVICE, "service.version": "1.0"}))
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    tracer = provider.get_tracer("toolscore.demo", "1.0")
    traces: list[list[ReadableSpan]] = []
    start = time.time_ns() - 10_000 * _MS
    for i, run in enumerate(runs):
        exporter.clear()
        _run(tracer, start + i * 1_000 * _MS, run)
        traces.append(list(exporter.get_finished_spans()))
    provider.shutdown()
    return traces
