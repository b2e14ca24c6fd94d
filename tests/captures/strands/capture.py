"""Capture Strands Agents runs traced by Strands' own OpenTelemetry instrumentation.

Run from the repository root with the Strands venv (see requirements.txt beside this file):

    /work/venvs/strands/bin/python tests/captures/strands/capture.py [SCENARIO ...]
    /work/venvs/strands/bin/python tests/captures/strands/capture.py --latest [SCENARIO ...]

Each canonical scenario (tests/captures/capture_scenarios.py) runs against `ScriptedOpenAI` through
Strands' `OpenAIModel` (`client_args={"base_url": ...}`; Strands always streams chat completions),
with the tools made by Strands' `@tool` decorator; Strands' tracer (`strands.telemetry.tracer`, from
the global tracer provider) writes to the OTel SDK's in-memory exporter. Captures go to
tests/testdata/traces/strands/ (truths in tests/testdata/truth/strands/).

Strands records tool arguments and results with no setting at all (span events, the v1.36 form);
`--latest` sets `OTEL_SEMCONV_STABILITY_OPT_IN=gen_ai_latest_experimental,gen_ai_tool_definitions`
(arguments in `gen_ai.tool.call.arguments`, messages in `gen_ai.client.inference.operation.details`
events, the tool definitions on the agent span) and writes into traces/strands-latest/ instead.

Strands-specific shapes captured here:
- e_tool_error_retry: Strands turns a tool's exception into an error tool result for the model
  (status `error`), so the model retries in the same run.
- f_agent_as_tool passes the sub-agent itself in the coordinator's tools (Strands' agents-as-tools,
  `Agent.as_tool()`): the tool is named after the agent and takes `{"input": ...}`.
- j_swarm_handoff (not canonical): a `Swarm` of two agents; the entry agent's model calls Strands'
  built-in `handoff_to_agent(agent_name, message)`, then the other agent runs (the handoff).
"""

from __future__ import annotations

import os
import sys
from importlib.metadata import version
from pathlib import Path
from typing import Any

LATEST = "--latest" in sys.argv
if LATEST:
    os.environ["OTEL_SEMCONV_STABILITY_OPT_IN"] = "gen_ai_latest_experimental,gen_ai_tool_definitions"

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
from opentelemetry import trace  # noqa: E402
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider  # noqa: E402
from opentelemetry.sdk.trace.export import SimpleSpanProcessor  # noqa: E402
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter  # noqa: E402

EXPORTER = InMemorySpanExporter()
PROVIDER = TracerProvider()
PROVIDER.add_span_processor(SimpleSpanProcessor(EXPORTER))
trace.set_tracer_provider(PROVIDER)

from strands import Agent as StrandsAgent  # noqa: E402
from strands import tool  # noqa: E402
from strands.models.openai import OpenAIModel  # noqa: E402
from strands.multiagent import Swarm  # noqa: E402

ROOT = HERE.parents[2]
FOLDER = "strands-latest" if LATEST else "strands"
TRACES = ROOT / "tests" / "testdata" / "traces" / FOLDER
TRUTHS = ROOT / "tests" / "testdata" / "truth" / FOLDER

META = {
    "framework": "strands-agents",
    "framework_version": version("strands-agents"),
    "instrumentation": f"strands-agents {version('strands-agents')} own telemetry (scope strands.telemetry.tracer)",
    "conventions": "OTel GenAI semantic conventions, "
    + (
        "latest form (OTEL_SEMCONV_STABILITY_OPT_IN=gen_ai_latest_experimental,gen_ai_tool_definitions)"
        if LATEST
        else "default form (v1.36 span events gen_ai.tool.message / gen_ai.choice)"
    ),
}


HANDOFF_MESSAGE = "Tell the user whether to pack a coat for Oslo."
SWARM = Scenario(
    "j_swarm_handoff",
    "Strands only: a Swarm of two agents; the entry agent hands off with Strands' built-in handoff_to_agent "
    "tool and the other agent calls its own tool. Two runs under the swarm's span.",
    (
        Agent(
            name="travel_coordinator",
            prompt="Should I pack a coat for Oslo?",
            tools=(),
            turns=(
                Turn(
                    [
                        ToolCall(
                            "call_j1", "handoff_to_agent", {"agent_name": "weather_expert", "message": HANDOFF_MESSAGE}
                        )
                    ]
                ),
                Turn(text="Handing over to the weather expert."),
            ),
            final_call_id="call_j9",
        ),
        Agent(
            name="weather_expert",
            prompt=HANDOFF_MESSAGE,
            tools=("get_weather",),
            turns=(
                Turn([ToolCall("call_j2", "get_weather", {"city": "Oslo"})]),
                Turn(text="It is 4C in Oslo: pack a coat."),
            ),
            final_call_id="call_j8",
        ),
    ),
)


def _agent(agent: Agent, server: ScriptedOpenAI, tools: list[Any], **extra: Any) -> StrandsAgent:
    """A Strands Agent as a user writes one: `@tool` functions and an `OpenAIModel` on the server."""
    model = OpenAIModel(client_args={"base_url": server.base_url, "api_key": "scripted"}, model_id=agent.model)
    return StrandsAgent(
        name=agent.name,
        model=model,
        system_prompt=agent.instructions,
        tools=tools,
        callback_handler=None,
        **extra,
    )


def _tools(agent: Agent, recorder: Recorder) -> list[Any]:
    return [tool(fn) for fn in recorder.tools(agent.tools)]


def _play(sc: Scenario, recorder: Recorder) -> list[str]:
    """Run the scenario's agents as a Strands user would; returns their answers."""
    with ScriptedOpenAI(sc.script) as server:
        if sc.name == SWARM.name:
            coordinator, expert = sc.agents
            top = _agent(coordinator, server, [], description="Plans trips.")
            sub = _agent(expert, server, _tools(expert, recorder), description="Answers weather questions.")
            result = Swarm([top, sub], entry_point=top)(coordinator.prompt)
            assert [n.node_id for n in result.node_history] == [coordinator.name, expert.name], result.node_history
            answers = [str(result.results[expert.name].result)]
        elif sc.sub_agents:
            coordinator, expert = sc.agents
            sub = _agent(expert, server, _tools(expert, recorder), description="Answers weather questions.")
            answers = [str(_agent(coordinator, server, [sub])(coordinator.prompt))]
        elif sc.name == "g_two_runs_one_trace":
            with PROVIDER.get_tracer("capture").start_as_current_span(APP_SPAN_NAME):
                answers = [str(_agent(a, server, _tools(a, recorder))(a.prompt)) for a in sc.agents]
        else:
            answers = [str(_agent(a, server, _tools(a, recorder))(a.prompt)) for a in sc.agents]
        server.assert_consumed()
    return answers


def _run_span(spans: list[ReadableSpan], agent: Agent) -> ReadableSpan:
    """The run's span: `invoke_agent <name>` (gen_ai.agent.name = the agent's name)."""
    return find_span(spans, f"invoke_agent {agent.name}", attributes={"gen_ai.operation.name": "invoke_agent"})


def capture(name: str) -> None:
    sc = SWARM if name == SWARM.name else SCENARIOS[name]
    recorder = Recorder()
    EXPORTER.clear()
    answers = _play(sc, recorder)
    if sc.name == SWARM.name:
        expected = [sc.agents[1].final_text]
    else:
        expected = [sc.agents[0].final_text] if sc.sub_agents else [a.final_text for a in sc.agents]
    assert [a.strip() for a in answers] == expected, f"{sc.name}: answers {answers} != {expected}"
    PROVIDER.force_flush()
    spans = list(EXPORTER.get_finished_spans())
    runs = {a.name: _run_span(spans, a) for a in sc.agents}
    truth = truth_for(sc, META, recorder, runs, unrecorded=[*sc.sub_agents, "handoff_to_agent"])
    written = write_capture(TRACES, TRUTHS, sc.name, spans, truth)
    print(
        f"{FOLDER}/{sc.name}: {len(spans)} spans, {[len(r['calls']) for r in truth['runs']]} calls per run -> "
        f"{[p.name for p in written] or 'kept'}"
    )


def main(argv: list[str]) -> None:
    for name in [a for a in argv if a != "--latest"] or [*SCENARIOS, SWARM.name]:
        capture(name)


if __name__ == "__main__":
    main(sys.argv[1:])
