"""LlamaIndex captures: FunctionAgent and AgentWorkflow, traced by openinference-instrumentation-llama-index.

llama-index-core 0.14.25 agents (`llama_index.core.agent.workflow`) with `OpenAILike` (from
llama-index-llms-openai-like) pointed at `ScriptedOpenAI`, tools made with `FunctionTool.from_defaults`
from the kit's recorded functions. FunctionAgent streams by default (`astream_chat`); b_sequential
runs with `streaming=False` (`achat`) so both model span shapes are captured. Scenario mapping:

- a..e, h, i: one `FunctionAgent`, `await agent.run(user_msg=...)`. Run span: `FunctionAgent.run` (CHAIN).
- f_agent_as_tool: LlamaIndex's "agents as tools" pattern: the coordinator's tool `weather_expert`
  is an async function that awaits a second FunctionAgent's `run`; that run's `FunctionAgent.run`
  span sits under the coordinator's TOOL span.
- f_handoff (not in the kit's list; LlamaIndex's own multi-agent form): an `AgentWorkflow` of
  triage_agent (root, no tools of its own) and weather_expert; triage_agent calls the built-in
  `handoff` tool, weather_expert calls get_weather. One run: the `AgentWorkflow.run` span is the only
  span that bounds it; the agents are only named in step payloads (`current_agent_name`), see NOTES.md.
- model_only_unknown_tool (not in the kit's list): the model calls a tool it was not offered; the
  `call_tool` step answers "Tool get_forecast not found" with no TOOL span.
- g_two_runs_one_trace: two FunctionAgents run one after the other under the application span
  `conversation`.

    /work/venvs/llamaindex/bin/python tests/captures/llamaindex/capture.py [--out DIR] [SCENARIO ...]

Writes tests/testdata/{traces,truth}/llamaindex/ unless --out is given (a_single_tool, from the
shared set, is kept), then prints how `toolscore extract` differs from each truth.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
from collections.abc import Callable
from contextlib import nullcontext
from importlib.metadata import version
from pathlib import Path
from typing import Any

os.environ.setdefault("OPENAI_API_KEY", "sk-scripted")
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from oi_common import REPO, blocked, guard_network, in_memory_tracing, model_only, report

guard_network()

from capture_kit import (  # noqa: E402
    APP_SPAN_NAME,
    SCENARIOS,
    Agent,
    Recorder,
    Scenario,
    ScriptedOpenAI,
    ToolCall,
    Turn,
    find_spans,
    truth_for,
)
from openinference.instrumentation.llama_index import LlamaIndexInstrumentor  # noqa: E402

__all__: list[str] = []

NON_STREAMED = {"b_sequential"}
META = {
    "framework": "llamaindex",
    "framework_version": version("llama-index-core"),
    "instrumentation": "openinference-instrumentation-llama-index "
    + version("openinference-instrumentation-llama-index"),
    "conventions": "OpenInference semantic conventions (openinference.span.kind, tool.name, input.value, llm.*)",
}
NAME_NOTE = (
    "The run span (FunctionAgent.run, CHAIN) carries no agent name; the name is only in step payloads: "
    "current_agent_name='<name>' in the repr of the events in input.value of the run_agent_step and "
    "parse_agent_output spans (and setup_agent, init_run/aggregate_tool_results output.value)."
)

PROVIDER, EXPORTER = in_memory_tracing("capture-llamaindex")
LOOP = asyncio.new_event_loop()
"""One event loop for every scenario, never closed: the OpenAI async clients the agents leave behind
close their connections when collected, which fails loudly on a loop `asyncio.run` already closed."""
LlamaIndexInstrumentor().instrument(tracer_provider=PROVIDER)

from llama_index.core.agent.workflow import AgentWorkflow, FunctionAgent  # noqa: E402
from llama_index.core.tools import FunctionTool  # noqa: E402
from llama_index.llms.openai_like import OpenAILike  # noqa: E402

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
MODEL_ONLY = {UNKNOWN.name: "call_mu1"}
"""Per scenario, the call that has no TOOL span (it is only in the model's output)."""
HANDOFF_NOTES = [
    "One run for the whole AgentWorkflow.run (CHAIN): its step spans (setup_agent, run_agent_step, "
    "parse_agent_output, call_tool, aggregate_tool_results) are all its direct children whichever agent is "
    "active, so no span bounds one agent's part; the workflow keeps one chat history across the handoff.",
    "agent_name is the root agent (init_run's output AgentInput(..., current_agent_name='triage_agent')); "
    "the workflow has no name of its own in the trace.",
    "Who made each call (call_agents) is readable only from the repr of the step events: parse_agent_output's "
    "input.value AgentOutput(..., current_agent_name='X', tool_calls=[ToolSelection(tool_id=...)]).",
    'The handoff TOOL span\'s input.value is {"kwargs": {"to_agent", "reason", "ctx": "<Context object>"}}: '
    "the workflow Context is injected as an argument the model never sent.",
]


def llm(spec: Agent, base_url: str) -> OpenAILike:
    return OpenAILike(
        model=spec.model,
        api_base=base_url,
        api_key="sk-scripted",
        is_chat_model=True,
        is_function_calling_model=True,
    )


class Runner:
    """Builds the scenario's agents with recorded tools and runs them."""

    def __init__(self, scenario: Scenario, base_url: str) -> None:
        self.scenario, self.base_url = scenario, base_url
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
            llm=llm(spec, self.base_url),
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


def capture(scenario: Scenario, out: Path, toolscore: Path) -> None:
    """Run one scenario, write its capture and truth, print how toolscore's extraction differs."""
    EXPORTER.clear()
    tracer = PROVIDER.get_tracer("capture-llamaindex")
    with ScriptedOpenAI(scenario.script) as server:
        runner = Runner(scenario, server.base_url)
        app = tracer.start_as_current_span(APP_SPAN_NAME) if scenario.name == "g_two_runs_one_trace" else nullcontext()
        with app:
            LOOP.run_until_complete(runner.run())
        server.assert_consumed()
    PROVIDER.force_flush()
    spans = EXPORTER.get_finished_spans()
    if scenario is HANDOFF:
        truth = handoff_truth(scenario, spans, runner.recorder)
    else:
        runs = find_spans(spans, "FunctionAgent.run")  # start order = the scenario's agent order
        flags: dict[str, dict[str, bool]] = {}
        unrecorded: list[str] = []
        if scenario.name in MODEL_ONLY:
            flags, unrecorded = model_only(scenario, runner.recorder, MODEL_ONLY[scenario.name])
        meta = {**META, "agent_name_note": NAME_NOTE}
        truth = truth_for(scenario, meta, runner.recorder, runs, flags=flags, unrecorded=unrecorded)
    report(scenario.name, "llamaindex", spans, truth, out=out, toolscore=toolscore)


def handoff_truth(scenario: Scenario, spans: Any, recorder: Recorder) -> dict[str, Any]:
    """The workflow's one run: both agents' calls in model order, named after the root agent."""
    (workflow,) = find_spans(spans, "AgentWorkflow.run")
    per_agent = truth_for(
        scenario, {**META, "notes": HANDOFF_NOTES}, recorder, [workflow, workflow], unrecorded=["handoff"]
    )
    first, second = per_agent["runs"]
    calls = first["calls"] + second["calls"]
    call_agents = {c["call_id"]: run["agent_name"] for run in (first, second) for c in run["calls"]}
    run = {**first, "calls": calls}
    return {**per_agent, "call_agents": call_agents, "runs": [run]}


SCENARIOS_HERE: dict[str, Scenario] = {**SCENARIOS, HANDOFF.name: HANDOFF, UNKNOWN.name: UNKNOWN}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("scenarios", nargs="*", default=list(SCENARIOS_HERE), help="default: all")
    parser.add_argument("--out", type=Path, default=REPO / "tests" / "testdata", help="holds traces/ and truth/")
    parser.add_argument("--toolscore", type=Path, default=REPO / ".venv" / "bin" / "toolscore")
    args = parser.parse_args()
    for name in args.scenarios:
        capture(SCENARIOS_HERE[name], args.out, args.toolscore)
    LOOP.run_until_complete(LOOP.shutdown_asyncgens())
    if blocked():
        print(f"refused outbound connections: {blocked()}")


if __name__ == "__main__":
    main()
