"""Each supported convention, as its instrumentation shapes spans, on real OTel SDK spans.

Every scenario puts the parallel calls of one model response at the same start time and in an
order that differs from the model's, so only the convention's record of the response can order them.
"""

from __future__ import annotations

import dataclasses
import json
from typing import Any

import pytest
from opentelemetry.trace import SpanKind

from toolscore.collector.extract import EXTRACTORS, ExtractConfig, Extractor, ExtractStats, rebuild_runs
from toolscore.collector.extract.conventions import classify
from toolscore.scorers import AgentRun

from .test_extract_support import Traces, genai_chat, genai_run, genai_tool, hex_id

OI = "openinference.instrumentation.openai_agents"
KIND = "openinference.span.kind"


def _calls(run: AgentRun) -> list[tuple[str, Any, str | None, bool]]:
    return [(c.name, c.args, c.call_id, c.error) for c in run.calls]


def _oi_llm(*calls: tuple[str, str, str]) -> dict[str, Any]:
    attrs: dict[str, Any] = {KIND: "LLM", "llm.output_messages.0.message.role": "assistant"}
    for j, (call_id, name, args) in enumerate(calls):
        prefix = f"llm.output_messages.0.message.tool_calls.{j}.tool_call"
        attrs |= {f"{prefix}.id": call_id, f"{prefix}.function.name": name, f"{prefix}.function.arguments": args}
    return attrs


def test_every_extractor_follows_the_protocol_under_a_unique_name() -> None:
    assert all(isinstance(e, Extractor) for e in EXTRACTORS)
    assert len({e.name for e in EXTRACTORS}) == len(EXTRACTORS) == 13


def test_openinference_recovers_call_ids_order_and_handoff_names_from_the_llm_span() -> None:
    t = Traces()
    workflow = t.span("Agent workflow", {KIND: "AGENT"}, start=0, end=100, scope=OI)
    triage = t.span("triage", {KIND: "AGENT", "agent.name": "triage"}, parent=workflow, start=1, end=50, scope=OI)
    turn = t.span("turn", {KIND: "CHAIN"}, parent=triage, start=2, end=49, scope=OI)
    llm = _oi_llm(
        ("call_2", "get_weather", '{"city": "Oslo"}'),
        ("call_1", "get_weather", '{"city": "Rome"}'),
        ("call_h", "transfer_to_billing", "{}"),
    )
    t.span("response", llm, parent=turn, start=3, scope=OI)
    for city in ("Rome", "Oslo"):
        tool = {KIND: "TOOL", "tool.name": "get_weather", "input.value": json.dumps({"city": city})}
        t.span("get_weather", tool, parent=turn, start=10, scope=OI)
    handoff = {KIND: "TOOL", "input.value": "triage", "output.value": "billing"}
    t.span("handoff to billing", handoff, parent=turn, start=12, scope=OI)
    t.span("billing", {KIND: "AGENT", "agent.name": "billing"}, parent=workflow, start=51, end=60, scope=OI)

    runs = rebuild_runs(t.records())

    assert [(r.agent_name, r.convention) for r in runs] == [("triage", "openinference"), ("billing", "openinference")]
    assert _calls(runs[0]) == [
        ("get_weather", {"city": "Oslo"}, "call_2", False),
        ("get_weather", {"city": "Rome"}, "call_1", False),
        ("transfer_to_billing", {}, "call_h", False),
    ]


def test_openinference_handoff_span_input_is_the_agent_handing_off_not_arguments() -> None:
    t = Traces()
    triage = t.span("triage", {KIND: "AGENT", "agent.name": "triage"}, start=0, end=10, scope=OI)
    handoff = {KIND: "TOOL", "input.value": "triage", "output.value": "billing"}
    t.span("handoff to billing", handoff, parent=triage, start=1, scope=OI)

    (run,) = rebuild_runs(t.records())

    assert [(c.name, c.args, c.args_state) for c in run.calls] == [("handoff to billing", None, "not_captured")]


def test_openinference_langgraph_bare_values_and_langchain_output_value() -> None:
    t = Traces()
    root = t.span("weather_graph", {KIND: "CHAIN", "input.value": "Paris and Rome?"}, start=0, end=100)
    node_metadata = json.dumps({"langgraph_step": 1, "langgraph_node": "agent"})  # AGENT by its name: a node
    node = t.span("agent", {KIND: "AGENT", "metadata": node_metadata}, parent=root, start=1, end=9)
    message = {"kwargs": {"tool_calls": [{"id": "c_p", "name": "w", "args": {"city": "Paris"}}]}}
    message["kwargs"]["tool_calls"].append({"id": "c_r", "name": "w", "args": {"city": "Rome"}})
    t.span(
        "FakeModel", {KIND: "LLM", "output.value": json.dumps({"generations": [[{"message": message}]]})}, parent=node
    )
    tools = t.span("tools", {KIND: "CHAIN"}, parent=root, start=10, end=20)
    tool_message = json.dumps({"output": {"kwargs": {"tool_call_id": "c_r", "content": "sunny"}}})
    t.span(
        "w",
        {KIND: "TOOL", "tool.name": "w", "input.value": "Rome", "output.value": tool_message},
        parent=tools,
        start=11,
    )
    t.span("w", {KIND: "TOOL", "tool.name": "w", "input.value": "Paris"}, parent=tools, start=11, error="boom")

    (run,) = rebuild_runs(t.records())

    assert (run.span_id, run.inferred, run.agent_name) == (hex_id(root), True, "weather_graph")
    assert _calls(run) == [("w", {"city": "Paris"}, "c_p", True), ("w", {"city": "Rome"}, "c_r", False)]


def test_openllmetry_langgraph_envelopes_unwrap_and_the_workflow_span_is_not_a_second_run() -> None:
    t = Traces()
    root = t.span("invoke_agent weather", genai_run("weather"), start=0, end=100)
    workflow = {"traceloop.span.kind": "workflow", "gen_ai.operation.name": "invoke_agent"}
    flow = t.span("weather.workflow", workflow, parent=root, start=1, end=99)
    task = t.span("execute_task tools", {"traceloop.span.kind": "task"}, parent=flow, start=2, end=98)
    envelope = {"input_str": "{'city': 'Paris'}", "inputs": {"city": "Paris"}, "kwargs": {"tool_call_id": "call_1"}}
    tool = {"traceloop.span.kind": "tool", "gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "w"}
    t.span("execute_tool w", {**tool, "gen_ai.tool.call.arguments": json.dumps(envelope)}, parent=task, start=3)

    (run,) = rebuild_runs(t.records())

    assert (run.span_id, run.inferred) == (hex_id(root), False)
    assert _calls(run) == [("w", {"city": "Paris"}, "call_1", False)]


OI_LC = "openinference.instrumentation.langchain"
OL_LC = "opentelemetry.instrumentation.langchain"


def _agent_metadata(agent: str, node: str | None = None, **more: Any) -> str:
    """The metadata `create_agent` compiles its graph with (`factory.py`), as a node's span inherits it."""
    metadata: dict[str, Any] = {"ls_integration": "langchain_create_agent", "lc_agent_name": agent}
    if node is not None:
        metadata |= {"langgraph_step": 1, "langgraph_node": node}
    return json.dumps(metadata | more)


def _structured_update(form: str) -> str:
    """A create_agent model node's update after a ToolStrategy call: the AIMessage and the node's own ToolMessage
    answering it, serialised as OpenInference (`data`) or LangChain's constructor form (`kwargs`, OpenLLMetry)."""
    call = {"name": "Report", "args": {"city": "Oslo"}, "id": "call_out", "type": "tool_call"}
    answer = {"content": "Returning structured response: city='Oslo'", "name": "Report", "tool_call_id": "call_out"}
    if form == "data":
        messages = [{"type": "ai", "data": {"content": "", "tool_calls": [call]}}, {"type": "tool", "data": answer}]
        return json.dumps([{"graph": None, "update": {"messages": messages, "structured_response": {"city": "Oslo"}}}])
    lc = ["langchain", "schema", "messages"]
    messages = [
        {"lc": 1, "type": "constructor", "id": [*lc, "AIMessage"], "kwargs": {"content": "", "tool_calls": [call]}},
        {"lc": 1, "type": "constructor", "id": [*lc, "ToolMessage"], "kwargs": answer},
    ]
    return json.dumps({"outputs": [{"graph": None, "update": {"messages": messages}}], "kwargs": {}})


def test_openinference_create_agent_root_chain_is_a_run_and_its_structured_output_call_no_call() -> None:
    # A create_agent graph whose name lacks "agent" has a CHAIN root; its model node answers the ToolStrategy call.
    t = Traces()
    root = t.span("coordinator", {KIND: "CHAIN", "metadata": _agent_metadata("coordinator")}, end=100, scope=OI_LC)
    first = t.span("model", {KIND: "CHAIN", "metadata": _agent_metadata("coordinator", "model")}, parent=root, start=1)
    t.span("ChatOpenAI", _oi_llm(("call_w", "w", '{"city": "Oslo"}')), parent=first, start=1, scope=OI_LC)
    tools = t.span("tools", {KIND: "CHAIN", "metadata": _agent_metadata("coordinator", "tools")}, parent=root, start=3)
    out = json.dumps({"type": "tool", "data": {"tool_call_id": "call_w", "content": "4C"}})
    t.span("w", {KIND: "TOOL", "tool.name": "w", "input.value": "Oslo", "output.value": out}, parent=tools, start=3)
    node = {
        KIND: "CHAIN",
        "metadata": _agent_metadata("coordinator", "model"),
        "output.value": _structured_update("data"),
    }
    last = t.span("model", node, parent=root, start=5, end=9, scope=OI_LC)
    t.span("ChatOpenAI", _oi_llm(("call_out", "Report", '{"city": "Oslo"}')), parent=last, start=6, scope=OI_LC)
    stats = ExtractStats()

    (run,) = rebuild_runs(t.records(), stats=stats)
    (with_output,) = rebuild_runs(t.records(), ExtractConfig(include_output_tools=True))

    assert (run.span_id, run.inferred, run.agent_name) == (hex_id(root), False, "coordinator")
    assert _calls(run) == [("w", {"city": "Oslo"}, "call_w", False)]
    assert stats.model_only_calls == 0
    assert [c.name for c in with_output.calls] == ["w", "Report"]


def test_openinference_langgraph_tool_attempts_without_a_result_take_the_call_of_their_tools_task() -> None:
    # ToolRetryMiddleware runs the tool twice in one ToolNode task: the failed attempt has no result to name the call.
    t = Traces()
    root = t.span("flaky_agent", {KIND: "AGENT", "metadata": _agent_metadata("flaky_agent")}, end=100, scope=OI_LC)
    t.span("ChatOpenAI", _oi_llm(("call_r", "w", '{"city": "Oslo"}')), parent=root, start=1, scope=OI_LC)
    call = json.dumps([{"name": "w", "args": {"city": "Oslo"}, "id": "call_r", "type": "tool_call"}])
    task = {KIND: "CHAIN", "metadata": _agent_metadata("flaky_agent", "tools"), "input.value": call}
    tools = t.span("tools", task, parent=root, start=3, end=20, scope=OI_LC)
    tool = {KIND: "TOOL", "tool.name": "w", "input.value": "Oslo"}
    t.span("w", tool, parent=tools, start=4, error="ToolFailure", scope=OI_LC)
    out = json.dumps({"type": "tool", "data": {"tool_call_id": "call_r", "content": "4C"}})
    t.span("w", {**tool, "output.value": out}, parent=tools, start=6, scope=OI_LC)
    other = t.span("tools", {**task, "input.value": call.replace('"w"', '"v"')}, parent=root, start=30, scope=OI_LC)
    t.span("w", tool, parent=other, start=31, error="ToolFailure", scope=OI_LC)  # not the task's tool: no id

    (run,) = rebuild_runs(t.records())

    assert _calls(run) == [
        ("w", {"city": "Oslo"}, "call_r", True),
        ("w", {"city": "Oslo"}, "call_r", False),
        ("w", "Oslo", None, True),
    ]


def test_openllmetry_openai_client_span_beside_a_langchain_chat_span_is_the_same_response() -> None:
    # The Responses API wrapper ignores LangChain's suppression; the request carried the chat span's traceparent.
    t = Traces()
    root = t.span("invoke_agent weather", genai_run("weather"), start=0, end=100, scope=OL_LC)
    node = t.span("execute_task model", {"traceloop.span.kind": "task"}, parent=root, start=1, end=9, scope=OL_LC)
    chat = t.span("ChatOpenAI.chat", genai_chat(("call_1", "w", {"city": "Oslo"})), parent=node, start=2, scope=OL_LC)
    trace_id = format(chat.get_span_context().trace_id, "032x")
    headers = str({"traceparent": f"00-{trace_id}-{hex_id(chat)}-01", "X-Stainless-Raw-Response": "true"})
    client = {**genai_chat(("fc_1", "w", {"city": "Oslo"})), "gen_ai.headers": headers}
    t.span("openai.response", client, parent=node, start=2, scope=OL_OPENAI)
    elsewhere = str({"traceparent": f"00-{trace_id}-{'0' * 15}1-01"})  # a span not in the trace: no layer
    t.span(
        "openai.response",
        {**genai_chat(("fc_2", "v", {})), "gen_ai.headers": elsewhere},
        parent=node,
        start=3,
        scope=OL_OPENAI,
    )
    envelope = {"inputs": {"city": "Oslo"}, "input_str": "{'city': 'Oslo'}", "kwargs": {"tool_call_id": "call_1"}}
    tool = {"traceloop.span.kind": "tool", "gen_ai.tool.name": "w", "gen_ai.tool.call.arguments": json.dumps(envelope)}
    t.span("execute_tool w", tool, parent=root, start=10, scope=OL_LC)
    stats = ExtractStats()

    (run,) = rebuild_runs(t.records(), stats=stats)

    assert [(c.name, c.call_id, c.model_only) for c in run.calls] == [("v", None, True), ("w", "call_1", False)]
    assert stats.model_only_calls == 1  # the unlinked response's call alone
    copied = [dataclasses.replace(s, trace_id="f" * 32) for s in t.records()]  # new trace ids, headers as they were
    assert [c.name for c in rebuild_runs(copied)[0].calls] == ["v", "w"], "the span id is looked up in its own trace"


def test_openllmetry_create_agent_model_node_names_its_structured_output_call() -> None:
    t = Traces()
    root = t.span("invoke_agent weather", genai_run("weather"), start=0, end=100, scope=OL_LC)
    given = json.dumps({"inputs": {}, "metadata": json.loads(_agent_metadata("weather", "model"))})
    node = {"traceloop.span.kind": "task", "traceloop.entity.name": "model", "traceloop.entity.input": given}
    answered = t.span(
        "execute_task model",
        {**node, "traceloop.entity.output": _structured_update("kwargs")},
        parent=root,
        start=1,
        end=9,
        scope=OL_LC,
    )
    t.span(
        "ChatOpenAI.chat", genai_chat(("call_out", "Report", {"city": "Oslo"})), parent=answered, start=2, scope=OL_LC
    )
    stats = ExtractStats()

    (run,) = rebuild_runs(t.records(), stats=stats)
    (with_output,) = rebuild_runs(t.records(), ExtractConfig(include_output_tools=True))

    assert (run.calls, stats.model_only_calls) == ((), 0)
    assert [(c.name, c.call_id) for c in with_output.calls] == [("Report", "call_out")]


LI = "opentelemetry.instrumentation.llamaindex"


def _li_task(name: str = "BaseWorkflowAgent.task", **attrs: Any) -> dict[str, Any]:
    return {"traceloop.span.kind": "task", "traceloop.entity.name": name, **attrs}


def _li_call_tool(name: str, args: dict[str, Any], call_id: str | None, *, is_error: bool = False) -> dict[str, Any]:
    """A call_tool step as OpenLLMetry's span handler writes it; `call_id` None: content capture off (no output)."""
    attrs = _li_task(**{"tool.name": name, "tool.arguments": json.dumps(args)})
    if call_id is not None:
        output = {"tool_name": name, "tool_kwargs": args, "tool_id": call_id, "return_direct": False}
        output["tool_output"] = {"tool_name": name, "raw_output": "done", "is_error": is_error}
        attrs["traceloop.entity.output"] = json.dumps(output)
    return attrs


def test_openllmetry_llamaindex_call_tool_steps_are_calls_of_the_workflow_named_by_its_steps() -> None:
    t = Traces()
    root = t.span("FunctionAgent.workflow", {"traceloop.span.kind": "workflow"}, start=0, end=100, scope=LI)
    init = {"traceloop.entity.output": json.dumps({"input": [], "current_agent_name": "weather_agent"})}
    t.span("BaseWorkflowAgent.task", _li_task(**init), parent=root, start=1, scope=LI)
    step = t.span("BaseWorkflowAgent.task", _li_task(), parent=root, start=2, end=5, scope=LI)
    # an LLM class other than `OpenAI`: the span handler records the chat on its own task span
    chat = genai_chat(("c_2", "w", {"city": "Rome"}), ("c_1", "w", {"city": "Atlantis"}))
    t.span("OpenAILike.task", _li_task("OpenAILike.task", **chat), parent=step, start=3, scope=LI)
    failed = _li_call_tool("w", {"city": "Atlantis"}, "c_1", is_error=True)
    t.span("BaseWorkflowAgent.task", failed, parent=root, start=10, end=20, scope=LI)
    tool = t.span(
        "BaseWorkflowAgent.task", _li_call_tool("w", {"city": "Rome"}, "c_2"), parent=root, start=10, scope=LI
    )
    kwargs = {"traceloop.entity.input": json.dumps({"kwargs": {"city": "Rome", "ctx": "<Context object at 0x1>"}})}
    t.span("FunctionTool.task", _li_task("FunctionTool.task", **kwargs), parent=tool, start=11, scope=LI)

    (run,) = rebuild_runs(t.records())

    assert (run.span_id, run.inferred, run.agent_name, run.convention) == (
        hex_id(root),
        True,
        "weather_agent",
        "traceloop",
    )
    assert _calls(run) == [("w", {"city": "Rome"}, "c_2", False), ("w", {"city": "Atlantis"}, "c_1", True)]
    assert not any(call.model_only for call in run.calls)


def test_openllmetry_llamaindex_nested_run_and_capture_off() -> None:
    """`run.task` (a workflow run under another LlamaIndex span) is a run of its own; without content capture a
    call keeps the `tool.arguments` the handler always writes, with no id, and the run its class name."""
    t = Traces()
    root = t.span("FunctionAgent.workflow", {"traceloop.span.kind": "workflow"}, start=0, end=100, scope=LI)
    outer = t.span(
        "BaseWorkflowAgent.task",
        _li_call_tool("expert", {"input": "Oslo?"}, None),
        parent=root,
        start=1,
        end=90,
        scope=LI,
    )
    function = t.span("FunctionTool.task", _li_task("FunctionTool.task"), parent=outer, start=2, end=89, scope=LI)
    nested = t.span("run.task", _li_task("run.task"), parent=function, start=3, end=88, scope=LI)
    named = {"traceloop.entity.output": json.dumps({"input": [], "current_agent_name": "weather_expert"})}
    t.span("BaseWorkflowAgent.task", _li_task(**named), parent=nested, start=4, scope=LI)
    t.span("BaseWorkflowAgent.task", _li_call_tool("w", {"city": "Oslo"}, "c_9"), parent=nested, start=5, scope=LI)

    coordinator, expert = rebuild_runs(t.records())

    assert (coordinator.agent_name, coordinator.inferred) == ("FunctionAgent", True)
    assert _calls(coordinator) == [("expert", {"input": "Oslo?"}, None, False)]
    assert (expert.span_id, expert.agent_name, expert.inferred) == (hex_id(nested), "weather_expert", False)
    assert expert.parent_span_id == hex_id(root)
    assert _calls(expert) == [("w", {"city": "Oslo"}, "c_9", False)]


def test_openllmetry_llamaindex_root_span_without_tools_is_no_run() -> None:
    """A query engine's query is a root `<Class>.workflow` span too: with no call and no model offered tools
    below it, no run is inferred there."""
    t = Traces()
    root = t.span("RetrieverQueryEngine.workflow", {"traceloop.span.kind": "workflow"}, start=0, end=10, scope=LI)
    t.span("openai.chat", genai_chat(), parent=root, start=1)

    assert rebuild_runs(t.records()) == []


def test_openllmetry_decorators_and_legacy_indexed_completions() -> None:
    t = Traces()
    agent = {"traceloop.span.kind": "agent", "traceloop.entity.name": "planner"}
    run = t.span("planner.agent", agent, start=0, end=100)
    llm: dict[str, Any] = {"llm.request.type": "chat"}
    for j, call_id in enumerate(("t_2", "t_1")):
        prefix = f"gen_ai.completion.0.tool_calls.{j}"
        llm |= {f"{prefix}.id": call_id, f"{prefix}.name": "s", f"{prefix}.arguments": json.dumps({"q": call_id})}
    t.span("openai.chat", llm, parent=run, start=1)
    for query in ("t_1", "t_2"):
        envelope = json.dumps({"args": [], "kwargs": {"q": query}})
        attrs = {"traceloop.span.kind": "tool", "traceloop.entity.name": "s", "traceloop.entity.input": envelope}
        t.span("s.tool", attrs, parent=run, start=5)

    (result,) = rebuild_runs(t.records())

    assert (result.agent_name, result.convention) == ("planner", "traceloop")
    assert _calls(result) == [("s", {"q": "t_2"}, "t_2", False), ("s", {"q": "t_1"}, "t_1", False)]


def _crewai_chat(*calls: tuple[str, str, dict[str, Any]], text: str = "") -> dict[str, Any]:
    """An `openai.chat` span of opentelemetry-instrumentation-openai: offered tools, the response's calls."""
    parts = [{"type": "text", "content": text}] if text else []
    parts += [{"type": "tool_call", "id": i, "name": n, "arguments": a} for i, n, a in calls]
    return {
        "gen_ai.operation.name": "chat",
        "gen_ai.provider.name": "openai",
        "gen_ai.tool.definitions": json.dumps([{"type": "function", "name": "get_weather", "parameters": {}}]),
        "gen_ai.output.messages": json.dumps([{"role": "assistant", "parts": parts}]),
    }


CREWAI_AGENT_SCOPE = "opentelemetry.instrumentation.crewai.instrumentation"


@pytest.mark.parametrize("scope", [CREWAI_AGENT_SCOPE, "opentelemetry.instrumentation.crewai"])
def test_openllmetry_crewai_the_crew_span_is_no_run_and_each_agent_span_is_one(scope: str) -> None:
    t, oai = Traces(), "opentelemetry.instrumentation.openai.v1"
    crewai = {"gen_ai.provider.name": "crewai", "gen_ai.operation.name": "invoke_agent"}
    crew = t.span("crewai.workflow", crewai, scope=scope, start=0, end=100)
    task = t.span("Trip?.task", {**crewai, "traceloop.span.kind": "task"}, parent=crew, scope=scope, start=1, end=99)
    agent = {**crewai, "traceloop.span.kind": "agent", "gen_ai.agent.name": "coordinator"}
    lead = t.span("coordinator.agent", agent, parent=task, scope=scope, start=2, end=98)
    delegate = ("c_d", "delegate_work_to_coworker", {"task": "Weather?", "context": "", "coworker": "expert"})
    # LLM.call's span (LiteLLM's class only) around the client's: its output is `str(result)`, one text part
    listed = [{"role": "assistant", "parts": [{"type": "text", "content": "[ToolCall(id='c_d', ...)]"}]}]
    llm_call = {"gen_ai.operation.name": "chat", "gen_ai.output.messages": json.dumps(listed)}
    step = t.span("openai/m.llm", llm_call, parent=lead, scope=scope, start=3, end=9, kind=SpanKind.CLIENT)
    t.span("openai.chat", _crewai_chat(delegate), parent=step, scope=oai, start=4, kind=SpanKind.CLIENT)
    expert = {**crewai, "traceloop.span.kind": "agent", "gen_ai.agent.name": "expert"}
    sub = t.span("expert.agent", expert, parent=lead, scope=scope, start=10, end=50)
    parallel = (("c_b", "get_weather", {"city": "B"}), ("c_a", "get_weather", {"city": "A"}))
    t.span("openai.chat", _crewai_chat(*parallel), parent=sub, scope=oai, start=11, kind=SpanKind.CLIENT)
    t.span("openai.chat", _crewai_chat(text="4C"), parent=sub, scope=oai, start=20, kind=SpanKind.CLIENT)
    t.span("openai.chat", _crewai_chat(text="Pack a coat."), parent=lead, scope=oai, start=60, kind=SpanKind.CLIENT)

    runs = rebuild_runs(t.records())

    assert [(r.span_id, r.agent_name, r.convention, r.inferred) for r in runs] == [
        (hex_id(lead), "coordinator", "traceloop", False),
        (hex_id(sub), "expert", "traceloop", False),
    ]
    assert [(c.name, c.call_id, c.model_only) for c in runs[0].calls] == [("delegate_work_to_coworker", "c_d", True)]
    assert _calls(runs[1]) == [
        ("get_weather", {"city": "B"}, "c_b", False),
        ("get_weather", {"city": "A"}, "c_a", False),
    ]
    assert runs[1].parent_span_id == hex_id(lead)


def test_an_invoke_agent_span_without_entity_kind_is_a_run_outside_the_crewai_scope() -> None:
    t = Traces()
    t.span("invoke_agent", {"gen_ai.provider.name": "crewai", "gen_ai.operation.name": "invoke_agent"}, scope="x")

    (run,) = rebuild_runs(t.records())

    assert run.convention == "genai"


OL_AGENTS = "opentelemetry.instrumentation.openai_agents"
OL_OPENAI = "opentelemetry.instrumentation.openai.v1"


def _ol_agent(name: str) -> dict[str, Any]:
    """An OpenLLMetry Agents SDK agent span's attributes (`_hooks.py` `_start_agent_span`)."""
    return {"traceloop.span.kind": "agent", "gen_ai.agent.name": name, "gen_ai.operation.name": "invoke_agent"}


def _ol_tool(name: str, args: dict[str, Any]) -> dict[str, Any]:
    """An OpenLLMetry Agents SDK function span's attributes: no call id (`FunctionSpanData` has none)."""
    return {
        "traceloop.span.kind": "tool",
        "gen_ai.tool.name": name,
        "gen_ai.operation.name": "execute_tool",
        "gen_ai.tool.call.arguments": json.dumps(args),
    }


def _legacy_completion(*calls: tuple[str, str, dict[str, Any]]) -> dict[str, Any]:
    attrs: dict[str, Any] = {"gen_ai.operation.name": "chat"}
    for j, (call_id, name, args) in enumerate(calls):
        prefix = f"gen_ai.completion.0.tool_calls.{j}"
        attrs |= {f"{prefix}.id": call_id, f"{prefix}.name": name, f"{prefix}.arguments": json.dumps(args)}
    return attrs


@pytest.mark.parametrize("form", ["messages", "indexed"])
def test_openllmetry_openai_responses_span_lists_item_ids_which_are_no_call_ids(form: str) -> None:
    # `v1/responses_wrappers.py` writes each function_call item's own `id` (fc_...) as the call's id; the
    # tool's result answers its `call_id`. Alone (no SDK span above it) the response still gives its calls.
    t = Traces()
    run = t.span("weather.agent", _ol_agent("weather"), start=0, end=100, scope=OL_AGENTS)
    issued = [("fc_1", "get_weather", {"city": "Rome"}), ("fc_2", "get_time", {})]
    response = genai_chat(*issued) if form == "messages" else _legacy_completion(*issued)
    t.span("openai.response", response, parent=run, start=1, end=9, scope=OL_OPENAI)
    chat = genai_chat(("call_3", "get_time", {}))  # the chat completions span's ids are the call ids
    t.span("openai.chat", chat, parent=run, start=10, end=19, scope=OL_OPENAI)

    (result,) = rebuild_runs(t.records())

    assert (result.agent_name, result.convention) == ("weather", "traceloop")
    assert _calls(result) == [
        ("get_weather", {"city": "Rome"}, None, False),
        ("get_time", {}, None, False),
        ("get_time", {}, "call_3", False),
    ]


def test_openllmetry_openai_agents_handoff_span_is_the_call_the_model_issued() -> None:
    t = Traces()
    workflow = {"traceloop.span.kind": "workflow", "traceloop.workflow.name": "Agent Workflow"}
    root = t.span("Agent Workflow", workflow, start=0, end=100, scope=OL_AGENTS)
    triage = t.span("triage.agent", _ol_agent("triage"), parent=root, start=1, end=40, scope=OL_AGENTS)
    issued = genai_chat(("call_h", "transfer_to_expert", {}))
    t.span("openai.response", issued, parent=triage, start=2, end=9, scope=OL_AGENTS)
    handoff = {"traceloop.span.kind": "handoff", "gen_ai.operation.name": "handoff", "gen_ai.agent.name": "triage"}
    t.span("triage → unknown.handoff", handoff, parent=triage, start=10, end=11, scope=OL_AGENTS)
    expert = t.span("expert.agent", _ol_agent("expert"), parent=root, start=41, end=90, scope=OL_AGENTS)
    t.span("openai.response", genai_chat(("call_w", "w", {})), parent=expert, start=42, end=49, scope=OL_AGENTS)
    t.span("w.tool", _ol_tool("w", {}), parent=expert, start=50, end=51, scope=OL_AGENTS)
    stats = ExtractStats()

    runs = rebuild_runs(t.records(), stats=stats)

    assert [(r.agent_name, _calls(r)) for r in runs] == [
        ("triage", [("transfer_to_expert", {}, "call_h", False)]),
        ("expert", [("w", {}, "call_w", False)]),
    ]
    assert runs[0].calls[0].span_id is not None  # the handoff span's call, not a model-only one
    assert stats.model_only_calls == 0


HANDOFF_SPANS = {
    "openllmetry": ("triage → expert.handoff", {"traceloop.span.kind": "handoff", "gen_ai.operation.name": "handoff"}),
    "otel-contrib": ("agent_handoff", {"gen_ai.operation.name": "agent_handoff", "gen_ai.handoff.to_agent": "expert"}),
}


@pytest.mark.parametrize("instrumentation", HANDOFF_SPANS)
def test_a_handoff_no_model_response_names_flags_its_run_incomplete(instrumentation: str) -> None:
    # Content capture off: the model span lists no call, so nothing names the handoff tool the model called (only
    # the response does: the default `transfer_to_<agent>` can be renamed). The run cannot be read whole.
    t = Traces()
    triage = t.span("invoke_agent triage", genai_run("triage"), start=0, end=40, scope=OL_AGENTS)
    t.span("chat m", {"gen_ai.operation.name": "chat"}, parent=triage, start=1, end=9, scope=OL_AGENTS)
    name, attrs = HANDOFF_SPANS[instrumentation]
    t.span(name, attrs, parent=triage, start=10, end=11, scope=OL_AGENTS)
    expert = t.span("invoke_agent expert", genai_run("expert"), start=41, end=90, scope=OL_AGENTS)
    t.span("execute_tool w", genai_tool("w"), parent=expert, start=50, end=51, scope=OL_AGENTS)

    runs = {r.agent_name: r for r in rebuild_runs(t.records())}

    assert runs["triage"].incomplete
    assert len(runs["triage"].calls) == 1
    assert not runs["expert"].incomplete, "a run without a handoff is read whole"


def test_openllmetry_openai_agents_model_spans_are_traceloops_but_its_other_spans_are_not() -> None:
    t = Traces()
    t.span("openai.response", {"gen_ai.operation.name": "chat"}, scope=OL_AGENTS)
    t.span("openai.chat", {"gen_ai.operation.name": "chat"}, scope=OL_OPENAI)
    t.span("openai.realtime.speech", {"gen_ai.operation.name": "speech"}, scope=OL_AGENTS)
    t.span("openai.embeddings", {"gen_ai.operation.name": "embeddings"}, scope=OL_OPENAI)

    found = {s.name: classify(s) for s in t.records()}

    assert {name: (c[0].name, c[1].value) if c else None for name, c in found.items()} == {
        "openai.response": ("traceloop", "llm"),
        "openai.chat": ("traceloop", "llm"),
        "openai.realtime.speech": ("genai", "other"),
        "openai.embeddings": ("genai", "other"),
    }


@pytest.mark.parametrize("shape", ["v7-legacy", "v6"])
def test_vercel_ai_sdk_telemetry_reads_the_step_tool_call_order(shape: str) -> None:
    t = Traces()
    prompt = json.dumps({"prompt": "Trip?"})
    run_attrs = {"ai.operationId": "ai.generateText", "ai.telemetry.functionId": "travel", "ai.prompt": prompt}
    run = t.span("ai.generateText", {**run_attrs, "ai.response.text": "Done"}, start=0, end=100, scope="ai")
    issued = [("c_b", {"city": "B"}), ("c_a", {"city": "A"})]
    tool_calls = [
        {"toolCallId": i, "toolName": "w", "input": a if shape == "v7-legacy" else json.dumps(a)} for i, a in issued
    ]
    step_attrs = {"ai.operationId": "ai.generateText.doGenerate", "ai.response.toolCalls": json.dumps(tool_calls)}
    step = t.span("ai.generateText.doGenerate", step_attrs, parent=run, start=1, end=30, scope="ai")
    for call_id, args in reversed(issued):
        attrs = {"ai.operationId": "ai.toolCall", "ai.toolCall.name": "w", "ai.toolCall.id": call_id}
        attrs["ai.toolCall.args"] = json.dumps(args)
        t.span("ai.toolCall", attrs, parent=step if shape == "v7-legacy" else run, start=10, scope="ai")

    (result,) = rebuild_runs(t.records())

    assert (result.agent_name, result.input, result.output) == ("travel", "Trip?", "Done")
    assert _calls(result) == [("w", {"city": "B"}, "c_b", False), ("w", {"city": "A"}, "c_a", False)]


def _vercel_run(t: Traces, operation: str, tool_calls: Any, tool_args: list[tuple[str, dict[str, Any]]]) -> None:
    """A Vercel AI SDK run: one model step issuing `tool_calls` (None: no `ai.response.toolCalls`), then one
    `ai.toolCall` span per (call id, `ai.toolCall.args`)."""
    run_attrs = {"ai.operationId": operation, "ai.telemetry.functionId": "weather"}
    run = t.span(operation, run_attrs, start=0, end=100, scope="ai")
    model_op = f"{operation}.doGenerate" if operation == "ai.generateText" else f"{operation}.doStream"
    step_attrs = {"ai.operationId": model_op}
    if tool_calls is not None:
        step_attrs["ai.response.toolCalls"] = json.dumps(tool_calls)
    t.span(model_op, step_attrs, parent=run, start=1, end=30, scope="ai")
    for start, (call_id, args) in enumerate(tool_args, start=40):
        attrs = {"ai.operationId": "ai.toolCall", "ai.toolCall.name": "get_weather", "ai.toolCall.id": call_id}
        t.span("ai.toolCall", {**attrs, "ai.toolCall.args": json.dumps(args)}, parent=run, start=start, scope="ai")


PARSED = {"city": "Paris", "unit": "celsius"}  # the tool's input after its zod schema filled in a default


@pytest.mark.parametrize("key", ["input", "args"])  # ai@5+ `input`, ai@4 `args`: the provider's JSON text
def test_vercel_ai_generate_text_takes_the_model_arguments_text_over_the_parsed_input(key: str) -> None:
    t = Traces()
    issued = [{"toolCallId": "c1", "toolName": "get_weather", key: '{"city": "Paris"}'}]
    _vercel_run(t, "ai.generateText", issued, [("c1", PARSED)])

    (result,) = rebuild_runs(t.records())

    assert _calls(result) == [("get_weather", {"city": "Paris"}, "c1", False)]


def test_vercel_ai_stream_text_keeps_the_parsed_input_its_step_records_too() -> None:
    t = Traces()
    issued = [{"type": "tool-call", "toolCallId": "c1", "toolName": "get_weather", "input": PARSED}]
    _vercel_run(t, "ai.streamText", issued, [("c1", PARSED)])

    (result,) = rebuild_runs(t.records())

    assert _calls(result) == [("get_weather", PARSED, "c1", False)]


@pytest.mark.parametrize(
    "tool_calls",
    [
        None,  # the step recorded no calls: the tool span's input is all there is
        [{"toolCallId": "c1", "toolName": "get_weather", "input": '{"city": "Par'}],  # text that does not decode
        [{"toolCallId": "c9", "toolName": "get_weather", "input": '{"city": "Rome"}'}],  # another call's text
    ],
)
def test_vercel_ai_keeps_the_parsed_input_without_the_model_text_of_that_call(tool_calls: Any) -> None:
    t = Traces()
    _vercel_run(t, "ai.generateText", tool_calls, [("c1", PARSED)])

    (result,) = rebuild_runs(t.records())

    assert [c for c in _calls(result) if c[2] == "c1"] == [("get_weather", PARSED, "c1", False)]


def _vercel_steps(operation: str, steps: list[tuple[Any, Any]]) -> Traces:
    """A Vercel AI SDK run of model steps only, each `(ai.response.toolCalls, ai.prompt.messages)` (None: absent),
    offered `get_weather` (`ai.prompt.tools`); no `ai.toolCall` span (the SDK ran no tool)."""
    t = Traces()
    run = t.span(operation, {"ai.operationId": operation, "ai.telemetry.functionId": "w"}, start=0, end=100, scope="ai")
    model_op = f"{operation}.doGenerate" if operation == "ai.generateText" else f"{operation}.doStream"
    offered = [json.dumps({"type": "function", "name": "get_weather", "inputSchema": {"type": "object"}})]
    for start, (tool_calls, messages) in enumerate(steps, start=1):
        attrs: dict[str, Any] = {"ai.operationId": model_op, "ai.prompt.tools": offered}
        if tool_calls is not None:
            attrs["ai.response.toolCalls"] = json.dumps(tool_calls)
        if messages is not None:
            attrs["ai.prompt.messages"] = json.dumps(messages)
        t.span(model_op, attrs, parent=run, start=start * 10, end=start * 10 + 5, scope="ai")
    return t


def _answered(output: dict[str, Any]) -> list[dict[str, Any]]:
    """The later step's prompt: the user's request, the model's call c1, the SDK's answer for it (`tool-result`)."""
    call = {"type": "tool-call", "toolCallId": "c1", "toolName": "get_weather", "input": {"town": "Paris"}}
    answer = {"type": "tool-result", "toolCallId": "c1", "toolName": "get_weather", **output}
    return [
        {"role": "user", "content": [{"type": "text", "text": "Weather?"}]},
        {"role": "assistant", "content": [call]},
        {"role": "tool", "content": [answer]},
    ]


def test_vercel_ai_a_streamed_call_the_sdk_refused_is_a_failed_model_only_call() -> None:
    # streamText's step lists a call whose input failed the tool's schema as `invalid`, with the error (ai@5+
    # parseToolCall): no `ai.toolCall` span, and no later step when the loop stops there.
    error = {"name": "AI_InvalidToolInputError", "cause": {"name": "AI_TypeValidationError"}, "toolName": "get_weather"}
    refused = {"type": "tool-call", "toolCallId": "c1", "toolName": "get_weather", "input": {"town": "Paris"}}
    t = _vercel_steps("ai.streamText", [([{**refused, "dynamic": True, "invalid": True, "error": error}], None)])

    (result,) = rebuild_runs(t.records())

    assert [(c.name, c.call_id, c.model_only, c.error, c.error_type) for c in result.calls] == [
        ("get_weather", "c1", True, True, "AI_InvalidToolInputError")
    ]


@pytest.mark.parametrize(
    ("output", "failed", "error_type", "result"),
    [
        # ai@5+: what the SDK answered the model says whether the call failed (LanguageModelV2/V3ToolResultOutput)
        ({"output": {"type": "error-text", "value": "Invalid input"}}, True, "_OTHER", "Invalid input"),
        ({"output": {"type": "error-json", "value": {"code": 1}}}, True, "_OTHER", '{"code": 1}'),
        ({"output": {"type": "execution-denied", "reason": "no"}}, True, "execution-denied", "no"),
        ({"output": {"type": "text", "value": "Error 404 is a city"}}, False, None, "Error 404 is a city"),
        ({"output": {"type": "json", "value": {"t": 21}}}, False, None, '{"t": 21}'),
        # ai@4: `result` and `isError`
        ({"result": "boom", "isError": True}, True, "_OTHER", "boom"),
        ({"result": "21C"}, False, None, "21C"),
    ],
)
def test_vercel_ai_a_model_only_call_takes_its_outcome_from_the_later_steps_tool_result(
    output: dict[str, Any], failed: bool, error_type: str | None, result: str
) -> None:
    # generateText's step lists the provider's calls as they came (no `invalid` flag): the next step's
    # ai.prompt.messages holds the SDK's answer for the call no tool ran.
    issued = [{"toolCallId": "c1", "toolName": "get_weather", "input": '{"town": "Paris"}'}]
    t = _vercel_steps("ai.generateText", [(issued, None), (None, _answered(output))])

    (call,) = rebuild_runs(t.records())[0].calls

    assert (call.model_only, call.args, call.error, call.error_type) == (True, {"town": "Paris"}, failed, error_type)
    assert call.result == result


def test_vercel_ai_a_model_only_call_nobody_answered_is_no_failure() -> None:
    issued = [{"toolCallId": "c1", "toolName": "get_weather", "input": '{"city": "Paris"}'}]
    t = _vercel_steps("ai.generateText", [(issued, None)])

    (call,) = rebuild_runs(t.records())[0].calls

    assert (call.model_only, call.error, call.error_type, call.result) == (True, False, None, None)


def test_pydantic_ai_v2_names_and_output_functions() -> None:
    t = Traces()
    events = json.dumps([{"event.name": "gen_ai.user.message", "role": "user", "content": "Weather?"}])
    run_attrs = {"agent_name": "weather", "logfire.msg": "weather run", "final_result": "sunny"}
    run = t.span("agent run", {**run_attrs, "all_messages_events": events}, start=0, end=100, scope="pydantic-ai")
    calls = [{"id": i, "type": "function", "function": {"name": "get", "arguments": "{}"}} for i in ("c2", "c1")]
    choice = json.dumps([{"event.name": "gen_ai.choice", "message": {"role": "assistant", "tool_calls": calls}}])
    t.span("chat m", {"events": choice}, parent=run, start=1, scope="pydantic-ai")
    for call_id in ("c1", "c2"):
        tool = {"gen_ai.tool.name": "get", "gen_ai.tool.call.id": call_id, "tool_arguments": '{"x": 1}'}
        t.span("running tool", {**tool, "logfire.msg": "running tool: get"}, parent=run, start=5, scope="pydantic-ai")
    output = {"gen_ai.tool.name": "final_result", "logfire.msg": "running output function: final_result"}
    t.span("running output function", output, parent=run, start=9, scope="pydantic-ai")
    stats = ExtractStats()

    (result,) = rebuild_runs(t.records(), stats=stats)
    (with_output,) = rebuild_runs(t.records(), ExtractConfig(include_output_tools=True))

    assert (result.agent_name, result.input, result.output) == ("weather", "Weather?", "sunny")
    assert [c.call_id for c in result.calls] == ["c2", "c1"]
    assert stats.skipped["output_tool"] == 1
    assert with_output.tool_names == ["get", "get", "final_result"]


def _pydantic_v1_run(t: Traces) -> str:
    events = json.dumps([{"event.name": "gen_ai.user.message", "role": "user", "content": "Weather?"}])
    run_attrs = {"agent_name": "weather", "logfire.msg": "weather run", "all_messages_events": events}
    return t.span("agent run", run_attrs, start=0, end=100, scope="pydantic-ai")


def _pydantic_v1_choice(*calls: tuple[str, dict[str, Any]]) -> dict[str, Any]:
    """A data-format-1 `gen_ai.choice` body; a call without arguments (`{}` given as None) has no `arguments` key,
    as pydantic-ai writes it with `include_content=False`."""
    tool_calls = [
        {"id": i, "type": "function", "function": {"name": "get", **({} if a is None else {"arguments": a})}}
        for i, a in calls
    ]
    return {"index": 0, "message": {"role": "assistant", "tool_calls": tool_calls}}


def _model_only(run: AgentRun) -> list[tuple[str | None, Any, str, bool]]:
    return [(c.call_id, c.args, c.args_state, c.model_only) for c in run.calls]


def test_pydantic_ai_v1_logs_mode_reads_the_choice_log_record_joined_to_the_chat_span() -> None:
    # event_mode='logs': no `events` attribute on the chat span; its events came as log records in its context,
    # joined as span events (body under "body"). Calls no tool span ran are read from the choice alone.
    t = Traces()
    run = _pydantic_v1_run(t)
    assistant = {"event.name": "gen_ai.assistant.message", "body": {"role": "assistant", "tool_calls": []}}
    choice = {"event.name": "gen_ai.choice", "body": _pydantic_v1_choice(("c2", {"x": 2}), ("c1", {"x": 1}))}
    t.span("chat m", {}, parent=run, start=1, scope="pydantic-ai", events=[("gen_ai.assistant.message", assistant)])
    t.span("chat m", {}, parent=run, start=10, scope="pydantic-ai", events=[("gen_ai.choice", choice)])

    (result,) = rebuild_runs(t.records())

    assert _model_only(result) == [("c2", {"x": 2}, "value", True), ("c1", {"x": 1}, "value", True)]


def test_pydantic_ai_call_without_arguments_key_is_not_captured_in_every_format() -> None:
    # include_content=False leaves `arguments` out of the model's calls (v2+ tool_call parts, v1 choice events):
    # a call no tool span ran must say its arguments were not captured, not that it had none.
    t = Traces()
    v1 = _pydantic_v1_run(t)
    t.span(
        "chat m", {"events": json.dumps([_pydantic_v1_choice(("a1", None))])}, parent=v1, start=1, scope="pydantic-ai"
    )
    v5 = t.span("invoke_agent b", genai_run("b"), start=0, end=100, scope="pydantic-ai")
    parts = [{"type": "tool_call", "id": "b1", "name": "get"}, {"type": "tool_call", "id": "b2", "name": "get"}]
    parts[1]["arguments"] = {"x": 2}
    output = json.dumps([{"role": "assistant", "parts": parts}])
    t.span(
        "chat m",
        {"gen_ai.operation.name": "chat", "gen_ai.output.messages": output},
        parent=v5,
        start=1,
        scope="pydantic-ai",
    )

    runs = {run.agent_name: run for run in rebuild_runs(t.records())}

    assert _model_only(runs["weather"]) == [("a1", None, "not_captured", True)]
    assert _model_only(runs["b"]) == [("b1", None, "not_captured", True), ("b2", {"x": 2}, "value", True)]


def test_genai_call_without_arguments_key_still_has_no_arguments() -> None:
    # The rule is pydantic-ai's: for the GenAI convention itself a tool_call part without `arguments` is a call
    # without arguments.
    t = Traces()
    run = t.span("invoke_agent a", genai_run("a"), start=0, end=100)
    output = json.dumps([{"role": "assistant", "parts": [{"type": "tool_call", "id": "g1", "name": "now"}]}])
    t.span("chat m", {"gen_ai.operation.name": "chat", "gen_ai.output.messages": output}, parent=run, start=1)

    (result,) = rebuild_runs(t.records())

    assert _model_only(result) == [("g1", None, "absent", True)]


def test_google_adk_merged_span_unspecified_id_and_model_order() -> None:
    t = Traces()
    adk = "gcp.vertex.agent"
    flow = t.span("invoke_workflow root", {"gen_ai.operation.name": "invoke_workflow"}, start=0, end=100, scope=adk)
    run = t.span("invoke_agent root", genai_run("root"), parent=flow, start=1, end=99, scope=adk)
    parts = [{"function_call": {"id": i, "name": "t", "args": {"k": i}}} for i in ("a2", "a1")]
    response = {"gcp.vertex.agent.llm_response": json.dumps({"content": {"parts": parts}})}
    t.span("call_llm", response, parent=run, start=2, end=30, scope=adk)
    for start, call_id in ((5, "a1"), (10, "a2")):
        tool = {"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "t", "gen_ai.tool.call.id": call_id}
        t.span(
            "execute_tool t",
            {**tool, "gen_ai.tool.call.arguments": json.dumps({"k": call_id})},
            parent=run,
            start=start,
            scope=adk,
        )
    merged = {"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "(merged tools)", "gen_ai.tool.call.id": "e"}
    t.span("execute_tool (merged)", merged, parent=run, start=12, scope=adk)
    failed = {
        "gen_ai.operation.name": "execute_tool",
        "gen_ai.tool.name": "t",
        "gen_ai.tool.call.id": "<not specified>",
    }
    failed |= {"gcp.vertex.agent.tool_call_args": '{"k": "x"}', "error.type": "RuntimeError"}
    t.span("execute_tool t", failed, parent=run, start=40, scope=adk, error="RuntimeError: x")

    (result,) = rebuild_runs(t.records())

    assert (result.agent_name, result.convention) == ("root", "google_adk")
    assert _calls(result) == [
        ("t", {"k": "a2"}, "a2", False),
        ("t", {"k": "a1"}, "a1", False),
        ("t", {"k": "x"}, None, True),
    ]


def test_google_adk_streamed_response_lists_each_call_once_with_its_final_arguments() -> None:
    # ADK appends every streamed chunk's response to gen_ai.output.messages: a call repeats under its id,
    # with null arguments until the last chunk. No tool span ran these calls: they come from the model only.
    t = Traces()
    adk = "gcp.vertex.agent"
    run = t.span("invoke_agent root", genai_run("root"), start=0, end=100, scope=adk)

    def chunk(*calls: tuple[str, Any]) -> dict[str, Any]:
        parts = [{"type": "tool_call", "id": i, "name": f"t_{i}", "arguments": a} for i, a in calls]
        return {"role": "assistant", "parts": parts, "finish_reason": ""}

    messages = [chunk(("s1", None)), chunk(("s1", None)), chunk(("s1", {"k": 1}), ("s2", {"k": 2}))]
    model = {"gen_ai.operation.name": "generate_content", "gen_ai.output.messages": json.dumps(messages)}
    t.span("generate_content m", model, parent=run, start=1, end=10, scope=adk)

    (result,) = rebuild_runs(t.records())

    assert _calls(result) == [("t_s1", {"k": 1}, "s1", False), ("t_s2", {"k": 2}, "s2", False)]


def test_google_adk_reads_a_failure_the_retry_plugin_answered_as_a_failed_call() -> None:
    t = Traces()
    adk = "gcp.vertex.agent"
    run = t.span("invoke_agent root", genai_run("root"), start=0, end=100, scope=adk)
    answered = {"response_type": "ERROR_HANDLED_BY_REFLECT_AND_RETRY_PLUGIN", "error_type": "ToolFailure"}
    for start, call_id, result in ((1, "r1", answered), (5, "r2", {"response_type": "other"})):
        tool = genai_tool("t", call_id, {"k": call_id}) | {"gen_ai.tool.call.result": json.dumps(result)}
        t.span("execute_tool t", tool, parent=run, start=start, scope=adk)

    (result,) = rebuild_runs(t.records())

    assert _calls(result) == [("t", {"k": "r1"}, "r1", True), ("t", {"k": "r2"}, "r2", False)]
    assert result.calls[0].error_type == "ToolFailure"


OI_ADK = "openinference.instrumentation.google_adk"


def _oi_adk_tool(name: str, call_id: str | None, args: dict[str, Any], response: dict[str, Any]) -> dict[str, Any]:
    """A TOOL span as openinference-instrumentation-google-adk writes it over ADK's own `execute_tool` attributes."""
    attrs = genai_tool(name, call_id, None) | {KIND: "TOOL", "tool.name": name, "input.value": json.dumps(args)}
    if call_id is not None:
        attrs |= {"tool.id": call_id, "output.value": json.dumps({"id": call_id, "name": name, "response": response})}
    return attrs


def _adk_sink(t: Traces, agent: str, parent: Any, *calls: tuple[str, str, str]) -> Any:
    """ADK's `invoke_agent` span (scope gcp.vertex.agent) as it ends up beside the OpenInference instrumentor under
    ADK schema v2: the run's model calls written into it, each over the last, the last one's calls left listed."""
    attrs = genai_run(agent) | {"gen_ai.operation.name": "generate_content"} | _oi_llm(*calls)
    return t.span(f"invoke_agent {agent}", attrs, parent=parent, start=2, end=98, scope="gcp.vertex.agent")


def test_google_adk_beside_openinference_one_run_no_merged_call_no_model_response() -> None:
    t = Traces()
    run = t.span("agent_run [root]", {KIND: "AGENT", "agent.name": "root"}, start=1, end=99, scope=OI_ADK)
    # the sink lists only the second response's call (the first was overwritten): read as a model response, it
    # would put both calls in one message and the first one in no response at all
    sink = _adk_sink(t, "root", run, ("b2", "t", '{"k": "b2"}'))
    t.span("execute_tool t", _oi_adk_tool("t", "b1", {"k": "b1"}, {"result": 1}), parent=sink, start=5, scope=OI_ADK)
    t.span("execute_tool t", _oi_adk_tool("t", "b2", {"k": "b2"}, {"result": 2}), parent=sink, start=20, scope=OI_ADK)
    merged = genai_tool("(merged tools)", "e-1", None)  # ADK's bookkeeping span, re-emitted with no kind
    t.span("execute_tool (merged)", merged, parent=sink, start=21, scope=OI_ADK)

    (result,) = rebuild_runs(t.records())

    assert (result.span_id, result.agent_name, result.convention) == (hex_id(run), "root", "openinference")
    assert _calls(result) == [("t", {"k": "b1"}, "b1", False), ("t", {"k": "b2"}, "b2", False)]
    assert not any("message_index" in call.model_fields_set for call in result.calls)


def test_google_adk_call_llm_span_openinference_wrote_into_is_still_one_model_response() -> None:
    # ADK schema v1 has a `call_llm` span per model call, which the instrumentor writes into: one response each.
    t = Traces()
    adk = "gcp.vertex.agent"
    run = t.span("invoke_agent root", genai_run("root"), start=0, end=100, scope=adk)
    parts = [{"function_call": {"id": i, "name": "t", "args": {"k": i}}} for i in ("a2", "a1")]
    llm = _oi_llm(("a2", "t", '{"k": "a2"}'), ("a1", "t", '{"k": "a1"}'))
    llm["gcp.vertex.agent.llm_response"] = json.dumps({"content": {"parts": parts}})
    t.span("call_llm", llm, parent=run, start=2, end=30, scope=adk)
    for call_id in ("a1", "a2"):
        t.span("execute_tool t", _oi_adk_tool("t", call_id, {"k": call_id}, {}), parent=run, start=5, scope=OI_ADK)

    (result,) = rebuild_runs(t.records())

    assert [c.call_id for c in result.calls] == ["a2", "a1"]
    assert [c.message_index for c in result.calls] == [1, 1]


def test_openinference_adk_tool_reads_a_failure_the_retry_plugin_answered_as_a_failed_call() -> None:
    t = Traces()
    run = t.span("agent_run [root]", {KIND: "AGENT", "agent.name": "root"}, start=0, end=100, scope=OI_ADK)
    answered = {"response_type": "ERROR_HANDLED_BY_REFLECT_AND_RETRY_PLUGIN", "error_type": "ToolFailure"}
    t.span("execute_tool t", _oi_adk_tool("t", "r1", {"k": 1}, answered), parent=run, start=1, scope=OI_ADK)
    other = {"result": "ERROR_HANDLED_BY_REFLECT_AND_RETRY_PLUGIN"}  # the words, not the plugin's answer
    t.span("execute_tool t", _oi_adk_tool("t", "r2", {"k": 2}, other), parent=run, start=5, scope=OI_ADK)
    raised = _oi_adk_tool("t", None, {"k": 3}, {}) | {"error.type": "ToolFailure"}  # no plugin: the span failed
    t.span("execute_tool t", raised, parent=run, start=9, scope=OI_ADK, error="ToolFailure: unknown")
    # the same answer from another instrumentation's tool span is that framework's business, not ADK's
    t.span("t", _oi_adk_tool("t", "r4", {"k": 4}, answered), parent=run, start=13, scope=OI)

    (result,) = rebuild_runs(t.records())

    assert _calls(result) == [
        ("t", {"k": 1}, "r1", True),
        ("t", {"k": 2}, "r2", False),
        ("t", {"k": 3}, None, True),
        ("t", {"k": 4}, "r4", False),
    ]
    assert [c.error_type for c in result.calls if c.error] == ["ToolFailure", "ToolFailure"]


def test_openinference_autogen_agent_without_node_id_is_named_by_its_span() -> None:
    # the instrumentor's BaseChatAgent wrapper (agents other than AssistantAgent) writes no graph.node.id
    t = Traces()
    scope = "openinference.instrumentation.autogen_agentchat"
    run = t.span("helper.on_messages_stream", {KIND: "AGENT", "input.value": "{}"}, start=0, end=10, scope=scope)
    t.span(
        "helper.search", {KIND: "TOOL", "tool.name": "search", "input.value": "{}"}, parent=run, start=1, scope=scope
    )

    (result,) = rebuild_runs(t.records())

    assert (result.agent_name, [c.name for c in result.calls]) == ("helper", ["search"])


def test_mastra_counts_tool_spans_not_chunks_and_orders_by_the_step_output() -> None:
    t = Traces()
    scope = "@mastra/otel-exporter"
    run_attrs = {
        "mastra.span.type": "agent_run",
        "gen_ai.operation.name": "invoke_agent",
        "gen_ai.agent.name": "Weather",
    }
    run_attrs |= {"mastra.agent_run.input": json.dumps([{"role": "user", "content": "Weather?"}])}
    run = t.span(
        "invoke_agent Weather", {**run_attrs, "mastra.agent_run.output": '{"text": "Sunny"}'}, scope=scope, end=100
    )
    generation = t.span(
        "model_generation", {"mastra.span.type": "model_generation"}, parent=run, start=1, end=99, scope=scope
    )
    output = {"toolCalls": [{"toolCallId": i, "toolName": "w", "args": {"c": i}} for i in ("m2", "m1")]}
    step_attrs = {"mastra.span.type": "model_step", "mastra.model_step.output": json.dumps(output)}
    step = t.span("agent_step Weather", step_attrs, parent=generation, start=2, end=98, scope=scope)
    chat = t.span(
        "chat m",
        {"mastra.span.type": "model_inference", "gen_ai.operation.name": "chat"},
        parent=step,
        start=3,
        scope=scope,
    )
    chunk = {
        "mastra.span.type": "model_chunk",
        "mastra.model_chunk.output": json.dumps({"toolName": "w", "toolCallId": "m1"}),
    }
    t.span("model_chunk Weather", chunk, parent=chat, start=4, scope=scope)
    for call_id in ("m1", "m2"):
        tool = {"mastra.span.type": "tool_call", "gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "w"}
        tool |= {"gen_ai.tool.call.id": call_id, "gen_ai.tool.call.arguments": json.dumps({"c": call_id})}
        t.span("execute_tool w", tool, parent=step, start=10, scope=scope)

    (result,) = rebuild_runs(t.records())

    assert (result.agent_name, result.input, result.output, result.convention) == (
        "Weather",
        "Weather?",
        "Sunny",
        "mastra",
    )
    assert _calls(result) == [("w", {"c": "m2"}, "m2", False), ("w", {"c": "m1"}, "m1", False)]


def _mastra_tool(kind: str, name: str, call_id: str, **extra: Any) -> dict[str, Any]:
    """A tool span's attributes as @mastra/otel-exporter 1.4 converts a `tool_call`, `mcp_tool_call` or
    `provider_tool_call` span (one branch of its `getAttributes` for the three)."""
    attrs = {"gen_ai.operation.name": "execute_tool", "mastra.span.type": kind, "gen_ai.tool.name": name}
    return attrs | {"gen_ai.tool.call.id": call_id, "gen_ai.tool.call.arguments": json.dumps({"q": call_id}), **extra}


def test_mastra_provider_tools_are_tools_and_client_tools_are_the_step_outputs_calls() -> None:
    """The exporter converts a `provider_tool_call` span (a tool the model's provider ran, rebuilt under its
    step) as it does a `tool_call`: a call with its result. A `client_tool_call` span only marks a call the
    client runs (no `gen_ai.tool.*`, input in `mastra.client_tool_call.input`): the step output's call,
    model-only."""
    t = Traces()
    scope = "@mastra/otel-exporter"
    run_attrs = {"mastra.span.type": "agent_run", "gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": "A"}
    run = t.span("invoke_agent A", run_attrs, scope=scope, end=100)
    issued = [
        {"toolCallId": "p1", "toolName": "web_search", "args": {"q": "p1"}},
        {"toolCallId": "c1", "toolName": "confirm", "args": {"q": "c1"}},
    ]
    step_attrs = {"mastra.span.type": "model_step", "mastra.model_step.output": json.dumps({"toolCalls": issued})}
    step = t.span("agent_step A", step_attrs, parent=run, start=2, end=98, scope=scope)
    provider = _mastra_tool("provider_tool_call", "web_search", "p1", **{"gen_ai.tool.call.result": '["hit"]'})
    t.span(
        "execute_tool web_search", provider | {"gen_ai.tool.type": "provider-tool"}, parent=step, start=3, scope=scope
    )
    client = {"gen_ai.operation.name": "client_tool_call", "mastra.span.type": "client_tool_call"}
    client |= {"mastra.client_tool_call.input": json.dumps({"q": "c1"})}
    t.span("client_tool_call confirm", client, parent=run, start=4, scope=scope)

    (result,) = rebuild_runs(t.records())

    assert _calls(result) == [("web_search", {"q": "p1"}, "p1", False), ("confirm", {"q": "c1"}, "c1", False)]
    assert [(c.model_only, c.result) for c in result.calls] == [(False, '["hit"]'), (True, None)]


def test_mastra_error_type_is_the_mastra_error_id_and_its_placeholder_is_other() -> None:
    """The exporter writes `error.type` = the MastraError's id, else `unknown` (any other error: its class is
    exported nowhere, the exception event's `exception.type` is always `Error`), which is no type: `_OTHER`."""
    t = Traces()
    scope = "@mastra/otel-exporter"
    run_attrs = {"mastra.span.type": "agent_run", "gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": "A"}
    run = t.span("invoke_agent A", run_attrs, scope=scope, end=100)
    events = [("exception", {"exception.type": "Error", "exception.message": "boom"})]
    for call_id, error_id in (("e1", "unknown"), ("e2", "TOOL_EXECUTION_FAILED")):
        attrs = _mastra_tool("tool_call", "w", call_id, **{"error.type": error_id, "error.message": "boom"})
        t.span("execute_tool w", attrs, parent=run, start=int(call_id[1]), scope=scope, error="boom", events=events)

    (result,) = rebuild_runs(t.records())

    assert [(c.call_id, c.error, c.error_type) for c in result.calls] == [
        ("e1", True, "_OTHER"),
        ("e2", True, "TOOL_EXECUTION_FAILED"),
    ]


def test_strands_reads_arguments_and_order_from_span_events() -> None:
    t = Traces()
    scope = "strands.telemetry.tracer"
    events = [
        ("gen_ai.user.message", {"content": json.dumps([{"text": "Weather?"}])}),
        ("gen_ai.choice", {"message": "Sunny."}),
    ]
    run = t.span(
        "invoke_agent Strands",
        {**genai_run("Strands"), "gen_ai.system": "strands-agents"},
        end=100,
        scope=scope,
        events=events,
    )
    cycle = t.span("execute_event_loop_cycle", {"event_loop.cycle_id": "1"}, parent=run, start=1, end=99, scope=scope)
    uses = [{"toolUse": {"toolUseId": i, "name": "w", "input": {"c": i}}} for i in ("s2", "s1")]
    t.span(
        "chat",
        {"gen_ai.operation.name": "chat"},
        parent=cycle,
        start=2,
        scope=scope,
        events=[("gen_ai.choice", {"message": json.dumps(uses)})],
    )
    tool = {"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "w"}
    default = [("gen_ai.tool.message", {"role": "tool", "content": '{"c": "s1"}', "id": "s1"})]
    t.span("execute_tool w", {**tool, "gen_ai.tool.call.id": "s1"}, parent=cycle, start=10, scope=scope, events=default)
    latest = {
        **tool,
        "gen_ai.tool.call.id": "s2",
        "gen_ai.tool.call.arguments": '{"c": "s2"}',
        "gen_ai.tool.status": "error",
    }
    t.span("execute_tool w", latest, parent=cycle, start=10, scope=scope)

    (result,) = rebuild_runs(t.records())

    assert (result.agent_name, result.input, result.output, result.convention) == (
        "Strands",
        "Weather?",
        "Sunny.",
        "strands",
    )
    assert _calls(result) == [("w", {"c": "s2"}, "s2", True), ("w", {"c": "s1"}, "s1", False)]


def test_genai_older_spellings() -> None:
    t = Traces()
    run = t.span("invoke_agent a", genai_run("a"), start=0, end=100)
    llm: dict[str, Any] = {"gen_ai.operation.name": "chat"}
    for j, call_id in enumerate(("o2", "o1")):
        llm |= {f"gen_ai.completion.0.tool_calls.{j}.id": call_id, f"gen_ai.completion.0.tool_calls.{j}.name": "q"}
    t.span("chat", llm, parent=run, start=1)
    legacy = {"gen_ai.tool.name": "q", "gen_ai.tool.call.id": "o1", "gen_ai.tool.arguments": '{"n": 1}'}
    t.span("execute_tool q", legacy, parent=run, start=5)
    older = {"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "q", "gen_ai.tool.call.id": "o2"}
    t.span("execute_tool q", {**older, "gen_ai.tool.input": '{"n": 2}'}, parent=run, start=5)

    (result,) = rebuild_runs(t.records())

    assert _calls(result) == [("q", {"n": 2}, "o2", False), ("q", {"n": 1}, "o1", False)]


AGENT_FRAMEWORK = "agent_framework"
"""Microsoft Agent Framework's tracer scope (tests/captures/agent-framework/NOTES.md)."""


def test_agent_framework_no_arguments_placeholder_is_empty_arguments() -> None:
    # Agent Framework writes `gen_ai.tool.call.arguments` = "None" when the tool received no arguments.
    t = Traces()
    run = t.span("invoke_agent clock", genai_run("clock"), start=0, end=100, scope=AGENT_FRAMEWORK)
    t.span("execute_tool now", genai_tool("now", "c1", args="None"), parent=run, start=5, scope=AGENT_FRAMEWORK)
    other = t.span("invoke_agent other", genai_run("other"), start=200, end=300)
    t.span("execute_tool now", genai_tool("now", "c2", args="None"), parent=other, start=205)

    runs = {r.agent_name: r for r in rebuild_runs(t.records())}
    mine, theirs = runs["clock"], runs["other"]

    assert [(c.name, c.args, c.args_state, c.call_id) for c in mine.calls] == [("now", {}, "value", "c1")]
    # Another emitter's "None" is text that is not JSON, kept as it is.
    assert [(c.args, c.args_state) for c in theirs.calls] == [("None", "raw")]


def test_agent_framework_unknown_call_id_placeholder_is_no_call_id() -> None:
    # Agent Framework writes `gen_ai.tool.call.id` = "unknown" for a tool run without a call id.
    t = Traces()
    run = t.span("invoke_agent a", genai_run("a"), start=0, end=100, scope=AGENT_FRAMEWORK)
    for i, city in enumerate(("Paris", "Rome")):
        attrs = genai_tool("w", "unknown", {"city": city})
        t.span("execute_tool w", attrs, parent=run, start=5 + i, end=6 + i, scope=AGENT_FRAMEWORK)
    other = t.span("invoke_agent b", genai_run("b"), start=200, end=300)
    t.span("execute_tool w", genai_tool("w", "unknown", {"city": "Oslo"}), parent=other, start=205)

    runs = {r.agent_name: r for r in rebuild_runs(t.records())}
    mine, theirs = runs["a"], runs["b"]

    assert _calls(mine) == [("w", {"city": "Paris"}, None, False), ("w", {"city": "Rome"}, None, False)]
    assert _calls(theirs) == [("w", {"city": "Oslo"}, "unknown", False)]


def _contrib_chat(*texts: str) -> dict[str, Any]:
    """A `chat <model>` span of OTel contrib's OpenAI Agents processor: each output item a text part `str(item)`."""
    parts = [{"type": "text", "content": text} for text in texts]
    return {
        "gen_ai.operation.name": "chat",
        "gen_ai.output.messages": json.dumps([{"role": "assistant", "parts": parts}]),
    }


_CONTRIB_FORMS = {
    # `OpenAIResponsesModel`: `str(ResponseFunctionToolCall)`, one part per item
    "responses": (
        "ResponseFunctionToolCall(arguments='{\"city\": \"B\"}', call_id='c_b', name='w', type='function_call', "
        "id='fc_1', status='completed')",
        "ResponseFunctionToolCall(arguments='{\"city\": \"A\"}', call_id='c_a', name='w', type='function_call', "
        "id='fc_2', status='completed')",
    ),
    # `OpenAIChatCompletionsModel`: `str(message.model_dump())`
    "chat": (
        "{'content': None, 'role': 'assistant', 'tool_calls': [{'id': 'c_b', 'function': {'arguments': "
        "'{\"city\": \"B\"}', 'name': 'w'}, 'type': 'function'}, {'id': 'c_a', 'function': {'arguments': "
        "'{\"city\": \"A\"}', 'name': 'w'}, 'type': 'function'}]}",
    ),
    # streamed chat completions: `str(Response.model_dump())` of the response the SDK built from the stream
    "chat-streamed": (
        "{'id': '__fake_id__', 'object': 'response', 'output': [{'arguments': '{\"city\": \"B\"}', 'call_id': 'c_b', "
        "'name': 'w', 'type': 'function_call'}, {'arguments': '{\"city\": \"A\"}', 'call_id': 'c_a', 'name': 'w', "
        "'type': 'function_call'}]}",
    ),
}


@pytest.mark.parametrize("form", sorted(_CONTRIB_FORMS))
def test_otel_contrib_openai_agents_root_is_no_run_and_repr_outputs_give_the_call_ids(form: str) -> None:
    # opentelemetry-instrumentation-openai-agents-v2 (span_processor.py): `on_trace_start` opens a SERVER span
    # saying invoke_agent for the SDK trace; the agents' spans are CLIENT; tool spans have no call id; the model's
    # calls are only in `str(item)` text parts, in the model's order (B before A, while the tools start A first).
    t = Traces()
    root = t.span(
        "Agent workflow",
        genai_run("ignored") | {"gen_ai.agent.name": "x"},
        start=0,
        end=100,
        scope=OL_AGENTS,
        kind=SpanKind.SERVER,
    )
    run = t.span(
        "invoke_agent weather",
        genai_run("weather"),
        parent=root,
        start=1,
        end=90,
        scope=OL_AGENTS,
        kind=SpanKind.CLIENT,
    )
    t.span(
        "chat m",
        _contrib_chat(*_CONTRIB_FORMS[form]),
        parent=run,
        start=2,
        end=9,
        scope=OL_AGENTS,
        kind=SpanKind.CLIENT,
    )
    t.span("execute_tool w", genai_tool("w", args={"city": "A"}), parent=run, start=10, end=11, scope=OL_AGENTS)
    t.span("execute_tool w", genai_tool("w", args={"city": "B"}), parent=run, start=12, end=13, scope=OL_AGENTS)
    t.span("chat m", _contrib_chat("Done."), parent=run, start=20, end=29, scope=OL_AGENTS, kind=SpanKind.CLIENT)

    runs = rebuild_runs(t.records())

    assert [(r.span_id, r.agent_name) for r in runs] == [(hex_id(run), "weather")]
    assert _calls(runs[0]) == [("w", {"city": "B"}, "c_b", False), ("w", {"city": "A"}, "c_a", False)]


def test_otel_contrib_openai_agents_handoff_call_comes_from_the_repr_and_a_bad_repr_lists_none() -> None:
    # The handoff span (`agent_handoff`) is the call of the handoff tool, named by the model's repr.
    # A text that only looks like a repr (not Python literals) lists nothing: it is never evaluated.
    t = Traces()
    triage = t.span("invoke_agent triage", genai_run("triage"), start=0, end=40, scope=OL_AGENTS)
    handoff = "ResponseFunctionToolCall(arguments='{}', call_id='c_h', name='transfer_to_expert', type='function_call')"
    t.span("chat m", _contrib_chat(handoff), parent=triage, start=1, end=9, scope=OL_AGENTS)
    handoff_span = t.span(
        "agent_handoff", {"gen_ai.operation.name": "agent_handoff"}, parent=triage, start=10, scope=OL_AGENTS
    )
    other = t.span("invoke_agent other", genai_run("other"), start=50, end=90, scope=OL_AGENTS)
    bad = "ResponseFunctionToolCall(arguments=__import__('os').getcwd(), call_id=f(), name='w', type='function_call')"
    t.span("chat m", _contrib_chat(bad), parent=other, start=51, end=59, scope=OL_AGENTS)
    t.span("execute_tool w", genai_tool("w", args={}), parent=other, start=60, end=61, scope=OL_AGENTS)

    runs = rebuild_runs(t.records())

    by_agent = {r.agent_name: r for r in runs}
    assert {name: _calls(r) for name, r in by_agent.items()} == {
        "triage": [("transfer_to_expert", {}, "c_h", False)],
        "other": [("w", {}, None, False)],
    }
    assert not by_agent["triage"].calls[0].model_only  # the handoff span's call, as OpenLLMetry's
    assert by_agent["triage"].calls[0].span_id == hex_id(handoff_span)
    assert not by_agent["triage"].incomplete


# --- Langfuse (scope `langfuse-sdk`, langfuse.observation.*) ------------------------------------------------------

LF = "langfuse-sdk"
LF_TYPE = "langfuse.observation.type"
LF_IN, LF_OUT, LF_LEVEL = "langfuse.observation.input", "langfuse.observation.output", "langfuse.observation.level"


def _lf_tool(args: Any, *, call_id: str | None = None, **extra: Any) -> dict[str, Any]:
    attrs: dict[str, Any] = {LF_TYPE: "tool", **extra}
    if args is not None:
        attrs[LF_IN] = args if isinstance(args, str) else json.dumps(args)
    if call_id is not None:
        attrs["langfuse.observation.metadata.tool_call_id"] = json.dumps(call_id)
    return attrs


def test_langfuse_observe_agent_reads_decorated_tools_in_the_streamed_generations_order() -> None:
    t = Traces()
    question = json.dumps({"args": ["Weather in Paris and Rome?"], "kwargs": {}})
    run = t.span("trip", {LF_TYPE: "agent", LF_IN: question, LF_OUT: "Both sunny."}, end=100, scope=LF)
    # the drop-in's streamed Chat Completions output, put together from its chunks (`function` first, no index)
    streamed = {
        "role": "assistant",
        "tool_calls": [
            {"function": {"name": "w", "arguments": '{"city": "Rome"}'}, "id": "c2", "type": "function"},
            {"function": {"name": "w", "arguments": '{"city": "Paris"}'}, "id": "c1", "type": "function"},
        ],
    }
    t.span("OpenAI-generation", {LF_TYPE: "generation", LF_OUT: json.dumps(streamed)}, parent=run, start=1, scope=LF)
    for city in ("Paris", "Rome"):  # started together, Paris first: only the generation orders them
        t.span("w", _lf_tool({"args": [], "kwargs": {"city": city}}), parent=run, start=10, scope=LF)
    t.span("OpenAI-generation", {LF_TYPE: "generation", LF_OUT: "Both sunny."}, parent=run, start=20, scope=LF)

    (result,) = rebuild_runs(t.records())

    assert (result.agent_name, result.input, result.output, result.convention) == (
        "trip",
        "Weather in Paris and Rome?",
        "Both sunny.",
        "langfuse",
    )
    assert _calls(result) == [("w", {"city": "Rome"}, "c2", False), ("w", {"city": "Paris"}, "c1", False)]
    assert not result.incomplete


def test_langfuse_tool_failure_is_its_error_level_and_masked_or_absent_input_is_not_captured() -> None:
    t = Traces()
    run = t.span("retry_agent", {LF_TYPE: "agent"}, end=100, scope=LF)
    # @observe on a raising tool: level ERROR and the span status ERROR (no exception event, so no type)
    failed = _lf_tool({"args": [], "kwargs": {"city": "Atlantis"}}, **{LF_LEVEL: "ERROR"})
    t.span("w", failed, parent=run, start=1, scope=LF, error="unknown city: Atlantis")
    # a LangChain ToolMessage of status error: the handler writes level ERROR only
    t.span("w", _lf_tool({"city": "Lisbon"}, call_id="c2", **{LF_LEVEL: "ERROR"}), parent=run, start=2, scope=LF)
    masked = _lf_tool("<fully masked due to failed mask function>", call_id="c3")
    t.span("w", masked, parent=run, start=3, scope=LF)
    t.span("w", _lf_tool(None, call_id="c4"), parent=run, start=4, scope=LF)  # capture_input=False

    (result,) = rebuild_runs(t.records())

    assert [(c.call_id, c.error, c.error_type) for c in result.calls] == [
        (None, True, "_OTHER"),
        ("c2", True, "_OTHER"),
        ("c3", False, None),
        ("c4", False, None),
    ]
    assert result.calls[0].args == {"city": "Atlantis"}
    assert [c.args_state for c in result.calls[2:]] == ["not_captured", "not_captured"]


def test_langfuse_metadata_call_id_in_v5_json_and_v3_plain_form_and_from_the_tool_message() -> None:
    t = Traces()
    run = t.span("a_agent", {LF_TYPE: "agent"}, end=100, scope=LF)
    t.span("w", _lf_tool({"city": "A"}, call_id="v5"), parent=run, start=1, scope=LF)
    plain = {**_lf_tool({"city": "B"}), "langfuse.observation.metadata.tool_call_id": "v3"}
    t.span("w", plain, parent=run, start=2, scope=LF)
    message = {"content": "ok", "type": "tool", "tool_call_id": "out", "status": "success"}
    t.span("w", {**_lf_tool({"city": "C"}), LF_OUT: json.dumps(message)}, parent=run, start=3, scope=LF)

    (result,) = rebuild_runs(t.records())

    assert [c.call_id for c in result.calls] == ["v5", "v3", "out"]


def test_langfuse_responses_api_items_name_the_call_id_not_the_item_id() -> None:
    t = Traces()
    run = t.span("r_agent", {LF_TYPE: "agent"}, end=100, scope=LF)
    one = {"type": "function_call", "id": "fc_1", "call_id": "c1", "name": "w", "arguments": '{"city": "A"}'}
    t.span("gen", {LF_TYPE: "generation", LF_OUT: json.dumps(one)}, parent=run, start=1, scope=LF)  # one item: itself
    t.span("w", _lf_tool({"args": [], "kwargs": {"city": "A"}}), parent=run, start=5, scope=LF)
    two = [
        {"type": "function_call", "id": "fc_2", "call_id": "c3", "name": "t", "arguments": "{}"},
        {"type": "function_call", "id": "fc_3", "call_id": "c2", "name": "w", "arguments": '{"city": "B"}'},
    ]
    t.span("gen", {LF_TYPE: "generation", LF_OUT: json.dumps(two)}, parent=run, start=10, scope=LF)

    (result,) = rebuild_runs(t.records())

    assert [(c.name, c.call_id, c.model_only) for c in result.calls] == [
        ("w", "c1", False),
        ("t", "c3", True),
        ("w", "c2", True),
    ]


def test_langfuse_generation_without_output_leaves_a_model_only_run_incomplete() -> None:
    t = Traces()
    run = t.span("quiet_agent", {LF_TYPE: "agent"}, end=100, scope=LF)
    t.span("gen", {LF_TYPE: "generation"}, parent=run, start=1, scope=LF)  # output not recorded
    failed = {LF_TYPE: "generation", LF_LEVEL: "ERROR"}
    t.span("gen", failed, parent=run, start=2, scope=LF, error="Connection error.")

    (result,) = rebuild_runs(t.records())

    assert result.calls == ()
    assert result.incomplete


def test_langfuse_langgraph_node_named_agent_is_a_step_and_an_unnamed_create_agent_root_a_run() -> None:
    meta = "langfuse.observation.metadata."
    t = Traces()
    # create_agent's graph without a name (`LangGraph`): a chain; the one span of it in no node
    root = {LF_TYPE: "chain", meta + "ls_integration": '"langchain_create_agent"', meta + "is_langchain_root": "true"}
    run = t.span("LangGraph", root, end=100, scope=LF)
    node = {LF_TYPE: "agent", meta + "langgraph_node": '"agent"', meta + "ls_integration": '"langchain_create_agent"'}
    step = t.span("agent", node, parent=run, start=1, end=50, scope=LF)
    t.span("w", _lf_tool({"city": "A"}, call_id="c1"), parent=step, start=2, scope=LF)

    (result,) = rebuild_runs(t.records())

    assert (result.agent_name, result.inferred, [c.call_id for c in result.calls]) == ("LangGraph", False, ["c1"])


def test_langfuse_catalog_and_model_only_outcome_come_from_the_generation_request() -> None:
    t = Traces()
    run = t.span("forecast_agent", {LF_TYPE: "agent"}, end=100, scope=LF)
    offered = {
        "type": "function",
        "function": {"name": "w", "description": "Weather.", "parameters": {"type": "object"}},
    }
    first = {"tools": [offered], "messages": [{"role": "user", "content": "Forecast?"}]}
    issued = {"role": "assistant", "tool_calls": [{"id": "c1", "function": {"name": "w", "arguments": "{}"}}]}
    t.span(
        "gen",
        {LF_TYPE: "generation", LF_IN: json.dumps(first), LF_OUT: json.dumps(issued)},
        parent=run,
        start=1,
        scope=LF,
    )
    answered = {
        **first,
        "messages": [*first["messages"], issued, {"role": "tool", "tool_call_id": "c1", "content": "Error: down"}],
    }
    t.span("gen", {LF_TYPE: "generation", LF_IN: json.dumps(answered), LF_OUT: "Sorry."}, parent=run, start=5, scope=LF)

    (result,) = rebuild_runs(t.records())

    assert [(c.call_id, c.model_only, c.error, c.result) for c in result.calls] == [("c1", True, True, "Error: down")]
    assert [(s.name, s.description) for s in result.available_tools] == [("w", "Weather.")]


ML = "mlflow.tracing.provider"


def _ml(kind: str, inputs: Any = None, outputs: Any = None, **more: Any) -> dict[str, Any]:
    """An MLflow span's attributes as `LiveSpan.set_attribute` writes them: every value JSON text."""
    attrs = {"mlflow.traceRequestId": json.dumps("tr-1"), "mlflow.spanType": json.dumps(kind)}
    if inputs is not None:
        attrs["mlflow.spanInputs"] = json.dumps(inputs)
    if outputs is not None:
        attrs["mlflow.spanOutputs"] = json.dumps(outputs)
    return attrs | {key: json.dumps(value) for key, value in more.items()}


def _ml_chat(*calls: tuple[str, str, dict[str, Any]]) -> dict[str, Any]:
    tool_calls = [
        {"id": c, "type": "function", "function": {"name": n, "arguments": json.dumps(a)}} for c, n, a in calls
    ]
    message = {"role": "assistant", "content": None, "tool_calls": tool_calls or None}
    return {"choices": [{"index": 0, "finish_reason": "tool_calls", "message": message}], "object": "chat.completion"}


def test_mlflow_tool_failure_is_the_status_and_the_exception_type_and_the_models_arguments_win() -> None:
    # `@mlflow.trace` records the function's bound arguments with its defaults (`unit`), no call id; a raising
    # tool ends ERROR with an `exception` event (`record_exception`). Each span is tied to the issued call whose
    # arguments it holds (Oslo, which started first, to c1, not to the first `w` of the response); the model's
    # text and call id win.
    t = Traces()
    run = t.span("weather_agent", _ml("AGENT", {"question": "Rome?"}, "Sunny."), start=0, end=100, scope=ML)
    chat = _ml_chat(("c2", "w", {"city": "Rome"}), ("c1", "w", {"city": "Oslo"}))
    t.span("Completions", _ml("CHAT_MODEL", {"model": "m"}, chat), parent=run, start=1, end=9, scope=ML)
    failure = [("exception", {"exception.type": "ToolFailure", "exception.message": "unknown city"})]
    oslo = _ml("TOOL", {"city": "Oslo", "unit": "celsius"})
    t.span("w", oslo, parent=run, start=10, scope=ML, error="ToolFailure: unknown city", events=failure)
    t.span("w", _ml("TOOL", {"city": "Rome", "unit": "celsius"}, "21C"), parent=run, start=11, scope=ML)

    (result,) = rebuild_runs(t.records())

    assert (result.agent_name, result.input, result.output, result.convention) == (
        "weather_agent",
        "Rome?",
        "Sunny.",
        "mlflow",
    )
    assert _calls(result) == [("w", {"city": "Rome"}, "c2", False), ("w", {"city": "Oslo"}, "c1", True)]
    assert result.calls[1].error_type == "ToolFailure"


def test_mlflow_streamed_chat_calls_come_from_the_chunk_events() -> None:
    # The OpenAI autolog rebuilds a streamed completion with its text only (finish reason `stop`, no tool_calls);
    # each chunk is a `mlflow.chunk.item.<i>` event. The calls are put together from the deltas, by index.
    t = Traces()
    run = t.span("a", _ml("AGENT"), start=0, end=100, scope=ML)
    rebuilt = {"choices": [{"index": 0, "finish_reason": "stop", "message": {"role": "assistant", "content": ""}}]}

    def chunk(*deltas: dict[str, Any]) -> str:
        return json.dumps(
            {"object": "chat.completion.chunk", "choices": [{"index": 0, "delta": {"tool_calls": deltas}}]}
        )

    chunks = [
        chunk({"index": 0, "id": "c_b", "function": {"name": "w", "arguments": ""}}),
        chunk({"index": 1, "id": "c_a", "function": {"name": "v", "arguments": ""}}),
        chunk({"index": 0, "function": {"arguments": '{"city": '}}),
        chunk({"index": 1, "function": {"arguments": '{"n": 1}'}}),
        chunk({"index": 0, "function": {"arguments": '"B"}'}}),
    ]
    events = [(f"mlflow.chunk.item.{i}", {"mlflow.chunk.value": value}) for i, value in enumerate(chunks)]
    t.span("Completions", _ml("CHAT_MODEL", {}, rebuilt), parent=run, start=1, end=9, scope=ML, events=events)
    t.span("v", _ml("TOOL", {"n": 1}, "one"), parent=run, start=10, scope=ML)
    t.span("w", _ml("TOOL", {"city": "B"}, "sunny"), parent=run, start=10, scope=ML)

    (result,) = rebuild_runs(t.records())

    assert _calls(result) == [("w", {"city": "B"}, "c_b", False), ("v", {"n": 1}, "c_a", False)]


def test_mlflow_response_forms_responses_api_anthropic_and_langchain_llm_result() -> None:
    # Responses API `output[]` function_call items; an Anthropic `Message`'s tool_use blocks; the LangChain
    # callback's `LLMResult` when it could not normalise the message (calls in its content blocks).
    t = Traces()
    responses = {"output": [{"type": "function_call", "id": "fc_1", "call_id": "c_r", "name": "w", "arguments": "{}"}]}
    anthropic = {
        "content": [{"type": "text", "text": "x"}, {"type": "tool_use", "id": "c_t", "name": "v", "input": {}}]
    }
    block = {"type": "function_call", "call_id": "c_l", "name": "u", "arguments": '{"k": 2}'}
    llm_result = {"generations": [[{"type": "ChatGeneration", "message": {"type": "ai", "content": [block]}}]]}
    for name, output in (("r", responses), ("t", anthropic), ("l", llm_result)):
        run = t.span(name, _ml("AGENT"), start=0, end=10, scope=ML)
        t.span("model", _ml("CHAT_MODEL", {}, output), parent=run, start=1, scope=ML)

    runs = {
        r.agent_name: [(c.name, c.args, c.call_id, c.model_only) for c in r.calls] for r in rebuild_runs(t.records())
    }

    assert runs == {"r": [("w", {}, "c_r", True)], "t": [("v", {}, "c_t", True)], "l": [("u", {"k": 2}, "c_l", True)]}


def test_mlflow_model_span_without_outputs_flags_a_run_read_from_responses_alone() -> None:
    # A model span that recorded no outputs and no chunks, and did not fail, cannot say which calls it issued.
    # A failed one issued none.
    t = Traces()
    unknown = t.span("a", _ml("AGENT"), start=0, end=10, scope=ML)
    t.span("Completions", _ml("CHAT_MODEL", {"model": "m"}), parent=unknown, start=1, scope=ML)
    failed = t.span("b", _ml("AGENT"), start=20, end=30, scope=ML)
    t.span("Completions", _ml("CHAT_MODEL", {"model": "m"}), parent=failed, start=21, scope=ML, error="timeout")

    runs = {r.agent_name: r for r in rebuild_runs(t.records())}

    assert (runs["a"].incomplete, runs["a"].calls) == (True, ())
    assert (runs["b"].incomplete, runs["b"].calls) == (False, ())


def test_mlflow_langchain_tool_call_id_and_create_agent_root_and_structured_output_node() -> None:
    # The LangChain callback passes `tool_call_id` as an attribute; a create_agent graph's root CHAIN (its
    # metadata names it) is the run, and its `model` node whose update answers a structured-output call (the
    # message dump form) makes that call the framework's output, not the agent's. Other CHAINs are OTHER.
    t = Traces()
    meta = {"ls_integration": "langchain_create_agent", "lc_agent_name": "report_agent"}
    root = t.span("report_agent", _ml("CHAIN", metadata=meta), start=0, end=100, scope=ML)
    node_meta = meta | {"langgraph_node": "model"}
    first = t.span(
        "model",
        _ml("CHAIN", outputs=[{"update": {"messages": []}}], metadata=node_meta),
        parent=root,
        start=1,
        end=9,
        scope=ML,
    )
    t.span("ChatOpenAI", _ml("CHAT_MODEL", {}, _ml_chat(("c1", "w", {"city": "P"}))), parent=first, start=2, scope=ML)
    tools = t.span(
        "tools", _ml("CHAIN", metadata=meta | {"langgraph_node": "tools"}), parent=root, start=10, end=19, scope=ML
    )
    tool = _ml("TOOL", {"city": "P"}, {"type": "tool", "content": "21C"}, tool_call_id="c1")
    t.span("w", tool, parent=tools, start=11, scope=ML)
    report = {"city": "P"}
    update = {
        "messages": [
            {
                "type": "ai",
                "content": "",
                "tool_calls": [{"name": "Report", "args": report, "id": "c2", "type": "tool_call"}],
            },
            {"type": "tool", "content": "Returning structured response", "tool_call_id": "c2", "name": "Report"},
        ]
    }
    answering = _ml("CHAIN", outputs=[{"update": update}], metadata=node_meta)
    second = t.span("model", answering, parent=root, start=20, end=29, scope=ML)
    t.span("ChatOpenAI", _ml("CHAT_MODEL", {}, _ml_chat(("c2", "Report", report))), parent=second, start=21, scope=ML)

    (result,) = rebuild_runs(t.records())

    assert (result.span_id, result.agent_name, result.inferred) == (hex_id(root), "report_agent", False)
    assert _calls(result) == [("w", {"city": "P"}, "c1", False)]


def test_mlflow_span_type_is_read_as_json_text_or_bare() -> None:
    t = Traces()
    json_run = t.span("a", _ml("AGENT"), start=0, scope=ML)
    bare_run = t.span("b", {"mlflow.spanType": "AGENT"}, start=5, scope="mlflow.strands.autolog")
    other = t.span("conversation", _ml("UNKNOWN"), start=10, scope=ML)
    records = {r.span_id: r for r in t.records()}

    roles = {span: classify(records[hex_id(span)]) for span in (json_run, bare_run, other)}

    assert [(c[0].name, c[1].name) if c else None for c in roles.values()] == [
        ("mlflow", "RUN"),
        ("mlflow", "RUN"),
        ("mlflow", "OTHER"),
    ]


def test_mlflow_langgraph_root_chain_is_a_run_and_a_graph_in_a_node_is_not() -> None:
    # LangGraph stamps a graph run's callbacks with `ls_integration: langgraph`; its nodes' runs add
    # `langgraph_node`. Two graph runs under one application span are two runs, not one inferred at that span;
    # a graph invoked inside a tool inherits the tool's node: its run is inferred under the tool span.
    t = Traces()
    app = t.span("conversation", _ml("UNKNOWN"), start=0, end=100, scope=ML)
    graph = {"ls_integration": "langgraph"}
    first = t.span("triage_agent", _ml("CHAIN", metadata=graph), parent=app, start=1, end=40, scope=ML)
    node = t.span(
        "agent", _ml("CHAIN", metadata=graph | {"langgraph_node": "agent"}), parent=first, start=2, end=9, scope=ML
    )
    step = t.span(
        "call_model", _ml("CHAIN", metadata=graph | {"langgraph_node": "agent"}), parent=node, start=3, end=8, scope=ML
    )
    t.span("ChatOpenAI", _ml("CHAT_MODEL", {}, _ml_chat(("c1", "expert", {"q": "x"}))), parent=step, start=4, scope=ML)
    tools = graph | {"langgraph_node": "tools"}
    tools_node = t.span("tools", _ml("CHAIN", metadata=tools), parent=first, start=10, end=30, scope=ML)
    tool = t.span(
        "expert", _ml("TOOL", {"q": "x"}, "ok", tool_call_id="c1"), parent=tools_node, start=11, end=29, scope=ML
    )
    inner = t.span("expert_graph", _ml("CHAIN", metadata=tools), parent=tool, start=12, end=28, scope=ML)
    t.span("w", _ml("TOOL", {"city": "O"}, "sunny", tool_call_id="c2"), parent=inner, start=13, scope=ML)
    second = t.span("followup_agent", _ml("CHAIN", metadata=graph), parent=app, start=50, end=90, scope=ML)
    t.span("w", _ml("TOOL", {"city": "R"}, "rain", tool_call_id="c3"), parent=second, start=51, scope=ML)

    runs = [(r.span_id, r.agent_name, r.inferred, [c.call_id for c in r.calls]) for r in rebuild_runs(t.records())]

    assert sorted(runs) == sorted(
        [
            (hex_id(first), "triage_agent", False, ["c1"]),
            (hex_id(inner), "expert_graph", True, ["c2"]),
            (hex_id(second), "followup_agent", False, ["c3"]),
        ]
    )


def _ml_genai(operation: str, **attrs: Any) -> dict[str, Any]:
    """A span as MLflow's GenAI export writes it (`MLFLOW_ENABLE_OTEL_GENAI_SEMCONV=true`): no `mlflow.*`
    attribute, `gen_ai.operation.name` from the span type (any type without a GenAI name as is: `CHAIN`)."""
    return {"gen_ai.operation.name": operation} | attrs


def _genai_output(*calls: tuple[str, str, dict[str, Any]], text: str | None = None) -> str:
    parts: list[dict[str, Any]] = [{"type": "text", "content": text}] if text is not None else []
    parts += [{"type": "tool_call", "id": c, "name": n, "arguments": a} for c, n, a in calls]
    return json.dumps([{"role": "assistant", "parts": parts, "finish_reason": "tool_calls" if calls else "stop"}])


def test_mlflow_genai_export_tool_arguments_are_bound_and_streamed_calls_come_from_the_chunk_events() -> None:
    # The translation writes a TOOL span's inputs (the bound arguments with defaults) as gen_ai.tool.call.arguments
    # and the model's arguments decoded in gen_ai.output.messages: the model's win. A streamed completion's output
    # message is the rebuilt text (no calls); the chunk events stay and hold the calls.
    t = Traces()
    run = t.span("invoke_agent a", _ml_genai("invoke_agent", **{"gen_ai.agent.name": "a"}), start=0, end=99, scope=ML)
    plain = _genai_output(("c1", "w", {"city": "Oslo"}))
    t.span("chat m", _ml_genai("chat", **{"gen_ai.output.messages": plain}), parent=run, start=1, scope=ML)
    bound = {"gen_ai.tool.name": "w", "gen_ai.tool.call.arguments": json.dumps({"city": "Oslo", "unit": "celsius"})}
    t.span("execute_tool w", _ml_genai("execute_tool", **bound), parent=run, start=2, scope=ML)
    chunk = {"choices": [{"index": 0, "delta": {"tool_calls": [{"index": 0, "id": "c2", "function": {}}]}}]}
    chunk["choices"][0]["delta"]["tool_calls"][0]["function"] = {"name": "v", "arguments": '{"n": 1}'}
    events = [("mlflow.chunk.item.0", {"mlflow.chunk.value": json.dumps(chunk)})]
    rebuilt = {"gen_ai.output.messages": _genai_output(text="")}
    t.span("chat m", _ml_genai("chat", **rebuilt), parent=run, start=3, scope=ML, events=events)
    t.span("execute_tool v", _ml_genai("execute_tool", **{"gen_ai.tool.name": "v"}), parent=run, start=4, scope=ML)

    (result,) = rebuild_runs(t.records())

    assert (result.agent_name, result.convention) == ("a", "mlflow")
    assert _calls(result) == [("w", {"city": "Oslo"}, "c1", False), ("v", {"n": 1}, "c2", False)]


def test_mlflow_genai_export_model_span_without_output_messages_flags_a_run_read_from_responses_alone() -> None:
    # The converters know the chat form and the Responses API's `output` only: the LangChain callback's
    # `LLMResult` converts to no output messages. That response's calls are unknown; a failed one issued none.
    t = Traces()
    lost = t.span("invoke_agent a", _ml_genai("invoke_agent", **{"gen_ai.agent.name": "a"}), start=0, end=9, scope=ML)
    t.span("chat m", _ml_genai("chat"), parent=lost, start=1, scope=ML)
    failed = t.span("invoke_agent b", _ml_genai("invoke_agent", **{"gen_ai.agent.name": "b"}), start=20, scope=ML)
    t.span("chat m", _ml_genai("chat"), parent=failed, start=21, scope=ML, error="timeout")
    # The same span outside MLflow's scope is the GenAI reader's, which knows nothing of MLflow's converters
    other = t.span("invoke_agent c", _ml_genai("invoke_agent", **{"gen_ai.agent.name": "c"}), start=40, scope="x")
    t.span("chat m", _ml_genai("chat"), parent=other, start=41, scope="x")

    runs = {r.agent_name: r for r in rebuild_runs(t.records())}

    assert (runs["a"].incomplete, runs["a"].calls, runs["a"].convention) == (True, (), "mlflow")
    assert (runs["b"].incomplete, runs["b"].calls) == (False, ())
    assert (runs["c"].incomplete, runs["c"].convention) == (False, "genai")


def test_mlflow_genai_export_graph_root_chain_is_a_run_named_by_its_metadata() -> None:
    # Every CHAIN span is renamed `CHAIN`. A create_agent graph's root CHAIN (metadata without a node) is the run,
    # named by `lc_agent_name`; a graph run inside a tool inherits the tool's node: inferred, named the same way.
    # The LangChain callback's `tool_call_id` attribute survives the translation (not under `mlflow.`).
    t = Traces()
    agent = {"ls_integration": "langchain_create_agent", "lc_agent_name": "boss"}
    root = t.span("CHAIN", _ml_genai("CHAIN", metadata=json.dumps(agent)), start=0, end=99, scope=ML)
    tools = agent | {"langgraph_node": "tools"}
    node = t.span("CHAIN", _ml_genai("CHAIN", metadata=json.dumps(tools)), parent=root, start=1, end=90, scope=ML)
    delegate = {"gen_ai.tool.name": "expert", "tool_call_id": json.dumps("c1")}
    tool = t.span("execute_tool expert", _ml_genai("execute_tool", **delegate), parent=node, start=2, end=80, scope=ML)
    sub = {"ls_integration": "langchain_create_agent", "lc_agent_name": "expert", "langgraph_node": "tools"}
    inner = t.span("CHAIN", _ml_genai("CHAIN", metadata=json.dumps(sub)), parent=tool, start=3, end=70, scope=ML)
    answer = json.dumps({"type": "tool", "content": "sunny", "tool_call_id": "c2"})
    weather = {"gen_ai.tool.name": "w", "gen_ai.tool.call.result": answer}
    t.span("execute_tool w", _ml_genai("execute_tool", **weather), parent=inner, start=4, scope=ML)

    runs = [(r.span_id, r.agent_name, r.inferred, [c.call_id for c in r.calls]) for r in rebuild_runs(t.records())]

    assert runs == [(hex_id(root), "boss", False, ["c1"]), (hex_id(inner), "expert", True, ["c2"])]


def test_mlflow_openai_autolog_images_request_typed_tool_is_not_a_tool_call() -> None:
    # `mlflow.openai.autolog()` types `Images.generate` TOOL (`_get_span_type`), names the span after the resource
    # class and records the request's keywords as attributes (`prompt`): no call the model issued, in either export
    # form. A tool of the user's that happens to be named `Images` (no `prompt` attribute) is still a call.
    t = Traces()
    run = t.span("artist", _ml("AGENT"), start=0, end=99, scope=ML)
    request = _ml("TOOL", {"prompt": "a cat", "model": "dall-e-3"}, {"data": []}, prompt="a cat", model="dall-e-3")
    t.span("Images", request, parent=run, start=1, scope=ML)
    t.span("Images", _ml("TOOL", {"query": "cats"}, "3 found"), parent=run, start=2, scope=ML)
    translated = {"gen_ai.tool.name": "AsyncImages", "prompt": json.dumps("a dog")}
    genai = t.span("invoke_agent b", _ml_genai("invoke_agent", **{"gen_ai.agent.name": "b"}), start=50, scope=ML)
    t.span("execute_tool AsyncImages", _ml_genai("execute_tool", **translated), parent=genai, start=51, scope=ML)

    runs = {r.agent_name: [(c.name, c.args) for c in r.calls] for r in rebuild_runs(t.records())}

    assert runs == {"artist": [("Images", {"query": "cats"})], "b": []}
