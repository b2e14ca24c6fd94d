"""Capture smolagents `ToolCallingAgent` runs traced by openinference-instrumentation-smolagents.

Run from the repository root with the smolagents venv (see requirements.txt beside this file):

    /work/venvs/smolagents/bin/python tests/captures/smolagents/capture.py [SCENARIO ...]

Each canonical scenario (tests/captures/capture_scenarios.py) runs against `ScriptedOpenAI` through
smolagents' own `OpenAIModel` and `@tool` decorator; the spans go to the OTel SDK's in-memory
exporter and are written to tests/testdata/traces/smolagents/ with the truth in
tests/testdata/truth/smolagents/. smolagents ends every run with its built-in `final_answer` tool, a
real traced call, so each final text of the script becomes a `final_answer` call (`final: true`).

smolagents-specific shapes captured here:
- f_agent_as_tool uses `managed_agents=[...]`: the coordinator's model calls the sub-agent by name
  with `{"task": ...}`; smolagents runs it without `Tool.__call__`, so there is no TOOL span, only the
  sub-agent's own AGENT span under the coordinator's step (truth: `model_only: true`).
- j_invalid_arguments (not canonical): the model calls a tool with an argument the tool does not
  take; smolagents rejects it before calling the tool, so that call has no TOOL span either.
b_sequential and i_parallel_random_ids stream the model's answers (`stream_outputs=True`).
The committed i_parallel_random_ids comes from a run in which the thread pool ran its two get_weather
calls out of model order (Madrid's TOOL span starts before Berlin's): rare (about one run in 35 here),
so a regenerated capture usually has them in order; the script says which it got.
"""

from __future__ import annotations

import sys
from importlib.metadata import version
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))

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
    write_capture,
)
from openinference.instrumentation.smolagents import SmolagentsInstrumentor  # noqa: E402
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider  # noqa: E402
from opentelemetry.sdk.trace.export import SimpleSpanProcessor  # noqa: E402
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter  # noqa: E402

ROOT = HERE.parents[2]
TRACES = ROOT / "tests" / "testdata" / "traces" / "smolagents"
TRUTHS = ROOT / "tests" / "testdata" / "truth" / "smolagents"

META = {
    "framework": "smolagents",
    "framework_version": version("smolagents"),
    "instrumentation": "openinference-instrumentation-smolagents "
    + version("openinference-instrumentation-smolagents"),
    "conventions": "OpenInference semantic conventions (openinference.span.kind, tool.name, input.value, llm.*)",
}
FINAL = "final_answer"
STREAMED = {"b_sequential", "i_parallel_random_ids"}
MANAGED_TASK = "What is the weather in Oslo?"

EXPORTER = InMemorySpanExporter()
PROVIDER = TracerProvider()
PROVIDER.add_span_processor(SimpleSpanProcessor(EXPORTER))
SmolagentsInstrumentor().instrument(tracer_provider=PROVIDER)

from smolagents import OpenAIModel, ToolCallingAgent, tool  # noqa: E402

INVALID_ARGUMENTS = Scenario(
    "j_invalid_arguments",
    "smolagents only: the model passes an argument the tool does not take; smolagents refuses the call "
    "before running the tool (no TOOL span), and the model calls again with the right argument.",
    (
        Agent(
            name="strict_agent",
            prompt="What is the weather in Rome?",
            tools=("get_weather",),
            turns=(
                Turn([ToolCall("call_j1", "get_weather", {"town": "Rome"})]),
                Turn([ToolCall("call_j2", "get_weather", {"city": "Rome"})]),
                Turn(text="It is 26C in Rome."),
            ),
            final_call_id="call_j9",
        ),
    ),
)


def _agent(
    agent: Agent, server: ScriptedOpenAI, recorder: Recorder, stream: bool, skip: tuple[str, ...] = (), **extra: Any
) -> ToolCallingAgent:
    """A ToolCallingAgent as a user writes one: `@tool` functions and an `OpenAIModel` on the server
    (`skip`: tool names that are managed agents, not functions)."""
    tools = [tool(fn) for fn in recorder.tools([t for t in agent.tools if t not in skip])]
    model = OpenAIModel(model_id=agent.model, api_base=server.base_url, api_key="scripted")
    return ToolCallingAgent(
        tools=tools,
        model=model,
        name=agent.name,
        instructions=agent.instructions,
        stream_outputs=stream,
        verbosity_level=0,
        **extra,
    )


def _run_span(spans: list[ReadableSpan], agent: Agent) -> ReadableSpan:
    """The run's AGENT span, `<agent name>.run` (the instrumentation names it after `name`)."""
    return find_span(spans, f"{agent.name}.run", attributes={"openinference.span.kind": "AGENT"})


def _play(base: Scenario, sc: Scenario, recorder: Recorder) -> list[ReadableSpan]:
    """Run the scenario's agents as a smolagents user would; returns the spans they made."""
    EXPORTER.clear()
    stream = sc.name in STREAMED
    with ScriptedOpenAI(sc.script) as server:
        if sc.sub_agents:
            coordinator, expert = sc.agents
            sub = _agent(expert, server, recorder, stream, description="Answers questions about the weather.")
            top = _agent(coordinator, server, recorder, stream, managed_agents=[sub], skip=tuple(sc.sub_agents))
            answers = [top.run(coordinator.prompt)]
            expected = [base.agent(coordinator.name).final_text]
            # The sub-agent's final answer comes back inside the report smolagents hands the coordinator.
            seen = [str(getattr(step, "observations", "")) for step in top.memory.steps]
            assert any(base.agent(expert.name).final_text in o for o in seen), f"coordinator observed {seen}"
        elif sc.name == "g_two_runs_one_trace":
            with PROVIDER.get_tracer("capture").start_as_current_span(APP_SPAN_NAME):
                answers = [_agent(a, server, recorder, stream).run(a.prompt) for a in sc.agents]
            expected = [a.final_text for a in base.agents]
        else:
            answers = [_agent(a, server, recorder, stream).run(a.prompt) for a in sc.agents]
            expected = [a.final_text for a in base.agents]
        server.assert_consumed()
    assert [str(a) for a in answers] == expected, f"{sc.name}: answers {answers} != {expected}"
    PROVIDER.force_flush()
    return list(EXPORTER.get_finished_spans())


def capture(name: str) -> None:
    base = INVALID_ARGUMENTS if name == INVALID_ARGUMENTS.name else SCENARIOS[name]
    sc = base.with_final_tool(FINAL)
    flags: dict[str, dict[str, Any]] = {}
    unrecorded: list[str] = []
    if sc.sub_agents:
        # smolagents calls a managed agent with {"task": ...} (its own schema), never through a tool.
        sc = sc.with_call("call_f1", args={"task": MANAGED_TASK})
        flags["call_f1"] = {"model_only": True}
        unrecorded += list(sc.sub_agents)
    if sc.name == INVALID_ARGUMENTS.name:
        flags["call_j1"] = {"model_only": True, "error": True}
        unrecorded.append("get_weather")  # checked below: the tool received only the valid call
    recorder = Recorder()
    spans = _play(base, sc, recorder)
    if any(len(t.calls) > 1 for a in sc.agents for t in a.turns):
        print(f"{sc.name}: each tool received its calls in model order: {_ran_in_model_order(sc, recorder)}")
    runs = {a.name: _run_span(spans, a) for a in sc.agents}
    truth = truth_for(sc, META, recorder, runs, final_tool=FINAL, flags=flags, unrecorded=unrecorded)
    if sc.name == INVALID_ARGUMENTS.name:
        got = [(c.name, c.args, c.error) for c in recorder.calls]
        assert got == [("get_weather", {"city": "Rome"}, None)], f"{sc.name}: the tool received {got}"
    written = write_capture(TRACES, TRUTHS, sc.name, spans, truth)
    print(
        f"{sc.name}: {len(spans)} spans, {[len(r['calls']) for r in truth['runs']]} calls per run -> "
        f"{[p.name for p in written] or 'kept'}"
    )


def _ran_in_model_order(sc: Scenario, recorder: Recorder) -> bool:
    """Whether each tool received its calls in the model's order. smolagents runs the calls of one
    model response in a thread pool, so the order varies from run to run; what matters to a reader
    is two calls of the same tool (i_parallel_random_ids: get_weather Berlin, then Madrid) swapping."""
    issued = [(c.name, dict(c.args)) for a in sc.agents for c in a.calls if c.name in recorder.signatures]
    received = [(c.name, c.args) for c in recorder.calls]
    return all([i for i in issued if i[0] == n] == [r for r in received if r[0] == n] for n in recorder.signatures)


def main(argv: list[str]) -> None:
    names = argv or [*SCENARIOS, INVALID_ARGUMENTS.name]
    for name in names:
        capture(name)


if __name__ == "__main__":
    main(sys.argv[1:])
