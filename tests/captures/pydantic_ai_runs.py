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
"""

from __future__ import annotations

import asyncio
import functools
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, nullcontext
from typing import Any

from capture_kit import APP_SPAN_NAME, Recorder, Scenario, ToolFailure
from pydantic_ai import Agent, ModelRetry
from pydantic_ai.messages import ModelMessage, ModelResponse, TextPart, ToolCallPart
from pydantic_ai.models.function import AgentInfo, FunctionModel

__all__ = ["play", "run_agent_names"]


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


def _build(scenario: Scenario, recorder: Recorder) -> dict[str, Agent[None, str]]:
    """One pydantic-ai Agent per scenario agent; a sub-agent's tool runs that agent."""
    agents: dict[str, Agent[None, str]] = {}

    for spec in reversed(scenario.agents):  # sub-agents first: their tools refer to them
        tools: list[Callable[..., Any]] = []
        for name in spec.tools:
            if name in scenario.sub_agents:
                tools.append(recorder.wrap(_sub_agent_tool(agents[scenario.sub_agents[name]]), name))
            else:
                tools.append(_retrying(recorder.tools([name])[0]))
        model = FunctionModel(_scripted(iter(spec.turns)), model_name=spec.model)
        agents[spec.name] = Agent(model, name=spec.name, instructions=spec.instructions, tools=tools)
    return agents


def _sub_agent_tool(agent: Agent[None, str]) -> Callable[..., Any]:
    async def weather_expert(input: str) -> str:
        """Ask the weather expert agent."""
        return (await agent.run(input)).output

    return weather_expert


async def _play(scenario: Scenario, recorder: Recorder, tracer: Any) -> list[str]:
    agents = _build(scenario, recorder)
    top = [a for a in scenario.agents if a.name not in scenario.sub_agents.values()]
    scope: AbstractContextManager[Any] = tracer.start_as_current_span(APP_SPAN_NAME) if len(top) > 1 else nullcontext()
    answers = []
    with scope:
        for spec in top:
            answers.append((await agents[spec.name].run(spec.prompt)).output)
    return answers


def play(scenario: Scenario, recorder: Recorder, tracer: Any) -> list[str]:
    """Play `scenario` (instrumentation already set with `Agent.instrument_all`); the top-level runs' answers,
    checked against the script's final texts."""
    answers = asyncio.run(_play(scenario, recorder, tracer))
    expected = [a.final_text for a in scenario.agents if a.name not in scenario.sub_agents.values()]
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
