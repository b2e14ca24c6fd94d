"""Agno agents for the canonical scenarios, built as an Agno user builds them.

Shared by the Agno capture scripts (`agno/`, traced by openinference-instrumentation-agno; `agno-openlit/`, traced
by OpenLIT), which differ in the instrumentation they install, the scenarios they stream or send to the Responses
API, and the spans they take for each run. Each agent is an `agno.agent.Agent` whose tools are the kit's recorded
functions (Agno builds the schemas from the signatures and docstrings), on `OpenAIChat(base_url=...)` (or
`OpenAIResponses`) pointed at `ScriptedOpenAI`. f_agent_as_tool is an Agno `Team` (the coordinator) with the
weather expert as its member: the team's model calls Agno's own `delegate_task_to_member(member_id, task)` tool,
which runs the member (`delegated`).

Imports agno, so a script imports this module after installing its instrumentation. Imported from the Agno venvs
only.
"""

from __future__ import annotations

import asyncio
from contextlib import nullcontext
from typing import Any, Literal

from agno.agent import Agent as AgnoAgent
from agno.models.openai import OpenAIChat, OpenAIResponses
from agno.team import Team
from capture_kit import APP_SPAN_NAME, Agent, Recorder, Scenario, ScriptedOpenAI

__all__ = ["DELEGATE", "TASK", "Stream", "agent", "delegated", "model", "play", "run"]

DELEGATE = "delegate_task_to_member"
"""Agno's own tool with which a team's model hands a task to a member (not recorded: no `Recorder` wraps it)."""
TASK = "What is the weather in Oslo?"
"""The task f's coordinator gives the weather expert (`delegate_task_to_member`'s `task`)."""

Stream = Literal["sync", "async"] | None
"""How a run is played: `run(prompt)` (None), `run(prompt, stream=True)` iterated ("sync"), or
`arun(prompt, stream=True)` iterated on a fresh event loop ("async")."""


def delegated(scenario: Scenario) -> Scenario:
    """f_agent_as_tool as an Agno team plays it: call_f1 is `delegate_task_to_member(member_id, task)`."""
    expert = scenario.agents[1].name
    return scenario.with_call("call_f1", name=DELEGATE, args={"member_id": expert, "task": TASK})


def model(spec: Agent, server: ScriptedOpenAI, responses: bool = False) -> OpenAIChat | OpenAIResponses:
    kind = OpenAIResponses if responses else OpenAIChat
    return kind(id=spec.model, base_url=server.base_url, api_key="scripted")


def agent(spec: Agent, server: ScriptedOpenAI, recorder: Recorder, responses: bool = False) -> AgnoAgent:
    return AgnoAgent(
        name=spec.name,
        id=spec.name,
        model=model(spec, server, responses),
        tools=recorder.tools(spec.tools),
        instructions=spec.instructions,
    )


async def _drain(stream: Any) -> None:
    async for _ in stream:
        pass


def run(runner: Any, prompt: str, stream: Stream) -> str | None:
    """Play one agent or team run; the answer's text when not streamed."""
    if stream == "sync":
        for _ in runner.run(prompt, stream=True):
            pass
        return None
    if stream == "async":
        asyncio.run(_drain(runner.arun(prompt, stream=True)))
        return None
    return str(runner.run(prompt).content)


def play(
    sc: Scenario,
    recorder: Recorder,
    *,
    stream: Stream = None,
    responses: bool = False,
    app_tracer: Any = None,
) -> list[str | None]:
    """Run the scenario's agents (f: a `Team` of the coordinator and its member; g: under the application span
    made with `app_tracer`) against the scripted model, check that every scripted turn was asked for (and, with
    `responses`, that only the Responses API was), and return the answers (None when streamed)."""
    with ScriptedOpenAI(sc.script) as server:
        if sc.sub_agents:
            coordinator, expert = sc.agents
            team = Team(
                name=coordinator.name,
                id=coordinator.name,
                model=model(coordinator, server),
                members=[agent(expert, server, recorder)],
                instructions=coordinator.instructions,
            )
            answers = [run(team, coordinator.prompt, stream)]
        else:
            app = (
                app_tracer.start_as_current_span(APP_SPAN_NAME)
                if sc.name == "g_two_runs_one_trace" and app_tracer is not None
                else nullcontext()
            )
            with app:
                answers = [run(agent(a, server, recorder, responses), a.prompt, stream) for a in sc.agents]
            assert not responses or set(server.paths) == {"/v1/responses"}, server.paths
        server.assert_consumed()
    return answers
