"""Capture LangGraph `create_react_agent` runs traced by OpenLLMetry's LangChain instrumentation.

Run from the framework venv (see requirements.txt), from anywhere:

    /work/venvs/langgraph-openllmetry/bin/python tests/captures/langgraph-openllmetry/capture.py [scenario ...]

Every canonical scenario (a..i) is played by `create_react_agent` graphs with `ChatOpenAI` against
the kit's scripted OpenAI server, traced by `opentelemetry-instrumentation-langchain` (OpenLLMetry)
into the OTel SDK's in-memory exporter. The captures go to tests/testdata/traces/langgraph-openllmetry/
and the truths, built from the script and checked against what the tools received, to
tests/testdata/truth/langgraph-openllmetry/.

The run span of each run is the `invoke_agent <graph name>` span the instrumentation opens around
`Pregel.stream`/`astream` (`gen_ai.operation.name=invoke_agent`, `gen_ai.agent.name`). For a graph
invoked inside a tool (f_agent_as_tool) that span has no children: the graph's own spans hang under
a sibling `execute_task <graph name>` span (see NOTES.md). The truth still names the `invoke_agent`
span, the one the convention marks as the agent run.
"""

from __future__ import annotations

import asyncio
import os
import sys
from importlib.metadata import version
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[2]
sys.path.insert(0, str(HERE.parent))

for _name, _value in {
    "LANGSMITH_TRACING": "false",
    "LANGCHAIN_TRACING_V2": "false",
    "TRACELOOP_TRACE_CONTENT": "true",
    "OPENAI_API_KEY": "sk-scripted-not-a-key",
}.items():
    os.environ[_name] = _value

from opentelemetry.instrumentation.langchain import LangchainInstrumentor  # noqa: E402
from opentelemetry.sdk.resources import Resource  # noqa: E402
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider  # noqa: E402
from opentelemetry.sdk.trace.export import SimpleSpanProcessor  # noqa: E402
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter  # noqa: E402

# Instrument before LangGraph is imported, as OpenLLMetry's set-up (`Traceloop.init()` first) has it:
# the wrapper of `create_react_agent` then applies to the name the agents module imports, and each
# graph's construction emits its `create_agent <name>` span (a trace of its own, no run in it).
EXPORTER = InMemorySpanExporter()
PROVIDER = TracerProvider(resource=Resource.create({"service.name": "toolscore-capture-langgraph"}))
PROVIDER.add_span_processor(SimpleSpanProcessor(EXPORTER))
LangchainInstrumentor().instrument(tracer_provider=PROVIDER)

from capture_kit import (  # noqa: E402
    APP_SPAN_NAME,
    SCENARIOS,
    Recorder,
    ScriptedOpenAI,
    find_span,
    scenario,
    truth_for,
    write_capture,
)
from langgraph_agents import ModelMode, build_graphs, check_mode  # noqa: E402

FOLDER = "langgraph-openllmetry"
TRACES = REPO / "tests" / "testdata" / "traces" / FOLDER
TRUTH = REPO / "tests" / "testdata" / "truth" / FOLDER

MODES = {
    "b_sequential": ModelMode(streaming=True),
    "c_parallel": ModelMode(streaming=True),
    "i_parallel_random_ids": ModelMode(responses_api=True),
}
"""Scenarios whose model calls are streamed or use the Responses API (the others: Chat Completions)."""


def meta(mode: ModelMode) -> dict[str, str]:
    return {
        "framework": "langgraph",
        "framework_version": version("langgraph"),
        "instrumentation": (
            f"opentelemetry-instrumentation-langchain {version('opentelemetry-instrumentation-langchain')} "
            f"(OpenLLMetry); langchain-core {version('langchain-core')}, "
            f"langchain-openai {version('langchain-openai')} ({mode.describe()}), "
            f"opentelemetry-sdk {version('opentelemetry-sdk')}"
        ),
        "conventions": (
            "OpenLLMetry/traceloop LangChain spans with GenAI attributes (gen_ai.operation.name "
            "invoke_agent/execute_task/execute_tool/chat, traceloop.span.kind, traceloop.entity.*)"
        ),
    }


def run_spans(spans: list[ReadableSpan], agent_name: str) -> ReadableSpan:
    """The `invoke_agent <graph>` span the graph wrapper opens (not the `<graph>.workflow` span, which
    also says invoke_agent but carries `traceloop.span.kind=workflow`)."""
    return find_span(
        spans,
        f"invoke_agent {agent_name}",
        attributes={"gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": agent_name},
        where=lambda s: "traceloop.span.kind" not in (s.attributes or {}),
    )


async def capture(name: str, provider: TracerProvider, exporter: InMemorySpanExporter) -> None:
    scen = scenario(name)
    mode = MODES.get(name, ModelMode())
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
    runs = {agent.name: run_spans(spans, agent.name) for agent in scen.agents}
    truth = truth_for(scen, meta(mode), recorder, runs, unrecorded=scen.sub_agents.keys())
    written = write_capture(TRACES, TRUTH, name, spans, truth)
    print(f"{name}: {len(spans)} spans, {sum(len(r['calls']) for r in truth['runs'])} calls -> {len(written)} files")


async def main(names: list[str]) -> None:
    for name in names:
        await capture(name, PROVIDER, EXPORTER)


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1:] or list(SCENARIOS)))
