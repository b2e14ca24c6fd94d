"""CrewAI captures: every canonical scenario CrewAI can express, traced by OpenInference.

CrewAI 1.15.30 with openinference-instrumentation-crewai (crews, tasks, tools) and
openinference-instrumentation-openai (the model calls CrewAI's native OpenAI provider makes), against
`ScriptedOpenAI`. Agents are CrewAI `Agent`s in a `Crew`, one `Task` each, their tools made with
CrewAI's `@tool` decorator (`crewai.tools.tool`) from the kit's recorded functions. Streamed model
calls (`LLM(stream=True)`) in c, h and i. Scenario mapping:

- a..e, h, i: one agent, one task, one crew.
- f_agent_as_tool: CrewAI's delegation. The coordinator has `allow_delegation=True`; the coworker
  `weather_expert` is in the same crew without a task of its own. The model calls CrewAI's
  `Delegate work to coworker` tool (function name `delegate_work_to_coworker`, arguments task,
  context, coworker); the coworker runs inside that tool's span, with no AGENT span of its own, so its
  run span in the truth is that TOOL span.
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
from collections.abc import Callable
from contextlib import nullcontext
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

from oi_common import REPO, blocked, guard_network, in_memory_tracing, report

guard_network()

from importlib.metadata import version  # noqa: E402

from capture_kit import (  # noqa: E402
    APP_SPAN_NAME,
    SCENARIOS,
    Recorder,
    Scenario,
    ScriptedOpenAI,
    find_span,
    truth_for,
)
from openinference.instrumentation.crewai import CrewAIInstrumentor  # noqa: E402
from openinference.instrumentation.openai import OpenAIInstrumentor  # noqa: E402

__all__: list[str] = []

STREAMED = {"c_parallel", "h_complex_args", "i_parallel_random_ids"}
DELEGATE_TOOL = "Delegate work to coworker"
DELEGATE_FUNCTION = "delegate_work_to_coworker"
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
    "call_f1 is CrewAI's delegation tool: the model calls it `delegate_work_to_coworker` (the name CrewAI "
    "offers the model, sanitized), its TOOL span says tool.name `Delegate work to coworker`.",
    "weather_expert has no AGENT span: Agent.execute_task is called from inside the delegation tool, "
    "bypassing Task._execute_core; its run span here is the delegation TOOL span that contains its "
    "model and tool spans (the child of a tool span stands in for the sub-run).",
]

PROVIDER, EXPORTER = in_memory_tracing("capture-crewai")
CrewAIInstrumentor().instrument(tracer_provider=PROVIDER)
OpenAIInstrumentor().instrument(tracer_provider=PROVIDER)

from crewai import LLM, Agent, Crew, Task  # noqa: E402
from crewai.tools import tool  # noqa: E402


def crewai_scenario(scenario: Scenario) -> Scenario:
    """The scenario as CrewAI runs it: f's sub-agent call becomes CrewAI's delegation tool call."""
    if scenario.name != "f_agent_as_tool":
        return scenario
    args = {
        "task": "What is the weather in Oslo?",
        "context": "The user asks whether to pack a coat for Oslo.",
        "coworker": "weather_expert",
    }
    return scenario.with_call("call_f1", DELEGATE_FUNCTION, args)


def build_crew(scenario: Scenario, base_url: str, recorder: Recorder) -> Crew:
    """One crew: an Agent per scenario agent (the delegation coworker without a task), a Task per run."""
    stream = scenario.name in STREAMED
    wrapped: dict[str, Callable[..., Any]] = {}

    def tools_of(names: tuple[str, ...]) -> list[Any]:
        out = []
        for name in names:
            if name in scenario.sub_agents:
                continue  # CrewAI adds its delegation tools itself (allow_delegation=True)
            if name not in wrapped:
                wrapped[name] = tool(recorder.tools([name])[0])
            out.append(wrapped[name])
        return out

    agents, tasks = [], []
    coworkers = set(scenario.sub_agents.values())
    for spec in scenario.agents:
        agent = Agent(
            role=spec.name,
            goal=f"Help as the {spec.name}.",
            backstory=f"You are {spec.name}.",
            llm=LLM(model=f"openai/{spec.model}", base_url=base_url, api_key="sk-scripted", stream=stream),
            tools=tools_of(spec.tools),
            allow_delegation=any(t in scenario.sub_agents for t in spec.tools),
        )
        agents.append(agent)
        if spec.name not in coworkers:
            tasks.append(Task(description=spec.prompt, expected_output="A short answer.", agent=agent))
    return Crew(agents=agents, tasks=tasks)


def capture(scenario: Scenario, out: Path, toolscore: Path) -> None:
    """Run one scenario, write its capture and truth, print how toolscore's extraction differs."""
    EXPORTER.clear()
    recorder = Recorder()
    tracer = PROVIDER.get_tracer("capture-crewai")
    with ScriptedOpenAI(scenario.script) as server:
        crew = build_crew(scenario, server.base_url, recorder)
        app = tracer.start_as_current_span(APP_SPAN_NAME) if scenario.name == "g_two_runs_one_trace" else nullcontext()
        with app:
            crew.kickoff()
        server.assert_consumed()
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
            runs[spec.name] = find_span(spans, f"{spec.name}._execute_core", attributes={"graph.node.id": spec.name})
    truth = truth_for(scenario, meta, recorder, runs, unrecorded=unrecorded)
    report(scenario.name, "crewai", spans, truth, out=out, toolscore=toolscore)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("scenarios", nargs="*", default=list(SCENARIOS), help="default: all")
    parser.add_argument("--out", type=Path, default=REPO / "tests" / "testdata", help="holds traces/ and truth/")
    parser.add_argument("--toolscore", type=Path, default=REPO / ".venv" / "bin" / "toolscore")
    args = parser.parse_args()
    for name in args.scenarios:
        capture(crewai_scenario(SCENARIOS[name]), args.out, args.toolscore)
    if blocked():
        print(f"refused outbound connections: {blocked()}")


if __name__ == "__main__":
    main()
