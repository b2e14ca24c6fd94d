"""Capture Agno `Agent` and `Team` runs traced by openinference-instrumentation-agno.

Run from the repository root with the agno venv (see requirements.txt beside this file):

    /work/venvs/agno/bin/python tests/captures/agno/capture.py [SCENARIO ...]

Each canonical scenario runs an Agno `Agent` whose tools are the plain functions of the kit (Agno builds
the schemas from the signatures and docstrings), on `OpenAIChat(base_url=...)` pointed at
`ScriptedOpenAI`. f_agent_as_tool is an Agno `Team` (the coordinator) with the weather expert as its
member: the team's model calls Agno's own `delegate_task_to_member(member_id, task)` tool, which runs
the member. b_sequential and i_parallel_random_ids stream (`run(..., stream=True)`); c_parallel and
h_complex_args use the Responses API (`OpenAIResponses`). The agents are built and played by the shared
`../agno_agents.py`.
"""

from __future__ import annotations

import contextvars
import sys
from importlib.metadata import version
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))

from capture_kit import SCENARIOS, Recorder, Scenario, find_span, truth_for, write_capture  # noqa: E402
from openinference.instrumentation.agno import AgnoInstrumentor  # noqa: E402
from opentelemetry import trace  # noqa: E402
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider  # noqa: E402
from opentelemetry.sdk.trace.export import SimpleSpanProcessor  # noqa: E402
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter  # noqa: E402

EXPORTER = InMemorySpanExporter()
PROVIDER = TracerProvider()
PROVIDER.add_span_processor(SimpleSpanProcessor(EXPORTER))
AgnoInstrumentor().instrument(tracer_provider=PROVIDER)

from agno_agents import DELEGATE, delegated, play  # noqa: E402

ROOT = HERE.parents[2]
TRACES = ROOT / "tests" / "testdata" / "traces" / "agno"
TRUTHS = ROOT / "tests" / "testdata" / "truth" / "agno"

META = {
    "framework": "agno",
    "framework_version": version("agno"),
    "instrumentation": "openinference-instrumentation-agno " + version("openinference-instrumentation-agno"),
    "conventions": "OpenInference semantic conventions (openinference.span.kind, tool.name, input.value, llm.*)",
}
STREAMED = {"b_sequential", "i_parallel_random_ids"}
RESPONSES = {"c_parallel", "h_complex_args"}
"""Scenarios whose agents use the Responses API (`OpenAIResponses`) instead of chat completions."""


def _play(sc: Scenario, recorder: Recorder) -> list[str | None]:
    EXPORTER.clear()
    stream = "sync" if sc.name in STREAMED else None
    tracer = PROVIDER.get_tracer("capture")
    answers = play(sc, recorder, stream=stream, responses=sc.name in RESPONSES, app_tracer=tracer)
    if sc.sub_agents:
        # openinference-instrumentation-agno leaves the team's run span current after Team.run returns
        # (each scenario runs in a fresh context, so the next one does not nest under it).
        leaked = trace.get_current_span().get_span_context().is_valid
        print(f"{sc.name}: a span is still current after Team.run: {leaked}")
    PROVIDER.force_flush()
    return answers


def capture(name: str) -> None:
    base = SCENARIOS[name]
    sc = base
    unrecorded: list[str] = []
    if sc.sub_agents:
        sc = delegated(sc)
        unrecorded.append(DELEGATE)
    recorder = Recorder()
    answers = contextvars.Context().run(_play, sc, recorder)
    expected = [base.agents[0].final_text] if sc.sub_agents else [a.final_text for a in base.agents]
    if sc.name not in STREAMED:
        assert answers == expected, f"{sc.name}: answers {answers} != {expected}"
    spans: list[ReadableSpan] = list(EXPORTER.get_finished_spans())
    runs = {
        a.name: find_span(spans, prefix=f"{a.name}.", attributes={"openinference.span.kind": "AGENT"})
        for a in sc.agents
    }
    truth = truth_for(sc, META, recorder, runs, unrecorded=unrecorded)
    written = write_capture(TRACES, TRUTHS, sc.name, spans, truth)
    print(
        f"{sc.name}: {len(spans)} spans, {[len(r['calls']) for r in truth['runs']]} calls per run -> "
        f"{[p.name for p in written] or 'kept'}"
    )


def main(argv: list[str]) -> None:
    for name in argv or list(SCENARIOS):
        capture(name)


if __name__ == "__main__":
    main(sys.argv[1:])
