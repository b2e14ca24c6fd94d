"""Capture Google ADK `LlmAgent` runs traced by ADK's own OpenTelemetry instrumentation.

Run from the repository root with the ADK venv (see requirements.txt beside this file):

    /work/venvs/adk/bin/python tests/captures/adk/capture.py [SCENARIO ...]

Each canonical scenario (tests/captures/capture_scenarios.py) runs against `ScriptedOpenAI` through
ADK's `LiteLlm` model wrapper (`openai/<model>` on the server's base URL), with plain functions as
tools (ADK wraps them in `FunctionTool`) and `InMemoryRunner`; ADK's tracer (`gcp.vertex.agent`, from
the global tracer provider) writes to the OTel SDK's in-memory exporter. The spans are written to
tests/testdata/traces/adk/ with the truth in tests/testdata/truth/adk/.

ADK records tool arguments and results on its `execute_tool` spans only when message content capture
is on: this script sets `OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT=SPAN_ONLY`, as a user who
wants tool arguments in the trace would (ADK 2.x, default telemetry schema v2).

ADK-specific shapes captured here:
- e_tool_error_retry: a tool that raises ends an ADK run unless an error callback answers it, so the
  runner has ADK's own `ReflectAndRetryToolPlugin`, which hands the error back to the model.
- f_agent_as_tool uses `AgentTool(agent=weather_expert)`: ADK's schema for it takes `{"request": ...}`.
- j_sub_agent_transfer (not canonical): `sub_agents=[...]`: the coordinator's model calls ADK's
  built-in `transfer_to_agent(agent_name=...)`, and the sub-agent then runs in the same invocation.
b_sequential and i_parallel_random_ids stream the model's answers (`StreamingMode.SSE`).

`--legacy` sets `ADK_TELEMETRY_SCHEMA_VERSION_OPT_IN=1` (ADK's schema v1: `call_llm` spans, arguments in
`gcp.vertex.agent.tool_call_args`, content on by default) and writes into traces/adk-legacy/ instead.
`--events` sets `OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT=true`, the boolean form other GenAI
instrumentations take, which ADK reads as EVENT_ONLY: no content on spans, the messages (the model's tool
calls with their arguments) in `gen_ai.client.inference.operation.details` log records, written beside the
traces as `<scenario>.logs.pb`/`.logs.json` into traces/adk-events/.
"""

from __future__ import annotations

import asyncio
import os
import sys
from importlib.metadata import version
from pathlib import Path
from typing import Any

LEGACY = "--legacy" in sys.argv
EVENTS = "--events" in sys.argv
if LEGACY:  # ADK's schema v1, content on by default (ADK_CAPTURE_MESSAGE_CONTENT_IN_SPANS)
    os.environ["ADK_TELEMETRY_SCHEMA_VERSION_OPT_IN"] = "1"
elif EVENTS:  # the boolean form; ADK reads it as EVENT_ONLY: log records, no content on spans
    os.environ["OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT"] = "true"
else:
    os.environ.setdefault("OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT", "SPAN_ONLY")
os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")  # litellm: no cost-map download at import

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
    truth_for,
    write_capture,
)
from opentelemetry import _logs, trace  # noqa: E402
from opentelemetry.sdk._logs import LoggerProvider  # noqa: E402
from opentelemetry.sdk._logs.export import InMemoryLogRecordExporter, SimpleLogRecordProcessor  # noqa: E402
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider  # noqa: E402
from opentelemetry.sdk.trace.export import SimpleSpanProcessor  # noqa: E402
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter  # noqa: E402

EXPORTER = InMemorySpanExporter()
PROVIDER = TracerProvider()
PROVIDER.add_span_processor(SimpleSpanProcessor(EXPORTER))
trace.set_tracer_provider(PROVIDER)
LOGS = InMemoryLogRecordExporter()
LOGGER_PROVIDER = LoggerProvider()
LOGGER_PROVIDER.add_log_record_processor(SimpleLogRecordProcessor(LOGS))
_logs.set_logger_provider(LOGGER_PROVIDER)

from google.adk.agents import LlmAgent, RunConfig  # noqa: E402
from google.adk.agents.run_config import StreamingMode  # noqa: E402
from google.adk.models.lite_llm import LiteLlm  # noqa: E402
from google.adk.plugins.reflect_retry_tool_plugin import ReflectAndRetryToolPlugin  # noqa: E402
from google.adk.runners import InMemoryRunner  # noqa: E402
from google.adk.tools.agent_tool import AgentTool  # noqa: E402
from google.genai import types  # noqa: E402

ROOT = HERE.parents[2]
FOLDER = "adk-legacy" if LEGACY else "adk-events" if EVENTS else "adk"
TRACES = ROOT / "tests" / "testdata" / "traces" / FOLDER
TRUTHS = ROOT / "tests" / "testdata" / "truth" / FOLDER

META = {
    "framework": "google-adk",
    "framework_version": version("google-adk"),
    "instrumentation": f"google-adk {version('google-adk')} own telemetry (scope gcp.vertex.agent), "
    f"model through LiteLlm (litellm {version('litellm')})",
    "conventions": "OTel GenAI semantic conventions with OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT=true "
    "(ADK: EVENT_ONLY): no arguments on spans, messages in gen_ai.client.inference.operation.details log records"
    if EVENTS
    else "ADK telemetry schema v1 (ADK_TELEMETRY_SCHEMA_VERSION_OPT_IN=1: call_llm spans, "
    "gcp.vertex.agent.tool_call_args / llm_response)"
    if LEGACY
    else "OTel GenAI semantic conventions (invoke_agent, execute_tool, generate_content; "
    "gen_ai.tool.call.arguments with OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT=SPAN_ONLY)",
}
EVENTS_UNREADABLE = {
    "e_tool_error_retry": "with EVENT_ONLY the failed call's span is OK and has no result; the retry plugin's "
    "error response is only in the next model request's input messages (see NOTES.md)",
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
    """The run's span: `invoke_agent <name>` with gen_ai.agent.name = the agent's name."""
    return find_span(spans, f"invoke_agent {agent.name}", attributes={"gen_ai.operation.name": "invoke_agent"})


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
    LOGS.clear()
    answers, expected = asyncio.run(_play(sc, recorder))
    assert [a.strip() for a in answers] == expected, f"{sc.name}: answers {answers} != {expected}"
    PROVIDER.force_flush()
    spans = list(EXPORTER.get_finished_spans())
    runs = {a.name: _run_span(spans, a) for a in sc.agents}
    truth = truth_for(sc, META, recorder, runs, unrecorded=unrecorded)
    LOGGER_PROVIDER.force_flush()
    logs = list(LOGS.get_finished_logs()) if EVENTS else None
    written = write_capture(TRACES, TRUTHS, sc.name, spans, truth, logs=logs)
    print(
        f"{FOLDER}/{sc.name}: {len(spans)} spans, {[len(r['calls']) for r in truth['runs']]} calls per run -> "
        f"{[p.name for p in written] or 'kept'}"
    )


def main(argv: list[str]) -> None:
    names = [a for a in argv if a not in ("--legacy", "--events")] or [*SCENARIOS, TRANSFER.name]
    for name in names:
        if EVENTS and name in EVENTS_UNREADABLE:
            print(f"{FOLDER}/{name}: not written: {EVENTS_UNREADABLE[name]}")
            continue
        capture(name)


if __name__ == "__main__":
    main(sys.argv[1:])
