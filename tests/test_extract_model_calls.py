"""Calls seen only in the model's output: counted once, in the model's order, in the run owning the response."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import Any

from toolscore.collector.extract import EXTRACTORS, ExtractConfig, ExtractStats, Role, rebuild_runs
from toolscore.collector.extract.conventions.base import Read
from toolscore.collector.sources import read_trace_file
from toolscore.collector.spans import SpanRecord
from toolscore.scorers import AgentRun

from .test_extract_support import Traces, genai_chat, genai_run, genai_tool

TRACES = Path(__file__).parent / "testdata" / "traces"
OI = "openinference.instrumentation.openai_agents"
KIND = "openinference.span.kind"


def _calls(run: AgentRun) -> list[tuple[str, str | None, bool]]:
    return [(c.name, c.call_id, c.model_only) for c in run.calls]


def test_openai_v2_latest_capture_gives_its_calls_from_the_chat_spans_alone() -> None:
    stats = ExtractStats()

    (run,) = rebuild_runs(read_trace_file(TRACES / "openai-v2-latest" / "c_parallel.pb"), stats=stats)

    assert [(c.name, c.args, c.call_id, c.model_only) for c in run.calls] == [
        ("get_weather", {"city": "Tokyo"}, "call_c1", True),
        ("get_time", {"timezone": "Asia/Tokyo"}, "call_c2", True),
        ("get_stock_price", {"symbol": "SONY"}, "call_c3", True),
    ]
    assert all(c.span_id is None and c.start_ns is None for c in run.calls)
    # no tool span records a result: each is what the loop answered the model with, in the next chat's input
    assert [c.result for c in run.calls] == ['{"city": "Tokyo", "temp": 21, "unit": "celsius"}', "12:00", "123.45"]
    assert stats.model_only_calls == 3
    assert run.calls[0].to_json() == {
        "name": "get_weather",
        "args": {"city": "Tokyo"},
        "call_id": "call_c1",
        "error": False,
        "model_only": True,
    }


def test_no_capture_with_tool_spans_gains_a_model_only_call() -> None:
    for framework in ("pydantic-ai", "openai-agents", "vercel-ai"):
        for path in sorted((TRACES / framework).glob("*.pb")):
            stats = ExtractStats()
            runs = rebuild_runs(read_trace_file(path), stats=stats)
            assert not any(c.model_only for run in runs for c in run.calls), path
            assert stats.model_only_calls == 0
    mcp = rebuild_runs(read_trace_file(Path(__file__).parent / "testdata" / "mcp" / "a_tools_through_mcp.pb"))
    assert [(c.name, c.model_only) for run in mcp for c in run.calls] == [("get_weather", False), ("get_time", False)]


def test_a_call_without_tool_span_takes_its_place_in_the_model_order() -> None:
    t = Traces()
    run = t.span("invoke_agent a", genai_run("a"), start=0, end=100)
    t.span("chat", genai_chat(("c1", "w", {"i": 1}), ("c2", "v", {}), ("c3", "w", {"i": 3})), parent=run, start=1)
    t.span("execute_tool w", genai_tool("w", "c3", {"i": 3}), parent=run, start=10)
    t.span("execute_tool w", genai_tool("w", "c1", {"i": 1}), parent=run, start=10)
    t.span("chat", genai_chat(("c4", "s", {})), parent=run, start=20)
    t.span("execute_tool s", genai_tool("s", "c4"), parent=run, start=30)

    (built,) = rebuild_runs(t.records())

    assert _calls(built) == [("w", "c1", False), ("v", "c2", True), ("w", "c3", False), ("s", "c4", False)]
    assert built.calls[1].args == {}


def test_tool_spans_without_call_ids_claim_by_name_and_arguments() -> None:
    t = Traces()
    run = t.span("invoke_agent a", genai_run("a"), start=0, end=100)
    t.span("chat", genai_chat(("c1", "w", {"city": "Oslo"}), ("c2", "w", {"city": "Rome"})), parent=run, start=1)
    t.span("execute_tool w", genai_tool("w", None, {"city": "Rome"}), parent=run, start=10)

    (built,) = rebuild_runs(t.records())

    assert [(c.args, c.call_id, c.model_only) for c in built.calls] == [
        ({"city": "Oslo"}, "c1", True),
        ({"city": "Rome"}, "c2", False),
    ]


def test_a_response_no_tool_span_ran_starts_its_batch_when_the_response_ends() -> None:
    t = Traces()
    run = t.span("invoke_agent a", genai_run("a"), start=0, end=100)
    t.span("chat", genai_chat(("c1", "x", {})), parent=run, start=1, end=5)
    t.span("execute_tool y", genai_tool("y", "c_y"), parent=run, start=3)  # issued by no recorded response
    t.span("chat", genai_chat(("c2", "z", {})), parent=run, start=6, end=8)
    t.span("execute_tool y", genai_tool("y", "c_late"), parent=run, start=7)

    (built,) = rebuild_runs(t.records())

    assert _calls(built) == [("y", "c_y", False), ("x", "c1", True), ("y", "c_late", False), ("z", "c2", True)]


def test_a_failed_response_adds_no_call() -> None:
    t = Traces()
    run = t.span("invoke_agent a", genai_run("a"), start=0, end=100)
    t.span("chat", genai_chat(("c1", "w", {})), parent=run, start=1, error="stream cut")
    t.span("chat", genai_chat(("c2", "w", {})), parent=run, start=5)

    (built,) = rebuild_runs(t.records())

    assert _calls(built) == [("w", "c2", True)]


def test_input_history_is_never_read_for_calls() -> None:
    t = Traces()
    run = t.span("invoke_agent a", genai_run("a"), start=0, end=100)
    history = [{"role": "assistant", "parts": [{"type": "tool_call", "id": "c0", "name": "w", "arguments": {}}]}]
    chat = {
        "gen_ai.operation.name": "chat",
        "gen_ai.input.messages": json.dumps(history),
        "gen_ai.output.messages": json.dumps([{"role": "assistant", "parts": [{"type": "text", "content": "ok"}]}]),
    }
    t.span("chat", chat, parent=run, start=1)
    oi_history = {KIND: "LLM", "llm.input_messages.0.message.tool_calls.0.tool_call.function.name": "w"}
    t.span("response", oi_history, parent=run, start=2, scope=OI)

    (built,) = rebuild_runs(t.records())

    assert built.calls == ()


def test_model_spans_alone_make_no_run() -> None:
    t = Traces()
    root = t.span("app", start=0, end=100)
    t.span("chat", genai_chat(("c1", "w", {})), parent=root, start=1)

    assert rebuild_runs(t.records()) == []


def test_a_model_span_that_is_its_own_root_makes_no_run() -> None:
    # CrewAI's Agent.kickoff under OpenLLMetry: no span around the agent, each model call a trace of its own
    t = Traces()
    offered = {"gen_ai.tool.definitions": json.dumps([{"type": "function", "name": "w", "parameters": {}}])}
    t.span("openai.chat", {**genai_chat(("c1", "w", {})), **offered}, start=0)
    t.span("openai.chat", {**genai_chat(), **offered}, start=10)
    below = Traces()
    root = below.span("app", {"gen_ai.operation.name": "invoke_workflow"}, start=0, end=100)
    below.span("openai.chat", {**genai_chat(), **offered}, parent=root, start=1)

    assert rebuild_runs(t.records()) == []
    # the same response below a span a convention recognises is still an agent's run that called nothing
    assert [(run.inferred, run.calls) for run in rebuild_runs(below.records())] == [(True, ())]


def test_a_folded_layer_and_a_handoff_stay_one_call_each() -> None:
    t = Traces()
    run = t.span("invoke_agent a", genai_run("a"), start=0, end=100)
    t.span(
        "chat",
        genai_chat(
            ("c1", "w", {}),
        ),
        parent=run,
        start=1,
    )
    outer = t.span("execute_tool w", genai_tool("w", "c1"), parent=run, start=10, end=20)
    t.span("execute_tool w", genai_tool("w"), parent=outer, start=11)  # the MCP client's layer, no call id
    triage = t.span("triage", {KIND: "AGENT", "agent.name": "triage"}, start=200, end=300, scope=OI)
    llm = {
        KIND: "LLM",
        "llm.output_messages.0.message.role": "assistant",
        "llm.output_messages.0.message.tool_calls.0.tool_call.id": "call_h",
        "llm.output_messages.0.message.tool_calls.0.tool_call.function.name": "transfer_to_billing",
    }
    t.span("response", llm, parent=triage, start=201, scope=OI)
    t.span("handoff to billing", {KIND: "TOOL", "input.value": "triage"}, parent=triage, start=210, scope=OI)
    stats = ExtractStats()

    runs = rebuild_runs(t.records(), stats=stats)

    assert {r.agent_name: _calls(r) for r in runs} == {
        "a": [("w", "c1", False)],
        "triage": [("transfer_to_billing", "call_h", False)],
    }
    assert stats.skipped["tool_layer"] == 1


def _pydantic_chat(*names: str, output_tools: list[str] | None) -> dict[str, Any]:
    attrs = genai_chat(*((f"c_{n}", n, {}) for n in names))
    if output_tools is not None:
        params = {"function_tools": [], "output_tools": [{"name": n} for n in output_tools]}
        attrs["model_request_parameters"] = json.dumps(params)
    return attrs


def test_structured_output_tools_are_never_model_only_calls() -> None:
    t = Traces()
    run = t.span("invoke_agent a", genai_run("a"), start=0, end=100, scope="pydantic-ai")
    t.span(
        "chat m",
        _pydantic_chat("w", "final_result", output_tools=["final_result"]),
        parent=run,
        start=1,
        scope="pydantic-ai",
    )
    t.span("chat m", _pydantic_chat("answer", output_tools=None), parent=run, start=20, scope="pydantic-ai")
    t.span("chat m", _pydantic_chat("final_result", output_tools=None), parent=run, start=30, scope="pydantic-ai")
    output_fn = {**genai_tool("answer", "c_answer"), "logfire.msg": "running output function: answer"}
    t.span("execute_tool answer", output_fn, parent=run, start=25, scope="pydantic-ai")
    stats = ExtractStats()

    (built,) = rebuild_runs(t.records(), stats=stats)
    (kept,) = rebuild_runs(t.records(), ExtractConfig(include_output_tools=True))

    assert _calls(built) == [("w", "c_w", True)]
    assert stats.skipped["output_tool"] == 1
    assert _calls(kept) == [
        ("w", "c_w", True),
        ("final_result", "c_final_result", True),
        ("answer", "c_answer", False),
        ("final_result", "c_final_result", True),
    ]


class _Broken:
    """A convention whose reader fails on the tool spans it claims."""

    name = "broken"

    def classify(self, span: SpanRecord) -> Role | None:
        return Role.TOOL if span.name == "broken" else None

    def read(self, span: SpanRecord, role: Role) -> Read:
        raise ValueError("unreadable")


def test_an_unreadable_tool_span_still_claims_the_call_it_ran() -> None:
    t = Traces()
    run = t.span("invoke_agent a", genai_run("a"), start=0, end=100)
    t.span("chat", genai_chat(("c1", "w", {}), ("c2", "v", {})), parent=run, start=1)
    t.span("broken", parent=run, start=10)
    t.span("execute_tool v", genai_tool("v", "c2"), parent=run, start=10)

    (built,) = rebuild_runs(t.records(), extractors=(_Broken(), *EXTRACTORS))

    assert _calls(built) == [("v", "c2", False)]


def test_a_sub_agents_call_without_tool_span_stays_in_the_callers_run() -> None:
    t = Traces()
    caller = t.span("invoke_agent boss", genai_run("boss"), start=0, end=100)
    t.span(
        "chat",
        genai_chat(
            ("c_sub", "researcher", {"task": "find"}),
        ),
        parent=caller,
        start=1,
        end=5,
    )
    sub = t.span("invoke_agent researcher", genai_run("researcher"), parent=caller, start=10, end=50)
    t.span(
        "chat",
        genai_chat(
            ("c_s", "search", {}),
        ),
        parent=sub,
        start=11,
        end=12,
    )
    t.span("execute_tool search", genai_tool("search", "c_s"), parent=sub, start=13)

    runs = rebuild_runs(t.records())

    assert [(r.agent_name, _calls(r)) for r in runs] == [
        ("boss", [("researcher", "c_sub", True)]),
        ("researcher", [("search", "c_s", False)]),
    ]
    assert runs[1].parent_span_id == runs[0].span_id


def test_a_response_listing_more_calls_than_the_tool_spans_is_read() -> None:
    """Every listed call's id is quoted by a tool span, yet one more call is listed: the skim must not pass."""
    t = Traces()
    run = t.span("invoke_agent a", genai_run("a"), start=0, end=100)
    t.span("chat", genai_chat(("c1", "w", {"note": "c2"}), ("c3", "w", {})), parent=run, start=1)
    t.span("execute_tool w", genai_tool("w", "c1"), parent=run, start=10, end=11)
    t.span("execute_tool w", genai_tool("w", "c2"), parent=run, start=12, end=13)

    (built,) = rebuild_runs(t.records())

    assert _calls(built) == [("w", "c1", False), ("w", "c3", True), ("w", "c2", False)]


def test_model_only_calls_count_within_the_per_run_limit_and_nameless_ones_are_counted() -> None:
    t = Traces()
    run = t.span("invoke_agent a", genai_run("a"), start=0, end=100)
    parts = [{"type": "tool_call", "id": f"c{i}", "name": "w", "arguments": {}} for i in range(4)]
    parts.append({"type": "tool_call", "id": "c_anon", "arguments": {}})
    chat = {
        "gen_ai.operation.name": "chat",
        "gen_ai.output.messages": json.dumps([{"role": "assistant", "parts": parts}]),
    }
    t.span("chat", chat, parent=run, start=1)
    stats = ExtractStats()

    (built,) = rebuild_runs(t.records(), ExtractConfig(max_calls_per_run=3), stats)

    assert [c.call_id for c in built.calls] == ["c0", "c1", "c2"]
    assert stats.skipped["calls_over_limit"] == 1
    assert stats.skipped["model_call_without_name"] == 1


def test_a_model_only_call_fails_when_its_tool_was_not_offered_or_answered_an_error() -> None:
    """Unknown tools (CrewAI and LlamaIndex answer "Tool not found"), and an error fed back as the tool's result
    by a hand-written loop (openai-v2): the outcome a tool span would have recorded, from what the agent did."""
    unknown = rebuild_runs(read_trace_file(TRACES / "crewai" / "model_only_unknown_tool.pb"))
    retried = rebuild_runs(read_trace_file(TRACES / "openai-v2-latest" / "e_tool_error_retry.pb"))

    assert [(c.name, c.model_only, c.error, c.error_type) for c in unknown[0].calls] == [
        ("get_forecast", True, True, "unknown_tool"),
        ("get_weather", False, False, None),
    ]
    assert [(c.args, c.error, c.result) for c in retried[0].calls] == [
        ({"city": "Atlantis"}, True, "Error: unknown city: Atlantis"),
        ({"city": "Lisbon"}, False, "24C and sunny in Lisbon"),
    ]


def test_a_tool_response_of_text_blocks_is_read_as_their_text() -> None:
    """The `anthropic` client's own tracing (content mode) writes a `tool_result`'s content as Anthropic's content
    blocks in the `tool_call_response` part: their text is the result, and "Error: ..." there is a failure."""
    t = Traces()
    run = t.span("invoke_agent a", genai_run("a"), start=0, end=100)
    t.span("chat", genai_chat(("c1", "w", {"city": "Atlantis"}), ("c2", "w", {"city": "Rome"})), parent=run, start=1)
    blocks = [{"type": "text", "text": "Error: unknown "}, {"type": "text", "text": "city"}]
    answered = [
        {"type": "tool_call_response", "id": "c1", "response": blocks},
        {"type": "tool_call_response", "id": "c2", "response": [{"type": "image", "source": {}}]},
    ]
    second = {**genai_chat(), "gen_ai.input.messages": json.dumps([{"role": "user", "parts": answered}])}
    t.span("chat", second, parent=run, start=10)

    (built,) = rebuild_runs(t.records())

    assert [(c.call_id, c.error, c.result) for c in built.calls] == [
        ("c1", True, "Error: unknown city"),
        ("c2", False, '[{"type": "image", "source": {}}]'),
    ]


def test_a_tool_response_ending_with_pydantic_ais_retry_prompt_is_a_failure() -> None:
    """pydantic-ai answers a failed call (`ModelRetry`, arguments that failed validation, an unknown tool) with
    `RetryPromptPart.model_response()`: the error's text, then "Fix the errors and try again.". With no tool span (a
    client instrumentation's model spans alone: OpenLIT), that text is what says the call failed; the same words
    elsewhere in a result do not."""
    t = Traces()
    run = t.span("invoke_agent a", genai_run("a"), start=0, end=100)
    calls = [("c1", "w", {"city": "Atlantis"}), ("c2", "w", {"city": "Rome"})]
    t.span("chat", genai_chat(*calls), parent=run, start=1)
    answered = [
        {
            "type": "tool_call_response",
            "id": "c1",
            "response": "unknown city: Atlantis\n\nFix the errors and try again.",
        },
        {"type": "tool_call_response", "id": "c2", "response": "Fix the errors and try again. 21C in Rome"},
    ]
    second = {**genai_chat(), "gen_ai.input.messages": json.dumps([{"role": "tool", "parts": answered}])}
    t.span("chat", second, parent=run, start=10)

    (built,) = rebuild_runs(t.records())

    assert [(c.call_id, c.model_only, c.error, c.error_type) for c in built.calls] == [
        ("c1", True, True, "_OTHER"),
        ("c2", True, False, None),
    ]


def test_crewais_answers_for_a_call_it_did_not_run_are_failures() -> None:
    """CrewAI (`_execute_single_native_tool_call`) answers the model, for a native call it did not run, with fixed
    texts: "Tool not found" (an unknown tool, when the run's catalog cannot say: OpenLIT lists ten tools at most),
    a `before_tool_call` hook's block, a tool past its `max_usage_count`. With no tool span (`@tool` tools under
    OpenLIT) the answer is what says the call failed; the same words inside a result do not."""
    t = Traces()
    run = t.span("invoke_agent a", genai_run("a"), start=0, end=100)
    calls = [(f"c{i}", "w", {"i": i}) for i in range(6)]
    t.span("chat", genai_chat(*calls), parent=run, start=1)
    texts = [
        "Tool not found",
        "Tool execution blocked by hook. Tool: w",
        "Tool 'w' has reached its usage limit of 2 times and cannot be used anymore.",
        "Tool 'w' has reached its maximum usage limit and cannot be used anymore.",
        "Tool not found in the index: 21C",
        "Tool 'w' has reached its usage limit of 2 times and cannot be used anymore. Use another.",
    ]
    answered = [{"type": "tool_call_response", "id": f"c{i}", "response": text} for i, text in enumerate(texts)]
    second = {**genai_chat(), "gen_ai.input.messages": json.dumps([{"role": "tool", "parts": answered}])}
    t.span("chat", second, parent=run, start=10)

    (built,) = rebuild_runs(t.records())

    assert [(c.call_id, c.model_only, c.error, c.error_type) for c in built.calls] == [
        ("c0", True, True, "unknown_tool"),
        ("c1", True, True, "_OTHER"),
        ("c2", True, True, "_OTHER"),
        ("c3", True, True, "_OTHER"),
        ("c4", True, False, None),
        ("c5", True, False, None),
    ]


def test_model_spans_side_by_side_with_one_response_id_are_one_response() -> None:
    """OpenLLMetry's `anthropic.chat` and the `anthropic` client's own span record one request side by side (neither
    inside the other), both with the message's `gen_ai.response.id`: one response, its calls listed once. Another
    response id, or none, is a response of its own."""
    t = Traces()
    run = t.span("a.agent", {"traceloop.span.kind": "agent", "traceloop.entity.name": "a"}, start=0, end=100)
    chat = {**genai_chat(("c1", "w", {"city": "Rome"})), "gen_ai.response.id": "msg_1"}
    t.span("anthropic.messages.create", chat, parent=run, start=1, end=9, scope="com.anthropic.sdk.python")
    t.span("anthropic.chat", chat, parent=run, start=2, end=8, scope="opentelemetry.instrumentation.anthropic")
    second = {**genai_chat(("c2", "w", {"city": "Oslo"})), "gen_ai.response.id": "msg_2"}
    t.span("anthropic.chat", second, parent=run, start=20, end=28, scope="opentelemetry.instrumentation.anthropic")
    t.span("chat", genai_chat(("c3", "w", {"city": "Oslo"})), parent=run, start=30, end=38)

    (built,) = rebuild_runs(t.records())

    assert [(c.call_id, c.message_index) for c in built.calls] == [("c1", 1), ("c2", 2), ("c3", 3)]


def _oi_anthropic_run(provider: str, blocks: list[dict[str, Any]]) -> AgentRun:
    """A run of two OpenInference LLM spans: the first issues c1 and c2, the second's request (`input.value`, as
    openinference-instrumentation-anthropic records it) answers them with `blocks`."""
    scope = "openinference.instrumentation.anthropic"
    t = Traces()
    run = t.span("a", {KIND: "AGENT", "agent.name": "a"}, start=0, end=100, scope=scope)
    issued = {KIND: "LLM", "llm.provider": provider, "llm.output_messages.0.message.role": "assistant"}
    for j, call_id in enumerate(("c1", "c2")):
        prefix = f"llm.output_messages.0.message.tool_calls.{j}.tool_call."
        issued |= {prefix + "id": call_id, prefix + "function.name": "w", prefix + "function.arguments": "{}"}
    t.span("messages.create", issued, parent=run, start=1, scope=scope)
    request = {"model": "m", "messages": [{"role": "user", "content": "go"}, {"role": "user", "content": blocks}]}
    answered = {KIND: "LLM", "llm.provider": provider, "input.value": json.dumps(request)}
    for i, block in enumerate(blocks):  # the flattened tool messages: no is_error
        answered |= {f"llm.input_messages.{i}.message.role": "tool"}
        answered |= {f"llm.input_messages.{i}.message.tool_call_id": block["tool_use_id"]}
        answered |= {f"llm.input_messages.{i}.message.content": json.dumps(block["content"])}
    t.span("messages.create", answered, parent=run, start=10, scope=scope)
    (built,) = rebuild_runs(t.records())
    return built


def test_an_anthropic_tool_result_says_whether_the_call_failed_through_openinference() -> None:
    """`is_error` of a `tool_result` is how a Messages API client reports a failed tool; openinference-instrumentation-
    anthropic keeps it only in the request it records as `input.value`: read there, whatever the text says."""
    blocks = [
        {"type": "tool_result", "tool_use_id": "c1", "content": "ToolFailure: unknown city", "is_error": True},
        {"type": "tool_result", "tool_use_id": "c2", "content": [{"type": "text", "text": "21C"}]},
    ]

    anthropic = _oi_anthropic_run("anthropic", blocks)
    other = _oi_anthropic_run("openai", blocks)

    assert [(c.call_id, c.error, c.result) for c in anthropic.calls] == [
        ("c1", True, "ToolFailure: unknown city"),
        ("c2", False, "21C"),
    ]
    assert [c.error for c in other.calls] == [False, False]  # another provider's input.value is not read


def _layered_run(t: Traces, outer: dict[str, Any], inners: list[tuple[dict[str, Any], str | None]]) -> Any:
    """A run whose one model response is traced twice: `outer` (the agent SDK's span) over each of `inners` (the
    client's spans, each with its error or None); a `get_weather` tool span without call id ran after it."""
    run = t.span("invoke_agent a", genai_run("a"), start=0, end=100)
    response = t.span("chat outer", outer, parent=run, start=1, end=20)
    for k, (inner, error) in enumerate(inners):
        t.span("chat inner", inner, parent=response, start=2 + k, end=3 + k, error=error)
    t.span("execute_tool get_weather", genai_tool("get_weather", args={"city": "Rome"}), parent=run, start=30)
    t.span("chat outer", genai_chat(), parent=run, start=40, end=50)
    return run


def test_a_model_span_under_a_model_span_is_one_response_read_from_the_outer_one() -> None:
    # The SDK's span lists the real call ids; the client's span under it lists other ids (a Responses API
    # instrumentation writing output item ids): one response, not two.
    t = Traces()
    outer = genai_chat(("call_1", "get_weather", {"city": "Rome"}), ("call_2", "transfer_to_b", {}))
    inner = genai_chat(("fc_1", "get_weather", {"city": "Rome"}), ("fc_2", "transfer_to_b", {}))
    _layered_run(t, outer, [(inner, None)])
    stats = ExtractStats()

    (run,) = rebuild_runs(t.records(), stats=stats)

    assert _calls(run) == [("get_weather", "call_1", False), ("transfer_to_b", "call_2", True)]
    assert [c.message_index for c in run.calls] == [1, 1]  # one model message, not two
    assert stats.model_only_calls == 1


def test_a_response_whose_outer_span_lists_nothing_takes_its_latest_good_layers_calls() -> None:
    # The SDK's chat-completions span records no output; the client's spans do; a failed attempt is no response.
    t = Traces()
    failed = genai_chat(("call_x", "get_time", {}))
    good = genai_chat(("call_1", "get_weather", {"city": "Rome"}), ("call_2", "transfer_to_b", {}))
    _layered_run(t, {"gen_ai.operation.name": "chat"}, [(failed, "timeout"), (good, None)])

    (run,) = rebuild_runs(t.records())

    assert _calls(run) == [("get_weather", "call_1", False), ("transfer_to_b", "call_2", True)]
    assert [c.message_index for c in run.calls] == [1, 1]


def test_a_model_span_under_a_tool_span_is_no_layer_of_the_response_above() -> None:
    # A sub-agent's model (under the tool that runs it) answers for the sub-agent, not for the caller's response,
    # even when the caller's response span records no output of its own.
    t = Traces()
    run = t.span("invoke_agent a", genai_run("a"), start=0, end=100)
    response = t.span("chat", {"gen_ai.operation.name": "chat"}, parent=run, start=1, end=60)
    tool = t.span("execute_tool ask_b", genai_tool("ask_b", "call_1"), parent=response, start=10, end=50)
    t.span("chat", genai_chat(("call_9", "get_weather", {"city": "Oslo"})), parent=tool, start=11, end=12)
    stats = ExtractStats()

    runs = rebuild_runs(t.records(), stats=stats)

    assert [(r.agent_name, _calls(r)) for r in runs] == [("a", [("ask_b", "call_1", False)])]
    assert stats.model_only_calls == 0


def _no_content(reasons: list[str]) -> dict[str, Any]:
    """A chat span as the OTel GenAI instrumentations write it with content capture off: no messages, the finish
    reasons kept."""
    return {"gen_ai.operation.name": "chat", "gen_ai.response.finish_reasons": reasons}


def test_a_response_that_stopped_for_tools_and_lists_none_leaves_its_run_incomplete() -> None:
    """Content capture off keeps a response's finish reasons and drops its messages: a run whose calls could only
    come from its responses is flagged incomplete, not read as a run that called nothing."""
    for reasons in (["tool_calls"], ["tool_call"], ["TOOL_USE"], ["function_call"], ["stop", "tool_calls"]):
        t = Traces()
        run = t.span("invoke_agent a", genai_run("a"), start=0, end=100)
        t.span("chat", _no_content(reasons), parent=run, start=1, end=5)
        t.span("chat", _no_content(["stop"]), parent=run, start=10, end=15)

        (built,) = rebuild_runs(t.records())

        assert (built.calls, built.incomplete) == ((), True), reasons


def test_a_response_that_stopped_for_anything_else_or_whose_calls_are_known_leaves_its_run_complete() -> None:
    cases: list[tuple[str, list[tuple[str, dict[str, Any]]]]] = [
        ("answered", [("chat", _no_content(["stop"]))]),
        ("one string", [("chat", {**_no_content([]), "gen_ai.response.finish_reasons": "length"})]),
        ("listed", [("chat", {**genai_chat(("c1", "w", {})), "gen_ai.response.finish_reasons": ["tool_calls"]})]),
        ("tool span", [("chat", _no_content(["tool_calls"])), ("execute_tool w", genai_tool("w", "c1"))]),
    ]
    for label, spans in cases:
        t = Traces()
        run = t.span("invoke_agent a", genai_run("a"), start=0, end=100)
        for i, (name, attributes) in enumerate(spans):
            t.span(name, attributes, parent=run, start=1 + 10 * i, end=5 + 10 * i)

        (built,) = rebuild_runs(t.records())

        assert not built.incomplete, label
    assert [c.name for c in built.calls] == ["w"]


def test_an_openinference_response_that_stopped_for_tools_with_outputs_hidden_leaves_its_run_incomplete() -> None:
    """OPENINFERENCE_HIDE_OUTPUTS drops `llm.output_messages` (and `output.value` reads `__REDACTED__`), but the
    instrumentors still write `llm.finish_reason` (openinference-instrumentation-anthropic: the message's
    `stop_reason`): a response that stopped for tools, listing none, leaves the run incomplete; one that stopped
    for anything else, or that lists its calls, does not."""
    scope = "openinference.instrumentation.anthropic"
    hidden = {KIND: "LLM", "output.value": "__REDACTED__"}
    listed = {
        **hidden,
        "llm.output_messages.0.message.role": "assistant",
        "llm.output_messages.0.message.tool_calls.0.tool_call.id": "c1",
        "llm.output_messages.0.message.tool_calls.0.tool_call.function.name": "w",
        "llm.output_messages.0.message.tool_calls.0.tool_call.function.arguments": "{}",
    }
    cases = [
        ("tool_use", hidden, True),
        ("tool_calls", hidden, True),
        ("end_turn", hidden, False),
        ("tool_use", listed, False),
    ]
    for reason, attributes, flagged in cases:
        t = Traces()
        run = t.span("weather_agent", {KIND: "AGENT", "agent.name": "a"}, start=0, end=100, scope=scope)
        t.span("messages.create", {**attributes, "llm.finish_reason": reason}, parent=run, start=1, scope=scope)

        (built,) = rebuild_runs(t.records())

        assert built.incomplete == flagged, (reason, attributes)
        assert [c.call_id for c in built.calls] == ([] if attributes is hidden else ["c1"])


def _without_content(path: Path) -> list[SpanRecord]:
    """A capture's spans as the instrumentation writes them with content capture off: no messages."""
    dropped = ("gen_ai.input.messages", "gen_ai.output.messages", "gen_ai.system_instructions")
    spans = read_trace_file(path)
    return [
        dataclasses.replace(span, attributes={k: v for k, v in span.attributes.items() if k not in dropped})
        for span in spans
    ]


def test_real_runs_read_without_content_are_flagged_not_misread() -> None:
    """The openai-v2 captures (calls only in the chat spans' messages) without their messages: every run that made
    calls is flagged incomplete where its responses record their finish reasons, the run that made none stays a
    complete run with no call. Streamed responses record no finish reason in openai-v2 (b, h, i): no sign is left
    there, and the run reads as one without calls (docs/conventions.md says so)."""
    folder = TRACES / "openai-v2-latest"
    seen = {True: 0, False: 0}
    for path in sorted(folder.glob("[a-i]_*.pb")):
        truth = json.loads((TRACES.parent / "truth" / folder.name / f"{path.stem}.truth.json").read_text())
        made_calls = {run["agent_span_id"]: bool(run["calls"]) for run in truth["runs"]}
        spans = _without_content(path)
        with_reasons = {span.parent_id for span in spans if "gen_ai.response.finish_reasons" in span.attributes}
        for run in rebuild_runs(spans):
            if run.span_id not in made_calls:
                continue
            assert run.calls == (), path
            flagged = made_calls[run.span_id] and run.span_id in with_reasons
            assert run.incomplete == flagged, (path.name, run.agent_name)
            seen[run.incomplete] += 1
    assert seen[True] >= 6, seen
    assert seen[False] >= 4, seen


def _oi_llm(calls: list[tuple[str, str, str]] = (), **attrs: Any) -> dict[str, Any]:  # type: ignore[assignment]
    """An LLM span of openinference-instrumentation-openai with `(call_id, name, args)` calls in its output."""
    found: dict[str, Any] = {KIND: "LLM", **attrs}
    for j, (call_id, name, args) in enumerate(calls):
        prefix = f"llm.output_messages.0.message.tool_calls.{j}.tool_call."
        found |= {prefix + "id": call_id, prefix + "function.name": name, prefix + "function.arguments": args}
    return found


def _oi_run(t: Traces, *responses: dict[str, Any]) -> Any:
    run = t.span("weather_agent", {KIND: "AGENT", "agent.name": "weather_agent"}, start=0, end=100)
    for i, attrs in enumerate(responses):
        t.span(
            "Response",
            attrs,
            parent=run,
            start=1 + 10 * i,
            end=5 + 10 * i,
            scope="openinference.instrumentation.openai",
        )
    return run


def test_a_tool_result_of_responses_api_input_items_from_index_one_is_read() -> None:
    """openinference-instrumentation-openai keeps `llm.input_messages.0` for a Responses API request's
    `instructions` and lists its `input` items from index 1: without instructions the messages start at 1, and the
    tool's answer (here its failure) is still read."""
    t = Traces()
    answered = {
        "llm.input_messages.1.message.role": "user",
        "llm.input_messages.1.message.content": "Weather in Atlantis?",
        "llm.input_messages.2.message.role": "tool",
        "llm.input_messages.2.message.tool_call_id": "call_1",
        "llm.input_messages.2.message.content": "Error: unknown city: Atlantis",
    }
    _oi_run(t, _oi_llm([("call_1", "get_weather", '{"city": "Atlantis"}')]), _oi_llm(**answered))

    (run,) = rebuild_runs(t.records())

    assert [(c.call_id, c.error, c.result) for c in run.calls] == [("call_1", True, "Error: unknown city: Atlantis")]


def _history(*items: tuple[str, str, dict[str, Any], str | None]) -> str:
    """GenAI input messages repeating calls `(id, name, args, answer)`: a `tool_call` part each, and a
    `tool_call_response` for it when `answer` is given, under the answer's own id (`"call:<id>"` answers `<id>`)."""
    messages: list[dict[str, Any]] = [{"role": "user", "parts": [{"type": "text", "content": "Weather?"}]}]
    for call_id, name, args, answer in items:
        messages.append(
            {"role": "assistant", "parts": [{"type": "tool_call", "id": call_id, "name": name, "arguments": args}]}
        )
        if answer is not None:
            answered_id, _, text = answer.partition(":")
            messages.append(
                {"role": "tool", "parts": [{"type": "tool_call_response", "id": answered_id, "response": text}]}
            )
    return json.dumps(messages)


def test_a_model_only_call_without_id_takes_the_id_its_next_request_repeats_and_answers() -> None:
    """OpenLLMetry's Responses API span lists calls by their item ids, read as none; the next request repeats each
    call under the id its answer carries: the call takes that id, and its outcome with it."""
    t = Traces()
    run = t.span("invoke_agent a", genai_run("a"), start=0, end=100)
    t.span("chat", genai_chat(("", "get_weather", {"city": "Atlantis"}), ("", "get_time", {})), parent=run, start=1)
    later = _history(
        ("call_1", "get_weather", {"city": "Atlantis"}, "call_1:Error: unknown city"),
        ("call_2", "get_time", {}, "call_2:12:00"),
    )
    t.span("chat", {**genai_chat(), "gen_ai.input.messages": later}, parent=run, start=10)

    (built,) = rebuild_runs(t.records())

    assert [(c.name, c.call_id, c.error, c.result) for c in built.calls] == [
        ("get_weather", "call_1", True, "Error: unknown city"),
        ("get_time", "call_2", False, "12:00"),
    ]


def test_a_model_only_call_without_id_stays_without_one_when_its_repetition_is_unanswered_or_ambiguous() -> None:
    cases = {
        # the loop handed the response's items back: the repeated call has the item id, its answer the call id
        "item id": [("fc_1", "get_weather", {"city": "Rome"}, "call_1:Error: no")],
        # the same call made twice: two answered ids fit it
        "twice": [
            ("call_1", "get_weather", {"city": "Rome"}, "call_1:Error: no"),
            ("call_2", "get_weather", {"city": "Rome"}, "call_2:21C"),
        ],
        "other arguments": [("call_1", "get_weather", {"city": "Oslo"}, "call_1:Error: no")],
    }
    for label, items in cases.items():
        t = Traces()
        run = t.span("invoke_agent a", genai_run("a"), start=0, end=100)
        t.span("chat", genai_chat(("", "get_weather", {"city": "Rome"})), parent=run, start=1)
        t.span("chat", {**genai_chat(), "gen_ai.input.messages": _history(*items)}, parent=run, start=10)

        (built,) = rebuild_runs(t.records())

        # the answer it may have had is there, unattributed: its outcome is unknown, and the run says so
        assert ([(c.call_id, c.error) for c in built.calls], built.incomplete) == ([(None, False)], True), label


def test_a_model_only_call_without_id_and_no_answer_to_anything_leaves_its_run_complete() -> None:
    # Nothing answered that the run cannot attribute (no later request, or only answers to calls it holds).
    t = Traces()
    run = t.span("invoke_agent a", genai_run("a"), start=0, end=100)
    t.span("chat", genai_chat(("", "get_weather", {"city": "Rome"}), ("call_2", "get_time", {})), parent=run, start=1)
    later = _history(("call_2", "get_time", {}, "call_2:12:00"))
    t.span("chat", {**genai_chat(), "gen_ai.input.messages": later}, parent=run, start=10)

    (built,) = rebuild_runs(t.records())

    assert [(c.call_id, c.result) for c in built.calls] == [(None, None), ("call_2", "12:00")]
    assert not built.incomplete


def test_openinference_finish_reason_says_a_response_with_hidden_output_called_tools() -> None:
    """OPENINFERENCE_HIDE_OUTPUTS drops `llm.output_messages` and keeps `llm.finish_reason` (Chat Completions): a
    run whose response stopped for tools is flagged incomplete; one whose responses all stopped is complete."""
    hidden = {"output.value": "__REDACTED__", "input.value": "__REDACTED__"}
    t = Traces()
    _oi_run(
        t, _oi_llm(**hidden, **{"llm.finish_reason": "tool_calls"}), _oi_llm(**hidden, **{"llm.finish_reason": "stop"})
    )
    answered = Traces()
    _oi_run(answered, _oi_llm(**hidden, **{"llm.finish_reason": "stop"}))

    (flagged,) = rebuild_runs(t.records())
    (complete,) = rebuild_runs(answered.records())

    assert (flagged.calls, flagged.incomplete) == ((), True)
    assert (complete.calls, complete.incomplete) == ((), False)


def test_an_openinference_response_with_hidden_output_and_no_finish_reason_leaves_its_run_incomplete() -> None:
    """A Responses API span with its output hidden says neither its calls nor a finish reason: whether it called a
    tool is unknown. A span whose output is there, or whose calls other spans record, is read as usual."""
    hidden = _oi_llm(**{"output.value": "__REDACTED__"})
    t = Traces()
    _oi_run(t, hidden)
    shown = Traces()
    _oi_run(shown, _oi_llm(**{"output.value": '{"output": []}'}))
    with_call = Traces()
    _oi_run(with_call, _oi_llm([("call_1", "get_weather", "{}")], **{"output.value": "__REDACTED__"}))

    (unknown,) = rebuild_runs(t.records())
    (answered,) = rebuild_runs(shown.records())
    (listed,) = rebuild_runs(with_call.records())

    assert (unknown.calls, unknown.incomplete) == ((), True)
    assert (answered.calls, answered.incomplete) == ((), False)
    assert ([c.call_id for c in listed.calls], listed.incomplete) == (["call_1"], False)


def _litellm_request(
    calls: list[tuple[str, str]] = (),  # type: ignore[assignment]
    *,
    history: list[dict[str, Any]] | None = None,
    output_tool_calls: list[dict[str, Any]] | None = None,
    text: str = "",
) -> dict[str, Any]:
    """A `litellm_request` span as LiteLLM's logger writes it (`OpenTelemetry.set_attributes`): output messages of
    text parts only (the response's `Message` is no dict: no `tool_calls` beside them, unless `output_tool_calls`),
    the calls as `gen_ai.completion.<j>.function_call.name | arguments`, `history` the request's messages."""
    message: dict[str, Any] = {"role": "assistant", "parts": [{"type": "text", "content": text}] if text else []}
    if output_tool_calls is not None:
        message["tool_calls"] = output_tool_calls
    attrs: dict[str, Any] = {
        "llm.request.type": "completion",
        "gen_ai.system": "openai",
        "gen_ai.operation.name": "chat",
        "gen_ai.input.messages": json.dumps(history or [{"role": "user", "parts": [{"type": "text", "content": "?"}]}]),
        "gen_ai.output.messages": json.dumps([{**message, "finish_reason": "tool_calls" if calls else "stop"}]),
    }
    for j, (name, args) in enumerate(calls):
        attrs[f"gen_ai.completion.{j}.function_call.name"] = name
        attrs[f"gen_ai.completion.{j}.function_call.arguments"] = args
    return attrs


def _litellm_history(*calls: tuple[str, str, str, str]) -> list[dict[str, Any]]:
    """LiteLLM's input messages repeating `(id, name, arguments, answer)`: the assistant message's OpenAI
    `tool_calls` beside its parts, then a `tool` message of one text part with its `tool_call_id`."""
    messages: list[dict[str, Any]] = [{"role": "user", "parts": [{"type": "text", "content": "?"}]}]
    messages.append(
        {
            "role": "assistant",
            "parts": [{"type": "text", "content": ""}],
            "tool_calls": [
                {"id": i, "type": "function", "function": {"name": n, "arguments": a}} for i, n, a, _ in calls
            ],
        }
    )
    for call_id, _, _, answer in calls:
        messages.append({"role": "tool", "parts": [{"type": "text", "content": answer}], "tool_call_id": call_id})
    return messages


def test_litellm_calls_are_read_from_its_flattened_attributes_with_the_ids_its_next_request_repeats() -> None:
    """LiteLLM's output messages hold no call; its `gen_ai.completion.<j>.function_call.*` do, without ids: each
    takes the id the next request repeats it under, and the `tool` message answering that id its outcome."""
    t = Traces()
    run = t.span("invoke_agent a", genai_run("a"), start=0, end=100)
    calls = [("get_weather", '{"city": "Atlantis"}'), ("get_time", '{"timezone": "UTC"}')]
    offered = {
        "llm.request.functions.0.name": "get_weather",
        "llm.request.functions.0.description": "Weather.",
        "llm.request.functions.1.name": "get_time",
    }
    t.span("litellm_request", _litellm_request(calls) | offered, parent=run, start=1, end=5, scope="litellm")
    history = _litellm_history(
        ("call_1", "get_weather", '{"city": "Atlantis"}', "Error: unknown city"),
        ("call_2", "get_time", '{"timezone": "UTC"}', "12:00"),
    )
    answer = _litellm_request(history=history, text="Sorry.")
    t.span("litellm_request", answer, parent=run, start=10, end=15, scope="litellm")

    (built,) = rebuild_runs(t.records())

    assert [(c.name, c.args, c.call_id, c.model_only, c.error, c.result) for c in built.calls] == [
        ("get_weather", {"city": "Atlantis"}, "call_1", True, True, "Error: unknown city"),
        ("get_time", {"timezone": "UTC"}, "call_2", True, False, "12:00"),
    ]
    assert not built.incomplete
    assert [(tool.name, tool.description) for tool in built.available_tools] == [
        ("get_weather", "Weather."),
        ("get_time", None),
    ]


def test_litellm_calls_of_the_last_response_without_a_next_request_keep_no_id() -> None:
    t = Traces()
    run = t.span("invoke_agent a", genai_run("a"), start=0, end=100)
    t.span("litellm_request", _litellm_request([("get_weather", "{}")]), parent=run, start=1, scope="litellm")

    (built,) = rebuild_runs(t.records())

    assert [(c.name, c.call_id, c.model_only) for c in built.calls] == [("get_weather", None, True)]


def test_litellm_output_messages_with_openai_tool_calls_give_the_ids_themselves() -> None:
    """A response message that is a dict keeps its `tool_calls` beside the parts
    (`_transform_messages_to_otel_semantic_conventions`): they are read, with their ids, before the flattened
    attributes."""
    t = Traces()
    run = t.span("invoke_agent a", genai_run("a"), start=0, end=100)
    tool_calls = [{"id": "call_9", "type": "function", "function": {"name": "get_time", "arguments": "{}"}}]
    attrs = _litellm_request([("get_time", "{}")], output_tool_calls=tool_calls)
    t.span("litellm_request", attrs, parent=run, start=1, scope="litellm")

    (built,) = rebuild_runs(t.records())

    assert [(c.name, c.call_id) for c in built.calls] == [("get_time", "call_9")]


def test_a_litellm_span_of_another_scope_is_not_read_as_litellm() -> None:
    # The same attributes under another tracer: the GenAI reader reads the (call-less) output messages.
    t = Traces()
    run = t.span("invoke_agent a", genai_run("a"), start=0, end=100)
    t.span("chat", _litellm_request([("get_weather", "{}")]), parent=run, start=1, scope="not-litellm")

    (built,) = rebuild_runs(t.records())

    assert built.calls == ()


def test_a_run_span_with_nothing_under_it_is_incomplete() -> None:
    """LiteLLM logs a streamed response from a worker thread without the caller's context: its span starts a
    trace of its own, and the run span is left with nothing under it. Nothing says the run made no call."""
    t = Traces()
    t.span("invoke_agent a", genai_run("a"), start=0, end=100)
    bare = rebuild_runs(t.records())
    t2 = Traces()
    run = t2.span("invoke_agent a", genai_run("a"), start=0, end=100)
    t2.span("chat", genai_chat(), parent=run, start=1)
    answered = rebuild_runs(t2.records())

    t3 = Traces()
    run = t3.span("invoke_agent a", genai_run("a"), start=0, end=100)
    t3.span("SELECT", {"db.system.name": "x"}, parent=run, start=1)  # no convention knows it
    unknown_below = rebuild_runs(t3.records())

    assert [(r.calls, r.incomplete) for r in bare] == [((), True)]
    assert [(r.calls, r.incomplete) for r in answered] == [((), False)]
    assert [(r.calls, r.incomplete) for r in unknown_below] == [((), True)]


def _oi_answers(*messages: tuple[str, Any]) -> dict[str, Any]:
    """OpenInference input messages as openinference-instrumentation-litellm writes them: `("assistant", [ids])`
    with its calls, `("tool", text)` without `tool_call_id`, `("user", text)`."""
    attrs: dict[str, Any] = {}
    for i, (role, value) in enumerate(messages):
        prefix = f"llm.input_messages.{i}.message."
        attrs[prefix + "role"] = role
        if role == "assistant":
            for k, call_id in enumerate(value):
                attrs[f"{prefix}tool_calls.{k}.tool_call.id"] = call_id
                attrs[f"{prefix}tool_calls.{k}.tool_call.function.name"] = "get_weather"
        else:
            attrs[prefix + "content"] = value
    return attrs


def test_an_openinference_answer_without_call_id_answers_the_one_call_it_follows() -> None:
    t = Traces()
    answers = _oi_answers(("user", "?"), ("assistant", ["call_1"]), ("tool", "Error: unknown city: Atlantis"))
    _oi_run(t, _oi_llm([("call_1", "get_weather", '{"city": "Atlantis"}')]), _oi_llm(**answers))

    (run,) = rebuild_runs(t.records())

    assert [(c.call_id, c.error, c.result) for c in run.calls] == [("call_1", True, "Error: unknown city: Atlantis")]
    assert not run.incomplete


def test_openinference_answers_without_call_ids_after_several_calls_leave_the_outcomes_unknown() -> None:
    """After a response of several calls, id-less answers do not say which call each answers: no outcome is read
    and the run is flagged incomplete (one of them may have failed)."""
    t = Traces()
    answers = _oi_answers(
        ("user", "?"), ("assistant", ["call_1", "call_2"]), ("tool", "21C"), ("tool", "Error: unknown city")
    )
    calls = [("call_1", "get_weather", '{"city": "Rome"}'), ("call_2", "get_weather", '{"city": "Atlantis"}')]
    _oi_run(t, _oi_llm(calls), _oi_llm(**answers))

    (run,) = rebuild_runs(t.records())

    assert [(c.call_id, c.error, c.result) for c in run.calls] == [("call_1", False, None), ("call_2", False, None)]
    assert run.incomplete


def test_a_run_span_below_the_root_with_nothing_under_it_is_read_as_before() -> None:
    """The blind-run flag is asked of a run span at its trace's root only: a sub-agent's run span with nothing
    under it, inside a call of a run that holds its model responses, is read as a run that made no call."""
    t = Traces()
    top = t.span("invoke_agent a", genai_run("a"), start=0, end=100)
    t.span("chat", genai_chat(("call_1", "ask_b", {})), parent=top, start=1, end=5)
    tool = t.span("execute_tool ask_b", genai_tool("ask_b", "call_1"), parent=top, start=6, end=50)
    t.span("invoke_agent b", genai_run("b"), parent=tool, start=7, end=49)

    runs = rebuild_runs(t.records())

    assert [(r.agent_name, [c.name for c in r.calls], r.incomplete) for r in runs] == [
        ("a", ["ask_b"], False),
        ("b", [], False),
    ]


def test_a_litellm_response_with_a_call_it_skipped_lists_the_others_and_its_run_is_flagged() -> None:
    """`_tool_calls_kv_pair` skips a call without a `function` (a custom tool call), leaving its index empty: the
    calls after it are read, and the response lists only some of its calls, so the run is flagged."""
    t = Traces()
    run = t.span("invoke_agent a", genai_run("a"), start=0, end=100)
    attrs = _litellm_request([("get_weather", '{"city": "Rome"}'), ("skipped", "{}"), ("get_time", "{}")])
    del attrs["gen_ai.completion.1.function_call.name"], attrs["gen_ai.completion.1.function_call.arguments"]
    t.span("litellm_request", attrs, parent=run, start=1, end=5, scope="litellm")
    whole = Traces()
    run = whole.span("invoke_agent a", genai_run("a"), start=0, end=100)
    listed = _litellm_request([("get_weather", '{"city": "Rome"}'), ("get_time", "{}")])
    whole.span("litellm_request", listed, parent=run, start=1, end=5, scope="litellm")

    (built,) = rebuild_runs(t.records())
    (complete,) = rebuild_runs(whole.records())

    assert ([c.name for c in built.calls], built.incomplete) == (["get_weather", "get_time"], True)
    assert ([c.name for c in complete.calls], complete.incomplete) == (["get_weather", "get_time"], False)
