"""LlamaIndex captures: FunctionAgent and AgentWorkflow, traced by openinference-instrumentation-llama-index.

llama-index-core 0.14.25 agents (`llama_index.core.agent.workflow`) with `OpenAILike` (from
llama-index-llms-openai-like) pointed at `ScriptedOpenAI`, tools made with `FunctionTool.from_defaults`
from the kit's recorded functions. FunctionAgent streams by default (`astream_chat`); b_sequential
runs with `streaming=False` (`achat`) so both model span shapes are captured. The agents, scenarios and
runner are the shared `llamaindex_agents.py` (with `llamaindex-openllmetry/`); this script installs the
instrumentation, gives the LLM and picks the run spans. Scenario mapping:

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

import os
import sys
from importlib.metadata import version
from pathlib import Path

os.environ.setdefault("OPENAI_API_KEY", "sk-scripted")
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from oi_common import guard_network, in_memory_tracing, model_only, report

guard_network()

from capture_kit import Agent, Scenario, find_spans, truth_for  # noqa: E402
from openinference.instrumentation.llama_index import LlamaIndexInstrumentor  # noqa: E402

__all__: list[str] = []

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
LlamaIndexInstrumentor().instrument(tracer_provider=PROVIDER)

from llama_index.llms.openai_like import OpenAILike  # noqa: E402
from llamaindex_agents import HANDOFF, UNKNOWN, handoff_truth, main, play  # noqa: E402

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


def capture(scenario: Scenario, out: Path, toolscore: Path) -> None:
    """Run one scenario, write its capture and truth, print how toolscore's extraction differs."""
    EXPORTER.clear()
    tracer = PROVIDER.get_tracer("capture-llamaindex")
    recorder = play(scenario, tracer, llm)
    PROVIDER.force_flush()
    spans = EXPORTER.get_finished_spans()
    if scenario is HANDOFF:
        (workflow,) = find_spans(spans, "AgentWorkflow.run")
        truth = handoff_truth(scenario, {**META, "notes": HANDOFF_NOTES}, workflow, recorder)
    else:
        runs = find_spans(spans, "FunctionAgent.run")  # start order = the scenario's agent order
        flags: dict[str, dict[str, bool]] = {}
        unrecorded: list[str] = []
        if scenario.name in MODEL_ONLY:
            flags, unrecorded = model_only(scenario, recorder, MODEL_ONLY[scenario.name])
        meta = {**META, "agent_name_note": NAME_NOTE}
        truth = truth_for(scenario, meta, recorder, runs, flags=flags, unrecorded=unrecorded)
    report(scenario.name, "llamaindex", spans, truth, out=out, toolscore=toolscore)


if __name__ == "__main__":
    main(capture, __doc__.splitlines()[0])
