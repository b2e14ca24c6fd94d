"""LlamaIndex agents for the canonical scenarios and LlamaIndex's own forms, built as a LlamaIndex user builds them.

Shared by the LlamaIndex capture scripts (`llamaindex/`, traced by OpenInference; `llamaindex-openllmetry/`,
traced by OpenLLMetry), which differ in the instrumentation they install, the LLM class they point at
`ScriptedOpenAI` (`Runner`'s `llm`), and the spans they take for each run. Agents are llama-index-core
`FunctionAgent`s (`llama_index.core.agent.workflow`), their tools made with `FunctionTool.from_defaults`
from the kit's recorded functions. FunctionAgent streams by default (`astream_chat`); b_sequential runs
with `streaming=False` (`achat`). f_agent_as_tool: the coordinator's tool `weather_expert` is an async
function that awaits a second FunctionAgent's `run`.

Beyond the kit's list: `HANDOFF` (an `AgentWorkflow` of triage_agent and weather_expert, LlamaIndex's
built-in `handoff` tool; one run) and `UNKNOWN` (a call of a tool the agent was not offered).

Imports llama-index-core only (each script imports its own LLM class); a script imports this module
after installing its instrumentors. Imported from the LlamaIndex venvs only.
"""

from __future__ import annotations

import argparse
import asyncio
from collections.abc import Callable, Mapping
from contextlib import nullcontext
from pathlib import Path
from typing import Any

from capture_kit import APP_SPAN_NAME, SCENARIOS, Agent, Recorder, Scenario, ScriptedOpenAI, ToolCall, Turn, truth_for
from llama_index.core.agent.workflow import AgentWorkflow, FunctionAgent
from llama_index.core.tools import FunctionTool
from oi_common import REPO, blocked
from opentelemetry.trace import Tracer

__all__ = ["HANDOFF", "SCENARIOS_HERE", "UNKNOWN", "handoff_truth", "main", "play"]

NON_STREAMED = {"b_sequential"}
LOOP = asyncio.new_event_loop()
"""One event loop for every scenario, never closed: the OpenAI async clients the agents leave behind
close their connections when collected, which fails loudly on a loop `asyncio.run` already closed."""

HANDOFF = Scenario(
    "f_handoff",
    "An AgentWorkflow: the root agent hands off to a second agent with LlamaIndex's handoff tool; "
    "the second agent calls its tool and answers. One workflow run.",
    (
        Agent(
            name="triage_agent",
            prompt="Should I pack a coat for Oslo?",
            tools=(),
            turns=(
                Turn(
                    [ToolCall("call_fh1", "handoff", {"to_agent": "weather_expert", "reason": "A weather question."})]
                ),
            ),
            final_call_id="call_fh8",
        ),
        Agent(
            name="weather_expert",
            prompt="",
            tools=("get_weather",),
            turns=(
                Turn([ToolCall("call_fh2", "get_weather", {"city": "Oslo"})]),
                Turn(text="Yes, pack a coat: it is 4C in Oslo."),
            ),
            final_call_id="call_fh9",
        ),
    ),
)
UNKNOWN = Scenario(
    "model_only_unknown_tool",
    "The model calls a tool it was not offered (LlamaIndex answers 'Tool ... not found'), then a real one.",
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
SCENARIOS_HERE: dict[str, Scenario] = {**SCENARIOS, HANDOFF.name: HANDOFF, UNKNOWN.name: UNKNOWN}

LLM = Callable[[Agent, str], Any]
"""A script's LLM for an agent: `llm(spec, base_url)`, pointed at the scripted server."""


class Runner:
    """Builds the scenario's agents with recorded tools and runs them."""

    def __init__(self, scenario: Scenario, base_url: str, llm: LLM) -> None:
        self.scenario, self.base_url, self.llm = scenario, base_url, llm
        self.recorder = Recorder()
        self.functions: dict[str, Callable[..., Any]] = {}

    def tools(self, spec: Agent) -> list[FunctionTool]:
        out = []
        for name in spec.tools:
            if name not in self.functions:
                if name in self.scenario.sub_agents:
                    sub = self.agent(self.scenario.agent(self.scenario.sub_agents[name]))
                    self.functions[name] = self.recorder.wrap(self._sub_agent(sub), name)
                else:
                    self.functions[name] = self.recorder.tools([name])[0]
            out.append(FunctionTool.from_defaults(self.functions[name], name=name))
        return out

    @staticmethod
    def _sub_agent(sub: FunctionAgent) -> Callable[..., Any]:
        async def run_sub_agent(input: str) -> str:
            """Ask the weather expert agent.

            Args:
                input: The question for the expert.
            """
            return str(await sub.run(user_msg=input))

        return run_sub_agent

    def agent(self, spec: Agent) -> FunctionAgent:
        return FunctionAgent(
            name=spec.name,
            description=f"The {spec.name}.",
            system_prompt=spec.instructions,
            llm=self.llm(spec, self.base_url),
            tools=self.tools(spec),
            streaming=self.scenario.name not in NON_STREAMED,
        )

    async def run(self) -> None:
        if self.scenario is HANDOFF:
            triage, expert = (self.agent(a) for a in self.scenario.agents)
            workflow = AgentWorkflow(agents=[triage, expert], root_agent=triage.name)
            await workflow.run(user_msg=self.scenario.agents[0].prompt)
            return
        for spec in self.scenario.agents:
            if spec.name not in self.scenario.sub_agents.values():
                await self.agent(spec).run(user_msg=spec.prompt)


def play(scenario: Scenario, tracer: Tracer, llm: LLM, script: Mapping[str, Any] | None = None) -> Recorder:
    """Run the scenario on `LOOP` against the scripted model (its `script`, by default the scenario's; g under
    the application span made with `tracer`), check that every scripted turn was asked for, and return
    what the tools received."""
    with ScriptedOpenAI(dict(scenario.script if script is None else script)) as server:
        runner = Runner(scenario, server.base_url, llm)
        app = tracer.start_as_current_span(APP_SPAN_NAME) if scenario.name == "g_two_runs_one_trace" else nullcontext()
        with app:
            LOOP.run_until_complete(runner.run())
        server.assert_consumed()
    return runner.recorder


def handoff_truth(scenario: Scenario, meta: dict[str, Any], workflow: Any, recorder: Recorder) -> dict[str, Any]:
    """The workflow's one run (at the `workflow` span): both agents' calls in model order, named after the
    root agent."""
    per_agent = truth_for(scenario, meta, recorder, [workflow, workflow], unrecorded=["handoff"])
    first, second = per_agent["runs"]
    calls = first["calls"] + second["calls"]
    call_agents = {c["call_id"]: run["agent_name"] for run in (first, second) for c in run["calls"]}
    run = {**first, "calls": calls}
    return {**per_agent, "call_agents": call_agents, "runs": [run]}


def main(capture: Callable[[Scenario, Path, Path], None], description: str) -> None:
    """`capture.py [--out DIR] [--toolscore PATH] [SCENARIO ...]`: `capture(scenario, out, toolscore)` each."""
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("scenarios", nargs="*", default=list(SCENARIOS_HERE), help="default: all")
    parser.add_argument("--out", type=Path, default=REPO / "tests" / "testdata", help="holds traces/ and truth/")
    parser.add_argument("--toolscore", type=Path, default=REPO / ".venv" / "bin" / "toolscore")
    args = parser.parse_args()
    for name in args.scenarios:
        capture(SCENARIOS_HERE[name], args.out, args.toolscore)
    LOOP.run_until_complete(LOOP.shutdown_asyncgens())
    if blocked():
        print(f"refused outbound connections: {blocked()}")
