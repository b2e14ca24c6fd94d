"""CrewAI captures traced by OpenLLMetry: every canonical scenario CrewAI can express.

CrewAI 1.15.30 with `opentelemetry-instrumentation-crewai` (crews, tasks, agents) and
`opentelemetry-instrumentation-openai` (the model calls CrewAI's native OpenAI provider makes), both
0.62.4 (Traceloop OpenLLMetry), against `ScriptedOpenAI`. The set-up is what `Traceloop.init()`
(traceloop-sdk 0.62.4, `traceloop/sdk/tracing/tracing.py`) does for this program, on a plain OTel SDK
`TracerProvider` whose spans go to the in-memory exporter: the provider set as the global one,
`ThreadingInstrumentor().instrument()` ("this makes sure otel context is propagated so we always want
it"), `CrewAIInstrumentor().instrument()` (`init_crewai_instrumentor`, which also defaults
`CREWAI_DISABLE_TELEMETRY=true`) and `OpenAIInstrumentor(enrich_assistant=True, use_attributes=True)
.instrument()` (`init_openai_instrumentor`; `use_attributes` is `Traceloop.init`'s default, the
messages as `gen_ai.input.messages`/`gen_ai.output.messages`). Content capture on
(`TRACELOOP_TRACE_CONTENT=true`), Traceloop's own telemetry off (`TRACELOOP_TELEMETRY=false`).

Agents, tasks, tools and delegation are the shared `crewai_crews.py`, as in `tests/captures/crewai/capture.py`
(the OpenInference capture of the same framework): CrewAI `Agent`s in a `Crew`, one `Task` each, tools made
with CrewAI's `@tool` from the kit's recorded functions; streamed model calls (`LLM(stream=True)`) in c, h
and i.

- a..e, h, i: one agent, one task, one crew.
- f_agent_as_tool: CrewAI's delegation. The coordinator has `allow_delegation=True`; the coworker
  `weather_expert` is in the same crew without a task of its own. The model calls CrewAI's
  `Delegate work to coworker` tool (function name `delegate_work_to_coworker`); the tool runs the
  coworker with `Agent.execute_task`, which the instrumentation wraps: the coworker's run is its own
  `weather_expert.agent` span, inside the coordinator's.
- f_hierarchical (not in the kit's list): `Process.hierarchical` with `manager_llm`: CrewAI's own
  manager agent (role `Crew Manager`) delegates the one task to weather_expert the same way.
- model_only_cached_repeat, model_only_unknown_tool (not in the kit's list): a call answered from
  CrewAI's tool cache (`Crew(cache=True)`), and a call of a tool never offered.
- g_two_runs_one_trace: one crew with two agents and two tasks, kicked off under the application span
  `conversation`.

Not captured: `Agent.kickoff()` alone (the OpenInference folder's a_agent_kickoff): the instrumentation
wraps `Crew.kickoff`, `Task.execute_sync`, `Agent.execute_task` and `LLM.call` only, so a standalone
agent has no span of its own and each of its model calls is a trace of its own (see NOTES.md).

The instrumentation traces no tool: every call is only in the model's output (the `openai.chat` span's
`gen_ai.output.messages`), so the truth marks every call `model_only`.

    /work/venvs/crewai-openllmetry/bin/python tests/captures/crewai-openllmetry/capture.py [--out DIR] [SCENARIO ...]

Writes tests/testdata/{traces,truth}/crewai-openllmetry/ (or DIR/traces, DIR/truth), then prints how
`toolscore extract` differs from each truth.
"""

from __future__ import annotations

import os
import sys
from importlib.metadata import version
from pathlib import Path

os.environ.update(
    TRACELOOP_TRACE_CONTENT="true",  # prompts, completions and tool calls on the spans (also the default)
    TRACELOOP_TELEMETRY="false",  # no Traceloop usage telemetry
    CREWAI_DISABLE_TELEMETRY="true",  # crewai_core.telemetry: no spans to CrewAI's collector
    CREWAI_DISABLE_TRACKING="true",  # same switch, older name
    CREWAI_TRACING_ENABLED="false",  # crewai.execution: no trace session / first-run trace upload
    CREWAI_DISABLE_VERSION_CHECK="true",  # console formatter: no PyPI version look-up
    OPENAI_API_KEY="sk-scripted",
)
os.environ.pop("OTEL_SDK_DISABLED", None)  # would switch our own SDK off too

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))  # tests/captures

from capture_kit import (  # noqa: E402
    SCENARIOS,
    Recorder,
    Scenario,
    find_span,
    loopback_only_connections,
    loopback_only_lookups,
    out_option,
    truth_for,
    write_capture,
)

REFUSED = loopback_only_connections()
"""Connections tried to anything but the loopback address (the script fails when there is one)."""
loopback_only_lookups()
OUT, ARGS = out_option(sys.argv[1:])

from oi_common import compare_with_extract  # noqa: E402
from opentelemetry import trace  # noqa: E402
from opentelemetry.instrumentation.crewai import CrewAIInstrumentor  # noqa: E402
from opentelemetry.instrumentation.openai import OpenAIInstrumentor  # noqa: E402
from opentelemetry.instrumentation.threading import ThreadingInstrumentor  # noqa: E402
from opentelemetry.sdk.resources import Resource  # noqa: E402
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider  # noqa: E402
from opentelemetry.sdk.trace.export import SimpleSpanProcessor  # noqa: E402
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter  # noqa: E402

# As `Traceloop.init()` does: a TracerProvider set as the global one, then the instrumentors, which use it.
EXPORTER = InMemorySpanExporter()
PROVIDER = TracerProvider(resource=Resource.create({"service.name": "toolscore-capture-crewai"}))
PROVIDER.add_span_processor(SimpleSpanProcessor(EXPORTER))
trace.set_tracer_provider(PROVIDER)
ThreadingInstrumentor().instrument()
CrewAIInstrumentor().instrument()
OpenAIInstrumentor(enrich_assistant=True, use_attributes=True).instrument()

from crewai_crews import (  # noqa: E402
    CACHED,
    DELEGATE_FUNCTION,
    HIERARCHICAL,
    NEVER_RAN,
    UNKNOWN,
    crewai_scenario,
    play,
    role_of,
)

ROOT = HERE.parents[2]
FOLDER = "crewai-openllmetry"
TRACES = (OUT or ROOT / "tests" / "testdata") / "traces" / FOLDER
TRUTHS = (OUT or ROOT / "tests" / "testdata") / "truth" / FOLDER
TOOLSCORE = ROOT / ".venv" / "bin" / "toolscore"

META = {
    "framework": "crewai",
    "framework_version": version("crewai"),
    "instrumentation": (
        f"opentelemetry-instrumentation-crewai {version('opentelemetry-instrumentation-crewai')} and "
        f"opentelemetry-instrumentation-openai {version('opentelemetry-instrumentation-openai')} (OpenLLMetry, "
        "as Traceloop.init() sets them up, with opentelemetry-instrumentation-threading "
        f"{version('opentelemetry-instrumentation-threading')}), opentelemetry-sdk {version('opentelemetry-sdk')}"
    ),
    "conventions": (
        "OpenLLMetry: crewai.workflow (crew), <task>.task (traceloop.span.kind task), <role>.agent "
        "(traceloop.span.kind agent, gen_ai.agent.name), openai.chat (gen_ai.output.messages); no tool spans"
    ),
}
F_NOTES = [
    "The delegation call is CrewAI's delegation tool: the model calls it `delegate_work_to_coworker` (the name "
    "CrewAI offers the model, sanitized); no span records the tool itself.",
    "weather_expert's run is the `weather_expert.agent` span (Agent.execute_task, called by the delegation tool), "
    "a child of the delegating agent's `<role>.agent` span.",
]

EXTRA = {s.name: s for s in (HIERARCHICAL, CACHED, UNKNOWN)}
"""CrewAI forms beyond the kit's list: the hierarchical crew's manager, and two calls no tool received."""


def run_span(spans: list[ReadableSpan], role: str) -> ReadableSpan:
    """The agent's run: the `<role>.agent` span `Agent.execute_task`'s wrapper opens."""
    return find_span(spans, f"{role}.agent", attributes={"traceloop.span.kind": "agent", "gen_ai.agent.name": role})


def never_ran(scenario: Scenario, recorder: Recorder, call_id: str) -> bool:
    """Check that every call but `call_id` reached its tool, in order, and `call_id` did not; whether
    `call_id`'s tool was never offered (then CrewAI answers "not found": the call failed)."""
    calls = [c for agent in scenario.agents for c in agent.calls]
    reached = [(c.name, recorder.full_args(c.name, dict(c.args))) for c in calls if c.id != call_id]
    received = [(r.name, r.full_args) for r in recorder.calls]
    if received != reached:
        raise AssertionError(f"{scenario.name}: the tools received {received}, expected {reached}")
    missing = next(c for c in calls if c.id == call_id)
    return missing.name not in {name for agent in scenario.agents for name in agent.tools}


def capture(scenario: Scenario) -> None:
    """Run one scenario, write its capture and truth, print how toolscore's extraction differs."""
    EXPORTER.clear()
    recorder = Recorder()
    tracer = PROVIDER.get_tracer("toolscore.capture")
    play(scenario, tracer, recorder)
    PROVIDER.force_flush()
    spans = list(EXPORTER.get_finished_spans())
    runs = {spec.name: run_span(spans, role_of(spec.name)) for spec in scenario.agents}
    meta = dict(META)
    if scenario.sub_agents:
        meta["notes"] = F_NOTES
    # No tool span: every call is in the model's output only. The delegation tool has no recorder.
    flags: dict[str, dict[str, bool]] = {c.id: {"model_only": True} for a in scenario.agents for c in a.calls}
    unrecorded = {DELEGATE_FUNCTION}
    if scenario.name in NEVER_RAN:
        call_id = NEVER_RAN[scenario.name]
        flags[call_id]["error"] = never_ran(scenario, recorder, call_id)
        unrecorded |= {c.name for a in scenario.agents for c in a.calls}  # checked by `never_ran`
    names = {a.name: role_of(a.name) for a in scenario.agents}
    truth = truth_for(scenario, meta, recorder, runs, unrecorded=unrecorded, agent_names=names, flags=flags)
    write_capture(TRACES, TRUTHS, scenario.name, spans, truth)
    print(f"{scenario.name}: {len(spans)} spans, {len(truth['runs'])} run(s)")
    for problem in compare_with_extract(TRACES / f"{scenario.name}.pb", truth, TOOLSCORE):
        print(f"  extract differs: {problem}")


def main() -> None:
    names = ARGS or [*SCENARIOS, *EXTRA]
    for name in names:
        capture(EXTRA[name] if name in EXTRA else crewai_scenario(SCENARIOS[name]))
    if REFUSED:
        raise SystemExit(f"refused outbound connections: {REFUSED}")


if __name__ == "__main__":
    main()
