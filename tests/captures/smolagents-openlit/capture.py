"""smolagents `ToolCallingAgent` runs traced by OpenLIT (`openlit.init()`).

The agents are those of `tests/captures/smolagents/capture.py` (the OpenInference capture of the same framework):
`@tool` functions from the kit's recorder, an `OpenAIModel` on the kit's scripted server, `managed_agents` for f,
`stream_outputs=True` for b and i, smolagents' built-in `final_answer` ending every run. Set-up: the shared
`openlit_capture.setup` (content capture on, metrics off, the empty price list).

    /work/venvs/smolagents-openlit/bin/python tests/captures/smolagents-openlit/capture.py [--out DIR] [SCENARIO ...]
"""

from __future__ import annotations

import importlib.metadata
import os
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # tests/captures

import openlit_capture
from capture_kit import APP_SPAN_NAME, SCENARIOS, Agent, Recorder, Scenario, ScriptedOpenAI, find_span, truth_for

__all__: list[str] = []

FOLDER = "smolagents-openlit"
SCOPE = "openlit.instrumentation.smolagents"
FINAL = "final_answer"
STREAMED = {"b_sequential", "i_parallel_random_ids"}
MANAGED_TASK = "What is the weather in Oslo?"


def _agent(
    agent: Agent, server: ScriptedOpenAI, recorder: Recorder, stream: bool, skip: tuple[str, ...] = (), **extra: Any
) -> Any:
    from smolagents import OpenAIModel, ToolCallingAgent, tool

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


def _play(base: Scenario, sc: Scenario, recorder: Recorder) -> None:
    from opentelemetry import trace

    stream = sc.name in STREAMED
    with ScriptedOpenAI(sc.script) as server:
        if sc.sub_agents:
            coordinator, expert = sc.agents
            sub = _agent(expert, server, recorder, stream, description="Answers questions about the weather.")
            top = _agent(coordinator, server, recorder, stream, managed_agents=[sub], skip=tuple(sc.sub_agents))
            answers = [top.run(coordinator.prompt)]
            expected = [base.agent(coordinator.name).final_text]
        elif sc.name == "g_two_runs_one_trace":
            with trace.get_tracer("toolscore.capture").start_as_current_span(APP_SPAN_NAME):
                answers = [_agent(a, server, recorder, stream).run(a.prompt) for a in sc.agents]
            expected = [a.final_text for a in base.agents]
        else:
            answers = [_agent(a, server, recorder, stream).run(a.prompt) for a in sc.agents]
            expected = [a.final_text for a in base.agents]
        server.assert_consumed()
    assert [str(a) for a in answers] == expected, f"{sc.name}: answers {answers} != {expected}"


def capture(name: str, base: Scenario, exporter: Any, out: Path) -> dict[str, Any]:
    sc = base.with_final_tool(FINAL)
    flags: dict[str, dict[str, Any]] = {}
    unrecorded: list[str] = []
    if sc.sub_agents:
        sc = sc.with_call("call_f1", args={"task": MANAGED_TASK})
        unrecorded += list(sc.sub_agents)
    recorder = Recorder()
    exporter.clear()
    _play(base, sc, recorder)
    spans = exporter.get_finished_spans()
    if os.environ.get("CAPTURE_DUMP"):
        dump(spans)
    runs = {a.name: run_span(spans, a.name) for a in sc.agents}
    truth = truth_for(sc, meta(), recorder, runs, final_tool=FINAL, flags=flags, unrecorded=unrecorded)
    openlit_capture.write(out, FOLDER, name, spans, truth)
    return truth


def run_span(spans: Any, agent_name: str) -> Any:
    return find_span(
        spans,
        attributes={"gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": agent_name},
        where=lambda s: s.instrumentation_scope.name == SCOPE and "gen_ai.agent.id" in (s.attributes or {}),
    )


def dump(spans: Any) -> None:
    by_id = {s.context.span_id: s for s in spans}

    def depth(s: Any) -> int:
        d = 0
        while s.parent is not None and s.parent.span_id in by_id:
            s = by_id[s.parent.span_id]
            d += 1
        return d

    for s in sorted(spans, key=lambda s: s.start_time or 0):
        print("  " * depth(s) + f"{s.name} [{s.instrumentation_scope.name}] {s.status.status_code.name}")
        for k, v in (s.attributes or {}).items():
            if k.startswith(("gen_ai.", "error")) and k not in ("gen_ai.input.messages", "gen_ai.system_instructions"):
                print("  " * depth(s) + f"    {k}={str(v)[:200]}")


def meta() -> dict[str, Any]:
    version = importlib.metadata.version
    return {
        "framework": "smolagents",
        "framework_version": version("smolagents"),
        "instrumentation": (
            f"openlit {version('openlit')} (openlit.init(), capture_message_content=True, metrics off): its "
            f"smolagents wrappers and openai {version('openai')} instrumentation; "
            f"opentelemetry-sdk {version('opentelemetry-sdk')}"
        ),
        "conventions": "OpenLIT's OTel GenAI spans (smolagents: invoke_agent, execute_tool; openai: chat <model>)",
    }


def main() -> None:
    from capture_kit import loopback_only_connections

    refused = loopback_only_connections()
    openlit_capture.main(__doc__.splitlines()[0], FOLDER, SCENARIOS, capture)
    if refused:
        raise SystemExit(f"connections refused (outside the loopback): {refused}")


if __name__ == "__main__":
    main()
