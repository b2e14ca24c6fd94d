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
from collections.abc import Callable
from contextlib import nullcontext
from pathlib import Path
from types import MappingProxyType
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
    "The delegation call is CrewAI's delegation tool: the model calls it `delegate_work_to_coworker` (the name CrewAI "
    "offers the model, sanitized), its TOOL span says tool.name `Delegate work to coworker`.",
    "weather_expert has no AGENT span: Agent.execute_task is called from inside the delegation tool, "
    "bypassing Task._execute_core; its run span here is the delegation TOOL span that contains its "
    "model and tool spans (the child of a tool span stands in for the sub-run).",
]

MANAGER_ROLE = "Crew Manager"
"""The role CrewAI gives the manager agent it creates for `Process.hierarchical`."""
DELEGATION_ARGS = {
    "task": "What is the weather in Oslo?",
    "context": "The user asks whether to pack a coat for Oslo.",
    "coworker": "weather_expert",
}
EXPERT = Agent(
    name="weather_expert",
    prompt="What is the weather in Oslo?",
    tools=("get_weather",),
    turns=(Turn([ToolCall("call_fm2", "get_weather", {"city": "Oslo"})]), Turn(text="It is 4C in Oslo.")),
    final_call_id="call_fm8",
)
HIERARCHICAL = Scenario(
    "f_hierarchical",
    "Process.hierarchical: CrewAI's own manager agent delegates the task to the crew's one agent.",
    (
        Agent(
            name="crew_manager",
            prompt="Should I pack a coat for Oslo?",
            tools=(DELEGATE_FUNCTION,),
            turns=(
                Turn([ToolCall("call_fm1", DELEGATE_FUNCTION, DELEGATION_ARGS)]),
                Turn(text="Yes, pack a coat: it is 4C in Oslo."),
            ),
            final_call_id="call_fm9",
        ),
        EXPERT,
    ),
    sub_agents=MappingProxyType({DELEGATE_FUNCTION: "weather_expert"}),
)
KICKOFF = Scenario(
    "a_agent_kickoff",
    "One agent used alone, `Agent.kickoff(prompt)`, outside any crew: one tool call, then the answer.",
    (
        Agent(
            name="weather_agent",
            prompt="What is the weather in Paris?",
            tools=("get_weather",),
            turns=(Turn([ToolCall("call_k1", "get_weather", {"city": "Paris"})]), Turn(text="It is 21C in Paris.")),
            final_call_id="call_k9",
        ),
    ),
)
CACHED = Scenario(
    "model_only_cached_repeat",
    "Crew(cache=True): the model repeats an identical call; CrewAI answers it from its tool cache.",
    (
        Agent(
            name="cache_agent",
            prompt="What is the weather in Paris? Check twice.",
            tools=("get_weather",),
            turns=(
                Turn([ToolCall("call_mc1", "get_weather", {"city": "Paris"})]),
                Turn([ToolCall("call_mc2", "get_weather", {"city": "Paris"})]),
                Turn(text="It is 21C in Paris, twice checked."),
            ),
            final_call_id="call_mc9",
        ),
    ),
)
UNKNOWN = Scenario(
    "model_only_unknown_tool",
    "The model calls a tool it was not offered (CrewAI answers 'Tool not found'), then a real one.",
    (
        Agent(
            name="forecast_agent",
            prompt="What is the forecast for Paris?",
            tools=("get_weather",),
            turns=(
                Turn([ToolCall("call_mu1", "get_forecast", {"city": "Paris"})]),
                Turn([ToolCall("call_mu2", "get_weather", {"city": "Paris"})]),
                Turn(text="It is 21C in Paris."),
            ),
            final_call_id="call_mu9",
        ),
    ),
)
MODEL_ONLY = {"model_only_cached_repeat": "call_mc2", "model_only_unknown_tool": "call_mu1"}
"""Per scenario, the call that has no TOOL span (it is only in the model's output)."""
EXTRA = {s.name: s for s in (KICKOFF, HIERARCHICAL, CACHED, UNKNOWN)}
"""CrewAI forms beyond the kit's list: the standalone agent, the hierarchical crew's manager, and two
calls that exist only in the model's output."""

PROVIDER, EXPORTER = in_memory_tracing("capture-crewai")
CrewAIInstrumentor().instrument(tracer_provider=PROVIDER)
OpenAIInstrumentor().instrument(tracer_provider=PROVIDER)

from crewai import LLM, Crew, Process, Task  # noqa: E402
from crewai import Agent as CrewAgent  # noqa: E402
from crewai.tools import tool  # noqa: E402


def crewai_scenario(scenario: Scenario) -> Scenario:
    """The scenario as CrewAI runs it: f's sub-agent call becomes CrewAI's delegation tool call."""
    if scenario.name != "f_agent_as_tool":
        return scenario
    return scenario.with_call("call_f1", DELEGATE_FUNCTION, DELEGATION_ARGS)


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
        delegate = any(t in scenario.sub_agents for t in spec.tools)
        agent = new_agent(spec, base_url, tools_of(spec.tools), stream=stream, delegate=delegate)
        agents.append(agent)
        if spec.name not in coworkers:
            tasks.append(Task(description=spec.prompt, expected_output="A short answer.", agent=agent))
    return Crew(agents=agents, tasks=tasks, cache=scenario is CACHED)


def role_of(agent: str) -> str:
    """The role CrewAI's agent has (the scenario's name, but for the hierarchical crew's manager)."""
    return MANAGER_ROLE if agent == "crew_manager" else agent


def new_agent(spec: Agent, base_url: str, tools: list[Any], *, stream: bool = False, delegate: bool = False) -> Any:
    return CrewAgent(
        role=spec.name,
        goal=f"Help as the {spec.name}.",
        backstory=f"You are {spec.name}.",
        llm=llm(spec, base_url, stream=stream),
        tools=tools,
        allow_delegation=delegate,
    )


def llm(spec: Agent, base_url: str, *, stream: bool = False) -> LLM:
    return LLM(model=f"openai/{spec.model}", base_url=base_url, api_key="sk-scripted", stream=stream)


def run_scenario(scenario: Scenario, base_url: str, recorder: Recorder) -> None:
    """Run the scenario the CrewAI way: a crew (hierarchical for f_hierarchical) or one agent alone."""
    if scenario is KICKOFF:
        (spec,) = scenario.agents
        new_agent(spec, base_url, [tool(t) for t in recorder.tools(spec.tools)]).kickoff(spec.prompt)
    elif scenario is HIERARCHICAL:
        manager, expert = scenario.agents
        worker = new_agent(expert, base_url, [tool(t) for t in recorder.tools(expert.tools)])
        task = Task(description=manager.prompt, expected_output="A short answer.")
        crew = Crew(agents=[worker], tasks=[task], process=Process.hierarchical, manager_llm=llm(manager, base_url))
        crew.kickoff()
    else:
        build_crew(scenario, base_url, recorder).kickoff()


def capture(scenario: Scenario, out: Path, toolscore: Path) -> None:
    """Run one scenario, write its capture and truth, print how toolscore's extraction differs."""
    EXPORTER.clear()
    recorder = Recorder()
    tracer = PROVIDER.get_tracer("capture-crewai")
    with ScriptedOpenAI(scenario.script) as server:
        app = tracer.start_as_current_span(APP_SPAN_NAME) if scenario.name == "g_two_runs_one_trace" else nullcontext()
        with app:
            run_scenario(scenario, server.base_url, recorder)
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
            role = role_of(spec.name)
            method = "kickoff" if scenario is KICKOFF else "_execute_core"
            runs[spec.name] = find_span(spans, f"{role}.{method}", attributes={"graph.node.id": role})
    names = {a.name: role_of(a.name) for a in scenario.agents}
    flags: dict[str, dict[str, bool]] = {}
    if scenario.name in MODEL_ONLY:
        flags, unrecorded = model_only(scenario, recorder, MODEL_ONLY[scenario.name])
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
