"""The canonical capture scenarios, as data, so every framework's captures and truths line up.

A scenario is a list of agents in run order (one run each). An agent has a name, the model name its
scripted turns are served under (`scripted-<agent>`), the tools it may call, a user prompt, its
turns (tool calls, then final text), and the call id its final answer gets in frameworks whose
final answer is itself a tool call (smolagents `final_answer`). `failing` lists the (tool, args)
pairs that raise: the tools raise `ToolFailure` for inputs they do not know, so the failure is real.

Call ids are fixed strings so the truth is exact. Adapters that must call a framework's own
delegation tool (f_agent_as_tool) rename that call with `Scenario.with_call`.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from types import MappingProxyType
from typing import Any

from scripted_openai import ToolCall, Turn

__all__ = ["APP_SPAN_NAME", "SCENARIOS", "Agent", "Scenario", "scenario"]

APP_SPAN_NAME = "conversation"
"""The application span g_two_runs_one_trace's two runs are started under."""


@dataclass(frozen=True)
class Agent:
    """One agent and its scripted model turns (one run)."""

    name: str
    prompt: str
    tools: tuple[str, ...]
    turns: tuple[Turn, ...]
    final_call_id: str
    instructions: str = "You are a helpful assistant. Use the tools when they help."

    @property
    def model(self) -> str:
        """The model name this agent's turns are served under by `ScriptedOpenAI`."""
        return f"scripted-{self.name}"

    @property
    def final_text(self) -> str:
        texts = [t.text for t in self.turns if t.text is not None]
        return texts[-1] if texts else ""

    @property
    def calls(self) -> list[ToolCall]:
        """The agent's tool calls in the order the model issues them."""
        return [c for t in self.turns for c in t.calls]


@dataclass(frozen=True)
class Scenario:
    """One scenario: its agents in run order, and the (tool, args) pairs that raise."""

    name: str
    description: str
    agents: tuple[Agent, ...]
    failing: tuple[tuple[str, Mapping[str, Any]], ...] = ()
    sub_agents: Mapping[str, str] = field(default_factory=lambda: MappingProxyType({}))
    """Agent-as-tool: the tool name that runs each sub-agent (tool name -> agent name)."""

    def agent(self, name: str) -> Agent:
        for agent in self.agents:
            if agent.name == name:
                return agent
        raise KeyError(f"{self.name} has no agent {name!r} (agents: {[a.name for a in self.agents]})")

    @property
    def script(self) -> dict[str, list[Turn]]:
        """What `ScriptedOpenAI` takes: each agent's turns under its model name."""
        return {a.model: list(a.turns) for a in self.agents}

    def raises(self, name: str, args: Mapping[str, Any]) -> bool:
        """Whether the tool call (name, args) is one of the scenario's scripted failures."""
        return any(name == n and dict(args) == dict(a) for n, a in self.failing)

    def with_call(self, call_id: str, name: str | None = None, args: Mapping[str, Any] | None = None) -> Scenario:
        """A copy where call `call_id` has another name or other args (for a framework's own tool)."""
        found = False

        def swap(call: ToolCall) -> ToolCall:
            nonlocal found
            if call.id != call_id:
                return call
            found = True
            return ToolCall(call.id, name or call.name, call.args if args is None else args)

        agents = tuple(
            replace(a, turns=tuple(Turn([swap(c) for c in t.calls]) if t.calls else t for t in a.turns))
            for a in self.agents
        )
        if not found:
            raise KeyError(f"{self.name} has no call {call_id!r}")
        return replace(self, agents=agents)

    def with_final_tool(self, tool: str, arg: str | None = "answer") -> Scenario:
        """A copy where each final text turn is a call of the framework's finishing tool instead."""

        def final(agent: Agent, turn: Turn) -> Turn:
            if turn.text is None:
                return turn
            return Turn([ToolCall(agent.final_call_id, tool, {arg: turn.text} if arg else {})])

        agents = tuple(replace(a, turns=tuple(final(a, t) for t in a.turns)) for a in self.agents)
        return replace(self, agents=agents)


def _agent(name: str, prompt: str, tools: tuple[str, ...], final_call_id: str, *turns: Turn) -> Agent:
    return Agent(name=name, prompt=prompt, tools=tools, turns=tuple(turns), final_call_id=final_call_id)


WEATHER = ("get_weather",)
ALL = ("get_weather", "get_time", "get_stock_price")
COMPLEX_ARGS: dict[str, Any] = {
    "origin": "CDG",
    "destination": "NRT",
    "passengers": [
        {"name": "Zoë Ñúñez", "age": 34, "seat": {"row": 12, "letter": "A"}, "meals": ["vegan", "no nuts"]},
        {"name": "李雷", "age": 7, "seat": None, "meals": []},
    ],
    "depart_date": "2026-12-01",
    "max_price": 1234.5,
    "direct_only": False,
    "cabin": None,
    "filters": {"airlines": ["AF", "JL"], "max_stops": 1, "note": 'window ✈ « quotes " and \\ »'},
}

SCENARIOS: dict[str, Scenario] = {
    s.name: s
    for s in (
        Scenario(
            "a_single_tool",
            "One tool call, then the answer.",
            (
                _agent(
                    "weather_agent",
                    "What is the weather in Paris?",
                    WEATHER,
                    "call_a9",
                    Turn([ToolCall("call_a1", "get_weather", {"city": "Paris"})]),
                    Turn(text="It is 21C in Paris."),
                ),
            ),
        ),
        Scenario(
            "b_sequential",
            "The same tool twice with different arguments, in two model turns.",
            (
                _agent(
                    "trip_agent",
                    "Compare the weather in Paris and in London (in fahrenheit).",
                    WEATHER,
                    "call_b9",
                    Turn([ToolCall("call_b1", "get_weather", {"city": "Paris"})]),
                    Turn([ToolCall("call_b2", "get_weather", {"city": "London", "unit": "fahrenheit"})]),
                    Turn(text="Paris is 21C; London is 59F."),
                ),
            ),
        ),
        Scenario(
            "c_parallel",
            "Three different tools in one model turn.",
            (
                _agent(
                    "parallel_agent",
                    "Weather, local time and Sony's stock price for Tokyo, please.",
                    ALL,
                    "call_c9",
                    Turn(
                        [
                            ToolCall("call_c1", "get_weather", {"city": "Tokyo"}),
                            ToolCall("call_c2", "get_time", {"timezone": "Asia/Tokyo"}),
                            ToolCall("call_c3", "get_stock_price", {"symbol": "SONY"}),
                        ]
                    ),
                    Turn(text="Tokyo: 18C, 22:00, SONY at 92.4 USD."),
                ),
            ),
        ),
        Scenario(
            "d_no_tool",
            "The model answers without calling a tool: the run is listed with zero calls.",
            (
                _agent(
                    "smalltalk_agent", "Say hello.", WEATHER, "call_d9", Turn(text="Hello! How can I help you today?")
                ),
            ),
        ),
        Scenario(
            "e_tool_error_retry",
            "The tool raises for the first arguments; the model calls it again with other arguments.",
            (
                _agent(
                    "retry_agent",
                    "What is the weather in Atlantis, or else in Lisbon?",
                    WEATHER,
                    "call_e9",
                    Turn([ToolCall("call_e1", "get_weather", {"city": "Atlantis"})]),
                    Turn([ToolCall("call_e2", "get_weather", {"city": "Lisbon"})]),
                    Turn(text="Atlantis is unknown; Lisbon is 24C."),
                ),
            ),
            failing=(("get_weather", MappingProxyType({"city": "Atlantis"})),),
        ),
        Scenario(
            "f_agent_as_tool",
            "A coordinator calls a sub-agent as a tool; the sub-agent calls its own tool. Two runs.",
            (
                _agent(
                    "travel_coordinator",
                    "Should I pack a coat for Oslo?",
                    ("weather_expert",),
                    "call_f9",
                    Turn([ToolCall("call_f1", "weather_expert", {"input": "What is the weather in Oslo?"})]),
                    Turn(text="Yes, pack a coat: it is 4C in Oslo."),
                ),
                _agent(
                    "weather_expert",
                    "What is the weather in Oslo?",
                    WEATHER,
                    "call_f8",
                    Turn([ToolCall("call_f2", "get_weather", {"city": "Oslo"})]),
                    Turn(text="It is 4C in Oslo."),
                ),
            ),
            sub_agents=MappingProxyType({"weather_expert": "weather_expert"}),
        ),
        Scenario(
            "g_two_runs_one_trace",
            f"Two runs of two agents under one application span named {APP_SPAN_NAME!r}.",
            (
                _agent(
                    "triage_agent",
                    "What is the weather in Rome?",
                    WEATHER,
                    "call_g8",
                    Turn([ToolCall("call_g1", "get_weather", {"city": "Rome"})]),
                    Turn(text="It is 26C in Rome."),
                ),
                _agent(
                    "followup_agent",
                    "And what time is it there?",
                    ("get_time",),
                    "call_g9",
                    Turn([ToolCall("call_g2", "get_time", {"timezone": "Europe/Rome"})]),
                    Turn(text="It is 14:00 in Rome."),
                ),
            ),
        ),
        Scenario(
            "h_complex_args",
            "Nested objects, lists, numbers, booleans, null and unicode in the arguments.",
            (
                _agent(
                    "booking_agent",
                    "Find flights from Paris to Tokyo on 2026-12-01 for Zoë (34, seat 12A) and 李雷 (7).",
                    ("search_flights",),
                    "call_h9",
                    Turn([ToolCall("call_h1", "search_flights", COMPLEX_ARGS)]),
                    Turn(text="Two flights found, from 899 EUR."),
                ),
            ),
        ),
        Scenario(
            "i_parallel_random_ids",
            "Four parallel calls (one tool twice) whose call ids look random and are not in sorted order.",
            (
                _agent(
                    "random_ids_agent",
                    "Weather in Berlin and Madrid, the time in New York and the price of NVDA.",
                    ALL,
                    "call_Qx7TmW3eRb",
                    Turn(
                        [
                            ToolCall("call_9fQ2xZ7bLk", "get_weather", {"city": "Berlin"}),
                            ToolCall("call_3aB7kL0qWe", "get_time", {"timezone": "America/New_York"}),
                            ToolCall("call_Zk01pQ4mTy", "get_weather", {"city": "Madrid"}),
                            ToolCall("call_Hh5tY2ReUi", "get_stock_price", {"symbol": "NVDA"}),
                        ]
                    ),
                    Turn(text="Berlin 12C, Madrid 28C, New York 08:00, NVDA 141.2 USD."),
                ),
            ),
        ),
    )
}
"""Every canonical scenario, by name, in order a..i."""


def scenario(name: str) -> Scenario:
    """The scenario called `name` (a KeyError names the known ones)."""
    try:
        return SCENARIOS[name]
    except KeyError:
        raise KeyError(f"no scenario {name!r}; known: {sorted(SCENARIOS)}") from None
