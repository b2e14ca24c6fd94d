"""The inference span's issued calls from its output events, when it has no `gen_ai.output.messages` attribute."""

from __future__ import annotations

import json

from toolscore.collector.extract.conventions.genai import read_genai_issued
from toolscore.collector.sources import BODY_KEY
from toolscore.collector.spans import SpanEvent, SpanRecord

CHAT = {"gen_ai.operation.name": "chat"}
OUTPUT = [
    {"role": "assistant", "parts": [{"type": "tool_call", "id": "c1", "name": "search", "arguments": {"q": "x"}}]}
]


def _chat(*events: SpanEvent, **attributes: object) -> SpanRecord:
    return SpanRecord("a" * 32, "b" * 16, None, "chat m", attributes={**CHAT, **attributes}, events=events)


def _calls(span: SpanRecord) -> list[tuple[str | None, str | None, object]]:
    return [(call.call_id, call.name, call.args) for call in read_genai_issued(span).calls]


def _choice(index: int, *calls: tuple[str, str], arguments: bool = True) -> SpanEvent:
    tool_calls = [
        {"id": call_id, "type": "function", "function": {"name": name, **({"arguments": "{}"} if arguments else {})}}
        for call_id, name in calls
    ]
    body = {"index": index, "finish_reason": "tool_calls", "message": {"role": "assistant", "tool_calls": tool_calls}}
    return SpanEvent("gen_ai.choice", 1, {BODY_KEY: body})


def test_choices_give_their_calls_in_choice_order_and_arguments_may_be_absent() -> None:
    span = _chat(_choice(1, ("c3", "book")), _choice(0, ("c1", "search"), ("c2", "weather"), arguments=False))
    assert _calls(span) == [("c1", "search", None), ("c2", "weather", None), ("c3", "book", "{}")]


def test_the_operation_details_event_is_read_as_the_span_attribute_is() -> None:
    details = SpanEvent("gen_ai.client.inference.operation.details", 1, {"gen_ai.output.messages": OUTPUT})
    assert _calls(_chat(details)) == [("c1", "search", {"q": "x"})]
    as_text = SpanEvent(details.name, 1, {"gen_ai.output.messages": json.dumps(OUTPUT)})
    assert _calls(_chat(as_text)) == [("c1", "search", {"q": "x"})]


def test_the_span_attribute_wins_and_the_input_history_is_not_read() -> None:
    earlier = {"tool_calls": [{"id": "c0", "type": "function", "function": {"name": "earlier"}}]}
    history = SpanEvent("gen_ai.assistant.message", 1, {BODY_KEY: earlier})
    assert _calls(_chat(history)) == []  # calls an earlier response issued: not this one's
    attribute = json.dumps([{"role": "assistant", "parts": [{"type": "tool_call", "id": "c9", "name": "own"}]}])
    assert _calls(_chat(_choice(0, ("c1", "search")), **{"gen_ai.output.messages": attribute})) == [("c9", "own", None)]


def test_a_choice_body_sent_as_json_text_is_read_as_its_map() -> None:
    """Semantic Kernel logs its choices through Python's `logging`: the record's body is the map's JSON text."""
    choice = _choice(0, ("call_c1", "tools-get_weather"))
    as_text = SpanEvent(choice.name, 1, {BODY_KEY: json.dumps(choice.attributes[BODY_KEY])})
    not_json = SpanEvent(choice.name, 1, {BODY_KEY: "the model said something"})
    assert _calls(_chat(as_text)) == [("call_c1", "tools-get_weather", "{}")]
    assert _calls(_chat(not_json)) == []
