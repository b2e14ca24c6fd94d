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
LANGGRAPH = "openlit.instrumentation.langgraph"
LANGCHAIN = "openlit.instrumentation.langchain"
CREWAI = "openlit.instrumentation.crewai"
SMOLAGENTS = "openlit.instrumentation.smolagents"
AGNO = "openlit.instrumentation.agno"
PYDANTIC_AI = "openlit.instrumentation.pydantic_ai"
RUN_ID = "01a227a4-2c40-74e9-ab58-6c1c248f39b4"
"""A LangChain run id, what OpenLIT's LangChain tool span says `gen_ai.tool.call.id` until the tool returns a
`ToolMessage`."""


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
    assert OpenLITExtractor.gate.scopes == {
        MANUAL,
        OPENAI,
        AGENTS,
        LANGGRAPH,
        LANGCHAIN,
        CREWAI,
        SMOLAGENTS,
        AGNO,
        PYDANTIC_AI,
    }
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


def _workflow(graph: str) -> dict[str, Any]:
    return {"gen_ai.operation.name": "invoke_workflow", "gen_ai.workflow.name": graph}


def _chain(name: str) -> dict[str, Any]:
    """The LangChain handler's span of a chain whose name says "agent" (a graph's root chain, or a node step)."""
    return {"gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": name, "gen_ai.agent.id": RUN_ID}


def _lc_tool(name: str, args_repr: str, call_id: str | None, *, returned: str | None = None) -> dict[str, Any]:
    """The LangChain handler's tool span: the arguments' repr; the result a ToolMessage's repr naming `call_id`
    (`returned`: another result), the call id the model's when the result names it, else the run id."""
    result = returned if returned is not None else f"content='ok' name='{name}' tool_call_id='{call_id}'"
    return {
        "gen_ai.operation.name": "execute_tool",
        "gen_ai.tool.name": name,
        "gen_ai.tool.call.arguments": args_repr,
        "gen_ai.tool.call.id": call_id if returned is None and call_id else RUN_ID,
        "gen_ai.tool.call.result": result,
    }


def _lc_chat(calls: list[tuple[str, str, dict[str, Any]]]) -> dict[str, Any]:
    parts = [{"type": "tool_call", "id": i, "name": n, "arguments": json.dumps(a)} for i, n, a in calls]
    return {
        "gen_ai.operation.name": "chat",
        "gen_ai.output.messages": json.dumps([{"role": "assistant", "parts": parts, "finish_reason": "tool_calls"}]),
    }


def test_langgraph_graph_run_is_the_workflow_span_not_node_steps_root_chains_or_checkpoints() -> None:
    """The `Pregel` wrappers' `invoke_workflow <graph>` is the run; `invoke_agent <node>` spans of both the
    `add_node` wrapper and the LangChain handler are steps; a checkpoint span (`invoke_workflow checkpoint_write`)
    names no workflow."""
    t = Traces()
    graph = t.span("invoke_workflow weather_agent", _workflow("weather_agent"), end=100, scope=LANGGRAPH)
    t.span(
        "invoke_workflow checkpoint_write", {"gen_ai.operation.name": "invoke_workflow"}, parent=graph, scope=LANGGRAPH
    )
    t.span("create_agent default", {"gen_ai.operation.name": "create_agent"}, parent=graph, scope=LANGGRAPH)
    root = t.span("invoke_agent weather_agent", _chain("weather_agent"), parent=graph, start=1, end=99, scope=LANGCHAIN)
    node = {**_chain("agent"), "gen_ai.agent.id": "agent"}
    t.span("invoke_agent agent", node, parent=graph, start=2, end=3, scope=LANGGRAPH)
    step = t.span("invoke_agent agent", _chain("agent"), parent=root, start=2, end=9, scope=LANGCHAIN)
    t.span("chat m", _lc_chat([("call_1", "w", {"city": "Oslo"})]), parent=step, start=3, scope=LANGCHAIN)
    t.span("execute_tool w", _lc_tool("w", "{'city': 'Oslo'}", "call_1"), parent=root, start=10, scope=LANGCHAIN)

    runs = rebuild_runs(t.records())

    assert [(r.agent_name, r.convention, r.inferred, _calls(r)) for r in runs] == [
        ("weather_agent", "openlit", False, [("w", {"city": "Oslo"}, "call_1", False)])
    ]


def test_langchain_tool_call_id_is_kept_only_when_its_result_names_it() -> None:
    """A failed tool keeps the LangChain run id (only `on_tool_end` sets the model's id, from the ToolMessage), as
    does one that returned no ToolMessage: no call id from the span, the model response's id stands in."""
    t = Traces()
    graph = t.span("invoke_workflow g", _workflow("g"), end=100, scope=LANGGRAPH)
    t.span("chat m", _lc_chat([("call_1", "w", {"city": "X"})]), parent=graph, start=1, scope=LANGCHAIN)
    failed = {**_lc_tool("w", "{'city': 'X'}", None), "error.type": "ToolFailure"}
    del failed["gen_ai.tool.call.result"]
    t.span("execute_tool w", failed, parent=graph, start=10, scope=LANGCHAIN, error="unknown city: X")
    t.span("chat m", _lc_chat([("call_2", "w", {"city": "Y"})]), parent=graph, start=20, scope=LANGCHAIN)
    plain = _lc_tool("w", "{'city': 'Y'}", "call_2", returned="sunny")
    t.span("execute_tool w", plain, parent=graph, start=30, scope=LANGCHAIN)
    unverified = _lc_tool("v", "{'q': 1}", None, returned="done")
    t.span("execute_tool v", unverified, parent=graph, start=40, scope=LANGCHAIN)

    (run,) = rebuild_runs(t.records())

    assert [(c.name, c.args, c.call_id, c.error, c.error_type) for c in run.calls] == [
        ("w", {"city": "X"}, "call_1", True, "ToolFailure"),
        ("w", {"city": "Y"}, "call_2", False, None),
        ("v", {"q": 1}, None, False, None),  # no model response lists it: no id at all, never the run id
    ]


def test_langchain_tool_arguments_are_a_python_repr_and_the_models_text_wins() -> None:
    """`str()` of the arguments: Python literals (None, True, quotes, unicode) decode; a repr that is no literal
    (cut, or holding an object) stays text, and the model response's arguments replace it."""
    t = Traces()
    graph = t.span("invoke_workflow g", _workflow("g"), end=100, scope=LANGGRAPH)
    args = {"seat": None, "direct": True, "note": 'it\'s "✈"', "ages": [34, 7.5]}
    t.span("execute_tool a", _lc_tool("a", repr(args), "call_a"), parent=graph, start=10, scope=LANGCHAIN)
    t.span(
        "execute_tool b",
        _lc_tool("b", "{'when': datetime.date(2026, 1, 1)}", "call_b"),
        parent=graph,
        start=20,
        scope=LANGCHAIN,
    )
    t.span("chat m", _lc_chat([("call_b", "b", {"when": "2026-01-01"})]), parent=graph, start=15, scope=LANGCHAIN)
    t.span("execute_tool c", _lc_tool("c", "{'city': 'Par", "call_c"), parent=graph, start=30, scope=LANGCHAIN)

    (run,) = rebuild_runs(t.records())

    assert [(c.name, c.args, c.args_state) for c in run.calls] == [
        ("a", args, "value"),
        ("b", {"when": "2026-01-01"}, "value"),
        ("c", "{'city': 'Par", "raw"),  # no model response: the text as recorded, not decoded
    ]


def test_langchain_steps_under_a_tool_are_one_inferred_run_at_the_tool_span() -> None:
    """A graph invoked inside a tool has no `invoke_workflow` span (the wrapper suppresses itself in a running
    graph); its LangChain chain spans (its root chain when its name says "agent", its node steps) hang under the
    tool span. They are steps: the tool span stands for the sub-agent's run, one run, whichever of them is there."""
    t = Traces()
    graph = t.span("invoke_workflow coordinator", _workflow("coordinator"), end=100, scope=LANGGRAPH)
    t.span("chat m", _lc_chat([("call_f1", "ask", {"input": "q"})]), parent=graph, start=1, scope=LANGCHAIN)
    ask = t.span(
        "execute_tool ask", _lc_tool("ask", "{'input': 'q'}", "call_f1"), parent=graph, start=5, end=90, scope=LANGCHAIN
    )
    sub = t.span("invoke_agent sub_agent", _chain("sub_agent"), parent=ask, start=6, end=89, scope=LANGCHAIN)
    for start, call in ((7, "call_s1"), (30, "call_s2")):
        step = t.span("invoke_agent agent", _chain("agent"), parent=sub, start=start, end=start + 9, scope=LANGCHAIN)
        t.span("chat m", _lc_chat([(call, "w", {"n": start})]), parent=step, start=start + 1, scope=LANGCHAIN)
        t.span(
            "execute_tool w", _lc_tool("w", f"{{'n': {start}}}", call), parent=sub, start=start + 10, scope=LANGCHAIN
        )
    t.span("invoke_agent agent", _chain("agent"), parent=sub, start=60, end=70, scope=LANGCHAIN)

    runs = rebuild_runs(t.records())

    assert [(r.agent_name, r.inferred, _calls(r)) for r in runs] == [
        ("coordinator", False, [("ask", {"input": "q"}, "call_f1", False)]),
        ("execute_tool ask", True, [("w", {"n": 7}, "call_s1", False), ("w", {"n": 30}, "call_s2", False)]),
    ]
    assert OpenLITExtractor().is_step(next(r for r in t.records() if r.name == "invoke_agent sub_agent"))
    assert not OpenLITExtractor().is_step(next(r for r in t.records() if r.name == "execute_tool ask"))


def test_langchain_retried_attempt_without_an_id_is_the_call_it_ran_again() -> None:
    """LangChain's ToolRetryMiddleware runs the tool again for the same call: the failed attempt keeps the run id
    (no id from the span), the successful one names the call; both are that call, as the tool received it."""
    t = Traces()
    graph = t.span("invoke_workflow g", _workflow("g"), end=100, scope=LANGGRAPH)
    t.span("chat m", _lc_chat([("call_1", "w", {"city": "Oslo"})]), parent=graph, start=1, scope=LANGCHAIN)
    failed = {**_lc_tool("w", "{'city': 'Oslo'}", None), "error.type": "ToolFailure"}
    del failed["gen_ai.tool.call.result"]
    t.span("execute_tool w", failed, parent=graph, start=10, scope=LANGCHAIN, error="transient")
    t.span("execute_tool w", _lc_tool("w", "{'city': 'Oslo'}", "call_1"), parent=graph, start=12, scope=LANGCHAIN)
    other = {**_lc_tool("w", "{'city': 'Rome'}", None), "error.type": "ToolFailure"}  # other arguments: no retry
    del other["gen_ai.tool.call.result"]
    t.span("execute_tool w", other, parent=graph, start=14, scope=LANGCHAIN, error="no model call")

    (run,) = rebuild_runs(t.records())

    assert _calls(run) == [
        ("w", {"city": "Oslo"}, "call_1", True),
        ("w", {"city": "Oslo"}, "call_1", False),
        ("w", {"city": "Rome"}, None, True),
    ]


def test_a_response_whose_chat_span_ends_with_the_run_is_ordered_before_the_next_request() -> None:
    """Under an async graph OpenLIT's chat span ends with the agent's root chain (its `on_llm_end` fails before
    ending it): a response no tool ran (a tool never offered) is complete when the run's next request starts."""
    t = Traces()
    graph = t.span("invoke_workflow g", _workflow("g"), end=100, scope=LANGGRAPH)
    unknown = _lc_chat([("call_u", "get_forecast", {"city": "Oslo"})])
    t.span("chat m", unknown, parent=graph, start=1, end=99, scope=LANGCHAIN)
    t.span("chat m", _lc_chat([("call_w", "w", {"city": "Oslo"})]), parent=graph, start=20, end=99, scope=LANGCHAIN)
    t.span("execute_tool w", _lc_tool("w", "{'city': 'Oslo'}", "call_w"), parent=graph, start=30, scope=LANGCHAIN)

    (run,) = rebuild_runs(t.records())

    assert [(c.call_id, c.model_only) for c in run.calls] == [("call_u", True), ("call_w", False)]


def test_langgraph_run_with_no_model_span_of_its_own_is_incomplete() -> None:
    """Under `ainvoke` OpenLIT's `on_llm_end` fails before ending its chat span, and a top-level graph whose name
    lacks "agent" has no root chain span to end it: its chat spans are never exported, and a call no tool ran (a
    tool never offered) is lost with them. A LangGraph run with no model span of its own is flagged; the sub-agent's
    chat spans under a tool span are that inferred run's, not the coordinator's; a run with its chat span is not."""
    t = Traces()
    lost = t.span("invoke_workflow travel", _workflow("travel"), end=100, scope=LANGGRAPH)
    step = t.span(
        "invoke_agent model", {**_chain("model"), "gen_ai.agent.id": "model"}, parent=lost, end=90, scope=LANGGRAPH
    )
    tool = _lc_tool("ask", "{'input': 'q'}", "call_f1")
    ask = t.span("execute_tool ask", tool, parent=step, start=10, end=60, scope=LANGCHAIN)
    sub = t.span("invoke_agent sub_agent", _chain("sub_agent"), parent=ask, start=11, end=59, scope=LANGCHAIN)
    t.span("chat m", _lc_chat([("call_s1", "w", {"n": 1})]), parent=sub, start=12, scope=LANGCHAIN)
    t.span("execute_tool w", _lc_tool("w", "{'n': 1}", "call_s1"), parent=sub, start=20, scope=LANGCHAIN)
    kept = t.span("invoke_workflow weather", _workflow("weather"), start=200, end=300, scope=LANGGRAPH)
    t.span("chat m", _lc_chat([("call_1", "w", {"n": 2})]), parent=kept, start=201, scope=LANGCHAIN)
    t.span("execute_tool w", _lc_tool("w", "{'n': 2}", "call_1"), parent=kept, start=210, scope=LANGCHAIN)

    runs = rebuild_runs(t.records())

    assert sorted((r.agent_name or "", r.inferred, r.incomplete, len(r.calls)) for r in runs) == [
        ("execute_tool ask", True, False, 1),
        ("travel", False, True, 1),
        ("weather", False, False, 1),
    ]


def _crew_task(role: str) -> dict[str, Any]:
    """`Task._execute_core`'s span as `process_crewai_response` leaves it: the agent's role and id."""
    return {
        "gen_ai.operation.name": "invoke_agent",
        "gen_ai.provider.name": "crewai",
        "gen_ai.agent.name": role,
        "gen_ai.agent.id": "e3c5afb4-3c39-4cda-9616-f3bbfa1bd8f7",
        "gen_ai.input.messages": json.dumps([{"role": "user", "parts": [{"type": "text", "content": "Go."}]}]),
    }


def _crew_step(t: Traces, parent: Any, start: float, chat: dict[str, Any] | None = None) -> None:
    """CrewAI's own `AgentExecutor` flow with one `Flow._execute_method` step (`invoke_agent <method>`, no agent
    id), the model call under the step."""
    flow = {"gen_ai.operation.name": "invoke_workflow", "gen_ai.workflow.name": "AgentExecutor"}
    executor = t.span("invoke_workflow AgentExecutor", flow, parent=parent, start=start, end=start + 9, scope=CREWAI)
    method = {"gen_ai.operation.name": "invoke_agent", "gen_ai.provider.name": "crewai"}
    step = t.span("invoke_agent call_llm_native_tools", method, parent=executor, start=start + 1, scope=CREWAI)
    if chat is not None:
        t.span("chat m", chat, parent=step, start=start + 2, scope=OPENAI)


def test_crewai_run_is_the_task_span_with_an_agent_id_not_crew_flow_or_flow_method_spans() -> None:
    """Only `Task._execute_core`/`Agent.kickoff` spans carry `gen_ai.agent.id`; the name is the role even when the
    span is `invoke_agent agent` (a hierarchical crew's task, named before it had an agent). CrewAI's executor flow
    and its method steps are no runs; a `@tool` tool has no span, so its call is the model's only."""
    t = Traces()
    crew = {"gen_ai.operation.name": "invoke_workflow", "gen_ai.workflow.name": "crew"}
    kickoff = t.span("invoke_workflow crew", crew, end=100, scope=CREWAI)
    t.span("create_agent Crew Manager", {"gen_ai.operation.name": "create_agent"}, parent=kickoff, scope=CREWAI)
    task = t.span("invoke_agent agent", _crew_task("Crew Manager"), parent=kickoff, start=1, end=99, scope=CREWAI)
    _crew_step(t, task, 2, _chat([("call_1", "get_weather", {"city": "Oslo"})]))
    _crew_step(t, task, 20)

    runs = rebuild_runs(t.records())

    assert [(r.agent_name, r.convention, r.inferred, _calls(r)) for r in runs] == [
        ("Crew Manager", "openlit", False, [("get_weather", {"city": "Oslo"}, "call_1", False)])
    ]
    assert [c.model_only for c in runs[0].calls] == [True]
    step = next(r for r in t.records() if r.name == "invoke_agent call_llm_native_tools")
    found = classify(step)
    assert found is not None
    assert (found[0].name, found[1]) == ("openlit", Role.OTHER)


def test_crewai_run_spans_tool_list_is_no_catalog_and_tool_not_found_says_a_tool_is_unknown() -> None:
    """The task span's `gen_ai.tool.definitions` are the agent's tools under CrewAI's names (`Get Weather`; the model
    calls `get_weather`), cut at ten, not the task's own tools: read as the catalog, a model-only call of a tool the
    model was offered would fail as `unknown_tool`. It is not read; CrewAI's `Tool not found` answer says it."""
    t = Traces()
    defs = [{"type": "function", "name": "Get Weather", "description": "Weather of a city."}]
    attrs = {**_crew_task("forecaster"), "gen_ai.tool.definitions": json.dumps(defs)}
    task = t.span("invoke_agent forecaster", attrs, end=100, scope=CREWAI)
    calls = [("call_1", "get_weather", {"city": "Oslo"}), ("call_2", "get_forecast", {"city": "Oslo"})]
    _crew_step(t, task, 2, _chat(calls))
    answers = [
        {"type": "tool_call_response", "id": "call_1", "response": "21C in Oslo"},
        {"type": "tool_call_response", "id": "call_2", "response": "Tool not found"},
    ]
    _crew_step(t, task, 20, {**_chat([]), "gen_ai.input.messages": json.dumps([{"role": "tool", "parts": answers}])})

    (run,) = rebuild_runs(t.records())

    assert [(c.name, c.error, c.error_type) for c in run.calls] == [
        ("get_weather", False, None),
        ("get_forecast", True, "unknown_tool"),
    ]
    assert run.available_tools == ()


def test_crewai_delegation_tool_span_holds_the_coworkers_inferred_run_named_by_its_arguments() -> None:
    """`BaseTool.run`'s span: CrewAI's tool name (the model calls the sanitized one), `json.dumps` of the keyword
    arguments, no call id. The delegation tool runs the coworker inside it, through CrewAI's executor flow: one run
    inferred at the tool span, named by `coworker`, although OpenLIT's chat spans list no tools offered."""
    t = Traces()
    task = t.span("invoke_agent coordinator", _crew_task("coordinator"), end=100, scope=CREWAI)
    delegation = {"task": "Weather in Oslo?", "context": "Packing.", "coworker": "weather_expert"}
    _crew_step(t, task, 1, _chat([("call_f1", "delegate_work_to_coworker", delegation)]))
    tool = t.span(
        "execute_tool Delegate work to coworker",
        _tool("Delegate work to coworker", delegation),
        parent=task,
        start=20,
        end=60,
        scope=CREWAI,
    )
    _crew_step(t, tool, 21, _chat([("call_s1", "get_weather", {"city": "Oslo"})]))
    _crew_step(t, tool, 40)
    t.span("execute_tool broken", _tool("broken", {"x": 1}), parent=task, start=70, scope=CREWAI, error="boom")

    runs = rebuild_runs(t.records())

    assert [(r.agent_name, r.inferred, _calls(r)) for r in runs] == [
        (
            "coordinator",
            False,
            [("delegate_work_to_coworker", delegation, "call_f1", False), ("broken", {"x": 1}, None, True)],
        ),
        ("weather_expert", True, [("get_weather", {"city": "Oslo"}, "call_s1", False)]),
    ]
    assert [c.model_only for c in runs[0].calls] == [False, False]
    executor = next(r for r in t.records() if r.name == "invoke_workflow AgentExecutor")
    assert OpenLITExtractor().is_step(executor)
    assert not OpenLITExtractor().is_step(next(r for r in t.records() if r.name == "invoke_agent coordinator"))


def test_smolagents_run_is_the_agent_span_not_its_steps_and_tool_call_ids_are_not_the_models() -> None:
    """`MultiStepAgent.run` carries `gen_ai.agent.id`, its `step_<n>` spans do not. A tool span's call id is a fresh
    uuid4 (or a tool argument named like an id): the calls are matched to the model's by name and arguments, in the
    model's order though the parallel tool spans started the other way; `final_answer` is flagged final."""
    t = Traces()
    run = t.span("invoke_agent weather_agent", _agent("weather_agent"), end=100, scope=SMOLAGENTS)
    step_attrs = {"gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": "weather_agent"}
    step = t.span("invoke_agent weather_agent step_1", step_attrs, parent=run, start=1, end=49, scope=SMOLAGENTS)
    issued = [("call_b", "w", {"city": "Berlin"}), ("call_m", "w", {"city": "Madrid"})]
    t.span("chat m", _chat(issued), parent=step, start=2, scope=OPENAI)
    madrid = {**_tool("w", {"city": "Madrid"}), "gen_ai.tool.call.id": "5b675418-073a-4107-a18e-bf2d712ae1b6"}
    t.span("execute_tool w", madrid, parent=step, start=10, scope=SMOLAGENTS)
    berlin = {**_tool("w", {"city": "Berlin"}), "gen_ai.tool.call.id": "51ae2e1d-a3fc-42e5-99f8-90e2bdae4b7d"}
    t.span("execute_tool w", berlin, parent=step, start=11, scope=SMOLAGENTS)
    last = t.span("invoke_agent weather_agent step_2", step_attrs, parent=run, start=50, end=99, scope=SMOLAGENTS)
    t.span("chat m", _chat([("call_9", "final_answer", {"answer": "ok"})]), parent=last, start=51, scope=OPENAI)
    t.span(
        "execute_tool final_answer", _tool("final_answer", {"answer": "ok"}), parent=last, start=60, scope=SMOLAGENTS
    )

    runs = rebuild_runs(t.records())

    assert [(r.agent_name, r.convention, _calls(r)) for r in runs] == [
        (
            "weather_agent",
            "openlit",
            [
                ("w", {"city": "Berlin"}, "call_b", False),
                ("w", {"city": "Madrid"}, "call_m", False),
                ("final_answer", {"answer": "ok"}, "call_9", False),
            ],
        )
    ]
    assert [(c.model_only, c.final) for c in runs[0].calls] == [(False, False), (False, False), (False, True)]


def _agno_run(name: str, *, run_id: str | None = "4f1c7e0e-52b8-4b7a-9d0e-0d8f1f3a2c11") -> dict[str, Any]:
    """`Agent.run`'s span; `gen_ai.response.id` is the `RunOutput`'s run id (none when `run` returned an
    iterator)."""
    attrs = {"gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": name, "gen_ai.agent.id": name}
    return attrs | ({"gen_ai.response.id": run_id} if run_id is not None else {})


def _agno_tool(name: str, call_id: str, args: dict[str, Any]) -> dict[str, Any]:
    return {**_tool(name, args), "gen_ai.tool.call.id": call_id}


def test_agno_runs_are_agent_and_team_spans_not_workflow_or_create_agent_and_a_caught_error_is_other() -> None:
    """`Agent.run` is `invoke_agent <agent>`, `Team.run` `invoke_workflow <team>` (with its members' names), a
    `Workflow`'s `invoke_workflow` (no members) is no run, nor is `create_agent`. Tool spans carry the model's call
    id; a failure Agno caught says its message in `error.type` (read as `_OTHER`), one that raised its class."""
    t = Traces()
    t.span("create_agent weather_expert", {"gen_ai.operation.name": "create_agent"}, scope=AGNO)
    flow = {"gen_ai.operation.name": "invoke_workflow", "gen_ai.workflow.name": "pipeline"}
    workflow = t.span("invoke_workflow pipeline", flow, start=1, end=200, scope=AGNO)
    team_attrs = {
        "gen_ai.operation.name": "invoke_workflow",
        "gen_ai.workflow.name": "coordinator",
        "gen_ai.agno.team.agents": '["weather_expert"]',
        "gen_ai.response.id": "0b7d2cbe-5c2a-4f43-9f5e-8a4a1f3b7d20",
    }
    team = t.span("invoke_workflow coordinator", team_attrs, parent=workflow, start=2, end=100, scope=AGNO)
    delegation = {"member_id": "weather_expert", "task": "Weather in Oslo?"}
    t.span("chat m", _chat([("call_f1", "delegate_task_to_member", delegation)]), parent=team, start=3, scope=OPENAI)
    tool = t.span(
        "execute_tool delegate_task_to_member",
        _agno_tool("delegate_task_to_member", "call_f1", delegation),
        parent=team,
        start=10,
        end=90,
        scope=AGNO,
    )
    member = t.span(
        "invoke_agent weather_expert", _agno_run("weather_expert"), parent=tool, start=11, end=89, scope=AGNO
    )
    caught = {**_agno_tool("get_weather", "call_e1", {"city": "Atlantis"}), "error.type": "unknown city: Atlantis"}
    t.span("execute_tool get_weather", caught, parent=member, start=20, scope=AGNO, error="Tool execution failed")
    raised = {**_agno_tool("get_weather", "call_e2", {"city": "Lisbon"}), "error.type": "StopAgentRun"}
    exception = ("exception", {"exception.type": "StopAgentRun", "exception.message": "stop"})
    t.span("execute_tool get_weather", raised, parent=member, start=30, scope=AGNO, error="x", events=[exception])

    runs = rebuild_runs(t.records())

    assert [(r.agent_name, r.convention, r.inferred, r.incomplete, _calls(r)) for r in runs] == [
        ("coordinator", "openlit", False, False, [("delegate_task_to_member", delegation, "call_f1", False)]),
        (
            "weather_expert",
            "openlit",
            False,
            False,
            [
                ("get_weather", {"city": "Atlantis"}, "call_e1", True),
                ("get_weather", {"city": "Lisbon"}, "call_e2", True),
            ],
        ),
    ]
    assert [c.error_type for c in runs[1].calls] == ["_OTHER", "StopAgentRun"]
    assert runs[1].parent_span_id == runs[0].span_id
    for name in ("invoke_workflow pipeline", "create_agent weather_expert"):
        found = classify(next(r for r in t.records() if r.name == name))
        assert found is not None
        assert (found[0].name, found[1]) == ("openlit", Role.OTHER)


def test_agno_run_streamed_through_the_sync_wrapper_is_incomplete_and_its_stray_tool_spans_are_no_runs() -> None:
    """`Agent.run(stream=True)` returns an iterator: OpenLIT's sync wrapper ends the span at once, without the run
    id, and the run's model and tool spans come later, outside it (here under the caller's own span): the run is
    flagged incomplete and the stray calls are dropped, not made a run. A run with its id, or one that failed
    (status ERROR, no id), is read as usual."""
    t = Traces()
    app = t.span("handle_request", {}, end=300)
    t.span("invoke_agent trip_agent", _agno_run("trip_agent", run_id=None), parent=app, start=1, end=2, scope=AGNO)
    t.span("chat m", _chat([("call_b1", "get_weather", {"city": "Paris"})]), parent=app, start=3, scope=OPENAI)
    tool = _agno_tool("get_weather", "call_b1", {"city": "Paris"})
    t.span("execute_tool get_weather", tool, parent=app, start=10, scope=AGNO)
    whole = t.span("invoke_agent weather_agent", _agno_run("weather_agent"), parent=app, start=100, end=150, scope=AGNO)
    t.span(
        "execute_tool get_weather",
        _agno_tool("get_weather", "call_a1", {"city": "Rome"}),
        parent=whole,
        start=110,
        scope=AGNO,
    )
    failed = t.span(
        "invoke_agent broken_agent",
        _agno_run("broken_agent", run_id=None),
        parent=app,
        start=200,
        end=250,
        scope=AGNO,
        error="boom",
    )
    t.span(
        "execute_tool get_weather",
        _agno_tool("get_weather", "call_x1", {"city": "Oslo"}),
        parent=failed,
        start=210,
        scope=AGNO,
    )
    stats = ExtractStats()

    runs = rebuild_runs(t.records(), stats=stats)

    assert [(r.agent_name, r.inferred, r.incomplete, [c.call_id for c in r.calls]) for r in runs] == [
        ("trip_agent", False, True, []),
        ("weather_agent", False, False, ["call_a1"]),
        ("broken_agent", False, False, ["call_x1"]),
    ]
    assert stats.skipped == {"call_without_run": 1}


def _pydantic_ai(name: str) -> dict[str, Any]:
    """`Agent.run`'s (and `run_sync`'s) span: operation `execute_task`, the answer as plain text."""
    return {"gen_ai.operation.name": "execute_task", "gen_ai.agent.name": name, "gen_ai.output.messages": "Done."}


def _node(operation: str, agent: str) -> dict[str, Any]:
    """A graph node's span (`common_internal_node`): ended before the node ran, no `gen_ai.tool.*`."""
    return {"gen_ai.operation.name": operation, "gen_ai.agent.name": agent, "gen_ai.request.model": "m"}


def test_pydantic_ai_run_is_the_execute_task_span_and_its_node_spans_are_neither_tools_nor_runs() -> None:
    """`run_sync`'s `invoke_agent` around `run`'s `execute_task` (both operation `execute_task`) is one run; the
    nodes' `invoke_workflow`, `model_request` and `execute_tool <model>` spans (ended before their node ran, one
    `execute_tool` per model response) are no calls: the calls are the chat spans', model-only. A sub-agent run by a
    tool hangs right under its caller's run span: a nested run."""
    t = Traces()
    outer = t.span("invoke_agent coordinator", _pydantic_ai("coordinator"), end=100, scope=PYDANTIC_AI)
    run = t.span(
        "execute_task coordinator", _pydantic_ai("coordinator"), parent=outer, start=1, end=99, scope=PYDANTIC_AI
    )
    t.span(
        "invoke_workflow coordinator", _node("invoke_workflow", "coordinator"), parent=run, start=2, scope=PYDANTIC_AI
    )
    t.span("model_request m", _node("model_request", "coordinator"), parent=run, start=3, scope=PYDANTIC_AI)
    t.span("chat m", _chat([("call_f1", "weather_expert", {"input": "Oslo?"})]), parent=run, start=4, scope=OPENAI)
    t.span("execute_tool m", _node("execute_tool", "coordinator"), parent=run, start=10, scope=PYDANTIC_AI)
    sub = t.span("execute_task expert", _pydantic_ai("expert"), parent=run, start=11, end=50, scope=PYDANTIC_AI)
    t.span("chat m", _chat([("call_f2", "get_weather", {"city": "Oslo"})]), parent=sub, start=12, scope=OPENAI)
    t.span("execute_tool m", _node("execute_tool", "expert"), parent=sub, start=20, scope=PYDANTIC_AI)
    t.span("chat m", _chat([]), parent=sub, start=30, scope=OPENAI)
    t.span("execute_tool m", _node("execute_tool", "expert"), parent=sub, start=40, scope=PYDANTIC_AI)
    stats = ExtractStats()

    runs = rebuild_runs(t.records(), stats=stats)

    assert [(r.agent_name, r.inferred, r.output, _calls(r)) for r in runs] == [
        ("coordinator", False, "Done.", [("weather_expert", {"input": "Oslo?"}, "call_f1", False)]),
        ("expert", False, "Done.", [("get_weather", {"city": "Oslo"}, "call_f2", False)]),
    ]
    assert [c.model_only for r in runs for c in r.calls] == [True, True]
    assert runs[1].parent_span_id == runs[0].span_id
    assert stats.skipped.get("run_layer") == 1
    node = next(r for r in t.records() if r.name == "execute_tool m")
    found = classify(node)
    assert found is not None
    assert (found[0].name, found[1]) == ("openlit", Role.OTHER)


def test_pydantic_ai_output_tool_calls_are_the_runs_answer_not_its_calls_told_by_name() -> None:
    """pydantic-ai's output tool (`final_result`, `final_result_<type>` with several output types) is listed in the
    `openai` chat span like any call; no span of OpenLIT's holds the tool definitions that would say it is one, so
    its name tells, in a pydantic-ai run only: a manual `start_trace` run keeps a call so named."""
    t = Traces()
    run = t.span("execute_task reporter", _pydantic_ai("reporter"), end=100, scope=PYDANTIC_AI)
    t.span("chat m", _chat([("call_1", "get_weather", {"city": "Oslo"})]), parent=run, start=1, scope=OPENAI)
    t.span("chat m", _chat([("call_2", "final_result", {"temp": 21})]), parent=run, start=10, scope=OPENAI)
    multi = t.span("execute_task multi", _pydantic_ai("multi"), start=200, end=300, scope=PYDANTIC_AI)
    t.span("chat m", _chat([("call_3", "final_result_Report", {"t": 1})]), parent=multi, start=201, scope=OPENAI)
    t.span("chat m", _chat([("call_4", "final_results", {"t": 2})]), parent=multi, start=210, scope=OPENAI)
    manual = t.span("trip", {}, start=400, end=500, scope=MANUAL)
    t.span("chat m", _chat([("call_5", "final_result", {"t": 3})]), parent=manual, start=401, scope=OPENAI)

    runs = rebuild_runs(t.records())

    assert sorted((r.agent_name or "", [c.call_id for c in r.calls]) for r in runs) == [
        ("multi", ["call_4"]),
        ("reporter", ["call_1"]),
        ("trip", ["call_5"]),
    ]
