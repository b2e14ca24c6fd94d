"""Capture LangGraph `create_react_agent` runs traced by OpenInference's LangChain instrumentation.

Run from the framework venv (see requirements.txt), from anywhere:

    /work/venvs/langgraph-openinference/bin/python tests/captures/langgraph-openinference/capture.py [scenario ...]

The canonical scenarios (a..i) plus `d_no_tool_coordinator` are played by `create_react_agent`
graphs with `ChatOpenAI` against the kit's scripted OpenAI server, traced by
`openinference-instrumentation-langchain` into the OTel SDK's in-memory exporter. Captures go to
tests/testdata/traces/langgraph-openinference/, truths (from the script, checked against what the
tools received) to tests/testdata/truth/langgraph-openinference/.

The question these captures answer is which span is the run when a graph calls no tool. OpenInference
gives a span the kind AGENT when its run name contains "agent" (any case), CHAIN otherwise, so the
graph's root span is AGENT for `smalltalk_agent` (d_no_tool) and CHAIN for `coordinator`
(d_no_tool_coordinator, the same script under a name without "agent"); in both, the model node's
span, named `agent`, is AGENT too. The run span in the truth is the graph's root span, named after
the graph (`create_react_agent(name=...)`), whatever its kind.
"""

from __future__ import annotations

import asyncio
import os
import sys
from dataclasses import replace
from importlib.metadata import version
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[2]
sys.path.insert(0, str(HERE.parent))

for _name, _value in {
    "LANGSMITH_TRACING": "false",
    "LANGCHAIN_TRACING_V2": "false",
    "OPENAI_API_KEY": "sk-scripted-not-a-key",
}.items():
    os.environ[_name] = _value

from capture_kit import (  # noqa: E402
    APP_SPAN_NAME,
    SCENARIOS,
    Recorder,
    Scenario,
    ScriptedOpenAI,
    find_span,
    scenario,
    truth_for,
    write_capture,
)
from langgraph_agents import ModelMode, build_graphs, check_mode  # noqa: E402
from openinference.instrumentation.langchain import LangChainInstrumentor  # noqa: E402
from opentelemetry.sdk.resources import Resource  # noqa: E402
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider  # noqa: E402
from opentelemetry.sdk.trace.export import SimpleSpanProcessor  # noqa: E402
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter  # noqa: E402

FOLDER = "langgraph-openinference"
TRACES = REPO / "tests" / "testdata" / "traces" / FOLDER
TRUTH = REPO / "tests" / "testdata" / "truth" / FOLDER

MODES = {
    "b_sequential": ModelMode(streaming=True),
    "c_parallel": ModelMode(streaming=True),
    "i_parallel_random_ids": ModelMode(responses_api=True),
}
"""Scenarios whose model calls are streamed or use the Responses API (the others: Chat Completions)."""


def _coordinator_no_tool() -> Scenario:
    """d_no_tool with its agent named `coordinator`: no "agent" in the name, so the root is a CHAIN."""
    base = SCENARIOS["d_no_tool"]
    agent = replace(base.agents[0], name="coordinator")
    return replace(
        base,
        name="d_no_tool_coordinator",
        description=base.description + " The graph is named `coordinator`, so its root span is a CHAIN.",
        agents=(agent,),
    )


EXTRA = {"d_no_tool_coordinator": _coordinator_no_tool()}


def meta(mode: ModelMode) -> dict[str, str]:
    return {
        "framework": "langgraph",
        "framework_version": version("langgraph"),
        "instrumentation": (
            f"openinference-instrumentation-langchain {version('openinference-instrumentation-langchain')}; "
            f"langchain-core {version('langchain-core')}, langchain-openai {version('langchain-openai')} "
            f"({mode.describe()}), opentelemetry-sdk {version('opentelemetry-sdk')}"
        ),
        "conventions": (
            "OpenInference semantic conventions (openinference.span.kind AGENT/CHAIN/LLM/TOOL, tool.name, "
            "input.value, output.value, llm.*)"
        ),
    }


def run_span(spans: list[ReadableSpan], agent_name: str) -> ReadableSpan:
    """The graph's root span: named after the graph, kind AGENT or CHAIN (a sub-agent's root is the
    child of the delegating TOOL span of the same name, so the TOOL kind is excluded)."""
    return find_span(
        spans,
        agent_name,
        where=lambda s: (s.attributes or {}).get("openinference.span.kind") in ("AGENT", "CHAIN"),
    )


async def capture(scen: Scenario, provider: TracerProvider, exporter: InMemorySpanExporter) -> None:
    mode = MODES.get(scen.name, ModelMode())
    recorder = Recorder()
    exporter.clear()
    with ScriptedOpenAI(scen.script) as server:
        built = build_graphs(scen, server.base_url, recorder, mode)
        if len(built.top_level(scen)) > 1:
            with provider.get_tracer("toolscore.capture").start_as_current_span(APP_SPAN_NAME):
                await built.play(scen)
        else:
            await built.play(scen)
        server.assert_consumed()
        check_mode(server, mode)
    built.check(scen)
    provider.force_flush()
    spans = list(exporter.get_finished_spans())
    runs = {agent.name: run_span(spans, agent.name) for agent in scen.agents}
    truth = truth_for(scen, meta(mode), recorder, runs, unrecorded=scen.sub_agents.keys())
    written = write_capture(TRACES, TRUTH, scen.name, spans, truth)
    calls = sum(len(r["calls"]) for r in truth["runs"])
    print(f"{scen.name}: {len(spans)} spans, {calls} calls -> {len(written)} files")


async def main(names: list[str]) -> None:
    exporter = InMemorySpanExporter()
    provider = TracerProvider(resource=Resource.create({"service.name": "toolscore-capture-langgraph"}))
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    LangChainInstrumentor().instrument(tracer_provider=provider)
    for name in names:
        await capture(EXTRA[name] if name in EXTRA else scenario(name), provider, exporter)


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1:] or [*SCENARIOS, *EXTRA]))
