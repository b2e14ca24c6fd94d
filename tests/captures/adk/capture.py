"""Capture Google ADK `LlmAgent` runs traced by ADK's own OpenTelemetry instrumentation.

Run from the repository root with the ADK venv (see requirements.txt beside this file):

    /work/venvs/adk/bin/python tests/captures/adk/capture.py [--out DIR] [SCENARIO ...]

Each canonical scenario (tests/captures/capture_scenarios.py) runs against `ScriptedOpenAI` through
ADK's `LiteLlm` model wrapper (`openai/<model>` on the server's base URL), with plain functions as
tools (ADK wraps them in `FunctionTool`) and `InMemoryRunner`, as the shared `adk_agents.py` plays them
(`adk-openinference/` plays the same runs); ADK's tracer (`gcp.vertex.agent`, from the global tracer provider)
writes to the OTel SDK's in-memory exporter. The spans are written to tests/testdata/traces/adk/ with the
truth in tests/testdata/truth/adk/ (or under `--out DIR`).

ADK records tool arguments and results on its `execute_tool` spans only when message content capture
is on: this script sets `OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT=SPAN_ONLY`, as a user who
wants tool arguments in the trace would (ADK 2.x, default telemetry schema v2).

ADK-specific shapes captured here (played by `adk_agents.py`):
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

import os
import sys
from importlib.metadata import version
from pathlib import Path

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

from capture_kit import Agent, Recorder, find_span, out_option, truth_for, write_capture  # noqa: E402
from opentelemetry import _logs, trace  # noqa: E402
from opentelemetry.sdk._logs import LoggerProvider  # noqa: E402
from opentelemetry.sdk._logs.export import InMemoryLogRecordExporter, SimpleLogRecordProcessor  # noqa: E402
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider  # noqa: E402
from opentelemetry.sdk.trace.export import SimpleSpanProcessor  # noqa: E402
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter  # noqa: E402

OUT, _rest = out_option(sys.argv[1:])
"""`--out DIR`: write into DIR/traces and DIR/truth instead of tests/testdata."""
ARGS = [a for a in _rest if a not in ("--legacy", "--events")]

EXPORTER = InMemorySpanExporter()
PROVIDER = TracerProvider()
PROVIDER.add_span_processor(SimpleSpanProcessor(EXPORTER))
trace.set_tracer_provider(PROVIDER)
LOGS = InMemoryLogRecordExporter()
LOGGER_PROVIDER = LoggerProvider()
LOGGER_PROVIDER.add_log_record_processor(SimpleLogRecordProcessor(LOGS))
_logs.set_logger_provider(LOGGER_PROVIDER)

import adk_agents  # noqa: E402  (imports google.adk: after the providers are set)

ROOT = HERE.parents[2]
FOLDER = "adk-legacy" if LEGACY else "adk-events" if EVENTS else "adk"
TRACES = (OUT or ROOT / "tests" / "testdata") / "traces" / FOLDER
TRUTHS = (OUT or ROOT / "tests" / "testdata") / "truth" / FOLDER

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


def _run_span(spans: list[ReadableSpan], agent: Agent) -> ReadableSpan:
    """The run's span: `invoke_agent <name>` with gen_ai.agent.name = the agent's name."""
    return find_span(spans, f"invoke_agent {agent.name}", attributes={"gen_ai.operation.name": "invoke_agent"})


def capture(name: str) -> None:
    sc, unrecorded = adk_agents.prepare(name)
    recorder = Recorder()
    EXPORTER.clear()
    LOGS.clear()
    adk_agents.play(sc, recorder, PROVIDER)
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


def main(names: list[str]) -> None:
    for name in names or adk_agents.scenario_names():
        if EVENTS and name in EVENTS_UNREADABLE:
            print(f"{FOLDER}/{name}: not written: {EVENTS_UNREADABLE[name]}")
            continue
        capture(name)


if __name__ == "__main__":
    main(ARGS)
