"""OpenInference runs as each instrumentation marks them, names, envelopes and finishing tools.

Spans are shaped as openinference-instrumentation-{crewai,llama-index,smolagents,dspy,langchain,openai-agents}
write them (scopes, span names, attributes), recorded by the real SDK.
"""

from __future__ import annotations

import json
from typing import Any

from opentelemetry.trace import Span

from toolscore.collector.extract import ExtractStats, rebuild_runs
from toolscore.scorers import AgentRun

from .test_extract_support import Traces

KIND = "openinference.span.kind"
SCOPE = "openinference.instrumentation."


def _tool(t: Traces, parent: Span, name: str, args: Any, scope: str, *, start: float, **attrs: Any) -> Span:
    values = {KIND: "TOOL", "input.value": args if isinstance(args, str) else json.dumps(args), **attrs}
    return t.span(name, values, parent=parent, scope=scope, start=start, end=start + 1)


def _llm(t: Traces, parent: Span, scope: str, start: float, tools: tuple[str, ...] = ()) -> Span:
    attrs: dict[str, Any] = {KIND: "LLM", "llm.output_messages.0.message.role": "assistant"}
    for i, name in enumerate(tools):
        attrs[f"llm.tools.{i}.tool.json_schema"] = json.dumps({"type": "function", "function": {"name": name}})
    return t.span("ChatCompletion", attrs, parent=parent, scope=scope, start=start, end=start + 1)


def _summary(runs: list[AgentRun]) -> list[tuple[str | None, bool, list[tuple[str, Any, bool]]]]:
    return [(r.agent_name, r.inferred, [(c.name, c.args, c.final) for c in r.calls]) for r in runs]


def test_crewai_agents_of_one_crew_are_runs_of_their_own() -> None:
    t, scope = Traces(), SCOPE + "crewai"
    crew = t.span("Crew_1f2e.kickoff", {KIND: "CHAIN"}, scope=scope, start=0, end=100)
    for i, role in enumerate(("researcher", "writer")):
        agent = t.span(
            f"{role}._execute_core",
            {KIND: "AGENT", "graph.node.id": role},
            parent=crew,
            scope=scope,
            start=10 + 40 * i,
            end=40 + 40 * i,
        )
        _tool(t, agent, f"{role}_tool.run", {"q": role}, scope, start=20 + 40 * i, **{"tool.name": f"{role}_tool"})

    runs = rebuild_runs(t.records())

    assert _summary(runs) == [
        ("researcher", False, [("researcher_tool", {"q": "researcher"}, False)]),
        ("writer", False, [("writer_tool", {"q": "writer"}, False)]),
    ]


def test_llama_index_agent_run_is_its_workflow_run_named_by_its_first_step() -> None:
    t, scope = Traces(), SCOPE + "llama_index"
    run = t.span("FunctionAgent.run", {KIND: "CHAIN"}, scope=scope, start=0, end=100)
    init = "AgentInput(input=[ChatMessage(role=<MessageRole.USER: 'user'>)], current_agent_name='weather_agent')"
    t.span("BaseWorkflowAgent.init_run", {KIND: "CHAIN", "output.value": init}, parent=run, scope=scope, start=1)
    step = t.span("BaseWorkflowAgent.call_tool", {KIND: "CHAIN"}, parent=run, scope=scope, start=10, end=20)
    _tool(t, step, "FunctionTool.acall", {"kwargs": {"city": "Paris"}}, scope, start=11, **{"tool.name": "get_weather"})

    (found,) = rebuild_runs(t.records())

    assert (found.span_id, found.agent_name, found.inferred) == (
        run.get_span_context().span_id.to_bytes(8).hex(),
        "weather_agent",
        False,
    )
    assert [(c.name, c.args) for c in found.calls] == [("get_weather", {"city": "Paris"})]


def test_smolagents_managed_agent_is_its_own_run_and_final_answer_is_flagged() -> None:
    t, scope = Traces(), SCOPE + "smolagents"
    manager = t.span("manager.run", {KIND: "AGENT"}, scope=scope, start=0, end=100)
    step = t.span("Step 1", {KIND: "CHAIN"}, parent=manager, scope=scope, start=1, end=60)
    sub = t.span("researcher.run", {KIND: "AGENT"}, parent=step, scope=scope, start=5, end=50)
    sub_step = t.span("Step 1", {KIND: "CHAIN"}, parent=sub, scope=scope, start=6, end=40)
    envelope = {"args": [], "sanitize_inputs_outputs": True, "kwargs": {"query": "otel"}}
    _tool(t, sub_step, "SimpleTool", envelope, scope, start=10, **{"tool.name": "search"})
    final = {"args": [], "sanitize_inputs_outputs": True, "kwargs": {"answer": "done"}}
    _tool(t, sub_step, "FinalAnswerTool", final, scope, start=20, **{"tool.name": "final_answer"})
    last = t.span("Step 2", {KIND: "CHAIN"}, parent=manager, scope=scope, start=61, end=90)
    _tool(t, last, "FinalAnswerTool", final, scope, start=70, **{"tool.name": "final_answer"})

    runs = rebuild_runs(t.records())

    assert _summary(runs) == [
        ("manager", False, [("final_answer", {"answer": "done"}, True)]),
        ("researcher", False, [("search", {"query": "otel"}, False), ("final_answer", {"answer": "done"}, True)]),
    ]
    assert runs[1].parent_span_id == runs[0].span_id


def test_dspy_react_is_the_run_tool_names_come_from_span_names_and_finish_is_flagged() -> None:
    t, scope = Traces(), SCOPE + "dspy"
    program = t.span("WeatherBot.forward", {KIND: "CHAIN"}, scope=scope, start=0, end=100)
    react = t.span("ReAct.forward", {KIND: "CHAIN"}, parent=program, scope=scope, start=1, end=99)
    _tool(t, react, "get_weather.__call__", {"kwargs": {"city": "Paris"}}, scope, start=10)
    _tool(t, react, "finish.__call__", {"kwargs": {}}, scope, start=20)

    (run,) = rebuild_runs(t.records())

    assert (run.span_id, run.agent_name) == (react.get_span_context().span_id.to_bytes(8).hex(), "ReAct")
    assert _summary([run])[0][2] == [("get_weather", {"city": "Paris"}, False), ("finish", {}, True)]


def test_a_finishing_tool_of_another_framework_is_not_flagged() -> None:
    t = Traces()
    agent = t.span("agent", {KIND: "AGENT", "agent.name": "a"}, scope=SCOPE + "openai_agents", start=0, end=10)
    _tool(t, agent, "final_answer", {"answer": 1}, SCOPE + "openai_agents", start=1, **{"tool.name": "final_answer"})

    (run,) = rebuild_runs(t.records())

    assert [c.final for c in run.calls] == [False]


def test_a_real_kwargs_parameter_is_kept() -> None:
    t, scope = Traces(), SCOPE + "llama_index"
    run = t.span("FunctionAgent.run", {KIND: "CHAIN"}, scope=scope, start=0, end=100)
    declared = json.dumps({"type": "object", "properties": {"kwargs": {"type": "object"}}})
    _tool(
        t,
        run,
        "FunctionTool.acall",
        {"kwargs": {"a": 1}},
        scope,
        start=1,
        **{"tool.name": "t", "tool.parameters": declared},
    )
    _tool(t, run, "FunctionTool.acall", {"kwargs": {"a": 1}, "verbose": True}, scope, start=3, **{"tool.name": "u"})
    _tool(t, run, "FunctionTool.acall", {"args": [1], "kwargs": {}}, scope, start=5, **{"tool.name": "v"})
    flagged = {"args": [], "sanitize_inputs_outputs": True, "kwargs": {"a": 1}}  # smolagents' envelope: unwrapped
    _tool(t, run, "FunctionTool.acall", flagged, scope, start=7, **{"tool.name": "w"})
    not_a_flag = {"args": [], "mode": "fast", "kwargs": {"a": 1}}  # an argument beside them that is no flag: kept
    _tool(t, run, "FunctionTool.acall", not_a_flag, scope, start=9, **{"tool.name": "x"})

    (found,) = rebuild_runs(t.records())

    assert [c.args for c in found.calls] == [
        {"kwargs": {"a": 1}},
        {"kwargs": {"a": 1}, "verbose": True},
        {"args": [1], "kwargs": {}},
        {"a": 1},
        {"args": [], "mode": "fast", "kwargs": {"a": 1}},
    ]


def test_openai_agents_sdk_trace_span_and_langgraph_nodes_are_not_runs() -> None:
    t, oa, lc = Traces(), SCOPE + "openai_agents", SCOPE + "langchain"
    workflow = t.span("Agent workflow", {KIND: "AGENT"}, scope=oa, start=0, end=100)
    agent = t.span("triage", {KIND: "AGENT", "agent.name": "triage"}, parent=workflow, scope=oa, start=1, end=50)
    _tool(t, agent, "lookup", {"id": 1}, oa, start=2, **{"tool.name": "lookup"})
    graph = t.span("weather_agent", {KIND: "AGENT", "metadata": "{}"}, scope=lc, start=200, end=300)
    node = t.span(
        "agent", {KIND: "AGENT", "metadata": json.dumps({"langgraph_node": "agent"})}, parent=graph, scope=lc, start=201
    )
    _llm(t, node, lc, 202, tools=("get_weather",))

    runs = rebuild_runs(t.records())

    assert sorted(_summary(runs)) == [("triage", False, [("lookup", {"id": 1}, False)]), ("weather_agent", False, [])]


def test_a_graph_whose_model_was_offered_tools_and_called_none_is_a_run_with_no_calls() -> None:
    t, lc = Traces(), SCOPE + "langchain"
    app = t.span("POST /ask", start=0, end=100)
    graph = t.span("coordinator", {KIND: "CHAIN", "metadata": "{}"}, parent=app, scope=lc, start=1, end=99)
    node = t.span(
        "agent", {KIND: "AGENT", "metadata": json.dumps({"langgraph_node": "agent"})}, parent=graph, scope=lc, start=2
    )
    _llm(t, node, lc, 3, tools=("get_weather",))
    chat = t.span("chat", {KIND: "CHAIN"}, parent=app, scope=lc, start=110, end=120)
    _llm(t, chat, lc, 111)  # offered no tools: a chat turn, not an agent's run
    stats = ExtractStats()

    runs = rebuild_runs(t.records(), stats=stats)

    assert _summary(runs) == [("coordinator", True, [])]
    assert stats.inferred_runs == 1


def test_agent_names_come_from_the_first_name_recorded_in_the_documented_order() -> None:
    t, scope = Traces(), SCOPE + "crewai"
    names = [
        {"gen_ai.agent.name": "genai", "agent.name": "oi", "graph.node.id": "node"},
        {"agent.name": "oi", "graph.node.id": "node"},
        {"graph.node.id": "node"},
        {},
    ]
    crew = t.span("Crew.kickoff", {KIND: "CHAIN"}, scope=scope, start=0, end=100)
    for i, attrs in enumerate(names):
        agent = t.span(
            "spanned._execute_core", {KIND: "AGENT", **attrs}, parent=crew, scope=scope, start=10 * i, end=10 * i + 5
        )
        _tool(t, agent, "t", {}, scope, start=10 * i + 1, **{"tool.name": "t"})

    runs = rebuild_runs(t.records())

    assert [r.agent_name for r in runs] == ["genai", "oi", "node", "spanned"]


def test_an_invoke_agent_span_without_the_name_attribute_is_named_by_its_span_name() -> None:
    t = Traces()
    t.span("invoke_agent billing", {"gen_ai.operation.name": "invoke_agent"}, start=0, end=5)
    t.span("invoke_agent", {"gen_ai.operation.name": "invoke_agent"}, start=10, end=15)

    runs = rebuild_runs(t.records())

    assert sorted((r.agent_name or "") for r in runs) == ["", "billing"]


def _responses_llm(
    t: Traces,
    parent: Span,
    scope: str,
    calls: list[tuple[str, str, str]],
    *,
    start: float,
    listed_as: str | None = None,
) -> Span:
    """An LLM span that flattens Responses API items (id, call_id, name) with the item id as `tool_call.id`;
    `output.value` lists the same items with both ids (under the name `listed_as`, when given)."""
    attrs: dict[str, Any] = {KIND: "LLM", "llm.output_messages.0.message.role": "assistant"}
    listed = []
    for j, (item_id, call_id, name) in enumerate(calls):
        prefix = f"llm.output_messages.0.message.tool_calls.{j}.tool_call"
        attrs |= {f"{prefix}.id": item_id, f"{prefix}.function.name": name, f"{prefix}.function.arguments": "{}"}
        function = {"name": listed_as or name, "arguments": "{}"}
        listed.append({"id": item_id, "call_id": call_id, "type": "function", "function": function})
    attrs["output.value"] = json.dumps([{"role": "assistant", "tool_calls": listed}])
    return t.span("OpenAIResponses.invoke", attrs, parent=parent, scope=scope, start=start, end=start + 1)


def test_a_responses_api_call_flattened_with_its_item_id_gets_its_call_id() -> None:
    t, scope = Traces(), SCOPE + "agno"
    agent = t.span("helper.run", {KIND: "AGENT", "agent.name": "helper"}, scope=scope, start=0, end=100)
    _responses_llm(t, agent, scope, [("fc_1", "call_x", "get_time"), ("fc_2", "call_y", "get_weather")], start=1)
    _tool(t, agent, "get_time", {}, scope, start=10, **{"tool.name": "get_time"})
    _tool(t, agent, "get_weather", {}, scope, start=20, **{"tool.name": "get_weather"})
    # The output lists another call than the flattened one: the flattened id stays.
    other = t.span("other.run", {KIND: "AGENT", "agent.name": "other"}, scope=scope, start=200, end=300)
    _responses_llm(t, other, scope, [("fc_3", "call_z", "get_time")], start=201, listed_as="get_stock_price")
    _tool(t, other, "get_time", {}, scope, start=210, **{"tool.name": "get_time"})

    runs = rebuild_runs(t.records())

    assert {r.agent_name: [c.call_id for c in r.calls] for r in runs} == {
        "helper": ["call_x", "call_y"],
        "other": ["fc_3"],
    }
