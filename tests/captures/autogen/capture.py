"""Captures of AutoGen AgentChat (`AssistantAgent` on autogen-ext's `OpenAIChatCompletionClient`).

Two instrumentations write into one trace: autogen-core's own GenAI spans (`create_agent <name>` when
an agent is constructed, `invoke_agent <name>` around `agent.run` and around each turn in a team,
`execute_tool <tool>` around each tool call; tracer `autogen-core` from the global provider, no
arguments or results on them) and the openai-v2 instrumentation in its newest form
(`gen_ai_latest_experimental`, content `span_only`: `chat <model>` spans with `gen_ai.input.messages`
and `gen_ai.output.messages`). The agent runtime's own spans (`autogen publish ...`, `autogen
process ...`) appear in the team scenario.

Scenarios: a..i as the kit defines them, f with AutoGen's `AgentTool` (the sub-agent is the tool,
its argument `task`), g as two `agent.run` under the `conversation` span, and `l_round_robin_team`:
g's two agents taking one turn each in a `RoundRobinGroupChat`. c and i stream the model calls
(`model_client_stream=True`). The run span is autogen-core's `invoke_agent <agent>` span.

    /work/venvs/autogen/bin/python tests/captures/autogen/capture.py [SCENARIO ...]
"""

from __future__ import annotations

import argparse
import asyncio
import importlib.metadata
import os
import sys
from dataclasses import replace
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # tests/captures

os.environ["OTEL_SEMCONV_STABILITY_OPT_IN"] = "gen_ai_latest_experimental"
os.environ["OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT"] = "span_only"

from capture_kit import (
    APP_SPAN_NAME,
    SCENARIOS,
    Agent,
    Recorder,
    Scenario,
    ScriptedOpenAI,
    find_span,
    truth_for,
    write_capture,
)
from opentelemetry import trace
from opentelemetry.instrumentation.openai_v2 import OpenAIInstrumentor
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

__all__: list[str] = []

REPO = Path(__file__).resolve().parents[3]
FOLDER = "autogen"
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


async def run(scenario: Scenario, server: ScriptedOpenAI, recorder: Recorder) -> list[Any]:
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
    return clients


def run_span(spans: list[ReadableSpan], agent: Agent) -> ReadableSpan:
    return find_span(spans, f"invoke_agent {agent.name}")


def capture(name: str, scenario: Scenario, exporter: InMemorySpanExporter, out: Path) -> None:
    exporter.clear()
    recorder = Recorder()
    with ScriptedOpenAI(scenario.script) as server:
        asyncio.run(run(scenario, server, recorder))
        server.assert_consumed()
    spans = list(exporter.get_finished_spans())
    runs = [run_span(spans, a) for a in scenario.agents]
    version = importlib.metadata.version
    meta = {
        "framework": "autogen-agentchat (AssistantAgent, OpenAIChatCompletionClient)",
        "framework_version": version("autogen-agentchat"),
        "instrumentation": (
            f"autogen-core {version('autogen-core')} GenAI spans (create_agent, invoke_agent, execute_tool)"
            f" + opentelemetry-instrumentation-openai-v2 {version('opentelemetry-instrumentation-openai-v2')}"
            f" / opentelemetry-util-genai {version('opentelemetry-util-genai')} (OTEL_SEMCONV_STABILITY_OPT_IN="
            "gen_ai_latest_experimental, OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT=span_only)"
        ),
        "conventions": "OpenTelemetry GenAI semantic conventions (gen_ai.*)",
        "streamed": name in STREAMED,
    }
    unrecorded = set(scenario.sub_agents)
    truth = truth_for(scenario, meta, recorder, runs, unrecorded=unrecorded)
    write_capture(out / "traces" / FOLDER, out / "truth" / FOLDER, name, spans, truth)
    print(f"wrote {FOLDER}/{name}: {len(spans)} spans, {len({s.context.trace_id for s in spans})} traces")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("scenarios", nargs="*", help="default: all")
    parser.add_argument("--out", type=Path, default=REPO / "tests" / "testdata", help="default: tests/testdata")
    args = parser.parse_args()
    exporter = InMemorySpanExporter()
    provider = TracerProvider(resource=Resource.create({"service.name": "capture-autogen"}))
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    trace.set_tracer_provider(provider)
    OpenAIInstrumentor().instrument()
    known = all_scenarios()
    for name in args.scenarios or list(known):
        capture(name, known[name], exporter, args.out)


if __name__ == "__main__":
    main()
