"""Capture Google ADK `LlmAgent` runs traced by Arize's OpenInference instrumentation for ADK.

Run from the repository root with its venv (see requirements.txt beside this file):

    /work/venvs/adk-openinference/bin/python tests/captures/adk-openinference/capture.py [--out DIR] [SCENARIO ...]

The same runs as tests/captures/adk/capture.py, played by the shared `adk_agents.py` (`LlmAgent` on
`LiteLlm("openai/<model>")` against `ScriptedOpenAI`, plain functions as tools, `InMemoryRunner`; `AgentTool`
for f, `sub_agents` for j, ADK's `ReflectAndRetryToolPlugin` for e; b and i streamed), traced as a user of
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

import os
import sys
from importlib.metadata import version
from pathlib import Path

os.environ.pop("OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT", None)  # ADK's default: no content
os.environ["LITELLM_LOCAL_MODEL_COST_MAP"] = "True"  # litellm: no cost-map download at import
os.environ["LITELLM_TELEMETRY"] = "False"

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))

from capture_kit import (  # noqa: E402
    Agent,
    Recorder,
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

import adk_agents  # noqa: E402  (imports google.adk: after the instrumentor)

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


def _run_span(spans: list[ReadableSpan], agent: Agent) -> ReadableSpan:
    """The run's span: OpenInference's AGENT span `agent_run [<name>]` (agent.name = the agent's name)."""
    return find_span(
        spans, f"agent_run [{agent.name}]", attributes={"openinference.span.kind": "AGENT", "agent.name": agent.name}
    )


def capture(name: str) -> None:
    sc, unrecorded = adk_agents.prepare(name)
    recorder = Recorder()
    EXPORTER.clear()
    adk_agents.play(sc, recorder, PROVIDER)
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
    for name in names or adk_agents.scenario_names():
        capture(name)


if __name__ == "__main__":
    main(ARGS)
