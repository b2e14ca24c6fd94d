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

The agents are the shared `openai_agents_runs.py` runs (`openai-agents-logfire/` plays the same ones); they run
on `ScriptedOpenAI` through the SDK's `OpenAIResponsesModel` (the default model class), or with
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
    Recorder,
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
from openai_agents_runs import ALL, play, unrecorded  # noqa: E402  (imports the SDK: after the instrumentation)

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


def _conversation() -> Any:
    """g's application span, from the global tracer provider."""
    return PROVIDER.get_tracer("toolscore.capture").start_as_current_span(APP_SPAN_NAME)


def capture(name: str) -> None:
    sc = ALL[name]
    EXPORTER.clear()
    recorder = Recorder()
    play(sc, recorder, chat=CHAT, conversation=_conversation)
    PROVIDER.force_flush()
    spans: list[ReadableSpan] = list(EXPORTER.get_finished_spans())
    runs = {
        a.name: find_span(
            spans, f"{a.name}.agent", attributes={"traceloop.span.kind": "agent", "gen_ai.agent.name": a.name}
        )
        for a in sc.agents
    }
    truth = truth_for(sc, META, recorder, runs, unrecorded=unrecorded(sc))
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
