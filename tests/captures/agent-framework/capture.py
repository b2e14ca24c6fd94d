"""Capture Microsoft Agent Framework `Agent` runs traced by Agent Framework's own OpenTelemetry instrumentation.

Run from the repository root with the venv of requirements.txt beside this file:

    /work/venvs/agent-framework/bin/python tests/captures/agent-framework/capture.py [--chat] [MODE] [SCENARIO ...]

(`--out DIR` writes into DIR/traces and DIR/truth instead of tests/testdata.)

Agent Framework (`agent_framework.observability`) emits OTel GenAI spans itself, always on unless
ENABLE_INSTRUMENTATION=false; ENABLE_SENSITIVE_DATA=true adds arguments, results and messages. Its tracer and
event logger come from the global OTel providers (scope `agent_framework`), which this script sets to in-memory
exporters, the same spans `configure_otel_providers()` hands an OTLP exporter. Every socket connection to
anything but the loopback address is refused and reported: the script fails if one was tried.

Agents are `agent_framework.Agent`s on `ScriptedOpenAI` through `OpenAIChatClient` (the Responses API, Agent
Framework's default OpenAI client), or with `--chat` its `OpenAIChatCompletionClient` (chat completions), into
traces/agent-framework/ or traces/agent-framework-chat/. Tools are the kit's functions, passed as plain callables
(Agent Framework wraps each in a `FunctionTool`). b_sequential and i_parallel_random_ids stream
(`agent.run(..., stream=True)`).

Modes (one folder each, beside the default):
- `--no-sensitive` (ENABLE_SENSITIVE_DATA off, into `<folder>-nosensitive/`): no arguments, results or messages
  anywhere; the truth lists each call with `args: null` (`args_captured: false`).
- `--v136` (OTEL_SEMCONV_STABILITY_OPT_IN="" : the v1.36 baseline conventions, into `<folder>-v136/`): no
  `gen_ai.tool.call.arguments` on tool spans and no `gen_ai.input/output.messages`; the model's calls and their
  arguments are only in the `gen_ai.choice` log events (`<scenario>.logs.pb`).

In the default mode Agent Framework also writes the v1.36 message events as OTel logs (ENABLE_MESSAGE_EVENTS
defaults to on), exported beside each capture as `<scenario>.logs.pb`/`.json`.

Framework-specific shapes:
- j_no_arg_tool (not canonical): a tool without parameters; Agent Framework writes `gen_ai.tool.call.arguments`
  = "None" (Python's text for no arguments, not JSON) when the tool received no arguments.
- f_agent_as_tool: `weather_expert.as_tool()`, the sub-agent as a `FunctionTool` named after the agent whose one
  parameter is `task`; the sub-agent's `invoke_agent` runs inside the coordinator's `execute_tool weather_expert`.
- e_tool_error_retry: the raising tool's span is failed (`error.type` = the exception class); Agent Framework sends
  the model the error as the tool's result and the loop goes on.
"""

from __future__ import annotations

import asyncio
import os
import sys
from importlib.metadata import version
from pathlib import Path
from typing import Any

CHAT = "--chat" in sys.argv
NO_SENSITIVE = "--no-sensitive" in sys.argv
V136 = "--v136" in sys.argv

os.environ["ENABLE_INSTRUMENTATION"] = "true"
os.environ["ENABLE_SENSITIVE_DATA"] = "false" if NO_SENSITIVE else "true"
os.environ["OTEL_SEMCONV_STABILITY_OPT_IN"] = "" if V136 else "gen_ai_latest_experimental"

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
from opentelemetry import _logs, trace  # noqa: E402
from opentelemetry.sdk._logs import LoggerProvider  # noqa: E402
from opentelemetry.sdk._logs.export import InMemoryLogRecordExporter, SimpleLogRecordProcessor  # noqa: E402
from opentelemetry.sdk.resources import Resource  # noqa: E402
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider  # noqa: E402
from opentelemetry.sdk.trace.export import SimpleSpanProcessor  # noqa: E402
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter  # noqa: E402

REFUSED = loopback_only_connections()
"""Connections tried to anything but the loopback address (the script fails when there is one)."""
OUT, _rest = out_option(sys.argv[1:])
"""`--out DIR`: write into DIR/traces and DIR/truth instead of tests/testdata."""
ARGS = [a for a in _rest if not a.startswith("--")]
RESOURCE = Resource.create({"service.name": "capture-agent-framework"})
EXPORTER = InMemorySpanExporter()
PROVIDER = TracerProvider(resource=RESOURCE)
PROVIDER.add_span_processor(SimpleSpanProcessor(EXPORTER))
trace.set_tracer_provider(PROVIDER)
LOG_EXPORTER = InMemoryLogRecordExporter()
LOGGER_PROVIDER = LoggerProvider(resource=RESOURCE)
LOGGER_PROVIDER.add_log_record_processor(SimpleLogRecordProcessor(LOG_EXPORTER))
_logs.set_logger_provider(LOGGER_PROVIDER)

from agent_framework import Agent as MafAgent  # noqa: E402
from agent_framework.observability import OBSERVABILITY_SETTINGS  # noqa: E402
from agent_framework.openai import OpenAIChatClient, OpenAIChatCompletionClient  # noqa: E402

assert OBSERVABILITY_SETTINGS.ENABLED
assert OBSERVABILITY_SETTINGS.SENSITIVE_DATA_ENABLED is not NO_SENSITIVE
assert OBSERVABILITY_SETTINGS.use_latest_experimental_gen_ai_semconv is not V136

ROOT = HERE.parents[2]
FOLDER = (
    ("agent-framework-chat" if CHAT else "agent-framework")
    + ("-nosensitive" if NO_SENSITIVE else "")
    + ("-v136" if V136 else "")
)
TRACES = (OUT or ROOT / "tests" / "testdata") / "traces" / FOLDER
TRUTHS = (OUT or ROOT / "tests" / "testdata") / "truth" / FOLDER

META = {
    "framework": "agent-framework",
    "framework_version": f"agent-framework-core {version('agent-framework-core')}, "
    f"agent-framework-openai {version('agent-framework-openai')}",
    "instrumentation": "agent_framework.observability (built in; ENABLE_SENSITIVE_DATA="
    + ("false" if NO_SENSITIVE else "true")
    + ", OTEL_SEMCONV_STABILITY_OPT_IN="
    + ('""' if V136 else "gen_ai_latest_experimental")
    + ")",
    "conventions": "OTel GenAI semantic conventions (invoke_agent, chat, execute_tool spans; gen_ai.*; "
    "v1.36 message events as OTel logs); model: "
    + ("OpenAIChatCompletionClient (chat completions)" if CHAT else "OpenAIChatClient (Responses API)"),
}
STREAMED = {"b_sequential", "i_parallel_random_ids"}
EXPERT_DESCRIPTION = "Answers weather questions."


def get_utc_time() -> str:
    """Get the current UTC time."""
    return "12:00 UTC"


NO_ARG_TOOL = Scenario(
    "j_no_arg_tool",
    "Agent Framework only: a tool without parameters, called with `{}`; Agent Framework records its arguments "
    'as the text "None".',
    (
        Agent(
            name="clock_agent",
            prompt="What time is it in UTC?",
            tools=(),
            turns=(Turn([ToolCall("call_j1", "get_utc_time", {})]), Turn(text="It is 12:00 UTC.")),
            final_call_id="call_j9",
        ),
    ),
)
ALL = {**SCENARIOS, NO_ARG_TOOL.name: NO_ARG_TOOL}


def _client(agent: Agent, server: ScriptedOpenAI) -> Any:
    kind = OpenAIChatCompletionClient if CHAT else OpenAIChatClient
    return kind(model=agent.model, api_key="scripted", base_url=server.base_url)


def _agent(agent: Agent, server: ScriptedOpenAI, tools: list[Any]) -> MafAgent:
    return MafAgent(
        client=_client(agent, server),
        name=agent.name,
        description=EXPERT_DESCRIPTION if agent.name == "weather_expert" else None,
        instructions=agent.instructions,
        tools=tools,
    )


async def _run(agent: MafAgent, prompt: str, stream: bool) -> str:
    if stream:
        updates = agent.run(prompt, stream=True)
        async for _ in updates:
            pass
        return (await updates.get_final_response()).text
    return (await agent.run(prompt)).text


async def _play(sc: Scenario, recorder: Recorder) -> list[str]:
    stream = sc.name in STREAMED
    with ScriptedOpenAI(sc.script) as server:
        if sc.sub_agents:
            coordinator, expert = sc.agents
            sub = _agent(expert, server, recorder.tools(expert.tools))
            tool = sub.as_tool()
            top = _agent(coordinator, server, [tool])
            answers = [await _run(top, coordinator.prompt, stream)]
        elif sc.name == "g_two_runs_one_trace":
            with PROVIDER.get_tracer("capture").start_as_current_span(APP_SPAN_NAME):
                answers = [await _run(_agent(a, server, recorder.tools(a.tools)), a.prompt, stream) for a in sc.agents]
        elif sc is NO_ARG_TOOL:
            (agent,) = sc.agents
            answers = [await _run(_agent(agent, server, [recorder.wrap(get_utc_time)]), agent.prompt, stream)]
        else:
            answers = [await _run(_agent(a, server, recorder.tools(a.tools)), a.prompt, stream) for a in sc.agents]
        server.assert_consumed()
    return answers


async def capture(name: str) -> None:
    sc = ALL[name]
    unrecorded: list[str] = []
    if sc.sub_agents:
        call = sc.agents[0].calls[0]
        sc = sc.with_call(call.id, args={"task": call.args["input"]})
        unrecorded.append("weather_expert")
    recorder = Recorder()
    EXPORTER.clear()
    LOG_EXPORTER.clear()
    answers = await _play(sc, recorder)
    PROVIDER.force_flush()
    LOGGER_PROVIDER.force_flush()
    assert not REFUSED, f"connections refused: {REFUSED}"
    spans: list[ReadableSpan] = list(EXPORTER.get_finished_spans())
    expected = [sc.agents[0].final_text] if sc.sub_agents else [a.final_text for a in sc.agents]
    assert answers == expected, f"{sc.name}: answers {answers} != {expected}"
    runs = {a.name: find_span(spans, f"invoke_agent {a.name}") for a in sc.agents}
    truth = truth_for(sc, META, recorder, runs, unrecorded=unrecorded)
    if NO_SENSITIVE:
        # No arguments anywhere in the trace: the reader must say so, not invent `{}`.
        for run in truth["runs"]:
            for call in run["calls"]:
                call["args"] = None
                call["args_captured"] = False
    written = write_capture(TRACES, TRUTHS, sc.name, spans, truth, logs=LOG_EXPORTER.get_finished_logs() or None)
    print(
        f"{FOLDER}/{sc.name}: {len(spans)} spans, {len(LOG_EXPORTER.get_finished_logs())} log records, "
        f"{[len(r['calls']) for r in truth['runs']]} calls per run -> {[p.name for p in written] or 'kept'}"
    )


async def main(names: list[str]) -> None:
    for name in names or list(ALL):
        await capture(name)


if __name__ == "__main__":
    asyncio.run(main(ARGS))
