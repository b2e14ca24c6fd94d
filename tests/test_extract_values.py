"""Arguments, results and texts: JSON parsing, the states of missing arguments, and size caps."""

from __future__ import annotations

import json
from typing import Any

import pytest

from toolscore.collector.extract import ExtractConfig, ExtractStats, rebuild_runs
from toolscore.collector.extract.conventions.common import message_text
from toolscore.scorers import ToolCall

from .test_extract_support import Traces, genai_chat, genai_run, genai_tool


def _calls(
    *tools: dict[str, Any], config: ExtractConfig | None = None, stats: ExtractStats | None = None
) -> tuple[ToolCall, ...]:
    t = Traces()
    run = t.span("invoke_agent a", genai_run("a"), start=0, end=100)
    for i, attrs in enumerate(tools):
        t.span("execute_tool", attrs, parent=run, start=1 + i)
    return rebuild_runs(t.records(), config, stats)[0].calls


def _state(call: ToolCall) -> tuple[object, str]:
    return call.args, call.args_state


def test_json_arguments_are_parsed() -> None:
    (call,) = _calls(genai_tool("w", "c", '{"city": "Paris", "n": [1, 2]}'))

    assert _state(call) == ({"city": "Paris", "n": [1, 2]}, "value")


def test_arguments_not_recorded_are_not_captured_rather_than_empty() -> None:
    not_recorded, empty_object, empty_text = _calls(
        genai_tool("w", "c1", None), genai_tool("w", "c2", "{}"), genai_tool("w", "c3", "")
    )

    assert _state(not_recorded) == (None, "not_captured")
    assert _state(empty_object) == ({}, "value")
    assert _state(empty_text) == (None, "absent")


def test_invalid_json_arguments_are_kept_raw() -> None:
    (call,) = _calls(genai_tool("w", "c", "{city: Paris"))

    assert _state(call) == ("{city: Paris", "raw")
    assert call.to_json()["args_raw"] is True


def test_arguments_nested_too_deeply_to_decode_are_kept_raw() -> None:
    """60 KB of `[`: orjson refuses the depth and `json` raises RecursionError, not a ValueError."""
    deep = "[" * 30_000 + "]" * 30_000

    (call,) = _calls(genai_tool("w", "c", deep))

    assert _state(call) == (deep, "raw")


def test_messages_nested_too_deeply_are_read_as_text_and_the_run_keeps_its_agent() -> None:
    """Before, the RecursionError cost the run span's whole read: no agent name, so no expectation matched."""
    t = Traces()
    deep = "[" * 30_000 + "]" * 30_000
    t.span("invoke_agent a", {**genai_run("a"), "gen_ai.input.messages": deep}, start=0)

    (run,) = rebuild_runs(t.records())

    assert run.agent_name == "a"
    assert run.input is not None
    assert deep.startswith(run.input)


def test_oversized_arguments_are_cut_kept_raw_and_counted() -> None:
    big = json.dumps({"blob": "é" * 5000})
    stats = ExtractStats()

    (call,) = _calls(genai_tool("w", "c", big), config=ExtractConfig(max_args_bytes=101), stats=stats)

    assert call.args_state == "raw"
    assert len(call.args.encode()) <= 101
    assert big.startswith(call.args)
    assert stats.args_truncated == 1


def test_oversized_arguments_stay_cut_when_the_model_response_lists_them_whole() -> None:
    """Parallel calls make the run read its model response, whose arguments are decoded objects: the
    cap must hold for them too, not let the response's whole object replace the span's cut text."""
    blob = {"blob": "x" * 5000}
    t = Traces()
    run = t.span("invoke_agent a", genai_run("a"), start=0, end=100)
    t.span("chat", genai_chat(("c1", "w", blob), ("c2", "v", {})), parent=run, start=1)
    t.span("execute_tool w", genai_tool("w", "c1", blob), parent=run, start=5)
    t.span("execute_tool v", genai_tool("v", "c2", {}), parent=run, start=5)

    big, small = rebuild_runs(t.records(), ExtractConfig(max_args_bytes=101))[0].calls

    assert (big.name, big.args_state, small.args) == ("w", "raw", {})
    assert len(big.args.encode()) <= 101


def test_a_call_whose_span_and_model_response_both_cut_its_arguments_counts_once() -> None:
    """A call reads its arguments from the tool span and, when the span's copy is cut, from the model
    response too: `args_truncated` counts calls, so two cut copies are one call. A cut span copy that the
    response's whole copy replaces leaves the call its whole arguments, and is not counted."""
    blob = {"blob": "x" * 5000}
    padded = json.dumps({"q": 1}, indent=200)  # over the cap as the span's text, not as the response's object
    t = Traces()
    run = t.span("invoke_agent a", genai_run("a"), start=0, end=100)
    t.span("chat", genai_chat(("c1", "w", blob), ("c2", "v", {"q": 1})), parent=run, start=1)
    t.span("execute_tool w", genai_tool("w", "c1", blob), parent=run, start=5)
    t.span("execute_tool v", genai_tool("v", "c2", padded), parent=run, start=5)
    stats = ExtractStats()

    cut, whole = rebuild_runs(t.records(), ExtractConfig(max_args_bytes=101), stats)[0].calls

    assert (cut.args_state, whole.args_state, whole.args) == ("raw", "value", {"q": 1})
    assert stats.args_truncated == 1


_TRACELOOP_TOOL = {"traceloop.span.kind": "tool", "traceloop.entity.name": "w"}
_PADDING = "x" * 4_000_000


@pytest.mark.parametrize(
    ("key", "envelope"),
    [
        # LangChain's callback envelope: small real arguments (`inputs`) inside a huge one
        (
            "gen_ai.tool.call.arguments",
            {"input_str": _PADDING, "inputs": {"city": "Paris"}, "kwargs": {"tool_call_id": "call_1"}},
        ),
        # the SDK decorators' envelope: the real arguments (`kwargs`) are the huge part
        ("traceloop.entity.input", {"args": [], "kwargs": {"city": "Paris", "notes": _PADDING}}),
    ],
)
def test_an_openllmetry_envelope_over_the_cap_is_cut_raw_not_decoded(key: str, envelope: dict[str, Any]) -> None:
    """The cap holds for the envelope as recorded: a multi-megabyte envelope is cut like any other
    oversized arguments, its first bytes kept as raw text, rather than decoded whole to be unwrapped
    (decoded, the call had `{"city": "Paris"}`, or the unwrapped kwargs cut, neither a prefix of the envelope)."""
    text = json.dumps(envelope)
    t = Traces()
    run = t.span("planner.agent", {"traceloop.span.kind": "agent", "traceloop.entity.name": "planner"}, end=10)
    t.span("w.tool", {**_TRACELOOP_TOOL, key: text}, parent=run, start=1)
    stats = ExtractStats()

    ((call,),) = [r.calls for r in rebuild_runs(t.records(), ExtractConfig(max_args_bytes=101), stats)]

    assert call.args_state == "raw"
    assert len(call.args.encode()) <= 101
    assert text.startswith(call.args)
    assert stats.args_truncated == 1


def test_an_openllmetry_envelope_is_measured_whole_before_it_is_unwrapped() -> None:
    """At exactly the cap (in UTF-8 bytes, not characters) the envelope is unwrapped as before, with the
    call id it carries; one byte over it is cut raw."""
    envelope = {"input_str": "{'city': 'Pâris'}", "inputs": {"city": "Pâris"}, "kwargs": {"tool_call_id": "call_1"}}
    text = json.dumps(envelope, ensure_ascii=False)
    size = len(text.encode())
    assert size > len(text)
    t = Traces()
    run = t.span("planner.agent", {"traceloop.span.kind": "agent", "traceloop.entity.name": "planner"}, end=10)
    t.span("w.tool", {**_TRACELOOP_TOOL, "traceloop.entity.input": text}, parent=run, start=1)

    ((fits,),) = [r.calls for r in rebuild_runs(t.records(), ExtractConfig(max_args_bytes=size))]
    ((over,),) = [r.calls for r in rebuild_runs(t.records(), ExtractConfig(max_args_bytes=size - 1))]

    assert (fits.args, fits.args_state, fits.call_id) == ({"city": "Pâris"}, "value", "call_1")
    assert over.args_state == "raw"
    assert text.startswith(over.args)


def test_oversized_results_are_cut_and_counted() -> None:
    attrs = {**genai_tool("w", "c"), "gen_ai.tool.call.result": "x" * 10_000}
    stats = ExtractStats()

    (call,) = _calls(attrs, config=ExtractConfig(max_result_bytes=64), stats=stats)

    assert call.result == "x" * 64
    assert stats.results_truncated == 1


def test_run_texts_and_attributes_are_capped() -> None:
    t = Traces()
    messages = json.dumps([{"role": "user", "parts": [{"type": "text", "content": "q" * 500}]}])
    t.span("invoke_agent a", {**genai_run("a"), "gen_ai.input.messages": messages}, start=0)

    (run,) = rebuild_runs(t.records(), ExtractConfig(max_text_bytes=10, max_attribute_bytes=20))

    assert run.input == "q" * 10
    assert run.attributes["gen_ai.input.messages"] == messages[:20]
    assert run.attributes["gen_ai.agent.name"] == "a"


def test_failed_tool_keeps_error_and_type() -> None:
    t = Traces()
    run = t.span("invoke_agent a", genai_run("a"), start=0, end=10)
    t.span("execute_tool w", {**genai_tool("w", "c1"), "error.type": "TimeoutError"}, parent=run, start=1)
    t.span("execute_tool w", genai_tool("w", "c2"), parent=run, start=2, error="boom")
    t.span("execute_tool w", genai_tool("w", "c3"), parent=run, start=3)

    calls = rebuild_runs(t.records())[0].calls

    assert [(c.error, c.error_type) for c in calls] == [(True, "TimeoutError"), (True, "_OTHER"), (False, None)]


MESSAGE_TEXTS: list[tuple[object, str, str | None]] = [
    # GenAI messages: the last message of the role that has text
    ([{"role": "user", "parts": [{"type": "text", "content": "hi"}]}], "user", "hi"),
    (
        [
            {"role": "assistant", "parts": [{"type": "text", "content": "first"}]},
            {"role": "assistant", "parts": [{"type": "tool_call", "id": "c", "name": "t"}]},
            {"role": "user", "parts": [{"type": "text", "content": "later"}]},
        ],
        "assistant",
        "first",
    ),
    (
        [{"role": "assistant", "parts": [{"type": "text", "content": "a"}, {"type": "text", "content": "b"}]}],
        "assistant",
        "a\nb",
    ),
    ([{"role": "assistant", "parts": [{"type": "text", "content": ""}]}], "assistant", None),
    ([{"role": "user", "content": "openai style"}], "user", "openai style"),
    ([{"role": "user", "content": [{"type": "input_text", "text": "parts"}]}], "user", "parts"),
    # no message has a role: the list is one message's parts (Strands/Bedrock content blocks)
    ([{"text": "block one"}, {"text": "block two"}], "user", "block one\nblock two"),
    ([], "user", None),
    # items that are not messages do not make the list parts, and are skipped
    (["loose text", {"role": "user", "parts": [{"type": "text", "content": "kept"}]}], "user", "kept"),
    (["loose text", {"text": "no role"}], "user", None),
    ([{"text": "no role"}, {"role": "system", "content": "sys"}], "user", None),
    # JSON text, objects and plain text
    (json.dumps([{"role": "user", "parts": [{"type": "text", "content": "json"}]}]), "user", "json"),
    ('{"messages": [{"role": "user", "content": "nested"}]}', "user", "nested"),
    ({"text": "object"}, "assistant", "object"),
    ("plain words", "user", "plain words"),
    ("[not json", "user", "[not json"),
    (42, "user", None),
]


def test_message_text_reads_every_message_shape_the_conventions_use() -> None:
    for value, role, expected in MESSAGE_TEXTS:
        assert message_text(value, role) == expected, (value, role)
