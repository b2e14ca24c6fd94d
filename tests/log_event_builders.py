"""Tiny builders for a GenAI run whose model output comes as log events: the run span, its chat span (no
`gen_ai.output.messages`), two parallel tool spans started together, and the chat span's `gen_ai.choice` event.

The tool spans start at the same instant, so their own order is by call id (`call_t` before `call_w`); the
model issued `get_weather` first, which only the choice event tells (`MODEL_ORDER`).
"""

from __future__ import annotations

from typing import Any

from tests.pipeline_builders import EPOCH_NS, TRACE, run_attrs, tool_attrs
from toolscore.collector.sources import BODY_KEY, LogEvent
from toolscore.collector.spans import SpanEvent, SpanRecord

__all__ = ["CHAT", "MODEL_ORDER", "RUN", "START_ORDER", "choice", "log_event", "run_spans"]

RUN, CHAT, WEATHER, TIME = "a000000000000001", "a000000000000002", "a000000000000003", "a000000000000004"
MODEL_ORDER = ["get_weather", "get_time"]
START_ORDER = ["get_time", "get_weather"]
_CALLS = [("call_w", "get_weather", '{"city": "Paris"}'), ("call_t", "get_time", "{}")]


def _span(
    span_id: str, parent: str | None, name: str, attributes: dict[str, Any], *, at: tuple[int, int]
) -> SpanRecord:
    return SpanRecord(TRACE, span_id, parent, name, 1, EPOCH_NS + at[0], EPOCH_NS + at[1], attributes=attributes)


def run_spans(trace_id: str = TRACE) -> list[SpanRecord]:
    """The run's spans as they end: the chat span, the two tool spans, the run span."""
    chat = _span(CHAT, RUN, "chat m", {"gen_ai.operation.name": "chat", "gen_ai.system": "openai"}, at=(1_000, 2_000))
    tools = [
        _span(span_id, RUN, f"execute_tool {name}", tool_attrs(name, call_id, args), at=(3_000, 4_000))
        for span_id, (call_id, name, args) in zip((WEATHER, TIME), _CALLS, strict=True)
    ]
    spans = [chat, *tools, _span(RUN, None, "invoke_agent travel", run_attrs(), at=(0, 5_000))]
    for span in spans:
        span.trace_id = trace_id
    return spans


def choice(time_ns: int = EPOCH_NS + 1_900) -> SpanEvent:
    """The chat span's `gen_ai.choice` event, as openai-v2 emits it (its body decoded)."""
    tool_calls = [
        {"id": call_id, "type": "function", "function": {"name": name, "arguments": args}}
        for call_id, name, args in _CALLS
    ]
    body = {"index": 0, "finish_reason": "tool_calls", "message": {"role": "assistant", "tool_calls": tool_calls}}
    return SpanEvent("gen_ai.choice", time_ns, {"gen_ai.system": "openai", BODY_KEY: body})


def log_event(event: SpanEvent | None = None, span_id: str = CHAT, trace_id: str = TRACE) -> LogEvent:
    return LogEvent(trace_id, span_id, event if event is not None else choice())
