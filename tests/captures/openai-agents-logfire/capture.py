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

The agents are the shared `openai_agents_runs.py` runs (`openai-agents-openllmetry/` plays the same ones); they run
on `ScriptedOpenAI` through the SDK's `OpenAIResponsesModel` (the default model class), or with
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

import sys
from importlib.metadata import version
from pathlib import Path
from typing import Any

CHAT = "--chat" in sys.argv
HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))

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
from openai_agents_runs import ALL, play, unrecorded  # noqa: E402  (imports the SDK: after the instrumentation)

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


def _conversation() -> Any:
    """g's application span, opened as a Logfire user opens one."""
    return logfire.span(APP_SPAN_NAME)


def capture(name: str) -> None:
    sc = ALL[name]
    EXPORTER.clear()
    recorder = Recorder()
    play(sc, recorder, chat=CHAT, conversation=_conversation)
    logfire.force_flush()
    spans: list[ReadableSpan] = list(EXPORTER.get_finished_spans())
    runs = {a.name: find_span(spans, "Agent run: {name!r}", attributes={"name": a.name}) for a in sc.agents}
    truth = truth_for(sc, META, recorder, runs, unrecorded=unrecorded(sc))
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
