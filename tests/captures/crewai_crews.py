"""CrewAI crews for the canonical scenarios and CrewAI's own forms, built as a CrewAI user builds them.

Shared by the CrewAI capture scripts (`crewai/`, traced by OpenInference; `crewai-openllmetry/`, traced by
OpenLLMetry), which differ in the instrumentation they install and in the spans they take for each run.
Agents are CrewAI `Agent`s (role = the scenario agent's name) in a `Crew`, one `Task` each, their tools
made with CrewAI's `@tool` decorator (`crewai.tools.tool`) from the kit's recorded functions; streamed
model calls (`LLM(stream=True)`) in c, h and i. f_agent_as_tool is CrewAI's delegation: the coordinator
has `allow_delegation=True`, the coworker `weather_expert` is in the same crew without a task of its
own, and the model calls CrewAI's `Delegate work to coworker` tool (`delegate_work_to_coworker`).

Beyond the kit's list (`EXTRA` in each script picks the ones it captures): `KICKOFF` (one agent alone,
`Agent.kickoff(prompt)`), `HIERARCHICAL` (`Process.hierarchical` with `manager_llm`: CrewAI's own
manager agent, role `Crew Manager`, delegates the task to weather_expert), `CACHED` (a repeated call
answered from CrewAI's tool cache, `Crew(cache=True)`) and `UNKNOWN` (a call of a tool never offered).

Imports crewai: a script imports this module after setting CrewAI's environment switches (telemetry,
tracing, version check off) and installing its instrumentors. Imported from the CrewAI venvs only.
"""

from __future__ import annotations

from collections.abc import Callable
from contextlib import nullcontext
from types import MappingProxyType
from typing import Any

from capture_kit import APP_SPAN_NAME, Agent, Recorder, Scenario, ScriptedOpenAI, ToolCall, Turn
from crewai import LLM, Crew, Process, Task
from crewai import Agent as CrewAgent
from crewai.tools import tool
from opentelemetry.trace import Tracer

__all__ = [
    "CACHED",
    "DELEGATE_FUNCTION",
    "HIERARCHICAL",
    "KICKOFF",
    "NEVER_RAN",
    "UNKNOWN",
    "crewai_scenario",
    "play",
    "role_of",
]

STREAMED = {"c_parallel", "h_complex_args", "i_parallel_random_ids"}
DELEGATE_FUNCTION = "delegate_work_to_coworker"
"""CrewAI's `Delegate work to coworker` tool as the model is offered it (`sanitize_tool_name`)."""
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
NEVER_RAN = {CACHED.name: "call_mc2", UNKNOWN.name: "call_mu1"}
"""Per scenario, the call no tool received (answered from the cache, or of a tool never offered): it is
only in the model's output."""


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


def play(scenario: Scenario, tracer: Tracer, recorder: Recorder) -> None:
    """Run the scenario against its scripted model (g under the application span made with `tracer`), and
    check that every scripted turn was asked for."""
    with ScriptedOpenAI(scenario.script) as server:
        app = tracer.start_as_current_span(APP_SPAN_NAME) if scenario.name == "g_two_runs_one_trace" else nullcontext()
        with app:
            run_scenario(scenario, server.base_url, recorder)
        server.assert_consumed()
