"""LangChain 1.x agents (`langchain.agents.create_agent`) for the canonical scenarios and create_agent's own.

Shared by the `langchain-*` capture scripts (OpenInference, OpenLLMetry, OpenLIT), which differ only in the
instrumentation they install. Each scenario agent is `create_agent(ChatOpenAI(...), tools, system_prompt=...,
name=<agent>)`, the graph LangChain 1.x users build (nodes `model` and `tools`, plus one node per middleware
hook), with the kit's tools wrapped by a `Recorder` and made LangChain tools with `@tool`'s function form. The
model is `ChatOpenAI` against `ScriptedOpenAI` (`../langgraph_agents.py`'s `ModelMode` and `check_mode`). A
sub-agent (f) is a tool whose body invokes the sub-agent's graph, as `../langgraph_agents.py` does.

create_agent has no `handle_tool_errors`: a raising tool ends the run unless a middleware answers the model, so
every agent has `ToolErrorMiddleware` (the documented way, `langchain.agents.middleware.tool_error`), which
turns the tool's `ToolFailure` into an error `ToolMessage` and lets the run go on (e).

create_agent's own scenarios (`EXTRA`):

- `model_only_unknown_tool`: the model calls a tool it was not offered; ToolNode answers "... is not a valid
  tool" without running anything (no tool callback), then the model calls a real one.
- `k_structured_output`: `response_format=ToolStrategy(WeatherReport)`: the model's last turn is a call of the
  output tool `WeatherReport`, which create_agent parses in the model node (no tool runs): a framework output
  tool, not the agent's call. The truth leaves it out (toolscore's default, `include_output_tools`).
- `l_tool_retry`: `ToolRetryMiddleware(max_retries=1, initial_delay=0)` around a tool that fails once: one
  model call, call_l1, that the tool receives twice (the first raises, the retry succeeds).
- `m_model_retry`: `ModelRetryMiddleware(max_retries=1, initial_delay=0)`: the first model request fails at the
  transport (a refused connection, `FlakyTransport`), the middleware asks again and the scripted turn answers.
- `n_streamed`: b's script played with `agent.astream(stream_mode="updates")` (streamed graph, not only a
  streamed model).

Imported from the langchain venv only (langchain, langchain-openai, httpx).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Any

import httpx
from capture_kit import TOOLS, Agent, Recorder, Scenario, ScriptedOpenAI, ToolCall, ToolFailure, Turn, truth_for
from capture_scenarios import SCENARIOS
from langchain.agents import create_agent
from langchain.agents.middleware import ModelRetryMiddleware, ToolErrorMiddleware, ToolRetryMiddleware
from langchain.agents.structured_output import ToolStrategy
from langchain_core.messages import BaseMessage, HumanMessage
from langchain_core.tools import BaseTool, tool
from langchain_openai import ChatOpenAI
from langgraph_agents import ModelMode, check_mode
from pydantic import BaseModel, Field

__all__ = ["EXTRA", "ModelMode", "ScenarioAgents", "all_scenarios", "build_agents", "check_mode", "mode_of"]

API_KEY = "sk-scripted-not-a-key"


class WeatherReport(BaseModel):
    """A weather report for one city."""

    city: str = Field(description="The city.")
    temperature_c: float = Field(description="The temperature in degrees Celsius.")
    summary: str = Field(description="One sentence for the traveller.")


def _agent(name: str, prompt: str, tools: tuple[str, ...], final_call_id: str, *turns: Turn) -> Agent:
    return Agent(name=name, prompt=prompt, tools=tools, turns=tuple(turns), final_call_id=final_call_id)


REPORT = {"city": "Paris", "temperature_c": 21.0, "summary": "Mild and dry: a light jacket will do."}
OUTPUT_TOOL = "WeatherReport"
EXTRA: dict[str, Scenario] = {
    s.name: s
    for s in (
        Scenario(
            "model_only_unknown_tool",
            "The model calls a tool it was not offered (ToolNode answers 'not a valid tool'), then a real one.",
            (
                _agent(
                    "forecast_agent",
                    "What is the forecast for Paris?",
                    ("get_weather",),
                    "call_mu9",
                    Turn([ToolCall("call_mu1", "get_forecast", {"city": "Paris"})]),
                    Turn([ToolCall("call_mu2", "get_weather", {"city": "Paris"})]),
                    Turn(text="It is 21C in Paris."),
                ),
            ),
        ),
        Scenario(
            "k_structured_output",
            "One tool call, then the answer as create_agent's structured output tool (ToolStrategy).",
            (
                _agent(
                    "report_agent",
                    "Give me a weather report for Paris.",
                    ("get_weather",),
                    "call_k9",
                    Turn([ToolCall("call_k1", "get_weather", {"city": "Paris"})]),
                    Turn([ToolCall("call_k2", OUTPUT_TOOL, REPORT)]),
                ),
            ),
        ),
        Scenario(
            "l_tool_retry",
            "ToolRetryMiddleware: the tool fails once and is run again for the same call, which then succeeds.",
            (
                _agent(
                    "flaky_agent",
                    "What is the weather in Paris?",
                    ("get_weather",),
                    "call_l9",
                    Turn([ToolCall("call_l1", "get_weather", {"city": "Paris"})]),
                    Turn(text="It is 21C in Paris."),
                ),
            ),
        ),
        Scenario(
            "m_model_retry",
            "ModelRetryMiddleware: the first model request fails at the transport and is sent again.",
            (
                _agent(
                    "resilient_agent",
                    "What is the weather in Paris?",
                    ("get_weather",),
                    "call_m9",
                    Turn([ToolCall("call_m1", "get_weather", {"city": "Paris"})]),
                    Turn(text="It is 21C in Paris."),
                ),
            ),
        ),
        replace(
            SCENARIOS["b_sequential"],
            name="n_streamed",
            description="b_sequential played with agent.astream(stream_mode='updates').",
        ),
    )
}
STREAMED = frozenset({"n_streamed"})
"""Scenarios played with `astream` (the others: `ainvoke`)."""


def all_scenarios() -> dict[str, Scenario]:
    return {**SCENARIOS, **EXTRA}


def mode_of(name: str) -> ModelMode:
    """How the model is called: streamed for b, c and n, the Responses API for i, else Chat Completions."""
    if name in ("b_sequential", "c_parallel", "n_streamed"):
        return ModelMode(streaming=True)
    if name == "i_parallel_random_ids":
        return ModelMode(responses_api=True)
    return ModelMode()


class FlakyTransport(httpx.AsyncHTTPTransport):
    """Refuses the first `failures` requests (as a dropped connection would), then sends as usual."""

    def __init__(self, failures: int) -> None:
        super().__init__()
        self.failures = failures

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        if self.failures > 0:
            self.failures -= 1
            raise httpx.ConnectError("scripted transient failure", request=request)
        return await super().handle_async_request(request)


class FlakyOnce:
    """A tool function that raises `ToolFailure` on its first call and then runs `fn` (for ToolRetryMiddleware)."""

    def __init__(self) -> None:
        self.failed = False

    def wrap(self, fn: Any) -> Any:
        import functools

        @functools.wraps(fn)
        def flaky(*args: Any, **kwargs: Any) -> Any:
            if not self.failed:
                self.failed = True
                raise ToolFailure("scripted transient failure")
            return fn(*args, **kwargs)

        return flaky


@dataclass
class ScenarioAgents:
    """The compiled agents of one scenario by name, and what the runs answered."""

    graphs: dict[str, Any] = field(default_factory=dict)
    outputs: list[str] = field(default_factory=list)
    structured: list[Any] = field(default_factory=list)

    def top_level(self, scenario: Scenario) -> list[Agent]:
        subs = set(scenario.sub_agents.values())
        return [a for a in scenario.agents if a.name not in subs]

    async def play(self, scenario: Scenario) -> None:
        """Run the top-level agents in order (a later run continues the earlier one's conversation)."""
        history: list[BaseMessage] = []
        for agent in self.top_level(scenario):
            graph = self.graphs[agent.name]
            request = {"messages": [*history, HumanMessage(agent.prompt)]}
            if scenario.name in STREAMED:
                state: Mapping[str, Any] = {"messages": list(request["messages"])}
                async for update in graph.astream(request, stream_mode="updates"):
                    for node_update in update.values():
                        if isinstance(node_update, Mapping):
                            state["messages"].extend(node_update.get("messages", []))  # type: ignore[index]
            else:
                state = await graph.ainvoke(request)
            history = list(state["messages"])
            if "structured_response" in state:
                self.structured.append(state["structured_response"])
            else:
                self.outputs.append(history[-1].text)

    def check(self, scenario: Scenario) -> None:
        """Raise unless every run ended with its scripted final text (or structured answer)."""
        expected = sorted(a.final_text for a in scenario.agents if a.final_text)
        if sorted(self.outputs) != expected:
            raise AssertionError(f"{scenario.name}: final texts {self.outputs} != scripted {expected}")
        if scenario.name == "k_structured_output" and [s.model_dump() for s in self.structured] != [REPORT]:
            raise AssertionError(f"{scenario.name}: structured answer {self.structured} != {REPORT}")


def _model(agent: Agent, base_url: str, mode: ModelMode, transport: httpx.AsyncBaseTransport | None) -> ChatOpenAI:
    return ChatOpenAI(
        model=agent.model,
        base_url=base_url,
        api_key=API_KEY,  # type: ignore[arg-type]
        streaming=mode.streaming,
        use_responses_api=mode.responses_api,
        max_retries=0,
        http_async_client=None if transport is None else httpx.AsyncClient(transport=transport),
    )


def _sub_agent_tool(tool_name: str, sub_agent: Agent, built: ScenarioAgents) -> BaseTool:
    async def run_sub_agent(input: str) -> str:
        state = await built.graphs[sub_agent.name].ainvoke({"messages": [HumanMessage(input)]})
        answer = state["messages"][-1].text
        built.outputs.append(answer)
        return answer

    run_sub_agent.__name__ = tool_name
    run_sub_agent.__doc__ = f"Ask the {sub_agent.name} agent a question.\n\nArgs:\n    input: The question to ask."
    return tool(run_sub_agent, parse_docstring=True)


def _answer_tool_error(exc: Exception, request: Any) -> str | None:
    """ToolErrorMiddleware's handler: the kit's ToolFailure goes back to the model; anything else propagates."""
    return f"Error: {type(exc).__name__}: {exc}" if isinstance(exc, ToolFailure) else None


def build_agents(scenario: Scenario, server: ScriptedOpenAI, recorder: Recorder, mode: ModelMode) -> ScenarioAgents:
    """One `create_agent` graph per scenario agent, named after it (see the module docstring)."""
    built = ScenarioAgents()
    for agent in scenario.agents:
        tools: list[BaseTool] = []
        for name in agent.tools:
            if name in scenario.sub_agents:
                tools.append(_sub_agent_tool(name, scenario.agent(scenario.sub_agents[name]), built))
            elif scenario.name == "l_tool_retry":
                tools.append(tool(recorder.wrap(FlakyOnce().wrap(TOOLS[name]), name), parse_docstring=True))
            else:
                tools.append(tool(recorder.wrap(TOOLS[name]), parse_docstring=True))
        middleware: list[Any] = [ToolErrorMiddleware(on_error=_answer_tool_error)]
        transport = None
        if scenario.name == "l_tool_retry":
            middleware.append(ToolRetryMiddleware(max_retries=1, initial_delay=0.0, jitter=False))
        if scenario.name == "m_model_retry":
            middleware.append(ModelRetryMiddleware(max_retries=1, initial_delay=0.0, jitter=False))
            transport = FlakyTransport(failures=1)
        response_format = ToolStrategy(WeatherReport) if scenario.name == "k_structured_output" else None
        built.graphs[agent.name] = create_agent(
            _model(agent, server.base_url, mode, transport),
            tools,
            system_prompt=agent.instructions,
            middleware=middleware,
            response_format=response_format,
            name=agent.name,
        )
    return built


def truth_of(
    scenario: Scenario, meta: Mapping[str, Any], recorder: Recorder, runs: Mapping[str, Any], **options: Any
) -> dict[str, Any]:
    """The capture's truth (`truth_for`), with what create_agent's own scenarios need.

    - the sub-agent's tool (f) is not recorded;
    - the unknown tool's call is model-only and failed (no tool received it: `oi_common.model_only` checks);
    - the structured output call is left out (a framework output tool, no call of the agent's), and noted;
    - the retried call is listed once per execution, as the tool received it: first failed, then not.
    """
    from oi_common import model_only

    unrecorded = set(scenario.sub_agents) | {OUTPUT_TOOL}
    flags: dict[str, dict[str, Any]] = {}
    if scenario.name == "model_only_unknown_tool":
        flags, names = model_only(scenario, recorder, "call_mu1")
        unrecorded |= set(names)
    if scenario.name == "l_tool_retry":
        received = [(r.name, r.full_args, r.error is not None) for r in recorder.calls]
        if received != [
            ("get_weather", {"city": "Paris", "unit": "celsius"}, True),
            ("get_weather", {"city": "Paris", "unit": "celsius"}, False),
        ]:
            raise AssertionError(f"l_tool_retry: the tool received {received}")
        unrecorded.add("get_weather")
    truth = truth_for(scenario, meta, recorder, runs, flags=flags, unrecorded=unrecorded, **options)
    for run in truth["runs"]:
        if scenario.name == "k_structured_output":
            run["calls"] = [c for c in run["calls"] if c["name"] != OUTPUT_TOOL]
            run["output_tool_call"] = {"name": OUTPUT_TOOL, "call_id": "call_k2", "args": REPORT}
        if scenario.name == "l_tool_retry":
            (call,) = run["calls"]
            run["calls"] = [{**call, "error": True}, {**call, "error": False}]
    return truth
