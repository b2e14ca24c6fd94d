"""Capture OpenAI Agents SDK runs traced by Pydantic Logfire (`logfire.instrument_openai_agents()`).

Run from the repository root with the venv of requirements.txt beside this file:

    /work/venvs/openai-agents-logfire/bin/python tests/captures/openai-agents-logfire/capture.py [SCENARIO ...]
    /work/venvs/openai-agents-logfire/bin/python tests/captures/openai-agents-logfire/capture.py --chat [SCENARIO ...]

(`--out DIR` writes into DIR/traces and DIR/truth instead of tests/testdata.)

Logfire is configured as a plain OpenTelemetry SDK that sends nothing to Logfire
(`logfire.configure(send_to_logfire=False, console=False, additional_span_processors=[...])`); its spans go to the
OTel SDK's in-memory exporter through a `SimpleSpanProcessor`, the same spans a `BatchSpanProcessor(OTLPSpanExporter())`
gets when OTEL_EXPORTER_OTLP_ENDPOINT is set (Logfire adds that processor the same way; neither gets Logfire's
pending spans). `instrument_openai_agents()` wraps the SDK's trace provider, so the SDK's tracing stays on; only its
default processor (the export to OpenAI) is removed, with `agents.set_trace_processors([])`. Every socket connection
to anything but the loopback address is refused and reported: the script fails if one was tried.

The agents run on `ScriptedOpenAI` through the SDK's `OpenAIResponsesModel` (the default model class), or with
`--chat` its `OpenAIChatCompletionsModel`, into traces/openai-agents-logfire-chat/. b_sequential and
i_parallel_random_ids stream (`Runner.run_streamed`). Tools are the kit's functions through `function_tool`
(`strict_mode=False`: `search_flights` takes `dict` parameters a strict schema refuses).

SDK-specific shapes captured here:
- e_tool_error_retry: the SDK's default tool-error handler reports the exception to the model as the tool's output
  and marks the tool's span failed; the model calls the tool again in the same run.
- f_agent_as_tool: `Agent.as_tool(tool_name="weather_expert")`, whose one parameter is `input`; the sub-agent's run
  is its own `Agent run` span inside the tool's `Function` span.
- g_two_runs_one_trace: two `Runner.run` calls under one `logfire.span("conversation")`; each run is its own SDK
  trace, both in one OTel trace.
- j_handoff (not canonical): the triage agent's model calls the handoff tool `transfer_to_weather_expert` (no
  arguments), then the weather expert runs in the same `Runner.run`: two `Agent run` spans, siblings.
"""

from __future__ import annotations

import asyncio
import contextvars
import sys
from importlib.metadata import version
from pathlib import Path
from typing import Any

CHAT = "--chat" in sys.argv
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

REFUSED = loopback_only_connections()
"""Connections tried to anything but the loopback address (the script fails when there is one)."""
OUT, ARGS = out_option(sys.argv[1:])
"""`--out DIR`: write into DIR/traces and DIR/truth instead of tests/testdata."""

import logfire  # noqa: E402
from opentelemetry.sdk.trace import ReadableSpan  # noqa: E402
from opentelemetry.sdk.trace.export import SimpleSpanProcessor  # noqa: E402
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter  # noqa: E402

EXPORTER = InMemorySpanExporter()
logfire.configure(
    send_to_logfire=False,
    console=False,
    service_name="capture",
    additional_span_processors=[SimpleSpanProcessor(EXPORTER)],
)
logfire.instrument_openai_agents()

import agents  # noqa: E402
import openai  # noqa: E402

agents.set_trace_processors([])  # the SDK's own export to OpenAI; Logfire's wrapper of the provider stays

ROOT = HERE.parents[2]
FOLDER = "openai-agents-logfire-chat" if CHAT else "openai-agents-logfire"
TRACES = (OUT or ROOT / "tests" / "testdata") / "traces" / FOLDER
TRUTHS = (OUT or ROOT / "tests" / "testdata") / "truth" / FOLDER

META = {
    "framework": "openai-agents",
    "framework_version": version("openai-agents"),
    "instrumentation": f"logfire {version('logfire')} instrument_openai_agents()",
    "conventions": "Logfire spans of the SDK's trace (scope logfire.openai_agents): span name = message template, "
    "logfire.msg, the SDK's span data as attributes (JSON text for objects); model: "
    + ("OpenAIChatCompletionsModel (Chat completion spans)" if CHAT else "OpenAIResponsesModel (Responses API spans)"),
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
                with logfire.span(APP_SPAN_NAME):
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
    logfire.force_flush()
    spans: list[ReadableSpan] = list(EXPORTER.get_finished_spans())
    runs = {a.name: find_span(spans, "Agent run: {name!r}", attributes={"name": a.name}) for a in sc.agents}
    unrecorded = ["weather_expert"] if sc.sub_agents else ["transfer_to_weather_expert"] if sc is HANDOFF else []
    truth = truth_for(sc, META, recorder, runs, unrecorded=unrecorded)
    written = write_capture(TRACES, TRUTHS, sc.name, spans, truth)
    print(f"{sc.name}: {len(spans)} spans, {[len(r['calls']) for r in truth['runs']]} calls per run -> {FOLDER}")
    assert written


def main(argv: list[str]) -> None:
    names = [a for a in argv if not a.startswith("--")]
    for name in names or list(ALL):
        capture(name)
    if REFUSED:
        raise SystemExit(f"connections outside 127.0.0.1 were tried (and refused): {REFUSED}")


if __name__ == "__main__":
    main(ARGS)
