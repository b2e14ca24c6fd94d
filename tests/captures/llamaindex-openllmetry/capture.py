"""LlamaIndex captures: FunctionAgent and AgentWorkflow, traced by OpenLLMetry (its llamaindex instrumentation).

llama-index-core 0.14.25 agents (`llama_index.core.agent.workflow`) with the `OpenAI` LLM (from
llama-index-llms-openai) pointed at `ScriptedOpenAI`, tools made with `FunctionTool.from_defaults` from the
kit's recorded functions: the scenarios of `../llamaindex/capture.py` (the shared `llamaindex_agents.py`),
traced as OpenLLMetry's `Traceloop.init()` (traceloop-sdk 0.62.4) traces them, with its instrumentors set on
an OTel SDK TracerProvider directly: `LlamaIndexInstrumentor` (LlamaIndex's dispatcher spans),
`OpenAIInstrumentor` (the model calls: the LlamaIndex span handler makes no span for the `OpenAI` LLM's own
methods and leaves them to it) and `ThreadingInstrumentor`, which `Traceloop.init()` always adds.
TRACELOOP_TRACE_CONTENT=true, TRACELOOP_TELEMETRY=false.

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

import os
import sys
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

from oi_common import guard_network, in_memory_tracing, report  # noqa: E402

guard_network()

from capture_kit import Agent, Recorder, Scenario, find_span, find_spans, truth_for  # noqa: E402
from opentelemetry.instrumentation.llamaindex import LlamaIndexInstrumentor  # noqa: E402
from opentelemetry.instrumentation.openai import OpenAIInstrumentor  # noqa: E402
from opentelemetry.instrumentation.threading import ThreadingInstrumentor  # noqa: E402

__all__: list[str] = []

FOLDER = "llamaindex-openllmetry"
SCOPE = "opentelemetry.instrumentation.llamaindex"
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
# What Traceloop.init() runs for this venv (traceloop/sdk/tracing/tracing.py `init_instrumentations`,
# `init_llama_index_instrumentor`, `init_openai_instrumentor`; ThreadingInstrumentor in `TracerWrapper`).
ThreadingInstrumentor().instrument(tracer_provider=PROVIDER)
LlamaIndexInstrumentor().instrument(tracer_provider=PROVIDER)
OpenAIInstrumentor(enrich_assistant=True).instrument(tracer_provider=PROVIDER)

from llama_index.llms.openai import OpenAI  # noqa: E402
from llamaindex_agents import HANDOFF, UNKNOWN, handoff_truth, main, play  # noqa: E402

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
    recorder = play(scenario, tracer, llm, script)
    PROVIDER.force_flush()
    spans = EXPORTER.get_finished_spans()
    if scenario is HANDOFF:
        workflow = find_span(spans, "AgentWorkflow.workflow")
        truth = handoff_truth(scenario, {**META, "notes": HANDOFF_NOTES}, workflow, recorder)
    else:
        runs = find_spans(spans, where=is_run)  # start order = the scenario's agent order
        flags: dict[str, dict[str, bool]] = {}
        unrecorded: list[str] = []
        if scenario.name in NOT_OFFERED:
            flags, unrecorded = not_offered(scenario, recorder, NOT_OFFERED[scenario.name])
        meta = {**META, "agent_name_note": NAME_NOTE}
        truth = truth_for(scenario, meta, recorder, runs, flags=flags, unrecorded=unrecorded)
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


if __name__ == "__main__":
    main(capture, (__doc__ or "").splitlines()[0])
