"""AutoGen AgentChat agents for the canonical scenarios, played as an AgentChat user plays them.

Shared by the AutoGen capture scripts (`autogen/`, autogen-core's own spans with openai-v2;
`autogen-openinference/`, Arize's OpenInference instrumentation), which differ only in the instrumentation they
set up, the span they take for a run and what the truth says beside the calls. Each scenario agent is an
`AssistantAgent` on autogen-ext's `OpenAIChatCompletionClient` pointed at `ScriptedOpenAI`, its tools the kit's
functions (wrapped by a `Recorder`):

- a..i as the kit defines them; c and i stream the model calls (`model_client_stream=True`).
- f_agent_as_tool with AutoGen's `AgentTool` (the sub-agent is the tool, its argument `task`).
- g_two_runs_one_trace: two `agent.run` under the application span `conversation`.
- l_round_robin_team (`TEAM`, not canonical): g's two agents taking one turn each in a `RoundRobinGroupChat`.

Imported from the AutoGen venvs only (autogen-agentchat, autogen-ext); AutoGen itself is imported when the
agents are built, after the script has set up its tracer provider and instrumentation.
"""

from __future__ import annotations

import asyncio
import importlib.metadata
from dataclasses import replace
from typing import Any

from capture_kit import APP_SPAN_NAME, SCENARIOS, Agent, Recorder, Scenario, ScriptedOpenAI
from opentelemetry import trace

__all__ = ["STREAMED", "TEAM", "all_scenarios", "meta", "play"]

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


def meta(name: str, instrumentation: str, conventions: str) -> dict[str, Any]:
    """The truth's framework keys, with the script's instrumentation and conventions."""
    return {
        "framework": "autogen-agentchat (AssistantAgent, OpenAIChatCompletionClient)",
        "framework_version": importlib.metadata.version("autogen-agentchat"),
        "instrumentation": instrumentation,
        "conventions": conventions,
        "streamed": name in STREAMED,
    }


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


def play(scenario: Scenario, recorder: Recorder) -> None:
    """Play the scenario on its own `ScriptedOpenAI`; raise unless every scripted turn was asked for."""
    with ScriptedOpenAI(scenario.script) as server:
        asyncio.run(run(scenario, server, recorder))
        server.assert_consumed()
