"""OpenLIT's spans, built as openlit 1.45 writes them (tests/captures/openlit-*/NOTES.md), one rule per test.

The captures in tests/testdata/traces/openlit-openai*/ check the rules end to end; these pin each rule on
its own, including the shapes the captures do not hold (a guardrail, MCP tool listing, a count mismatch).
"""

from __future__ import annotations

import json
from typing import Any

from toolscore.collector.extract import ExtractStats, rebuild_runs
from toolscore.collector.extract.conventions import EXTRACTORS, Role, classify
from toolscore.collector.extract.conventions.openlit import OpenLITExtractor
from toolscore.scorers import AgentRun

from .test_extract_support import Traces

AGENTS = "openlit.instrumentation.openai_agents"
OPENAI = "openlit.instrumentation.openai"
MANUAL = "openlit"


def _calls(run: AgentRun) -> list[tuple[str, Any, str | None, bool]]:
    return [(c.name, c.args, c.call_id, c.error) for c in run.calls]


def _agent(name: str) -> dict[str, Any]:
    return {"gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": name, "gen_ai.agent.id": "140693233"}


def _tool(name: str, args: dict[str, Any]) -> dict[str, Any]:
    return {
        "gen_ai.operation.name": "execute_tool",
        "gen_ai.tool.name": name,
        "gen_ai.tool.type": "function",
        "gen_ai.tool.call.arguments": json.dumps(args),
    }


def _chat(
    calls: list[tuple[str, str, dict[str, Any]]],
    *,
    api: str = "chat_completions",
    stream: bool = False,
    flat_ids: list[str] | None = None,
) -> dict[str, Any]:
    parts = [{"type": "tool_call", "id": i, "name": n, "arguments": a} for i, n, a in calls]
    attrs: dict[str, Any] = {
        "gen_ai.operation.name": "chat",
        "openai.api.type": api,
        "gen_ai.request.stream": stream,
        "gen_ai.output.messages": json.dumps([{"role": "assistant", "parts": parts, "finish_reason": "tool_call"}]),
    }
    if calls:
        attrs["gen_ai.tool.name"] = ", ".join(n for _, n, _ in calls)
        attrs["gen_ai.tool.call.id"] = ", ".join(flat_ids if flat_ids is not None else [i for i, _, _ in calls])
        attrs["gen_ai.tool.args"] = ", ".join(json.dumps(a) for _, _, a in calls)
    return attrs


def test_openlit_is_asked_before_the_genai_fallback_and_only_about_its_scopes() -> None:
    names = [e.name for e in EXTRACTORS]
    assert names.index("openlit") < names.index("genai")
    assert OpenLITExtractor.gate.scopes == {MANUAL, OPENAI, AGENTS}
    assert not OpenLITExtractor.gate.keys


def test_agents_sdk_only_the_agent_span_is_a_run_not_task_turn_handoff_or_guardrail_spans() -> None:
    """OpenLIT maps every SDK span type it does not know (0.20's `task`, `turn`) and handoffs, guardrails and custom
    spans to `invoke_agent`; only the SDK agent span carries `gen_ai.agent.id`."""
    t = Traces()
    workflow = t.span(
        "invoke_workflow Agent workflow", {"gen_ai.operation.name": "invoke_workflow"}, end=100, scope=AGENTS
    )
    task = t.span(
        "invoke_agent", {"gen_ai.operation.name": "invoke_agent"}, parent=workflow, start=1, end=99, scope=AGENTS
    )
    triage = t.span("invoke_agent triage", _agent("triage"), parent=task, start=2, end=50, scope=AGENTS)
    guard = {
        "gen_ai.operation.name": "invoke_agent",
        "gen_ai.agent.name": "no_pii",
        "gen_ai.guardrail.triggered": False,
    }
    t.span("invoke_agent no_pii", guard, parent=triage, start=3, scope=AGENTS)
    turn = t.span(
        "invoke_agent", {"gen_ai.operation.name": "invoke_agent"}, parent=triage, start=4, end=49, scope=AGENTS
    )
    t.span("chat m", _chat([("call_1", "transfer_to_billing", {})]), parent=turn, start=5, scope=OPENAI)
    handoff = {"gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": "billing", "gen_ai.agent.source": "triage"}
    t.span("invoke_agent billing", handoff, parent=turn, start=10, scope=AGENTS)
    billing = t.span("invoke_agent billing", _agent("billing"), parent=task, start=51, end=98, scope=AGENTS)
    turn2 = t.span(
        "invoke_agent", {"gen_ai.operation.name": "invoke_agent"}, parent=billing, start=52, end=97, scope=AGENTS
    )
    t.span("chat m", _chat([("call_2", "refund", {"order": "A-1"})]), parent=turn2, start=53, scope=OPENAI)
    t.span("execute_tool refund", _tool("refund", {"order": "A-1"}), parent=turn2, start=60, scope=AGENTS)

    runs = rebuild_runs(t.records())

    assert [(r.agent_name, r.convention) for r in runs] == [("triage", "openlit"), ("billing", "openlit")]
    assert [_calls(r) for r in runs] == [
        [("transfer_to_billing", {}, "call_1", False)],  # the model's call; the handoff span is none
        [("refund", {"order": "A-1"}, "call_2", False)],
    ]


def test_agents_sdk_tool_failure_is_a_failed_call_of_no_named_type_and_mcp_listing_is_no_call() -> None:
    """OpenLIT writes the SDK error's message to `error.type`; `mcp_list_tools` lists an MCP server's tools."""
    t = Traces()
    run = t.span("invoke_agent a", _agent("a"), end=100, scope=AGENTS)
    failed = {**_tool("w", {"c": "x"}), "error.type": "Error running tool (non-fatal)"}
    t.span("execute_tool w", failed, parent=run, start=10, scope=AGENTS, error="Error running tool (non-fatal)")
    listing = {"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "mcp_list_tools", "gen_ai.mcp.server": "fs"}
    t.span("execute_tool fs", listing, parent=run, start=5, scope=AGENTS)
    t.span("execute_tool w", _tool("w", {"c": "y"}), parent=run, start=20, scope=AGENTS)

    (result,) = rebuild_runs(t.records())

    assert _calls(result) == [("w", {"c": "x"}, None, True), ("w", {"c": "y"}, None, False)]
    assert result.calls[0].error_type == "_OTHER"


def test_responses_api_call_ids_come_from_the_flat_ids_not_the_output_item_ids() -> None:
    """A streamed Responses API span lists every call, each with its output item id (`fc_...`) as the part id;
    the call ids are the comma-joined `gen_ai.tool.call.id`, in the same order."""
    t = Traces()
    run = t.span("loop", {}, end=100, scope=MANUAL)
    calls = [("fc_1_0", "w", {"c": "b"}), ("fc_1_1", "w", {"c": "a"})]
    t.span(
        "chat m",
        _chat(calls, api="responses", stream=True, flat_ids=["call_b", "call_a"]),
        parent=run,
        start=1,
        scope=OPENAI,
    )
    other = t.span("loop2", {}, start=200, end=300, scope=MANUAL)
    mismatch = _chat(calls, api="responses", stream=True, flat_ids=["call_b"])
    t.span("chat m", mismatch, parent=other, start=201, scope=OPENAI)

    runs = rebuild_runs(t.records())

    assert {r.agent_name: _calls(r) for r in runs} == {
        "loop": [("w", {"c": "b"}, "call_b", False), ("w", {"c": "a"}, "call_a", False)],
        "loop2": [("w", {"c": "b"}, None, False), ("w", {"c": "a"}, None, False)],  # never the fc_ ids
    }


def test_a_non_streamed_responses_api_span_gives_no_call() -> None:
    """It keeps the last function_call of the response only: how many calls the response issued is unknown, so
    its calls are not read (no model-only call, no id, no order); tool spans still give theirs, in start order.
    A run with no call of a tool span has only its responses to go by: it is flagged incomplete, not read as a
    run that called nothing; one whose tool spans recorded its calls is not."""
    t = Traces()
    loop = t.span("loop", {}, end=100, scope=MANUAL)
    last_only = _chat([("fc_1_2", "s", {"x": 3})], api="responses", flat_ids=["call_3"])
    t.span("chat m", last_only, parent=loop, start=1, scope=OPENAI)
    agent = t.span("invoke_agent a", _agent("a"), start=200, end=300, scope=AGENTS)
    t.span("chat m", last_only, parent=agent, start=201, scope=OPENAI)
    for i, name in enumerate(("q", "r", "s")):
        t.span(f"execute_tool {name}", _tool(name, {"x": i + 1}), parent=agent, start=210 + i, scope=AGENTS)

    runs = rebuild_runs(t.records(), stats=(stats := ExtractStats()))

    assert {r.agent_name: _calls(r) for r in runs} == {
        "loop": [],
        "a": [("q", {"x": 1}, None, False), ("r", {"x": 2}, None, False), ("s", {"x": 3}, None, False)],
    }
    assert stats.model_only_calls == 0
    assert {r.agent_name: r.incomplete for r in runs} == {"loop": True, "a": False}


def test_a_streamed_or_chat_completions_response_lists_every_call_and_leaves_the_run_complete() -> None:
    t = Traces()
    for i, (api, stream) in enumerate((("responses", True), ("chat_completions", False))):
        loop = t.span(f"loop{i}", {}, start=i * 100, end=i * 100 + 50, scope=MANUAL)
        t.span(
            "chat m",
            _chat([("call_1", "s", {"x": 3})], api=api, stream=stream),
            parent=loop,
            start=i * 100 + 1,
            scope=OPENAI,
        )
    runs = rebuild_runs(t.records())
    assert {r.agent_name: (len(r.calls), r.incomplete) for r in runs} == {"loop0": (1, False), "loop1": (1, False)}


def test_chat_completions_calls_are_model_only_calls_of_the_start_trace_run_in_the_models_order() -> None:
    t = Traces()
    run = t.span("weather_agent", {"gen_ai.output.messages": "Sunny in both."}, end=100, scope=MANUAL)
    calls = [("call_2", "w", {"c": "Oslo"}), ("call_1", "w", {"c": "Rome"})]
    t.span("chat m", _chat(calls), parent=run, start=1, scope=OPENAI)
    for city in ("Rome", "Oslo"):  # the user's @openlit.trace spans around the tool: no call, no run
        traced = {
            "gen_ai.output.messages": f"sunny in {city}",
            "function.args": "()",
            "function.kwargs": f"{{'c': '{city}'}}",
        }
        t.span("w", traced, parent=run, start=10, scope=MANUAL)
    t.span("chat m", _chat([]), parent=run, start=20, scope=OPENAI)

    (result,) = rebuild_runs(t.records())

    assert (result.agent_name, result.output, result.convention) == ("weather_agent", "Sunny in both.", "openlit")
    assert _calls(result) == [("w", {"c": "Oslo"}, "call_2", False), ("w", {"c": "Rome"}, "call_1", False)]
    assert all(c.model_only for c in result.calls)


def test_manual_spans_start_trace_is_a_run_a_traced_function_is_not_even_when_it_failed() -> None:
    """`@openlit.trace` sets `function.args`/`function.kwargs` only when the function returned; when it raised,
    the exception is recorded twice (by the decorator, then by `start_as_current_span`), once for a failed
    `start_trace` body."""
    t = Traces()
    exception = ("exception", {"exception.type": "ToolFailure", "exception.message": "unknown city"})
    t.span("agent", {}, scope=MANUAL)
    t.span("crashed_agent", {}, start=2, scope=MANUAL, error="ToolFailure", events=[exception])
    t.span("get_weather", {}, start=4, scope=MANUAL, error="ToolFailure", events=[exception, exception])
    t.span("helper", {"function.args": "()", "function.kwargs": "{}"}, start=6, scope=MANUAL)
    t.span("step", {"gen_ai.operation.name": "chat"}, start=8, scope=MANUAL)

    roles = [classify(span) for span in t.records()]

    assert [(found[0].name, found[1]) if found else None for found in roles] == [
        ("openlit", Role.RUN),
        ("openlit", Role.RUN),
        None,
        None,
        ("genai", Role.LLM),  # a span with a GenAI operation is left to the GenAI reader
    ]
