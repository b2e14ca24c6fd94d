"""OpenAI Agents SDK runs of the canonical scenarios, played as an SDK user plays them.

Shared by the OpenAI Agents capture scripts (`openai-agents-logfire/`, `openai-agents-openllmetry/`), which
differ only in the instrumentation they set up, the application span of g and the span they take for a run.
The agents run on `ScriptedOpenAI` through the SDK's `OpenAIResponsesModel` (the default model class), or with
`chat=True` its `OpenAIChatCompletionsModel` (the script checks every model request took that API).
b_sequential and i_parallel_random_ids stream (`Runner.run_streamed`). Tools are the kit's functions through
`function_tool` (`strict_mode=False`: `search_flights` takes `dict` parameters a strict schema refuses).

- e_tool_error_retry: the SDK's default tool-error handler reports the exception to the model as the tool's
  output and marks the tool's span failed; the model calls the tool again in the same run.
- f_agent_as_tool: `Agent.as_tool(tool_name="weather_expert")`, whose one parameter is `input`.
- g_two_runs_one_trace: two `Runner.run` calls under the script's application span `conversation`; each run
  is its own SDK trace.
- j_handoff (`HANDOFF`, not canonical): the triage agent's model calls the handoff tool
  `transfer_to_weather_expert` (no arguments), then the weather expert runs in the same `Runner.run`.

Imported from the OpenAI Agents venvs only (openai-agents, openai), after the script has set up its
instrumentation.
"""

from __future__ import annotations

import asyncio
import contextvars
from collections.abc import Callable
from contextlib import AbstractContextManager
from typing import Any

import agents
import openai
from capture_kit import SCENARIOS, Agent, Recorder, Scenario, ScriptedOpenAI, ToolCall, Turn

__all__ = ["ALL", "HANDOFF", "STREAMED", "Conversation", "play", "unrecorded"]

STREAMED = {"b_sequential", "i_parallel_random_ids"}
EXPERT_DESCRIPTION = "Answers weather questions."

HANDOFF = Scenario(
    "j_handoff",
    "OpenAI Agents only: the triage agent hands off to the weather expert (the SDK's handoff tool "
    "transfer_to_weather_expert, no arguments), which calls its own tool. Two runs in one Runner.run.",
    (
        Agent(
            name="triage_agent",
            prompt="Should I pack a coat for Oslo?",
            tools=(),
            turns=(Turn([ToolCall("call_j1", "transfer_to_weather_expert", {})]),),
            final_call_id="call_j9",
        ),
        Agent(
            name="weather_expert",
            prompt="Should I pack a coat for Oslo?",
            tools=("get_weather",),
            turns=(
                Turn([ToolCall("call_j2", "get_weather", {"city": "Oslo"})]),
                Turn(text="It is 4C in Oslo: pack a coat."),
            ),
            final_call_id="call_j8",
        ),
    ),
)
ALL = {**SCENARIOS, HANDOFF.name: HANDOFF}

Conversation = Callable[[], AbstractContextManager[Any]]
"""Opens g's application span `conversation` (the script's own way: a Logfire span, an OTel tracer's)."""


def unrecorded(sc: Scenario) -> list[str]:
    """The tools no `Recorder` wraps (`truth_for`'s `unrecorded`): the agent tool, the handoff tool."""
    return ["weather_expert"] if sc.sub_agents else ["transfer_to_weather_expert"] if sc is HANDOFF else []


def _agent(agent: Agent, client: openai.AsyncOpenAI, chat: bool, tools: list[Any], **extra: Any) -> agents.Agent[Any]:
    kind = agents.OpenAIChatCompletionsModel if chat else agents.OpenAIResponsesModel
    return agents.Agent(
        name=agent.name, instructions=agent.instructions, tools=tools, model=kind(agent.model, client), **extra
    )


def _tools(agent: Agent, recorder: Recorder) -> list[Any]:
    return [agents.function_tool(f, strict_mode=False) for f in recorder.tools(agent.tools)]


async def _run(agent: agents.Agent[Any], prompt: str, stream: bool) -> Any:
    if stream:
        result: Any = agents.Runner.run_streamed(agent, prompt)
        async for _ in result.stream_events():
            pass
        return result.final_output
    return (await agents.Runner.run(agent, prompt)).final_output


async def _play(sc: Scenario, recorder: Recorder, chat: bool, conversation: Conversation) -> list[Any]:
    stream = sc.name in STREAMED
    with ScriptedOpenAI(sc.script) as server:
        async with openai.AsyncOpenAI(base_url=server.base_url, api_key="scripted", max_retries=0) as client:
            if sc.sub_agents:
                coordinator, expert = sc.agents
                sub = _agent(expert, client, chat, _tools(expert, recorder))
                tool = sub.as_tool(tool_name="weather_expert", tool_description=EXPERT_DESCRIPTION)
                answers = [await _run(_agent(coordinator, client, chat, [tool]), coordinator.prompt, stream)]
            elif sc is HANDOFF:
                triage, expert = sc.agents
                sub = _agent(expert, client, chat, _tools(expert, recorder), handoff_description=EXPERT_DESCRIPTION)
                answers = [await _run(_agent(triage, client, chat, [], handoffs=[sub]), triage.prompt, stream)]
            elif sc.name == "g_two_runs_one_trace":
                with conversation():
                    answers = [
                        await _run(_agent(a, client, chat, _tools(a, recorder)), a.prompt, stream) for a in sc.agents
                    ]
            else:
                answers = [
                    await _run(_agent(a, client, chat, _tools(a, recorder)), a.prompt, stream) for a in sc.agents
                ]
        server.assert_consumed()
        paths = set(server.paths)
        assert paths == {"/v1/chat/completions" if chat else "/v1/responses"}, paths
    return answers


def play(sc: Scenario, recorder: Recorder, *, chat: bool, conversation: Conversation) -> None:
    """Play the scenario on its own `ScriptedOpenAI`, in a fresh context; `conversation()` opens g's application
    span. Raise unless every turn was asked for, every request took the model's API and the runs answered the
    scripted final texts (agent as tool: the coordinator's; handoff: the expert's, in the triage agent's run)."""
    answers = contextvars.Context().run(asyncio.run, _play(sc, recorder, chat, conversation))
    expected = [sc.agents[0].final_text] if sc.sub_agents else [sc.agents[1].final_text] if sc is HANDOFF else None
    expected = expected or [a.final_text for a in sc.agents]
    assert answers == expected, f"{sc.name}: answers {answers} != {expected}"
