"""Real agent frameworks driven by scripted models, traced into a caller's `TracerProvider`.

Why: extraction has to be checked against what the frameworks' own instrumentation really emits,
not against hand-built spans, and the ground truth must come from the script, never from toolscore.
Each `run_<framework>(scenario, tracer_provider)` plays one scenario of `SCENARIOS` offline and
returns the scripted runs (agent, calls in model order, errors, enclosing agent). The scripts are
framework-neutral; only the tool error mechanism differs (pydantic-ai `ModelRetry`, an exception
handled by the framework elsewhere), so that every framework yields the same truth.

Hermetic: the models are local, nothing leaves the process. `HERMETIC_ENV` lists the environment
the callers should set (LangSmith off, no OpenAI key for the Agents SDK's own exporter), and the
OpenAI Agents SDK's own trace processors are removed before OpenInference is installed.
"""

from __future__ import annotations

import itertools
import json
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from contextlib import AbstractContextManager, contextmanager, nullcontext
from dataclasses import dataclass
from typing import Any

import pytest
from agents import Agent as AgentsAgent
from agents import FunctionTool, Model, ModelTracing, Usage, function_tool
from agents import ModelResponse as AgentsModelResponse
from agents import Runner as AgentsRunner
from agents import trace as agents_trace
from agents import tracing as agents_tracing
from agents.tracing import response_span
from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolCall
from langchain_core.tools import BaseTool
from langchain_core.tools import tool as lc_tool
from langgraph.graph import START, MessagesState, StateGraph
from langgraph.prebuilt import ToolNode, tools_condition
from openai.types.responses import Response, ResponseFunctionToolCall, ResponseOutputMessage, ResponseOutputText
from openinference.instrumentation.langchain import LangChainInstrumentor
from openinference.instrumentation.openai_agents import OpenAIAgentsInstrumentor
from opentelemetry.sdk.trace import TracerProvider
from pydantic_ai import Agent, ModelRetry
from pydantic_ai.capabilities import Instrumentation
from pydantic_ai.messages import ModelMessage, ModelResponse, TextPart, ToolCallPart
from pydantic_ai.models.function import AgentInfo, FunctionModel
from pydantic_ai.models.instrumented import InstrumentationSettings

__all__ = [
    "FRAMEWORKS",
    "HANDOFF_RUNS",
    "HERMETIC_ENV",
    "SCENARIOS",
    "Call",
    "Script",
    "ScriptedRun",
    "Turn",
    "apply_hermetic_env",
    "framework_versions",
    "run_langgraph",
    "run_openai_agents",
    "run_openai_agents_handoff",
    "run_pydantic_ai",
]

HERMETIC_ENV: dict[str, str | None] = {
    "LANGSMITH_TRACING": "false",
    "LANGCHAIN_TRACING_V2": "false",
    "LANGCHAIN_TRACING": "false",
    "LANGSMITH_API_KEY": None,
    "LANGCHAIN_API_KEY": None,
    "OPENAI_API_KEY": None,
    "OPENAI_AGENTS_DISABLE_TRACING": "false",
}
"""Environment for the scenarios: None means unset. Keeps LangSmith and the OpenAI trace exporter off."""


def apply_hermetic_env(monkeypatch: pytest.MonkeyPatch) -> None:
    """Set `HERMETIC_ENV` for one test (tests using these scenarios call it from an autouse fixture)."""
    for name, value in HERMETIC_ENV.items():
        if value is None:
            monkeypatch.delenv(name, raising=False)
        else:
            monkeypatch.setenv(name, value)


FAILING_CITY = "Atlantis"
"""`get_weather` fails for this city, in each framework's own way."""


@dataclass(frozen=True)
class Call:
    """One tool call the scripted model issues; `error` says the tool will fail on it."""

    name: str
    args: dict[str, Any]
    call_id: str
    error: bool = False


Turn = tuple[Call, ...] | str
"""One model response: tool calls (several means parallel, in this order) or the final text."""


@dataclass(frozen=True)
class ScriptedRun:
    """One agent run as scripted; `parent_agent` names the run whose tool started this one."""

    agent_name: str
    prompt: str
    turns: tuple[Turn, ...]
    parent_agent: str | None = None

    @property
    def calls(self) -> tuple[Call, ...]:
        return tuple(call for turn in self.turns if not isinstance(turn, str) for call in turn)

    @property
    def final_text(self) -> str:
        last = self.turns[-1]
        assert isinstance(last, str), "a scripted run ends with text"
        return last


def _weather(call_id: str, city: str, **extra: Any) -> Call:
    return Call("get_weather", {"city": city, **extra}, call_id, error=city == FAILING_CITY)


SCENARIOS: dict[str, tuple[ScriptedRun, ...]] = {
    "a_single_tool": (ScriptedRun("weather_agent", "Weather in Paris?", ((_weather("call_a1", "Paris"),), "Sunny.")),),
    "b_sequential": (
        ScriptedRun(
            "weather_agent",
            "Paris, then Berlin?",
            ((_weather("call_b1", "Paris"),), (_weather("call_b2", "Berlin", unit="fahrenheit"),), "Both sunny."),
        ),
    ),
    "c_parallel": (
        ScriptedRun(
            "parallel_agent",
            "Tokyo: weather, time, Sony?",
            (
                (
                    _weather("call_c1", "Tokyo"),
                    Call("get_time", {"timezone": "Asia/Tokyo"}, "call_c2"),
                    Call("get_stock_price", {"symbol": "SONY"}, "call_c3"),
                ),
                "All done.",
            ),
        ),
    ),
    "e_tool_error_retry": (
        ScriptedRun(
            "weather_agent",
            "Weather in Atlantis?",
            ((_weather("call_e1", FAILING_CITY),), (_weather("call_e2", "Paris"),), "Paris instead: sunny."),
        ),
    ),
    "g_two_runs_one_trace": (
        ScriptedRun("chat_agent", "Rome?", ((_weather("call_g1", "Rome"),), "Rome is sunny.")),
        ScriptedRun("chat_agent", "And Milan?", ((_weather("call_g2", "Milan", unit="fahrenheit"),), "Milan too.")),
    ),
    "n_nested": (
        ScriptedRun(
            "coordinator",
            "Research otel spans.",
            ((Call("delegate_research", {"topic": "otel spans"}, "call_n1"),), "Research done."),
        ),
        ScriptedRun(
            "sub_researcher",
            "otel spans",
            ((Call("search", {"query": "otel spans", "limit": 2}, "call_n2"),), "Found 2 results."),
            parent_agent="coordinator",
        ),
    ),
}
"""Scenario name -> runs in start order. Names follow the shared sample captures (a, b, c, e, g) plus n."""


class Script:
    """Hands each agent its scripted turns, across all its runs, and checks they were all used."""

    def __init__(self, runs: tuple[ScriptedRun, ...]) -> None:
        self.runs = runs
        self._turns: dict[str, list[Turn]] = {}
        for run in runs:
            self._turns.setdefault(run.agent_name, []).extend(run.turns)
        self._next: dict[str, Iterator[Turn]] = {name: iter(turns) for name, turns in self._turns.items()}
        self.outputs: list[str] = []

    @property
    def agent_names(self) -> list[str]:
        return list(self._turns)

    def next_turn(self, agent_name: str) -> Turn:
        try:
            return next(self._next[agent_name])
        except StopIteration:
            raise AssertionError(f"{agent_name} asked the model more often than scripted") from None

    def top_level(self) -> list[ScriptedRun]:
        return [run for run in self.runs if run.parent_agent is None]

    def sub_run(self, parent_agent: str) -> ScriptedRun:
        return next(run for run in self.runs if run.parent_agent == parent_agent)

    def finish(self) -> tuple[ScriptedRun, ...]:
        """The truth, after checking the framework played every turn and ended each run as scripted."""
        for name, turns in self._next.items():
            left = list(turns)
            assert not left, f"{name} left scripted turns unused: {left}"
        expected = sorted(run.final_text for run in self.runs)
        assert sorted(self.outputs) == expected, f"outputs {self.outputs} != scripted {expected}"
        return self.runs


def tool_result(name: str, args: dict[str, Any]) -> str:
    """What the tools return: deterministic text, so runs never depend on anything outside."""
    return f"{name}({json.dumps(args, sort_keys=True)}) ok"


Runner = Callable[[str, TracerProvider], Awaitable[tuple[ScriptedRun, ...]]]
"""`async run(scenario, tracer_provider) -> truth`."""


def _app_span(tracer_provider: TracerProvider, runs: list[ScriptedRun]) -> AbstractContextManager[object]:
    """Several top-level runs share one trace under an application span, as a chat server's request would."""
    if len(runs) < 2:
        return nullcontext()
    return tracer_provider.get_tracer("tests.frameworks").start_as_current_span("conversation")


def _has_sub_run(script: Script, agent_name: str) -> bool:
    return any(run.parent_agent == agent_name for run in script.runs)


# --- pydantic-ai: native instrumentation (capabilities=[Instrumentation(...)]), FunctionModel ---


def _pydantic_model(script: Script, agent_name: str) -> FunctionModel:
    def respond(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        turn = script.next_turn(agent_name)
        if isinstance(turn, str):
            return ModelResponse(parts=[TextPart(turn)])
        return ModelResponse(parts=[ToolCallPart(call.name, call.args, tool_call_id=call.call_id) for call in turn])

    return FunctionModel(respond, model_name=f"scripted-{agent_name}")


def _pydantic_tools(script: Script, agents: dict[str, Agent[None, str]]) -> list[Callable[..., Any]]:
    def get_weather(city: str, unit: str = "celsius") -> str:
        if city == FAILING_CITY:
            raise ModelRetry(f"unknown city {city}")
        return tool_result("get_weather", {"city": city, "unit": unit})

    def get_time(timezone: str) -> str:
        return tool_result("get_time", {"timezone": timezone})

    def get_stock_price(symbol: str) -> str:
        return tool_result("get_stock_price", {"symbol": symbol})

    def search(query: str, limit: int = 3) -> str:
        return tool_result("search", {"query": query, "limit": limit})

    async def delegate_research(topic: str) -> str:
        result = await agents["sub_researcher"].run(topic)
        script.outputs.append(result.output)
        return result.output

    return [get_weather, get_time, get_stock_price, search, delegate_research]


async def run_pydantic_ai(scenario: str, tracer_provider: TracerProvider) -> tuple[ScriptedRun, ...]:
    """pydantic-ai's own GenAI-convention spans; a sub-agent run inside a tool for nesting."""
    script = Script(SCENARIOS[scenario])
    agents: dict[str, Agent[None, str]] = {}
    tools = _pydantic_tools(script, agents)
    for name in script.agent_names:
        settings = InstrumentationSettings(tracer_provider=tracer_provider)
        agent_tools = tools if _has_sub_run(script, name) else tools[:-1]
        agents[name] = Agent(
            _pydantic_model(script, name),
            name=name,
            tools=agent_tools,
            capabilities=[Instrumentation(settings=settings)],
        )
    top = script.top_level()
    history: list[ModelMessage] | None = None
    with _app_span(tracer_provider, top):
        for run in top:
            result = await agents[run.agent_name].run(run.prompt, message_history=history)
            script.outputs.append(result.output)
            history = result.all_messages()
    return script.finish()


# --- OpenAI Agents SDK + openinference-instrumentation-openai-agents, a local Responses `Model` ---


class _ScriptedResponsesModel(Model):
    """Returns scripted Responses-API output and opens a `response_span` as the SDK's OpenAI model does."""

    def __init__(self, script: Script, agent_name: str) -> None:
        self._script = script
        self._agent_name = agent_name
        self._count = 0

    async def get_response(self, *args: Any, **kwargs: Any) -> AgentsModelResponse:
        tracing: ModelTracing = kwargs.get("tracing", args[6] if len(args) > 6 else ModelTracing.ENABLED)
        model_input = kwargs.get("input", args[1] if len(args) > 1 else None)
        self._count += 1
        output = _responses_output(self._script.next_turn(self._agent_name), self._count)
        response = Response(
            id=f"resp_{self._agent_name}_{self._count}",
            created_at=0,
            model="scripted",
            object="response",
            output=output,
            parallel_tool_calls=True,
            tool_choice="auto",
            tools=[],
        )
        with response_span(disabled=tracing.is_disabled()) as span:
            if tracing.include_data():
                span.span_data.response = response
                span.span_data.input = model_input
        return AgentsModelResponse(output=output, usage=Usage(), response_id=response.id)

    def stream_response(self, *args: Any, **kwargs: Any) -> AsyncIterator[Any]:
        raise NotImplementedError("the scenarios do not stream")


def _responses_output(turn: Turn, count: int) -> list[Any]:
    if isinstance(turn, str):
        text = ResponseOutputText(type="output_text", text=turn, annotations=[])
        return [
            ResponseOutputMessage(
                id=f"msg_{count}", type="message", role="assistant", status="completed", content=[text]
            )
        ]
    return [
        ResponseFunctionToolCall(
            type="function_call",
            id=f"fc_{call.call_id}",
            call_id=call.call_id,
            name=call.name,
            arguments=json.dumps(call.args),
            status="completed",
        )
        for call in turn
    ]


@contextmanager
def _openai_agents_traced(tracer_provider: TracerProvider) -> Iterator[None]:
    """OpenInference as the only SDK trace processor: the SDK's exporter to OpenAI is removed first."""
    agents_tracing.set_trace_processors([])
    instrumentor = OpenAIAgentsInstrumentor()
    instrumentor.instrument(tracer_provider=tracer_provider)
    try:
        yield
    finally:
        instrumentor.uninstrument()


def _openai_tools(script: Script, agents: dict[str, AgentsAgent[Any]]) -> list[FunctionTool]:
    @function_tool
    def get_weather(city: str, unit: str = "celsius") -> str:
        """Current weather for a city."""
        if city == FAILING_CITY:
            raise ValueError(f"unknown city {city}")
        return tool_result("get_weather", {"city": city, "unit": unit})

    @function_tool
    def get_time(timezone: str) -> str:
        """Local time in a timezone."""
        return tool_result("get_time", {"timezone": timezone})

    @function_tool
    def get_stock_price(symbol: str) -> str:
        """Last price of a stock."""
        return tool_result("get_stock_price", {"symbol": symbol})

    @function_tool
    def search(query: str, limit: int = 3) -> str:
        """Search documents."""
        return tool_result("search", {"query": query, "limit": limit})

    @function_tool
    async def delegate_research(topic: str) -> str:
        """Hand a topic to the research agent."""
        result = await AgentsRunner.run(agents["sub_researcher"], topic)
        output = str(result.final_output)
        script.outputs.append(output)
        return output

    return [get_weather, get_time, get_stock_price, search, delegate_research]


async def run_openai_agents(scenario: str, tracer_provider: TracerProvider) -> tuple[ScriptedRun, ...]:
    """OpenInference spans of the Agents SDK; the application span is the SDK's own `trace()`."""
    script = Script(SCENARIOS[scenario])
    agents: dict[str, AgentsAgent[Any]] = {}
    tools = _openai_tools(script, agents)
    for name in script.agent_names:
        agent_tools = tools if _has_sub_run(script, name) else tools[:-1]
        agents[name] = AgentsAgent(name=name, model=_ScriptedResponsesModel(script, name), tools=list(agent_tools))
    top = script.top_level()
    app_trace = agents_trace("conversation") if len(top) > 1 else nullcontext()
    with _openai_agents_traced(tracer_provider), app_trace:
        history: list[Any] = []
        for run in top:
            prompt: str | list[Any] = [*history, {"role": "user", "content": run.prompt}] if history else run.prompt
            result = await AgentsRunner.run(agents[run.agent_name], prompt)
            script.outputs.append(str(result.final_output))
            history = result.to_input_list()
    return script.finish()


HANDOFF_RUNS = (
    ScriptedRun("triage", "Refund order A-1?", ((Call("transfer_to_billing", {}, "call_h1"),),)),
    ScriptedRun("billing", "Refund order A-1?", ((Call("get_time", {"timezone": "UTC"}, "call_h2"),), "Refunded.")),
)
"""A handoff: the triage agent's model calls the SDK's handoff tool (no arguments), billing answers."""


async def run_openai_agents_handoff(tracer_provider: TracerProvider) -> tuple[ScriptedRun, ...]:
    """`HANDOFF_RUNS` played by the Agents SDK with `handoffs=[billing]`, traced by OpenInference."""
    script = Script(HANDOFF_RUNS)
    tools = {tool.name: tool for tool in _openai_tools(script, {})}
    billing = AgentsAgent(name="billing", model=_ScriptedResponsesModel(script, "billing"), tools=[tools["get_time"]])
    triage = AgentsAgent(name="triage", model=_ScriptedResponsesModel(script, "triage"), handoffs=[billing])
    with _openai_agents_traced(tracer_provider):
        result = await AgentsRunner.run(triage, HANDOFF_RUNS[0].prompt)
    assert result.final_output == "Refunded.", result.final_output
    return HANDOFF_RUNS


# --- LangGraph + openinference-instrumentation-langchain: a StateGraph with ToolNode, fake chat model ---


def _ai_message(turn: Turn) -> AIMessage:
    if isinstance(turn, str):
        return AIMessage(content=turn)
    calls = [ToolCall(name=call.name, args=call.args, id=call.call_id, type="tool_call") for call in turn]
    return AIMessage(content="", tool_calls=calls)


def _langgraph_agent(script: Script, agent_name: str, tools: list[BaseTool]) -> Any:
    """The prebuilt ReAct shape (model node, ToolNode, `tools_condition`) without the deprecated factory."""
    turns = (_ai_message(script.next_turn(agent_name)) for _ in itertools.count())
    model = GenericFakeChatModel(messages=turns)

    async def call_model(state: MessagesState) -> dict[str, list[BaseMessage]]:
        return {"messages": [await model.ainvoke(state["messages"])]}

    graph = StateGraph(MessagesState)
    graph.add_node("agent", call_model)
    graph.add_node("tools", ToolNode(tools, handle_tool_errors=True))
    graph.add_edge(START, "agent")
    graph.add_conditional_edges("agent", tools_condition)
    graph.add_edge("tools", "agent")
    return graph.compile(name=agent_name)


def _langchain_tools(script: Script, graphs: dict[str, Any]) -> list[BaseTool]:
    @lc_tool
    def get_weather(city: str, unit: str = "celsius") -> str:
        """Current weather for a city."""
        if city == FAILING_CITY:
            raise ValueError(f"unknown city {city}")
        return tool_result("get_weather", {"city": city, "unit": unit})

    @lc_tool
    def get_time(timezone: str) -> str:
        """Local time in a timezone."""
        return tool_result("get_time", {"timezone": timezone})

    @lc_tool
    def get_stock_price(symbol: str) -> str:
        """Last price of a stock."""
        return tool_result("get_stock_price", {"symbol": symbol})

    @lc_tool
    def search(query: str, limit: int = 3) -> str:
        """Search documents."""
        return tool_result("search", {"query": query, "limit": limit})

    @lc_tool
    async def delegate_research(topic: str) -> str:
        """Hand a topic to the research agent."""
        state = await graphs["sub_researcher"].ainvoke({"messages": [HumanMessage(topic)]})
        output = str(state["messages"][-1].content)
        script.outputs.append(output)
        return output

    return [get_weather, get_time, get_stock_price, search, delegate_research]


@contextmanager
def _langchain_traced(tracer_provider: TracerProvider) -> Iterator[None]:
    instrumentor = LangChainInstrumentor()
    instrumentor.instrument(tracer_provider=tracer_provider)
    try:
        yield
    finally:
        instrumentor.uninstrument()


async def run_langgraph(scenario: str, tracer_provider: TracerProvider) -> tuple[ScriptedRun, ...]:
    """OpenInference LangChain spans of a compiled graph named after the agent; nested graph inside a tool."""
    script = Script(SCENARIOS[scenario])
    graphs: dict[str, Any] = {}
    tools = _langchain_tools(script, graphs)
    for name in script.agent_names:
        graphs[name] = _langgraph_agent(script, name, tools if _has_sub_run(script, name) else tools[:-1])
    top = script.top_level()
    with _langchain_traced(tracer_provider), _app_span(tracer_provider, top):
        messages: list[BaseMessage] = []
        for run in top:
            state = await graphs[run.agent_name].ainvoke({"messages": [*messages, HumanMessage(run.prompt)]})
            messages = state["messages"]
            script.outputs.append(str(messages[-1].content))
    return script.finish()


FRAMEWORKS: dict[str, Runner] = {
    "pydantic-ai": run_pydantic_ai,
    "openai-agents": run_openai_agents,
    "langgraph": run_langgraph,
}
"""Framework name -> its scenario runner."""


def framework_versions() -> dict[str, str]:
    """Installed versions of the frameworks and instrumentations, for reports and failure messages."""
    from importlib.metadata import version

    packages = (
        "pydantic-ai-slim",
        "openai-agents",
        "openinference-instrumentation-openai-agents",
        "langgraph",
        "langchain-core",
        "openinference-instrumentation-langchain",
        "opentelemetry-sdk",
    )
    return {package: version(package) for package in packages}
