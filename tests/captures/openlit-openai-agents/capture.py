"""Captures of the OpenAI Agents SDK traced by OpenLIT (`openlit.init()`).

OpenLIT registers its own `TracingProcessor` with the SDK (`set_trace_processors([...])`, replacing the
SDK's exporter) and turns the SDK's spans into OTel spans: the SDK trace into `invoke_workflow <trace
name>`, an agent span into `invoke_agent <agent>`, a function span into `execute_tool <tool>`, a handoff
into `invoke_agent <target agent>`; it skips the SDK's response/generation spans, for which its `openai`
client instrumentation writes `chat <model>` spans. The model is the kit's scripted OpenAI server on
127.0.0.1, through the Responses API (the SDK's default) unless listed in CHAT, streamed for STREAMED.

Scenarios a..i of the kit, f with `Agent.as_tool`, and `l_handoff`: a triage agent hands off (SDK
handoff, the model calls `transfer_to_weather_expert`) to a weather agent that calls `get_weather`.

    /work/venvs/openlit/bin/python tests/captures/openlit-openai-agents/capture.py [--out DIR] [SCENARIO ...]
"""

from __future__ import annotations

import asyncio
import importlib.metadata
import os
import sys
from pathlib import Path
from types import MappingProxyType
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # tests/captures

os.environ.setdefault("OPENAI_API_KEY", "scripted-not-a-key")

import openlit_capture
from capture_kit import (
    APP_SPAN_NAME,
    SCENARIOS,
    Agent,
    Recorder,
    Scenario,
    ScriptedOpenAI,
    ToolCall,
    Turn,
    find_span,
    truth_for,
)

__all__: list[str] = []

FOLDER = "openlit-openai-agents"
CHAT = {"b_sequential", "i_parallel_random_ids", "l_handoff"}
"""Scenarios whose model is `OpenAIChatCompletionsModel` (the others: `OpenAIResponsesModel`). Only these
record call ids: OpenLIT's Responses API spans list no call (not streamed), or there is no model span at all
(streamed: h), see NOTES.md."""
STREAMED = {"i_parallel_random_ids"}
"""Scenarios run with `Runner.run_streamed` (the others: `Runner.run`)."""
HANDOFF = Scenario(
    "l_handoff",
    "A triage agent hands off to a weather agent (SDK handoff), which calls its tool. Two runs.",
    (
        Agent(
            name="triage_agent",
            prompt="What is the weather in Oslo?",
            tools=(),
            turns=(Turn([ToolCall("call_l1", "transfer_to_weather_expert", {})]),),
            final_call_id="call_l9",
        ),
        Agent(
            name="weather_expert",
            prompt="",
            tools=("get_weather",),
            turns=(Turn([ToolCall("call_l2", "get_weather", {"city": "Oslo"})]), Turn(text="It is 4C in Oslo.")),
            final_call_id="call_l8",
        ),
    ),
)
HANDOFFS = MappingProxyType({"triage_agent": ("weather_expert",)})


def all_scenarios() -> dict[str, Scenario]:
    return {**SCENARIOS, HANDOFF.name: HANDOFF}


class Agents:
    """The scenario's SDK agents, their tools wrapped by the recorder."""

    def __init__(self, scenario: Scenario, base_url: str) -> None:
        import agents
        import openai

        self.scenario = scenario
        self.recorder = Recorder()
        self.client = openai.AsyncOpenAI(base_url=base_url, api_key="scripted", max_retries=0)
        self.built: dict[str, Any] = {}
        # Sub-agents first: a coordinator's tool or handoff is built from them.
        order = sorted(
            scenario.agents, key=lambda a: a.name not in scenario.sub_agents.values() and a.name != "weather_expert"
        )
        for agent in order:
            tools: list[Any] = []
            for name in agent.tools:
                if name in scenario.sub_agents:
                    sub = self.built[scenario.sub_agents[name]]
                    tools.append(
                        sub.as_tool(tool_name=name, tool_description="Ask the weather expert agent about the weather.")
                    )
                else:
                    tools.append(agents.function_tool(self.recorder.tools([name])[0], strict_mode=False))
            model_type = agents.OpenAIChatCompletionsModel if scenario.name in CHAT else agents.OpenAIResponsesModel
            self.built[agent.name] = agents.Agent(
                name=agent.name,
                instructions=agent.instructions,
                tools=tools,
                handoffs=[self.built[h] for h in HANDOFFS.get(agent.name, ()) if scenario is HANDOFF],
                model=model_type(agent.model, self.client),
            )

    async def run(self, agent: Agent) -> str:
        import agents

        sdk_agent = self.built[agent.name]
        if self.scenario.name in STREAMED:
            streamed = agents.Runner.run_streamed(sdk_agent, agent.prompt)
            async for _ in streamed.stream_events():
                pass
            return str(streamed.final_output)
        return str((await agents.Runner.run(sdk_agent, agent.prompt)).final_output)


async def play(scenario: Scenario, built: Agents) -> None:
    from opentelemetry import trace

    top = [a for a in scenario.agents if a.name not in scenario.sub_agents.values() and a.prompt]
    if scenario.name == "g_two_runs_one_trace":
        with trace.get_tracer("capture-openlit-openai-agents").start_as_current_span(APP_SPAN_NAME):
            for agent in top:
                await built.run(agent)
    else:
        for agent in top:
            final = await built.run(agent)
            expected = scenario.agents[-1].final_text if scenario is HANDOFF else agent.final_text
            if final != expected:
                raise AssertionError(f"{scenario.name}: {agent.name} answered {final!r}")
    await built.client.close()


def capture(name: str, scenario: Scenario, exporter: Any, out: Path) -> dict[str, Any]:
    exporter.clear()
    with ScriptedOpenAI(scenario.script) as server:
        built = Agents(scenario, server.base_url)
        asyncio.run(play(scenario, built))
        server.assert_consumed()
    spans = exporter.get_finished_spans()
    runs = {
        a.name: find_span(
            spans,
            f"invoke_agent {a.name}",
            where=lambda s: (
                s.instrumentation_scope.name == "openlit.instrumentation.openai_agents"
                and "gen_ai.agent.source" not in (s.attributes or {})
            ),  # not the handoff's span
        )
        for a in scenario.agents
    }
    truth = truth_for(
        scenario,
        meta(scenario),
        built.recorder,
        runs,
        call_ids=scenario.name in CHAT,
        unrecorded=set(scenario.sub_agents) | {"transfer_to_weather_expert"},
        flags={"call_l1": {"model_only": True}} if scenario is HANDOFF else None,
    )
    openlit_capture.write(out, FOLDER, name, spans, truth)
    return truth


def meta(scenario: Scenario) -> dict[str, Any]:
    version = importlib.metadata.version
    model = "OpenAIChatCompletionsModel" if scenario.name in CHAT else "OpenAIResponsesModel"
    return {
        "framework": "openai-agents",
        "framework_version": version("openai-agents"),
        "instrumentation": (
            f"openlit {version('openlit')} (openlit.init(), capture_message_content=True, metrics off): its "
            f"TracingProcessor for the SDK's spans, its openai {version('openai')} instrumentation for the model "
            f"calls; opentelemetry-sdk {version('opentelemetry-sdk')}"
        ),
        "conventions": "OpenLIT's OTel GenAI spans (invoke_workflow, invoke_agent, execute_tool, chat)",
        "model": model + (", Runner.run_streamed" if scenario.name in STREAMED else ", Runner.run"),
        "streamed": scenario.name in STREAMED,
    }


def main() -> None:
    openlit_capture.main(__doc__.splitlines()[0], FOLDER, all_scenarios(), capture)


if __name__ == "__main__":
    main()
