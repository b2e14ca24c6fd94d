"""Capture OpenAI Agents SDK runs traced by the OpenTelemetry contrib instrumentation
(`opentelemetry-instrumentation-openai-agents-v2`, GenAI semantic conventions).

Run from the repository root with the venv of requirements.txt beside this file (`--chat`: the chat
completions model, into traces/openai-agents-otel-chat/):

    /work/venvs/openai-agents-otel/bin/python tests/captures/openai-agents-otel/capture.py [--chat] [SCENARIO ...]

(`--out DIR` writes into DIR/traces and DIR/truth instead of tests/testdata.)

Set up as the instrumentation's README has a user do it: an OTel SDK `TracerProvider` (here with an in-memory
exporter) set as the global one, then `OpenAIAgentsInstrumentor().instrument()`, which appends its
`GenAISemanticProcessor` to the SDK's trace processors. Content capture on:
`OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT=true` (`span_and_event`; the instrumentation's default when the
variable is unset, so this is also the form a user gets by default). The instrumentation does not read
`OTEL_SEMCONV_STABILITY_OPT_IN`: it has one form. The SDK's own default processor (the export to OpenAI) is
removed with `agents.set_trace_processors([<the instrumentation's processor>])`. Every socket connection to
anything but the loopback address is refused and reported: the script fails if one was tried.

The agents are the shared `openai_agents_runs.py` runs (the same as every other OpenAI Agents capture); see that
module for the scenarios' SDK-specific shapes and NOTES.md for the spans.
"""

from __future__ import annotations

import os
import sys
from importlib.metadata import version
from pathlib import Path
from typing import Any

CHAT = "--chat" in sys.argv
HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))

os.environ["OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT"] = "true"

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
from opentelemetry.instrumentation.openai_agents import OpenAIAgentsInstrumentor  # noqa: E402
from opentelemetry.instrumentation.openai_agents.span_processor import GenAISemanticProcessor  # noqa: E402
from opentelemetry.sdk.resources import Resource  # noqa: E402
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider  # noqa: E402
from opentelemetry.sdk.trace.export import SimpleSpanProcessor  # noqa: E402
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter  # noqa: E402

EXPORTER = InMemorySpanExporter()
PROVIDER = TracerProvider(resource=Resource.create({"service.name": "toolscore-capture-openai-agents"}))
PROVIDER.add_span_processor(SimpleSpanProcessor(EXPORTER))
trace.set_tracer_provider(PROVIDER)
OpenAIAgentsInstrumentor().instrument()

import agents  # noqa: E402
from openai_agents_runs import ALL, play, unrecorded  # noqa: E402  (imports the SDK: after the instrumentation)

# The SDK's own export to OpenAI goes; the instrumentation's processor (added by `instrument()`) stays.
_PROCESSORS = [
    p
    for p in agents.tracing.get_trace_provider()._multi_processor._processors  # type: ignore[attr-defined]
    if isinstance(p, GenAISemanticProcessor)
]
assert len(_PROCESSORS) == 1, _PROCESSORS
agents.set_trace_processors(_PROCESSORS)

ROOT = HERE.parents[2]
FOLDER = "openai-agents-otel-chat" if CHAT else "openai-agents-otel"
TRACES = (OUT or ROOT / "tests" / "testdata") / "traces" / FOLDER
TRUTHS = (OUT or ROOT / "tests" / "testdata") / "truth" / FOLDER

META = {
    "framework": "openai-agents",
    "framework_version": version("openai-agents"),
    "instrumentation": (
        "opentelemetry-instrumentation-openai-agents-v2 "
        f"{version('opentelemetry-instrumentation-openai-agents-v2')} (OpenTelemetry contrib), "
        f"opentelemetry-sdk {version('opentelemetry-sdk')}; "
        "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT=true (the default)"
    ),
    "conventions": "OTel GenAI spans of the SDK's trace (scope opentelemetry.instrumentation.openai_agents: "
    "invoke_agent <agent>, execute_tool <tool> without call ids, chat <model>); model: "
    + ("OpenAIChatCompletionsModel (GenerationSpanData)" if CHAT else "OpenAIResponsesModel (ResponseSpanData)"),
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
            spans,
            f"invoke_agent {a.name}",
            attributes={"gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": a.name},
        )
        for a in sc.agents
    }
    truth = truth_for(sc, META, recorder, runs, unrecorded=unrecorded(sc))
    written = write_capture(TRACES, TRUTHS, sc.name, spans, truth)
    print(f"{sc.name}: {len(spans)} spans, {[len(r['calls']) for r in truth['runs']]} calls per run -> {FOLDER}")
    assert written


def main(argv: list[str]) -> None:
    names = [a for a in argv if not a.startswith("--")] or list(ALL)
    for name in names:
        capture(name)
    if REFUSED:
        raise SystemExit(f"connections outside 127.0.0.1 were tried (and refused): {REFUSED}")


if __name__ == "__main__":
    main(ARGS)
