"""Captures of LangGraph `create_react_agent` runs traced by OpenLIT (`openlit.init()`).

`openlit.init()` with its defaults (content capture on; metrics off and an empty price list so that nothing
reaches the network) instruments LangChain (a callback handler added to every callback manager: `invoke_agent`,
`invoke_workflow`, `chat`, `execute_tool` spans), LangGraph (wrappers of `Pregel.invoke`/`ainvoke`/`stream`/
`astream` and of `StateGraph.add_node`/`compile`) and the `openai` client underneath (whose spans the LangChain
handler suppresses while its own chat span is open). The agents are the shared `langgraph_agents.py` graphs
(`create_react_agent` with `ChatOpenAI` against the kit's scripted OpenAI server on 127.0.0.1), as in
`langgraph-openllmetry/`; model calls: Chat Completions, streamed for b and c, the Responses API for i.

The run span of a graph run is the `invoke_workflow <graph name>` span of OpenLIT's LangGraph wrapper of
`Pregel.ainvoke` (`gen_ai.workflow.name`). A graph invoked inside a tool (f's sub-agent) gets none (the wrapper
suppresses itself inside a running graph): its run is the one toolscore infers at the coordinator's tool span
`execute_tool weather_expert`, which holds the sub-agent's tool spans, see NOTES.md.

    /work/venvs/langgraph-openlit/bin/python tests/captures/langgraph-openlit/capture.py [--out DIR] [SCENARIO ...]
"""

from __future__ import annotations

import asyncio
import importlib.metadata
import os
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # tests/captures

os.environ["LANGSMITH_TRACING"] = "false"
os.environ["LANGCHAIN_TRACING_V2"] = "false"
os.environ.setdefault("OPENAI_API_KEY", "sk-scripted-not-a-key")

import openlit_capture
from capture_kit import APP_SPAN_NAME, SCENARIOS, Recorder, Scenario, ScriptedOpenAI, find_span, truth_for

__all__: list[str] = []

FOLDER = "langgraph-openlit"
SCOPE_LANGCHAIN = "openlit.instrumentation.langchain"
SCOPE_LANGGRAPH = "openlit.instrumentation.langgraph"
MODES: dict[str, tuple[bool, bool]] = {
    "b_sequential": (True, False),
    "c_parallel": (True, False),
    "i_parallel_random_ids": (False, True),
}
"""Scenarios whose model calls are streamed (first) or use the Responses API (second); the others: Chat
Completions, not streamed (as in langgraph-openllmetry)."""


def mode_of(name: str) -> Any:
    from langgraph_agents import ModelMode

    streaming, responses_api = MODES.get(name, (False, False))
    return ModelMode(streaming=streaming, responses_api=responses_api)


def run_span(spans: Any, scenario: Scenario, agent_name: str) -> Any:
    """The LangGraph wrapper's `invoke_workflow <graph>` span; for a sub-agent, the tool span that ran it."""
    if agent_name in scenario.sub_agents.values():
        (tool,) = [t for t, sub in scenario.sub_agents.items() if sub == agent_name]
        return find_span(
            spans,
            f"execute_tool {tool}",
            attributes={"gen_ai.operation.name": "execute_tool"},
            where=lambda s: s.instrumentation_scope.name == SCOPE_LANGCHAIN,
        )
    return find_span(
        spans,
        f"invoke_workflow {agent_name}",
        attributes={"gen_ai.operation.name": "invoke_workflow", "gen_ai.workflow.name": agent_name},
        where=lambda s: s.instrumentation_scope.name == SCOPE_LANGGRAPH,
    )


def capture(name: str, scenario: Scenario, exporter: Any, out: Path) -> dict[str, Any]:
    from langgraph_agents import build_graphs, check_mode
    from opentelemetry import trace

    mode = mode_of(name)
    recorder = Recorder()
    exporter.clear()
    with ScriptedOpenAI(scenario.script) as server:
        built = build_graphs(scenario, server.base_url, recorder, mode)
        if len(built.top_level(scenario)) > 1:
            with trace.get_tracer("toolscore.capture").start_as_current_span(APP_SPAN_NAME):
                asyncio.run(built.play(scenario))
        else:
            asyncio.run(built.play(scenario))
        server.assert_consumed()
        check_mode(server, mode)
    built.check(scenario)
    spans = exporter.get_finished_spans()
    if os.environ.get("CAPTURE_DUMP"):
        dump(spans)
    runs = {agent.name: run_span(spans, scenario, agent.name) for agent in scenario.agents}
    truth = truth_for(
        scenario,
        meta(mode),
        recorder,
        runs,
        unrecorded=scenario.sub_agents.keys(),
        agent_names={sub: f"execute_tool {tool}" for tool, sub in scenario.sub_agents.items()},
    )
    if scenario.sub_agents:
        truth["inferred_runs"] = len(scenario.sub_agents)
    openlit_capture.write(out, FOLDER, name, spans, truth)
    return truth


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
                print("  " * depth(s) + f"    {k}={str(v)[:300]}")


def meta(mode: Any) -> dict[str, Any]:
    version = importlib.metadata.version
    return {
        "framework": "langgraph",
        "framework_version": version("langgraph"),
        "instrumentation": (
            f"openlit {version('openlit')} (openlit.init(), capture_message_content=True, metrics off): its "
            f"LangChain callback handler, LangGraph wrappers and openai {version('openai')} instrumentation; "
            f"langchain-core {version('langchain-core')}, langchain-openai {version('langchain-openai')} "
            f"({mode.describe()}), langgraph-prebuilt {version('langgraph-prebuilt')}, "
            f"opentelemetry-sdk {version('opentelemetry-sdk')}"
        ),
        "conventions": (
            "OpenLIT's OTel GenAI spans (LangChain handler: invoke_agent, invoke_workflow, chat, execute_tool; "
            "LangGraph: invoke_workflow, invoke_agent <node>, create_agent)"
        ),
    }


def main() -> None:
    from capture_kit import loopback_only_connections

    refused = loopback_only_connections()
    openlit_capture.main(__doc__.splitlines()[0], FOLDER, SCENARIOS, capture)
    if refused:
        raise SystemExit(f"connections refused (outside the loopback): {refused}")


if __name__ == "__main__":
    main()
