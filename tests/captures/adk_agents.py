"""Google ADK agents for the canonical scenarios, played as an ADK user plays them.

Shared by the ADK capture scripts (`adk/`, ADK's own telemetry; `adk-openinference/`, Arize's
OpenInference instrumentation), which differ only in the instrumentation they set up and the span
they take for a run. Each scenario agent is an `LlmAgent` whose model is `LiteLlm("openai/<model>")`
on `ScriptedOpenAI`, whose tools are the kit's plain functions (wrapped by a `Recorder`; ADK wraps
them in `FunctionTool`), run through `InMemoryRunner`:

- e_tool_error_retry: a tool that raises ends an ADK run unless an error callback answers it, so the
  runner has ADK's own `ReflectAndRetryToolPlugin`, which hands the error back to the model.
- f_agent_as_tool uses `AgentTool(agent=weather_expert)`: ADK's schema for it takes `{"request": ...}`.
- g_two_runs_one_trace: two invocations under the application span `conversation`.
- j_sub_agent_transfer (`TRANSFER`, not canonical): `sub_agents=[...]`: the coordinator's model calls
  ADK's built-in `transfer_to_agent(agent_name=...)`, and the sub-agent then runs in the same invocation.
- b_sequential and i_parallel_random_ids stream the model's answers (`StreamingMode.SSE`).

Imported from the ADK venvs only (google-adk, google-genai, litellm), after the script has set up its
tracer provider and instrumentation and set `LITELLM_LOCAL_MODEL_COST_MAP`.
"""

from __future__ import annotations

import asyncio
from typing import Any

from capture_kit import APP_SPAN_NAME, SCENARIOS, Agent, Recorder, Scenario, ScriptedOpenAI, ToolCall, Turn
from google.adk.agents import LlmAgent, RunConfig
from google.adk.agents.run_config import StreamingMode
from google.adk.models.lite_llm import LiteLlm
from google.adk.plugins.reflect_retry_tool_plugin import ReflectAndRetryToolPlugin
from google.adk.runners import InMemoryRunner
from google.adk.tools.agent_tool import AgentTool
from google.genai import types
from opentelemetry.trace import TracerProvider

__all__ = ["STREAMED", "TRANSFER", "play", "prepare", "scenario_names"]

STREAMED = {"b_sequential", "i_parallel_random_ids"}
REQUEST = "What is the weather in Oslo?"

TRANSFER = Scenario(
    "j_sub_agent_transfer",
    "ADK only: a coordinator with `sub_agents` hands the conversation to weather_expert with ADK's "
    "built-in transfer_to_agent tool; the sub-agent runs in the same invocation and calls its own tool.",
    (
        Agent(
            name="travel_coordinator",
            prompt="Should I pack a coat for Oslo?",
            tools=(),
            turns=(Turn([ToolCall("call_j1", "transfer_to_agent", {"agent_name": "weather_expert"})]),),
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


def scenario_names() -> list[str]:
    """Every scenario an ADK script plays by default: the canonical ones, then `TRANSFER`."""
    return [*SCENARIOS, TRANSFER.name]


def prepare(name: str) -> tuple[Scenario, list[str]]:
    """The scenario as ADK plays it, and the tools no `Recorder` wraps (`truth_for`'s `unrecorded`)."""
    sc = TRANSFER if name == TRANSFER.name else SCENARIOS[name]
    unrecorded: list[str] = []
    if sc.sub_agents:
        sc = sc.with_call("call_f1", args={"request": REQUEST})
        unrecorded += list(sc.sub_agents)
    if sc.name == TRANSFER.name:
        unrecorded.append("transfer_to_agent")  # ADK's own tool: the sub-agent's run is the check
    return sc, unrecorded


def _model(agent: Agent, server: ScriptedOpenAI) -> LiteLlm:
    return LiteLlm(model=f"openai/{agent.model}", api_base=server.base_url, api_key="scripted")


def _agent(agent: Agent, server: ScriptedOpenAI, tools: list[Any], **extra: Any) -> LlmAgent:
    """An LlmAgent as a user writes one: plain functions (ADK wraps them) and a LiteLlm model."""
    return LlmAgent(
        name=agent.name,
        model=_model(agent, server),
        instruction=agent.instructions,
        tools=tools,
        **extra,
    )


async def _run(root: LlmAgent, prompt: str, stream: bool, plugins: list[Any] | None = None) -> str:
    """One invocation through ADK's `InMemoryRunner`; returns the last final text."""
    runner = InMemoryRunner(agent=root, app_name="capture", plugins=plugins or [])
    session = await runner.session_service.create_session(app_name="capture", user_id="user")
    config = RunConfig(streaming_mode=StreamingMode.SSE if stream else StreamingMode.NONE)
    message = types.Content(role="user", parts=[types.Part(text=prompt)])
    final = ""
    async for event in runner.run_async(user_id="user", session_id=session.id, new_message=message, run_config=config):
        if event.is_final_response() and event.content and event.content.parts:
            final = "".join(p.text or "" for p in event.content.parts if not p.thought)
    return final


async def _play(sc: Scenario, recorder: Recorder, provider: TracerProvider) -> tuple[list[str], list[str]]:
    """Run the scenario's agents as an ADK user would; returns (answers, expected answers)."""
    stream = sc.name in STREAMED
    with ScriptedOpenAI(sc.script) as server:
        if sc.name == TRANSFER.name:
            coordinator, expert = sc.agents
            sub = _agent(expert, server, recorder.tools(expert.tools), description="Answers weather questions.")
            top = _agent(coordinator, server, [], sub_agents=[sub])
            answers = [await _run(top, coordinator.prompt, stream)]
            expected = [expert.final_text]
        elif sc.sub_agents:
            coordinator, expert = sc.agents
            sub = _agent(expert, server, recorder.tools(expert.tools), description="Answers weather questions.")
            top = _agent(coordinator, server, [AgentTool(agent=sub)])
            answers = [await _run(top, coordinator.prompt, stream)]
            expected = [coordinator.final_text]
        elif sc.name == "g_two_runs_one_trace":
            with provider.get_tracer("capture").start_as_current_span(APP_SPAN_NAME):
                answers = [await _run(_agent(a, server, recorder.tools(a.tools)), a.prompt, stream) for a in sc.agents]
            expected = [a.final_text for a in sc.agents]
        else:
            plugins = [ReflectAndRetryToolPlugin()] if sc.failing else None
            answers = [
                await _run(_agent(a, server, recorder.tools(a.tools)), a.prompt, stream, plugins) for a in sc.agents
            ]
            expected = [a.final_text for a in sc.agents]
        server.assert_consumed()
    return answers, expected


def play(sc: Scenario, recorder: Recorder, provider: TracerProvider) -> None:
    """Play the scenario on its own `ScriptedOpenAI` (g's application span from `provider`); raise unless
    every turn was asked for and the runs answered the scripted final texts."""
    answers, expected = asyncio.run(_play(sc, recorder, provider))
    assert [a.strip() for a in answers] == expected, f"{sc.name}: answers {answers} != {expected}"
