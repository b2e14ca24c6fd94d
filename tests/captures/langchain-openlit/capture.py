"""Capture LangChain 1.x `create_agent` runs traced by OpenLIT (`openlit.init()`).

`openlit.init()` with content capture on, metrics off and the empty price list (`../openlit_capture.py`), which
instruments LangChain (its callback handler), LangGraph (the `Pregel` and `StateGraph` wrappers) and the `openai`
client, as for `../langgraph-openlit`. The agents and scenarios are `../langchain_agents.py`'s (a..i and
create_agent's own), with `ChatOpenAI` against the kit's scripted server on 127.0.0.1. Each capture is compared
with `toolscore extract` and the differences printed.

The run span is the `invoke_workflow <agent>` span of OpenLIT's LangGraph wrapper (`gen_ai.workflow.name`; the
`astream` of n_streamed included). A graph invoked inside a tool (f's sub-agent) has none (the wrapper suppresses
itself inside a running graph): its run is inferred at the coordinator's `execute_tool weather_expert` span, as in
`../langgraph-openlit` (see NOTES.md).

    /work/venvs/langchain-v1/bin/python tests/captures/langchain-openlit/capture.py [--out DIR] [SCENARIO ...]
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
from capture_kit import APP_SPAN_NAME, Recorder, Scenario, ScriptedOpenAI, find_span, find_spans

__all__: list[str] = []

FOLDER = "langchain-openlit"
SCOPE_LANGCHAIN = "openlit.instrumentation.langchain"
SCOPE_LANGGRAPH = "openlit.instrumentation.langgraph"
REPO = Path(__file__).resolve().parents[3]
NOT_WRITTEN = {
    "k_structured_output": (
        "OpenLIT records no node output: the only trace of create_agent answering the WeatherReport call itself is "
        "the ToolMessage repr in the LangChain root chain's gen_ai.workflow.output, which toolscore does not read "
        "yet, so the call comes out as a model-only call of the agent (see NOTES.md)"
    ),
    "f_agent_as_tool": (
        "the coordinator's chat spans are never ended, so never exported (OpenLIT's on_llm_end fails under ainvoke "
        "and a graph named without 'agent' has no root chain span to end them): the capture holds spans whose "
        "parent is missing, which the capture files must not (tests/test_sources.py); toolscore reads its calls right "
        "and flags the coordinator's run incomplete (no model span of its own)"
    ),
}
"""Scenarios not written into tests/testdata, and why (`capture.py --out DIR <scenario>` captures one anyway)."""


def run_span(spans: Any, scenario: Scenario, agent_name: str) -> Any:
    """The LangGraph wrapper's `invoke_workflow <agent>` span; for a sub-agent, the tool span that ran it."""
    if agent_name in scenario.sub_agents.values():
        (tool,) = [t for t, sub in scenario.sub_agents.items() if sub == agent_name]
        return find_span(
            spans,
            f"execute_tool {tool}",
            attributes={"gen_ai.operation.name": "execute_tool"},
            where=lambda s: s.instrumentation_scope.name == SCOPE_LANGCHAIN,
        )
    found = find_spans(
        spans,
        prefix=f"invoke_workflow {agent_name}",
        attributes={"gen_ai.operation.name": "invoke_workflow", "gen_ai.workflow.name": agent_name},
        where=lambda s: s.instrumentation_scope.name == SCOPE_LANGGRAPH,
    )
    # `astream` gives two, the second inside the first (see NOTES.md): the run is the innermost, the outer its layer
    inner = [s for s in found if not any(o.parent is not None and o.parent.span_id == s.context.span_id for o in found)]
    if len(inner) != 1:
        raise LookupError(f"{agent_name}: {len(found)} invoke_workflow spans, {len(inner)} innermost")
    return inner[0]


def meta(name: str) -> dict[str, Any]:
    from langchain_agents import mode_of

    version = importlib.metadata.version
    return {
        "framework": "langchain",
        "framework_version": version("langchain"),
        "instrumentation": (
            f"openlit {version('openlit')} (openlit.init(), capture_message_content=True, metrics off): its "
            f"LangChain callback handler, LangGraph wrappers and openai {version('openai')} instrumentation; "
            f"langchain.agents.create_agent, langgraph {version('langgraph')}, langchain-core "
            f"{version('langchain-core')}, langchain-openai {version('langchain-openai')} "
            f"({mode_of(name).describe()}), opentelemetry-sdk {version('opentelemetry-sdk')}"
        ),
        "conventions": (
            "OpenLIT's OTel GenAI spans (LangChain handler: invoke_agent, invoke_workflow, chat, execute_tool; "
            "LangGraph: invoke_workflow, invoke_agent <node>, create_agent)"
        ),
    }


def capture(name: str, scenario: Scenario, exporter: Any, out: Path) -> dict[str, Any]:
    from langchain_agents import STREAMED, build_agents, check_mode, mode_of, truth_of
    from oi_common import compare_with_extract
    from opentelemetry import trace

    if name in NOT_WRITTEN and out.resolve() == (REPO / "tests" / "testdata").resolve():
        print(f"not written into tests/testdata: {name}: {NOT_WRITTEN[name]}")
        return {}
    mode = mode_of(name)
    recorder = Recorder()
    exporter.clear()
    with ScriptedOpenAI(scenario.script) as server:
        built = build_agents(scenario, server, recorder, mode)
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
    names = {sub: f"execute_tool {tool}" for tool, sub in scenario.sub_agents.items()}
    truth = truth_of(scenario, meta(name), recorder, runs, agent_names=names)
    if scenario.sub_agents:
        truth["inferred_runs"] = len(scenario.sub_agents)
    if name in STREAMED:
        truth["skipped"] = {"run_layer": len(built.top_level(scenario))}
    openlit_capture.write(out, FOLDER, name, spans, truth)
    pb = out / "traces" / FOLDER / f"{name}.pb"
    for problem in compare_with_extract(pb, truth, REPO / ".venv" / "bin" / "toolscore"):
        print(f"  extract differs: {problem}")
    return truth


def dump(spans: Any) -> None:
    """Print the span tree with each span's scope, status and GenAI attributes (CAPTURE_DUMP=1)."""
    by_id = {s.context.span_id: s for s in spans}

    def depth(s: Any) -> int:
        d = 0
        while s.parent is not None and s.parent.span_id in by_id:
            s, d = by_id[s.parent.span_id], d + 1
        return d

    for s in sorted(spans, key=lambda s: s.start_time or 0):
        print("  " * depth(s) + f"{s.name} [{s.instrumentation_scope.name}] {s.status.status_code.name}")
        for k, v in (s.attributes or {}).items():
            if k.startswith(("gen_ai.tool", "gen_ai.workflow.name", "gen_ai.agent.name", "error")):
                print("  " * depth(s) + f"    {k}={str(v)[:200]}")


def main() -> None:
    from capture_kit import loopback_only_connections

    refused = loopback_only_connections()
    from langchain_agents import all_scenarios

    openlit_capture.main((__doc__ or "").splitlines()[0], FOLDER, all_scenarios(), capture)
    if refused:
        raise SystemExit(f"connections refused (outside the loopback): {refused}")


if __name__ == "__main__":
    main()
