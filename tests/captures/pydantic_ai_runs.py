"""The kit's scenarios played on pydantic-ai, whatever its release (0.8 .. 2.x) and instrumentation settings.

Imported from a pydantic-ai venv by `tests/captures/pydantic-ai/capture.py`, which only chooses the release
(its venv) and the `InstrumentationSettings`. Each agent is a pydantic-ai `Agent` on a `FunctionModel` named
after the scripted model (`scripted-<agent>`) that answers the scenario's turns in order, so the model's calls
and their ids are the script's; the tools are the kit's functions wrapped by the `Recorder`, so the truth is
what they really received. Instrumented as users do it: `Agent.instrument_all(settings)` (what
`logfire.instrument_pydantic_ai()` calls), present in every release.

Scenario adaptations (the same on every release):
- a tool's `ToolFailure` is raised to pydantic-ai as `ModelRetry` (pydantic-ai ends the run on any other
  exception; `ModelRetry` is its way to tell the model a call failed), so e's first call fails on its span and
  the model calls again;
- f: `weather_expert(input)` is a plain async tool that runs the sub-agent (its own run, inside the tool span);
- g: both runs under the application span `conversation`, from the script's tracer provider.

One scenario of pydantic-ai's own (`EXTRA`): `k_output_ends_run`, an agent with a structured output (`output_type`,
so pydantic-ai offers its output tool `final_result`) whose model answers with the output tool and a function tool
call in one response. That is how a call comes to have no tool span: pydantic-ai 0.x and 1.x end the run on the
output tool and skip the other call (their default `end_strategy='early'`), 2.x runs it (default `'graceful'`).
`truth_of` writes what the tools received, a call they never received as `model_only`, and leaves the output tool
out (it is not a tool call).
"""

from __future__ import annotations

import asyncio
import functools
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, nullcontext
from dataclasses import replace
from typing import Any

from capture_kit import APP_SPAN_NAME, Recorder, Scenario, ToolCall, ToolFailure, Turn, truth_for
from capture_kit import Agent as AgentSpec
from pydantic import BaseModel
from pydantic_ai import Agent, ModelRetry
from pydantic_ai.messages import ModelMessage, ModelResponse, TextPart, ToolCallPart
from pydantic_ai.models.function import AgentInfo, FunctionModel

__all__ = ["EXTRA", "ModelFor", "play", "run_agent_names", "truth_of"]

OUTPUT_TOOL = "final_result"
"""pydantic-ai's default name for its structured-output tool."""


class Report(BaseModel):
    """k_output_ends_run's structured output."""

    city: str
    temp: int


EXTRA: dict[str, Scenario] = {
    "k_output_ends_run": Scenario(
        "k_output_ends_run",
        "Structured output: the model's second response calls the output tool and get_weather together.",
        (
            AgentSpec(
                name="report_agent",
                prompt="A weather report for Paris, as data.",
                tools=("get_weather",),
                turns=(
                    Turn([ToolCall("call_k1", "get_weather", {"city": "Paris"})]),
                    Turn(
                        [
                            ToolCall("call_k9", OUTPUT_TOOL, {"city": "Paris", "temp": 21}),
                            ToolCall("call_k2", "get_weather", {"city": "Rome"}),
                        ]
                    ),
                ),
                final_call_id="call_k9",
            ),
        ),
    )
}
"""pydantic-ai's own scenarios, beside the kit's."""
OUTPUT_TYPES: dict[str, type[BaseModel]] = {"report_agent": Report}
"""The agents with a structured output, by name."""


def _scripted(turns: Iterator[Any]) -> Callable[[list[ModelMessage], AgentInfo], ModelResponse]:
    """The FunctionModel function: each request answers the agent's next scripted turn."""

    def respond(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        turn = next(turns)
        if turn.calls:
            return ModelResponse(parts=[ToolCallPart(c.name, dict(c.args), tool_call_id=c.id) for c in turn.calls])
        return ModelResponse(parts=[TextPart(turn.text or "")])

    return respond


def _retrying(tool: Callable[..., Any]) -> Callable[..., Any]:
    """`tool` (already recorded) raising `ModelRetry` where it raises `ToolFailure`; same signature and hints."""

    @functools.wraps(tool)
    def call(*args: Any, **kwargs: Any) -> Any:
        try:
            return tool(*args, **kwargs)
        except ToolFailure as exc:
            raise ModelRetry(str(exc)) from exc

    return call


ModelFor = Callable[[AgentSpec], Any]
"""A script's own model for an agent (`model_for(spec)`: a pydantic-ai model answering `spec.model`'s turns), in
place of the `FunctionModel`."""


def _build(scenario: Scenario, recorder: Recorder, model_for: ModelFor | None = None) -> dict[str, Agent[None, Any]]:
    """One pydantic-ai Agent per scenario agent; a sub-agent's tool runs that agent."""
    agents: dict[str, Agent[None, Any]] = {}

    for spec in reversed(scenario.agents):  # sub-agents first: their tools refer to them
        tools: list[Callable[..., Any]] = []
        for name in spec.tools:
            if name in scenario.sub_agents:
                tools.append(recorder.wrap(_sub_agent_tool(agents[scenario.sub_agents[name]]), name))
            else:
                tools.append(_retrying(recorder.tools([name])[0]))
        model = model_for(spec) if model_for else FunctionModel(_scripted(iter(spec.turns)), model_name=spec.model)
        output: dict[str, Any] = {"output_type": OUTPUT_TYPES[spec.name]} if spec.name in OUTPUT_TYPES else {}
        agents[spec.name] = Agent(model, name=spec.name, instructions=spec.instructions, tools=tools, **output)
    return agents


def _sub_agent_tool(agent: Agent[None, Any]) -> Callable[..., Any]:
    async def weather_expert(input: str) -> str:
        """Ask the weather expert agent."""
        return (await agent.run(input)).output

    return weather_expert


async def _play(scenario: Scenario, recorder: Recorder, tracer: Any, model_for: ModelFor | None) -> list[Any]:
    agents = _build(scenario, recorder, model_for)
    top = [a for a in scenario.agents if a.name not in scenario.sub_agents.values()]
    scope: AbstractContextManager[Any] = tracer.start_as_current_span(APP_SPAN_NAME) if len(top) > 1 else nullcontext()
    answers = []
    with scope:
        for spec in top:
            answers.append((await agents[spec.name].run(spec.prompt)).output)
    return answers


def _expected_answer(agent: AgentSpec) -> Any:
    """The script's final text, or a structured output as the output tool's arguments."""
    if agent.name in OUTPUT_TYPES:
        return next(c.args for c in agent.calls if c.name == OUTPUT_TOOL)
    return agent.final_text


def play(scenario: Scenario, recorder: Recorder, tracer: Any, model_for: ModelFor | None = None) -> list[Any]:
    """Play `scenario` (instrumentation already set with `Agent.instrument_all`, or the script's own); the top-level
    runs' answers, checked against the script's final texts (a structured output against the output tool's
    arguments). `model_for`: each agent's model (default: a `FunctionModel` answering the script's turns)."""
    played = asyncio.run(_play(scenario, recorder, tracer, model_for))
    answers = [a.model_dump() if isinstance(a, BaseModel) else a for a in played]
    expected = [_expected_answer(a) for a in scenario.agents if a.name not in scenario.sub_agents.values()]
    if answers != expected:
        raise AssertionError(f"{scenario.name}: answers {answers} != {expected}")
    return answers


def run_agent_names(span: Any) -> str | None:
    """The agent a run span belongs to (`gen_ai.agent.name` from data format 3, `agent_name` before), or None
    for a span that is not a run span (`invoke_agent <name>` / `agent run`)."""
    attrs = span.attributes or {}
    if span.name.startswith("invoke_agent ") or span.name == "agent run":
        name = attrs.get("gen_ai.agent.name", attrs.get("agent_name"))
        return name if isinstance(name, str) else None
    return None


def truth_of(scenario: Scenario, meta: dict[str, Any], recorder: Recorder, runs: dict[str, Any]) -> dict[str, Any]:
    """`truth_for` of the calls the tools received; a scripted call no tool received is listed `model_only` in its
    place (pydantic-ai skipped it: no tool span), the output tool not at all (a structured output, not a call)."""
    received = [(r.name, r.full_args) for r in recorder.calls]

    def was_received(call: ToolCall) -> bool:
        key = (call.name, recorder.full_args(call.name, dict(call.args)))
        if key in received:
            received.remove(key)
            return True
        return call.name in scenario.sub_agents  # a sub-agent's tool: recorded by its own wrapper

    kept: dict[str, list[ToolCall]] = {}
    skipped: dict[str, list[ToolCall]] = {}
    for agent in scenario.agents:
        for call in agent.calls:
            if call.name != OUTPUT_TOOL:
                (kept if was_received(call) else skipped).setdefault(agent.name, []).append(call)
    played = replace(scenario, agents=tuple(_only(a, kept.get(a.name, [])) for a in scenario.agents))
    truth = truth_for(played, meta, recorder, runs)
    for agent, run in zip(scenario.agents, truth["runs"], strict=True):
        order = [c.id for c in agent.calls if c.name != OUTPUT_TOOL]
        extra = [
            {"name": c.name, "args": dict(c.args), "call_id": c.id, "error": False, "model_only": True}
            for c in skipped.get(agent.name, [])
        ]
        run["calls"] = sorted(run["calls"] + extra, key=lambda call: order.index(call["call_id"]))
    return truth


def _only(agent: AgentSpec, calls: list[ToolCall]) -> AgentSpec:
    """`agent` with only `calls` among its turns' calls (a turn left without calls goes; text turns stay)."""
    turns = [
        Turn([c for c in t.calls if c in calls]) if t.calls else t
        for t in agent.turns
        if not t.calls or any(c in calls for c in t.calls)
    ]
    return replace(agent, turns=tuple(turns))
