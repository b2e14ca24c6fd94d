"""LangGraph agents for the canonical scenarios, built as a LangGraph user builds them.

Shared by the LangGraph capture scripts (OpenLLMetry and OpenInference), which differ only in the
instrumentation they install. Each scenario agent is a prebuilt `create_react_agent` graph named
after the agent, whose model is `ChatOpenAI` pointed at `ScriptedOpenAI` under the agent's model
name, and whose tools are the kit's tools (wrapped by a `Recorder`) made into LangChain tools with
`@tool`'s function form. An agent-as-tool sub-agent is a LangChain tool whose body invokes the
sub-agent's graph, the usual way to nest a graph as a tool (the sub-graph inherits the tool's
callbacks, so the instrumentation sees it inside the tool call).

Imported from the LangGraph venvs only (langgraph, langchain-openai).
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass, field
from typing import Any

from capture_kit import TOOLS, Agent, Recorder, Scenario, ScriptedOpenAI
from langchain_core.messages import BaseMessage, HumanMessage
from langchain_core.tools import BaseTool, tool
from langchain_openai import ChatOpenAI
from langgraph.prebuilt import ToolNode, create_react_agent

__all__ = ["ModelMode", "ScenarioGraphs", "build_graphs", "check_mode"]

API_KEY = "sk-scripted-not-a-key"
"""ChatOpenAI insists on a key; the scripted server ignores it."""


@dataclass(frozen=True)
class ModelMode:
    """How ChatOpenAI talks to the scripted server: streamed or not, Chat Completions or Responses."""

    streaming: bool = False
    responses_api: bool = False

    def describe(self) -> str:
        api = "Responses API" if self.responses_api else "Chat Completions"
        return f"{api}, {'streamed' if self.streaming else 'not streamed'}"


def check_mode(server: ScriptedOpenAI, mode: ModelMode) -> None:
    """Raise unless every model request used the API and streaming the mode asks for."""
    path = "/v1/responses" if mode.responses_api else "/v1/chat/completions"
    streamed = [bool(body.get("stream")) for body in server.requests]
    if set(server.paths) != {path} or set(streamed) != {mode.streaming}:
        raise AssertionError(f"model requests {server.paths} streamed {streamed}, expected {mode.describe()}")


@dataclass
class ScenarioGraphs:
    """The compiled graphs of one scenario by agent name, and the final texts the runs produced."""

    graphs: dict[str, Any] = field(default_factory=dict)
    outputs: list[str] = field(default_factory=list)

    def top_level(self, scenario: Scenario) -> list[Agent]:
        """The agents the script starts itself (sub-agents are started by their tool)."""
        subs = set(scenario.sub_agents.values())
        return [a for a in scenario.agents if a.name not in subs]

    async def play(self, scenario: Scenario) -> None:
        """Run the top-level agents in order; a later run continues the earlier one's conversation."""
        history: list[BaseMessage] = []
        for agent in self.top_level(scenario):
            state = await self.graphs[agent.name].ainvoke({"messages": [*history, HumanMessage(agent.prompt)]})
            history = list(state["messages"])
            self.outputs.append(history[-1].text)

    def check(self, scenario: Scenario) -> None:
        """Raise unless every run ended with its scripted final text."""
        expected = sorted(a.final_text for a in scenario.agents)
        if sorted(self.outputs) != expected:
            raise AssertionError(f"{scenario.name}: final texts {self.outputs} != scripted {expected}")


def _model(agent: Agent, base_url: str, mode: ModelMode) -> ChatOpenAI:
    return ChatOpenAI(
        model=agent.model,
        base_url=base_url,
        api_key=API_KEY,  # type: ignore[arg-type]
        streaming=mode.streaming,
        use_responses_api=mode.responses_api,
        max_retries=0,
    )


def _sub_agent_tool(tool_name: str, sub_agent: Agent, built: ScenarioGraphs) -> BaseTool:
    """A tool whose body runs the sub-agent's graph on the tool's input and returns its answer."""

    async def run_sub_agent(input: str) -> str:
        state = await built.graphs[sub_agent.name].ainvoke({"messages": [HumanMessage(input)]})
        answer = state["messages"][-1].text
        built.outputs.append(answer)
        return answer

    run_sub_agent.__name__ = tool_name
    run_sub_agent.__doc__ = f"Ask the {sub_agent.name} agent a question.\n\nArgs:\n    input: The question to ask."
    return tool(run_sub_agent, parse_docstring=True)


def build_graphs(scenario: Scenario, base_url: str, recorder: Recorder, mode: ModelMode) -> ScenarioGraphs:
    """One `create_react_agent` graph per scenario agent, named after it.

    Tool errors are handled by the ToolNode (`handle_tool_errors=True`) so that a raising tool is
    reported to the model and the run goes on, as the scenarios script; without it, LangGraph 1.x
    re-raises everything but invalid-arguments errors and the run aborts.
    """
    built = ScenarioGraphs()
    for agent in scenario.agents:
        tools: list[BaseTool] = []
        for name in agent.tools:
            if name in scenario.sub_agents:
                tools.append(_sub_agent_tool(name, scenario.agent(scenario.sub_agents[name]), built))
            else:
                tools.append(tool(recorder.wrap(TOOLS[name]), parse_docstring=True))
        tool_node = ToolNode(tools, handle_tool_errors=True)
        with warnings.catch_warnings():
            # create_react_agent is deprecated in favour of langchain.agents.create_agent (LangGraph
            # 1.0); it is still the prebuilt the instrumentations name and what the brief asks for.
            warnings.simplefilter("ignore")
            built.graphs[agent.name] = create_react_agent(
                _model(agent, base_url, mode), tool_node, prompt=agent.instructions, name=agent.name
            )
    return built
