"""Capture OpenAI Agents SDK runs traced by OpenLLMetry (`opentelemetry-instrumentation-openai-agents`).

Run from the repository root with the venv of requirements.txt beside this file (`--chat`: the chat
completions model, into traces/openai-agents-openllmetry-chat/):

    /work/venvs/openai-agents-openllmetry/bin/python tests/captures/openai-agents-openllmetry/capture.py [SCENARIO ...]

(`--out DIR` writes into DIR/traces and DIR/truth instead of tests/testdata; several scenarios run one process each.)

The instrumentors are the ones `Traceloop.init()` (traceloop-sdk 0.62.4, `tracing.py`) turns on for this program,
built the same way but on a plain OTel SDK `TracerProvider` whose spans go to the in-memory exporter:
`OpenAIAgentsInstrumentor()` (which adds its `OpenTelemetryTracingProcessor` to the SDK's trace processors) and
`OpenAIInstrumentor(enrich_assistant=True, use_attributes=True)` (the `openai` client's calls); content capture on
(`TRACELOOP_TRACE_CONTENT=true`, also the default). The SDK's own tracing stays on, since the instrumentation is
one of its trace processors; only the SDK's default processor (the export to OpenAI) is removed, with
`agents.set_trace_processors([<the instrumentation's processor>])`. Every socket connection to anything but the
loopback address is refused and reported: the script fails if one was tried.

The agents run on `ScriptedOpenAI` through the SDK's `OpenAIResponsesModel` (the default model class), or with
`--chat` its `OpenAIChatCompletionsModel`, into traces/openai-agents-openllmetry-chat/. b_sequential and
i_parallel_random_ids stream (`Runner.run_streamed`). Tools are the kit's functions through `function_tool`
(`strict_mode=False`: `search_flights` takes `dict` parameters a strict schema refuses).

SDK-specific shapes captured here (see NOTES.md for the spans):
- e_tool_error_retry: the SDK's default tool-error handler reports the exception to the model as the tool's output
  and marks the tool's span failed; the model calls the tool again in the same run.
- f_agent_as_tool: `Agent.as_tool(tool_name="weather_expert")`, whose one parameter is `input`; the sub-agent runs
  in the coordinator's SDK trace.
- g_two_runs_one_trace: two `Runner.run` calls under one application span `conversation`; each run is its own SDK
  trace (its own `Agent Workflow` span), both in one OTel trace.
- j_handoff (not canonical): the triage agent's model calls the handoff tool `transfer_to_weather_expert` (no
  arguments), then the weather expert runs in the same `Runner.run`: two `<agent>.agent` spans.
"""

from __future__ import annotations

import asyncio
import contextvars
import os
import subprocess
import sys
from importlib.metadata import version
from pathlib import Path
from typing import Any

CHAT = "--chat" in sys.argv
HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))

for _name, _value in {"TRACELOOP_TRACE_CONTENT": "true", "TRACELOOP_TELEMETRY": "false"}.items():
    os.environ[_name] = _value

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

REFUSED = loopback_only_connections()
"""Connections tried to anything but the loopback address (the script fails when there is one)."""
OUT, ARGS = out_option(sys.argv[1:])
"""`--out DIR`: write into DIR/traces and DIR/truth instead of tests/testdata."""

from opentelemetry import trace  # noqa: E402
from opentelemetry.instrumentation.openai import OpenAIInstrumentor  # noqa: E402
from opentelemetry.instrumentation.openai_agents import OpenAIAgentsInstrumentor  # noqa: E402
from opentelemetry.instrumentation.openai_agents._hooks import OpenTelemetryTracingProcessor  # noqa: E402
from opentelemetry.sdk.resources import Resource  # noqa: E402
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider  # noqa: E402
from opentelemetry.sdk.trace.export import SimpleSpanProcessor  # noqa: E402
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter  # noqa: E402

# As `Traceloop.init()` does: a TracerProvider set as the global one, then the instrumentors, which use it.
EXPORTER = InMemorySpanExporter()
PROVIDER = TracerProvider(resource=Resource.create({"service.name": "toolscore-capture-openai-agents"}))
PROVIDER.add_span_processor(SimpleSpanProcessor(EXPORTER))
trace.set_tracer_provider(PROVIDER)
OpenAIInstrumentor(enrich_assistant=True, use_attributes=True).instrument()
OpenAIAgentsInstrumentor().instrument()

import agents  # noqa: E402
import openai  # noqa: E402

# The SDK's own export to OpenAI goes; the instrumentation's processor (added by `instrument()`) stays.
_PROCESSORS = [
    p
    for p in agents.tracing.get_trace_provider()._multi_processor._processors  # type: ignore[attr-defined]
    if isinstance(p, OpenTelemetryTracingProcessor)
]
assert len(_PROCESSORS) == 1, _PROCESSORS
agents.set_trace_processors(_PROCESSORS)

ROOT = HERE.parents[2]
FOLDER = "openai-agents-openllmetry-chat" if CHAT else "openai-agents-openllmetry"
TRACES = (OUT or ROOT / "tests" / "testdata") / "traces" / FOLDER
TRUTHS = (OUT or ROOT / "tests" / "testdata") / "truth" / FOLDER

META = {
    "framework": "openai-agents",
    "framework_version": version("openai-agents"),
    "instrumentation": (
        f"opentelemetry-instrumentation-openai-agents {version('opentelemetry-instrumentation-openai-agents')} and "
        f"opentelemetry-instrumentation-openai {version('opentelemetry-instrumentation-openai')} (OpenLLMetry, "
        f"as Traceloop.init() sets them up), opentelemetry-sdk {version('opentelemetry-sdk')}"
    ),
    "conventions": "OpenLLMetry spans of the SDK's trace (scope opentelemetry.instrumentation.openai_agents: "
    "traceloop.span.kind workflow/agent/tool/handoff, gen_ai.* attributes, model spans openai.response) and of the "
    "openai client under them (scope opentelemetry.instrumentation.openai.v1); model: "
    + (
        "OpenAIChatCompletionsModel (the calls in the client's openai.chat spans)"
        if CHAT
        else "OpenAIResponsesModel (the calls in the SDK's openai.response spans; the client's, absent when "
        "streamed, list item ids)"
    ),
}
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


def _agent(agent: Agent, client: openai.AsyncOpenAI, tools: list[Any], **extra: Any) -> agents.Agent[Any]:
    kind = agents.OpenAIChatCompletionsModel if CHAT else agents.OpenAIResponsesModel
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


async def _play(sc: Scenario, recorder: Recorder) -> list[Any]:
    stream = sc.name in STREAMED
    with ScriptedOpenAI(sc.script) as server:
        async with openai.AsyncOpenAI(base_url=server.base_url, api_key="scripted", max_retries=0) as client:
            if sc.sub_agents:
                coordinator, expert = sc.agents
                sub = _agent(expert, client, _tools(expert, recorder))
                tool = sub.as_tool(tool_name="weather_expert", tool_description=EXPERT_DESCRIPTION)
                answers = [await _run(_agent(coordinator, client, [tool]), coordinator.prompt, stream)]
            elif sc is HANDOFF:
                triage, expert = sc.agents
                sub = _agent(expert, client, _tools(expert, recorder), handoff_description=EXPERT_DESCRIPTION)
                answers = [await _run(_agent(triage, client, [], handoffs=[sub]), triage.prompt, stream)]
            elif sc.name == "g_two_runs_one_trace":
                with PROVIDER.get_tracer("toolscore.capture").start_as_current_span(APP_SPAN_NAME):
                    answers = [await _run(_agent(a, client, _tools(a, recorder)), a.prompt, stream) for a in sc.agents]
            else:
                answers = [await _run(_agent(a, client, _tools(a, recorder)), a.prompt, stream) for a in sc.agents]
        server.assert_consumed()
        paths = set(server.paths)
        assert paths == {"/v1/chat/completions" if CHAT else "/v1/responses"}, paths
    return answers


def capture(name: str) -> None:
    sc = ALL[name]
    EXPORTER.clear()
    recorder = Recorder()
    answers = contextvars.Context().run(asyncio.run, _play(sc, recorder))
    # agent as tool: the coordinator's answer; handoff: the expert's, who answers in the triage agent's run
    expected = [sc.agents[0].final_text] if sc.sub_agents else [sc.agents[1].final_text] if sc is HANDOFF else None
    expected = expected or [a.final_text for a in sc.agents]
    assert answers == expected, f"{sc.name}: answers {answers} != {expected}"
    PROVIDER.force_flush()
    spans: list[ReadableSpan] = list(EXPORTER.get_finished_spans())
    runs = {
        a.name: find_span(
            spans, f"{a.name}.agent", attributes={"traceloop.span.kind": "agent", "gen_ai.agent.name": a.name}
        )
        for a in sc.agents
    }
    unrecorded = ["weather_expert"] if sc.sub_agents else ["transfer_to_weather_expert"] if sc is HANDOFF else []
    truth = truth_for(sc, META, recorder, runs, unrecorded=unrecorded)
    written = write_capture(TRACES, TRUTHS, sc.name, spans, truth)
    print(f"{sc.name}: {len(spans)} spans, {[len(r['calls']) for r in truth['runs']]} calls per run -> {FOLDER}")
    assert written


def main(argv: list[str]) -> None:
    names = [a for a in argv if not a.startswith("--")] or list(ALL)
    if len(names) > 1:
        # One process per scenario: the `openai` instrumentation keeps every Responses API response it saw in a
        # process-wide dict by response id (`responses_wrappers.responses`) and merges a later response with the
        # same id into it (its trace context included); the scripted server numbers its responses from 1 for each
        # scenario, so in one process the second scenario's responses would meet the first's (real ids never do).
        flags = [a for a in sys.argv[1:] if a not in names]
        for name in names:
            subprocess.run([sys.executable, __file__, *flags, name], check=True)
        return
    capture(names[0])
    if REFUSED:
        raise SystemExit(f"connections outside 127.0.0.1 were tried (and refused): {REFUSED}")


if __name__ == "__main__":
    main(ARGS)
