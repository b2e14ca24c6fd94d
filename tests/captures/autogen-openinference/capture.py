"""Captures of AutoGen AgentChat (`AssistantAgent` on autogen-ext's `OpenAIChatCompletionClient`) traced by
Arize's OpenInference instrumentation for AgentChat.

The same runs as tests/captures/autogen/capture.py, traced as a user of
`openinference-instrumentation-autogen-agentchat` does: one OTel SDK tracer provider, set as the global one, and
`AutogenAgentChatInstrumentor().instrument(tracer_provider=...)` (no openai-v2 instrumentation). autogen-core's
own GenAI spans (`create_agent`, `invoke_agent`, `execute_tool`; tracer `autogen-core` from the global provider,
always on) land in the same export: what a user sees. See NOTES.md for what each writes where.

Scenarios: a..i as the kit defines them, f with AutoGen's `AgentTool` (argument `task`), g as two `agent.run`
under the `conversation` span, and `l_round_robin_team` (g's two agents, one turn each, in a
`RoundRobinGroupChat`). c and i stream the model calls (`model_client_stream=True`).

    /work/venvs/autogen-openinference/bin/python tests/captures/autogen-openinference/capture.py \
        [--out DIR] [SCENARIO ...]
"""

from __future__ import annotations

import asyncio
import importlib.metadata
import sys
from dataclasses import replace
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # tests/captures

from capture_kit import (
    APP_SPAN_NAME,
    SCENARIOS,
    Agent,
    Recorder,
    Scenario,
    ScriptedOpenAI,
    find_span,
    loopback_only_connections,
    out_option,
    truth_for,
    write_capture,
)
from opentelemetry import trace
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

REFUSED = loopback_only_connections()
"""Connections tried to anything but the loopback address (the script fails when there is one)."""
OUT, _rest = out_option(sys.argv[1:])
"""`--out DIR`: write into DIR/traces and DIR/truth instead of tests/testdata."""
ARGS = [a for a in _rest if not a.startswith("--")]

EXPORTER = InMemorySpanExporter()
PROVIDER = TracerProvider(resource=Resource.create({"service.name": "capture-autogen-openinference"}))
PROVIDER.add_span_processor(SimpleSpanProcessor(EXPORTER))
trace.set_tracer_provider(PROVIDER)

from openinference.instrumentation.autogen_agentchat import AutogenAgentChatInstrumentor  # noqa: E402

AutogenAgentChatInstrumentor().instrument(tracer_provider=PROVIDER)

INSTRUMENTATION = "openinference-instrumentation-autogen-agentchat"
REPO = Path(__file__).resolve().parents[3]
FOLDER = "autogen-openinference"
TRACES = (OUT or REPO / "tests" / "testdata") / "traces" / FOLDER
TRUTHS = (OUT or REPO / "tests" / "testdata") / "truth" / FOLDER
STREAMED = {"c_parallel", "i_parallel_random_ids"}
TEAM = "l_round_robin_team"
MODEL_INFO = {
    "vision": False,
    "function_calling": True,
    "json_output": False,
    "family": "unknown",
    "structured_output": False,
    "multiple_system_messages": True,
}


def all_scenarios() -> dict[str, Scenario]:
    found = dict(SCENARIOS)
    # AgentTool's argument is `task`; the tool is the sub-agent itself (no Recorder wraps it).
    found["f_agent_as_tool"] = SCENARIOS["f_agent_as_tool"].with_call(
        "call_f1", args={"task": "What is the weather in Oslo?"}
    )
    found[TEAM] = replace(
        SCENARIOS["g_two_runs_one_trace"],
        name=TEAM,
        description="g's two agents take one turn each in a RoundRobinGroupChat (max_turns=2); one run per turn.",
    )
    return found


def make_agent(agent: Agent, server: ScriptedOpenAI, tools: list[Any], streamed: bool) -> Any:
    from autogen_agentchat.agents import AssistantAgent
    from autogen_ext.models.openai import OpenAIChatCompletionClient

    client = OpenAIChatCompletionClient(
        model=agent.model, base_url=server.base_url, api_key="scripted", model_info=MODEL_INFO, max_retries=0
    )
    return AssistantAgent(
        agent.name,
        model_client=client,
        tools=tools,
        system_message=agent.instructions,
        description=f"The {agent.name.replace('_', ' ')}.",
        model_client_stream=streamed,
        max_tool_iterations=len(agent.turns),  # the loop ends when the model answers with text
    )


async def run(scenario: Scenario, server: ScriptedOpenAI, recorder: Recorder) -> None:
    """Build the agents (their create_agent spans are separate traces, as for a user) and run them."""
    from autogen_agentchat.conditions import MaxMessageTermination
    from autogen_agentchat.teams import RoundRobinGroupChat
    from autogen_agentchat.tools import AgentTool

    streamed = scenario.name in STREAMED
    built: dict[str, Any] = {}
    for agent in reversed(scenario.agents):  # sub-agents first: AgentTool needs the agent
        tools = [AgentTool(built[n]) if n in scenario.sub_agents else recorder.tools([n])[0] for n in agent.tools]
        built[agent.name] = make_agent(agent, server, tools, streamed)
    top = [a for a in scenario.agents if a.name not in scenario.sub_agents.values()]
    clients = [a._model_client for a in built.values()]
    if scenario.name == TEAM:
        team = RoundRobinGroupChat(
            [built[a.name] for a in top], termination_condition=MaxMessageTermination(99), max_turns=len(top)
        )
        with trace.get_tracer("capture-autogen").start_as_current_span(APP_SPAN_NAME):
            await team.run(task=top[0].prompt)
    elif scenario.name == "g_two_runs_one_trace":
        with trace.get_tracer("capture-autogen").start_as_current_span(APP_SPAN_NAME):
            for agent in top:
                await built[agent.name].run(task=agent.prompt)
    else:
        for agent in top:
            await built[agent.name].run(task=agent.prompt)
    for client in clients:
        await client.close()


def run_span(spans: list[ReadableSpan], agent: Agent) -> ReadableSpan:
    """The run's span: OpenInference's AGENT span `<agent>.on_messages_stream` (graph.node.id = the agent's name)."""
    return find_span(
        spans,
        f"{agent.name}.on_messages_stream",
        attributes={"openinference.span.kind": "AGENT", "graph.node.id": agent.name},
    )


def layers(spans: list[ReadableSpan]) -> dict[str, int]:
    """What the truth says extraction folds (`ExtractStats.skipped`): each autogen-core `invoke_agent` span right
    above the instrumentor's AGENT span of the same agent (`run_layer`), each autogen-core `execute_tool` span
    right under the instrumentor's TOOL span of the same tool (`tool_layer`)."""
    by_id = {s.context.span_id: s for s in spans}
    counts = {"run_layer": 0, "tool_layer": 0}
    for span in spans:
        attrs = span.attributes or {}
        parent = by_id.get(span.parent.span_id) if span.parent is not None else None
        above = (parent.attributes or {}) if parent is not None else {}
        kind = attrs.get("openinference.span.kind")
        if kind == "AGENT" and above.get("gen_ai.operation.name") == "invoke_agent":
            counts["run_layer"] += above.get("gen_ai.agent.name") == attrs.get("graph.node.id")
        elif attrs.get("gen_ai.operation.name") == "execute_tool" and above.get("openinference.span.kind") == "TOOL":
            counts["tool_layer"] += above.get("tool.name") == attrs.get("gen_ai.tool.name")
    return {key: n for key, n in counts.items() if n}


def capture(name: str, scenario: Scenario) -> None:
    EXPORTER.clear()
    recorder = Recorder()
    with ScriptedOpenAI(scenario.script) as server:
        asyncio.run(run(scenario, server, recorder))
        server.assert_consumed()
    assert not REFUSED, f"connections refused: {REFUSED}"
    PROVIDER.force_flush()
    spans = list(EXPORTER.get_finished_spans())
    runs = [run_span(spans, a) for a in scenario.agents]
    version = importlib.metadata.version
    meta = {
        "framework": "autogen-agentchat (AssistantAgent, OpenAIChatCompletionClient)",
        "framework_version": version("autogen-agentchat"),
        "instrumentation": (
            f"openinference-instrumentation-autogen-agentchat {version(INSTRUMENTATION)}"
            f" (openinference-instrumentation {version('openinference-instrumentation')}) + autogen-core "
            f"{version('autogen-core')}'s own GenAI spans (create_agent, invoke_agent, execute_tool) on the same "
            "global tracer provider"
        ),
        "conventions": "OpenInference (AGENT <agent>.on_messages_stream, TOOL <agent>.<tool>, LLM "
        "OpenAIChatCompletionClient.create / create_stream) beside autogen-core's OTel GenAI spans",
        "streamed": name in STREAMED,
    }
    truth = truth_for(scenario, meta, recorder, runs, unrecorded=set(scenario.sub_agents))
    truth["skipped"] = layers(spans)
    write_capture(TRACES, TRUTHS, name, spans, truth)
    print(f"wrote {FOLDER}/{name}: {len(spans)} spans, {len({s.context.trace_id for s in spans})} traces")


def main(names: list[str]) -> None:
    known = all_scenarios()
    for name in names or list(known):
        capture(name, known[name])


if __name__ == "__main__":
    main(ARGS)
