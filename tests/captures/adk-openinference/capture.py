"""Capture Google ADK `LlmAgent` runs traced by Arize's OpenInference instrumentation for ADK.

Run from the repository root with its venv (see requirements.txt beside this file):

    /work/venvs/adk-openinference/bin/python tests/captures/adk-openinference/capture.py [--out DIR] [SCENARIO ...]

The same runs as tests/captures/adk/capture.py (`LlmAgent` on `LiteLlm("openai/<model>")` against
`ScriptedOpenAI`, plain functions as tools, `InMemoryRunner`; `AgentTool` for f, `sub_agents` for j, ADK's
`ReflectAndRetryToolPlugin` for e; b and i streamed), traced as a user of
`openinference-instrumentation-google-adk` does: one OTel SDK tracer provider, set as the global one, and
`GoogleADKInstrumentor().instrument(tracer_provider=...)`. ADK's own tracer (`gcp.vertex.agent`) takes the
global provider too; the instrumentor replaces some of ADK's spans and lets others through (see NOTES.md),
and everything that reaches the exporter is written: what a user sees.

No ADK content setting is made (`OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT` unset, ADK's default):
the OpenInference attributes carry the content by default (its `TraceConfig`), ADK's own carry none.
The spans are written to tests/testdata/traces/adk-openinference/ with the truth in
tests/testdata/truth/adk-openinference/ (or under `--out DIR`).
"""

from __future__ import annotations

import asyncio
import os
import sys
from importlib.metadata import version
from pathlib import Path
from typing import Any

os.environ.pop("OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT", None)  # ADK's default: no content
os.environ["LITELLM_LOCAL_MODEL_COST_MAP"] = "True"  # litellm: no cost-map download at import
os.environ["LITELLM_TELEMETRY"] = "False"

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))

from capture_kit import (  # noqa: E402
    APP_SPAN_NAME,
    SCENARIOS,
    Agent,
    Recorder,
    Scenario,
    ScriptedOpenAI,
    ToolCall,
    Turn,
    find_span,
    loopback_only_connections,
    out_option,
    truth_for,
    write_capture,
)
from opentelemetry import trace  # noqa: E402
from opentelemetry.sdk.resources import Resource  # noqa: E402
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider  # noqa: E402
from opentelemetry.sdk.trace.export import SimpleSpanProcessor  # noqa: E402
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter  # noqa: E402

REFUSED = loopback_only_connections()
"""Connections tried to anything but the loopback address (the script fails when there is one)."""
OUT, _rest = out_option(sys.argv[1:])
"""`--out DIR`: write into DIR/traces and DIR/truth instead of tests/testdata."""
ARGS = [a for a in _rest if not a.startswith("--")]

EXPORTER = InMemorySpanExporter()
PROVIDER = TracerProvider(resource=Resource.create({"service.name": "capture-adk-openinference"}))
PROVIDER.add_span_processor(SimpleSpanProcessor(EXPORTER))
trace.set_tracer_provider(PROVIDER)

from openinference.instrumentation.google_adk import GoogleADKInstrumentor  # noqa: E402

GoogleADKInstrumentor().instrument(tracer_provider=PROVIDER)

from google.adk.agents import LlmAgent, RunConfig  # noqa: E402
from google.adk.agents.run_config import StreamingMode  # noqa: E402
from google.adk.models.lite_llm import LiteLlm  # noqa: E402
from google.adk.plugins.reflect_retry_tool_plugin import ReflectAndRetryToolPlugin  # noqa: E402
from google.adk.runners import InMemoryRunner  # noqa: E402
from google.adk.tools.agent_tool import AgentTool  # noqa: E402
from google.genai import types  # noqa: E402

ROOT = HERE.parents[2]
FOLDER = "adk-openinference"
TRACES = (OUT or ROOT / "tests" / "testdata") / "traces" / FOLDER
TRUTHS = (OUT or ROOT / "tests" / "testdata") / "truth" / FOLDER

INSTRUMENTATION = "openinference-instrumentation-google-adk"
META = {
    "framework": "google-adk",
    "framework_version": version("google-adk"),
    "instrumentation": f"openinference-instrumentation-google-adk {version(INSTRUMENTATION)} "
    f"(openinference-instrumentation {version('openinference-instrumentation')}), with google-adk's own "
    f"telemetry on the same global tracer provider; model through LiteLlm (litellm {version('litellm')})",
    "conventions": "OpenInference (AGENT agent_run, TOOL execute_tool, CHAIN invocation / invoke_workflow) "
    "beside ADK's own OTel GenAI spans (scope gcp.vertex.agent: invoke_agent), ADK content capture off",
}
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


async def _play(sc: Scenario, recorder: Recorder) -> tuple[list[str], list[str]]:
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
            with PROVIDER.get_tracer("capture").start_as_current_span(APP_SPAN_NAME):
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


def _run_span(spans: list[ReadableSpan], agent: Agent) -> ReadableSpan:
    """The run's span: OpenInference's AGENT span `agent_run [<name>]` (agent.name = the agent's name)."""
    return find_span(
        spans, f"agent_run [{agent.name}]", attributes={"openinference.span.kind": "AGENT", "agent.name": agent.name}
    )


def capture(name: str) -> None:
    sc = TRANSFER if name == TRANSFER.name else SCENARIOS[name]
    unrecorded: list[str] = []
    if sc.sub_agents:
        sc = sc.with_call("call_f1", args={"request": REQUEST})
        unrecorded += list(sc.sub_agents)
    if sc.name == TRANSFER.name:
        unrecorded.append("transfer_to_agent")  # ADK's own tool: the sub-agent's run is the check
    recorder = Recorder()
    EXPORTER.clear()
    answers, expected = asyncio.run(_play(sc, recorder))
    assert [a.strip() for a in answers] == expected, f"{sc.name}: answers {answers} != {expected}"
    assert not REFUSED, f"connections refused: {REFUSED}"
    PROVIDER.force_flush()
    spans = list(EXPORTER.get_finished_spans())
    runs = {a.name: _run_span(spans, a) for a in sc.agents}
    truth = truth_for(sc, META, recorder, runs, unrecorded=unrecorded)
    written = write_capture(TRACES, TRUTHS, sc.name, spans, truth)
    print(
        f"{FOLDER}/{sc.name}: {len(spans)} spans, {[len(r['calls']) for r in truth['runs']]} calls per run -> "
        f"{[p.name for p in written] or 'kept'}"
    )


def main(names: list[str]) -> None:
    for name in names or [*SCENARIOS, TRANSFER.name]:
        capture(name)


if __name__ == "__main__":
    main(ARGS)
