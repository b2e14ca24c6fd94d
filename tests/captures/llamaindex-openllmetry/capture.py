"""LlamaIndex captures: FunctionAgent and AgentWorkflow, traced by OpenLLMetry (its llamaindex instrumentation).

llama-index-core 0.14.25 agents (`llama_index.core.agent.workflow`) with the `OpenAI` LLM (from
llama-index-llms-openai) pointed at `ScriptedOpenAI`, tools made with `FunctionTool.from_defaults` from the
kit's recorded functions: the scenarios of `../llamaindex/capture.py`, traced as OpenLLMetry's
`Traceloop.init()` (traceloop-sdk 0.62.4) traces them, with its instrumentors set on an OTel SDK
TracerProvider directly: `LlamaIndexInstrumentor` (LlamaIndex's dispatcher spans), `OpenAIInstrumentor`
(the model calls: the LlamaIndex span handler makes no span for the `OpenAI` LLM's own methods and leaves
them to it) and `ThreadingInstrumentor`, which `Traceloop.init()` always adds. TRACELOOP_TRACE_CONTENT=true,
TRACELOOP_TELEMETRY=false.

The `OpenAI` LLM checks its model name against OpenAI's list (context window, function calling); the kit's
`scripted-<agent>` names are served here under the fine-tuned-model form `ft:gpt-4o-mini:toolscore:<name>`,
which it accepts as gpt-4o-mini's. FunctionAgent streams by default (`astream_chat`); b_sequential runs with
`streaming=False` (`achat`) so both model span shapes are captured.

- a..e, h, i: one `FunctionAgent`, `await agent.run(user_msg=...)`. Run: the root span
  `FunctionAgent.workflow` (traceloop.span.kind=workflow), see NOTES.md.
- f_agent_as_tool: the coordinator's tool `weather_expert` awaits a second FunctionAgent's `run`; that run is
  the span `run.task` (kind task) under the tool's `FunctionTool.task` span.
- f_handoff: an `AgentWorkflow` of triage_agent and weather_expert, the built-in `handoff` tool. One run.
- model_only_unknown_tool: the model calls a tool it was not offered; the `call_tool` step answers
  "Tool get_forecast not found" (a call_tool step span with `tool.name`, no tool ran).
- g_two_runs_one_trace: two FunctionAgents one after the other under the application span `conversation`.

    /work/venvs/llamaindex-openllmetry/bin/python tests/captures/llamaindex-openllmetry/capture.py \
        [--out DIR] [SCENARIO ...]

Writes tests/testdata/{traces,truth}/llamaindex-openllmetry/ unless --out is given, then prints how
`toolscore extract` differs from each truth.
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

for _name, _value in {
    "OPENAI_API_KEY": "sk-scripted",
    "TRACELOOP_TRACE_CONTENT": "true",
    "TRACELOOP_TELEMETRY": "false",
}.items():
    os.environ[_name] = _value
HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
sys.path.insert(0, str(HERE.parent / "llamaindex"))

from oi_common import REPO, blocked, guard_network, in_memory_tracing, report  # noqa: E402

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
    find_span,
    find_spans,
    truth_for,
)
from opentelemetry.instrumentation.llamaindex import LlamaIndexInstrumentor  # noqa: E402
from opentelemetry.instrumentation.openai import OpenAIInstrumentor  # noqa: E402
from opentelemetry.instrumentation.threading import ThreadingInstrumentor  # noqa: E402

__all__: list[str] = []

FOLDER = "llamaindex-openllmetry"
SCOPE = "opentelemetry.instrumentation.llamaindex"
NON_STREAMED = {"b_sequential"}
META = {
    "framework": "llamaindex",
    "framework_version": version("llama-index-core"),
    "instrumentation": (
        f"opentelemetry-instrumentation-llamaindex {version('opentelemetry-instrumentation-llamaindex')} + "
        f"opentelemetry-instrumentation-openai {version('opentelemetry-instrumentation-openai')} (OpenLLMetry, "
        f"as traceloop-sdk 0.62.4 Traceloop.init() sets them up); llama-index-llms-openai "
        f"{version('llama-index-llms-openai')}, openai {version('openai')}, "
        f"opentelemetry-sdk {version('opentelemetry-sdk')}"
    ),
    "conventions": (
        "OpenLLMetry/traceloop: LlamaIndex dispatcher spans <Class>.workflow / <Class>.task / run.task "
        "(traceloop.span.kind, traceloop.entity.*; call_tool steps with tool.name, tool.arguments), "
        "openai.chat spans with gen_ai.output.messages"
    ),
}
NAME_NOTE = (
    "The run span (<Workflow class>.workflow at the root, run.task when nested) carries no agent name; it is "
    'in the traceloop.entity.output JSON of the run\'s steps: "current_agent_name": "<name>" (init_run\'s '
    "AgentInput, setup_agent's AgentSetup, parse_agent_output's AgentOutput...)."
)

PROVIDER, EXPORTER = in_memory_tracing("capture-llamaindex-openllmetry")
LOOP = asyncio.new_event_loop()
"""One event loop for every scenario, never closed: the OpenAI async clients the agents leave behind
close their connections when collected, which fails loudly on a loop `asyncio.run` already closed."""
# What Traceloop.init() runs for this venv (traceloop/sdk/tracing/tracing.py `init_instrumentations`,
# `init_llama_index_instrumentor`, `init_openai_instrumentor`; ThreadingInstrumentor in `TracerWrapper`).
ThreadingInstrumentor().instrument(tracer_provider=PROVIDER)
LlamaIndexInstrumentor().instrument(tracer_provider=PROVIDER)
OpenAIInstrumentor(enrich_assistant=True).instrument(tracer_provider=PROVIDER)

from llama_index.core.agent.workflow import AgentWorkflow, FunctionAgent  # noqa: E402
from llama_index.core.tools import FunctionTool  # noqa: E402
from llama_index.llms.openai import OpenAI  # noqa: E402

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
NOT_OFFERED = {UNKNOWN.name: "call_mu1"}
"""Per scenario, the call of a tool the agent was not offered: its call_tool step span records it (tool.name,
tool.arguments, an error output), no tool ran."""
HANDOFF_NOTES = [
    "One run for the whole AgentWorkflow.workflow span: every step span of both agents is its direct child, "
    "so no span bounds one agent's part; the workflow keeps one chat history across the handoff.",
    'agent_name is the root agent (init_run\'s output {"input": [...], "current_agent_name": "triage_agent"}).',
    "Who made each call (call_agents) is in the steps' outputs: parse_agent_output's AgentOutput JSON "
    "(current_agent_name, tool_calls[].tool_id).",
    'The handoff call_tool step\'s tool.arguments are the model\'s {"to_agent", "reason"}: the workflow '
    "Context that LlamaIndex adds before calling the tool is not in them.",
]


def model_name(scripted: str) -> str:
    """The model name `OpenAI` is given and the server serves `scripted`'s turns under (see the docstring)."""
    return f"ft:gpt-4o-mini:toolscore:{scripted}"


def llm(spec: Agent, base_url: str) -> OpenAI:
    return OpenAI(model=model_name(spec.model), api_base=base_url, api_key="sk-scripted")


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


def is_run(span: Any) -> bool:
    """A workflow's run: the root dispatcher span `<Workflow class>.workflow`, or `run.task` nested."""
    attrs = span.attributes or {}
    return span.instrumentation_scope.name == SCOPE and (
        attrs.get("traceloop.span.kind") == "workflow" or span.name == "run.task"
    )


def capture(scenario: Scenario, out: Path, toolscore: Path) -> None:
    """Run one scenario, write its capture and truth, print how toolscore's extraction differs."""
    EXPORTER.clear()
    tracer = PROVIDER.get_tracer("capture-llamaindex-openllmetry")
    script = {model_name(model): turns for model, turns in scenario.script.items()}
    with ScriptedOpenAI(script) as server:
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
        runs = find_spans(spans, where=is_run)  # start order = the scenario's agent order
        flags: dict[str, dict[str, bool]] = {}
        unrecorded: list[str] = []
        if scenario.name in NOT_OFFERED:
            flags, unrecorded = not_offered(scenario, runner.recorder, NOT_OFFERED[scenario.name])
        meta = {**META, "agent_name_note": NAME_NOTE}
        truth = truth_for(scenario, meta, runner.recorder, runs, flags=flags, unrecorded=unrecorded)
    truth["inferred_runs"] = sum(1 for run in truth["runs"] if inferred(spans, run["agent_span_id"]))
    report(scenario.name, FOLDER, spans, truth, out=out, toolscore=toolscore)


def inferred(spans: Any, span_id: str) -> bool:
    """Whether the run at `span_id` is one toolscore infers (a root `.workflow` span, see NOTES.md)."""
    span = find_span(spans, where=lambda s: format(s.context.span_id, "016x") == span_id)
    return (span.attributes or {}).get("traceloop.span.kind") == "workflow"


def not_offered(scenario: Scenario, recorder: Recorder, call_id: str) -> tuple[dict[str, dict[str, bool]], list[str]]:
    """`truth_for`'s flags for a call of a tool the agent was not offered (an error; its step span records it),
    after checking that the tools received every other call, in order, and not that one."""
    calls = [c for agent in scenario.agents for c in agent.calls]
    reached = [(c.name, recorder.full_args(c.name, dict(c.args))) for c in calls if c.id != call_id]
    received = [(r.name, r.full_args) for r in recorder.calls]
    if received != reached:
        raise AssertionError(f"{scenario.name}: the tools received {received}, expected {reached}")
    return {call_id: {"error": True}}, sorted({c.name for c in calls})


def handoff_truth(scenario: Scenario, spans: Any, recorder: Recorder) -> dict[str, Any]:
    """The workflow's one run: both agents' calls in model order, named after the root agent."""
    workflow = find_span(spans, "AgentWorkflow.workflow")
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
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
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
