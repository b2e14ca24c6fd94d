"""CrewAI captures: every canonical scenario CrewAI can express, traced by OpenInference.

CrewAI 1.15.30 with openinference-instrumentation-crewai (crews, tasks, tools) and
openinference-instrumentation-openai (the model calls CrewAI's native OpenAI provider makes), against
`ScriptedOpenAI`. Agents are CrewAI `Agent`s in a `Crew`, one `Task` each, their tools made with
CrewAI's `@tool` decorator (`crewai.tools.tool`) from the kit's recorded functions. Streamed model
calls (`LLM(stream=True)`) in c, h and i. The crews and scenarios are the shared `crewai_crews.py`
(with `crewai-openllmetry/`); this script installs the instrumentation and picks the run spans.
Scenario mapping:

- a..e, h, i: one agent, one task, one crew.
- f_agent_as_tool: CrewAI's delegation. The coordinator has `allow_delegation=True`; the coworker
  `weather_expert` is in the same crew without a task of its own. The model calls CrewAI's
  `Delegate work to coworker` tool (function name `delegate_work_to_coworker`, arguments task,
  context, coworker); the coworker runs inside that tool's span, with no AGENT span of its own, so its
  run span in the truth is that TOOL span.
- f_hierarchical (not in the kit's list): `Process.hierarchical` with `manager_llm`: CrewAI creates
  the manager agent itself (role `Crew Manager`), which delegates the one task to weather_expert the
  same way as in f.
- a_agent_kickoff (not in the kit's list): one agent used alone, `Agent.kickoff(prompt)`, no crew:
  its run span is the AGENT span `<role>.kickoff`.
- model_only_cached_repeat, model_only_unknown_tool (not in the kit's list): a call with no TOOL
  span, answered from CrewAI's tool cache (`Crew(cache=True)`), or of a tool never offered.
- g_two_runs_one_trace: one crew with two agents and two tasks (the first agent's task, then the
  second's), kicked off under the application span `conversation`: two AGENT spans in one trace.

CrewAI's own telemetry, tracing and version check are switched off by environment variables set
before crewai is imported, and a socket guard refuses anything but 127.0.0.1 all the same.

    /work/venvs/crewai/bin/python tests/captures/crewai/capture.py [--out DIR] [SCENARIO ...]

Writes tests/testdata/{traces,truth}/crewai/ unless --out is given (a_single_tool, from the shared
set, is kept: the kit refuses to overwrite it), then prints how `toolscore extract` differs from
each truth.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path
from typing import Any

os.environ.update(
    CREWAI_DISABLE_TELEMETRY="true",  # crewai_core.telemetry: no spans to CrewAI's collector
    CREWAI_DISABLE_TRACKING="true",  # same switch, older name
    CREWAI_TRACING_ENABLED="false",  # crewai.execution: no trace session / first-run trace upload
    CREWAI_DISABLE_VERSION_CHECK="true",  # console formatter: no PyPI version look-up
    OPENAI_API_KEY="sk-scripted",
)
os.environ.pop("OTEL_SDK_DISABLED", None)  # would switch our own SDK off too

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from oi_common import REPO, blocked, guard_network, in_memory_tracing, model_only, report

guard_network()

from importlib.metadata import version  # noqa: E402

from capture_kit import SCENARIOS, Recorder, Scenario, find_span, truth_for  # noqa: E402
from openinference.instrumentation.crewai import CrewAIInstrumentor  # noqa: E402
from openinference.instrumentation.openai import OpenAIInstrumentor  # noqa: E402

__all__: list[str] = []

DELEGATE_TOOL = "Delegate work to coworker"
META = {
    "framework": "crewai",
    "framework_version": version("crewai"),
    "instrumentation": (
        f"openinference-instrumentation-crewai {version('openinference-instrumentation-crewai')}"
        f" + openinference-instrumentation-openai {version('openinference-instrumentation-openai')}"
    ),
    "conventions": "OpenInference semantic conventions (openinference.span.kind, tool.name, input.value, llm.*)",
}
F_NOTES = [
    "The delegation call is CrewAI's delegation tool: the model calls it `delegate_work_to_coworker` (the name CrewAI "
    "offers the model, sanitized), its TOOL span says tool.name `Delegate work to coworker`.",
    "weather_expert has no AGENT span: Agent.execute_task is called from inside the delegation tool, "
    "bypassing Task._execute_core; its run span here is the delegation TOOL span that contains its "
    "model and tool spans (the child of a tool span stands in for the sub-run).",
]

PROVIDER, EXPORTER = in_memory_tracing("capture-crewai")
CrewAIInstrumentor().instrument(tracer_provider=PROVIDER)
OpenAIInstrumentor().instrument(tracer_provider=PROVIDER)

from crewai_crews import (  # noqa: E402
    CACHED,
    DELEGATE_FUNCTION,
    HIERARCHICAL,
    KICKOFF,
    NEVER_RAN,
    UNKNOWN,
    crewai_scenario,
    play,
    role_of,
)

EXTRA = {s.name: s for s in (KICKOFF, HIERARCHICAL, CACHED, UNKNOWN)}
"""CrewAI forms beyond the kit's list: the standalone agent, the hierarchical crew's manager, and two
calls that exist only in the model's output."""


def capture(scenario: Scenario, out: Path, toolscore: Path) -> None:
    """Run one scenario, write its capture and truth, print how toolscore's extraction differs."""
    EXPORTER.clear()
    recorder = Recorder()
    tracer = PROVIDER.get_tracer("capture-crewai")
    play(scenario, tracer, recorder)
    PROVIDER.force_flush()
    spans = EXPORTER.get_finished_spans()
    runs: dict[str, Any] = {}
    meta = dict(META)
    unrecorded: list[str] = []
    for spec in scenario.agents:
        if spec.name in scenario.sub_agents.values():
            runs[spec.name] = find_span(spans, f"{DELEGATE_TOOL}.run")
            meta["notes"] = F_NOTES
            unrecorded.append(DELEGATE_FUNCTION)
        else:
            role = role_of(spec.name)
            method = "kickoff" if scenario is KICKOFF else "_execute_core"
            runs[spec.name] = find_span(spans, f"{role}.{method}", attributes={"graph.node.id": role})
    names = {a.name: role_of(a.name) for a in scenario.agents}
    flags: dict[str, dict[str, bool]] = {}
    if scenario.name in NEVER_RAN:
        flags, unrecorded = model_only(scenario, recorder, NEVER_RAN[scenario.name])
    truth = truth_for(scenario, meta, recorder, runs, unrecorded=unrecorded, agent_names=names, flags=flags)
    report(scenario.name, "crewai", spans, truth, out=out, toolscore=toolscore)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("scenarios", nargs="*", default=[*SCENARIOS, *EXTRA], help="default: all")
    parser.add_argument("--out", type=Path, default=REPO / "tests" / "testdata", help="holds traces/ and truth/")
    parser.add_argument("--toolscore", type=Path, default=REPO / ".venv" / "bin" / "toolscore")
    args = parser.parse_args()
    for name in args.scenarios:
        capture(EXTRA[name] if name in EXTRA else crewai_scenario(SCENARIOS[name]), args.out, args.toolscore)
    if blocked():
        print(f"refused outbound connections: {blocked()}")


if __name__ == "__main__":
    main()
