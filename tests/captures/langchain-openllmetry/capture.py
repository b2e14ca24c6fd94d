"""Capture LangChain 1.x `create_agent` runs traced by OpenLLMetry (its LangChain and OpenAI instrumentations).

Run from the capture venv (see requirements.txt), from anywhere:

    /work/venvs/langchain-v1/bin/python tests/captures/langchain-openllmetry/capture.py [--out DIR] [scenario ...]

The scenarios of `../langchain_agents.py` (a..i and create_agent's own) played by `create_agent` graphs with
`ChatOpenAI` against the kit's scripted OpenAI server, traced as OpenLLMetry's `Traceloop.init()` (traceloop-sdk
0.62.4, `traceloop/sdk/tracing/tracing.py`) sets it up for this program, on a plain OTel SDK `TracerProvider`
whose spans go to the in-memory exporter: the provider set as the global one, `ThreadingInstrumentor`,
`LangchainInstrumentor` (`init_langchain_instrumentor`) and `OpenAIInstrumentor(enrich_assistant=True,
use_attributes=True)` (`init_openai_instrumentor`), instrumented before LangChain is imported (as
`Traceloop.init()` first has it). Content capture on (`TRACELOOP_TRACE_CONTENT=true`), Traceloop's telemetry off;
connections outside the loopback refused. Captures go to tests/testdata/traces/langchain-openllmetry/ (truths
to tests/testdata/truth/langchain-openllmetry/) unless --out is given; each is compared with `toolscore extract`.

The run span in the truth is the `invoke_agent <agent>` span the instrumentation opens around the graph's
`stream`/`astream` (no `traceloop.span.kind`), as for `../langgraph-openllmetry` (see NOTES.md).
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
    "OPENAI_API_KEY": "sk-scripted-not-a-key",
    "TRACELOOP_TRACE_CONTENT": "true",
    "TRACELOOP_TELEMETRY": "false",
}.items():
    os.environ[_name] = _value

from capture_kit import loopback_only_connections, out_option  # noqa: E402

REFUSED = loopback_only_connections()

from oi_common import in_memory_tracing, report  # noqa: E402
from opentelemetry import trace  # noqa: E402
from opentelemetry.instrumentation.langchain import LangchainInstrumentor  # noqa: E402
from opentelemetry.instrumentation.openai import OpenAIInstrumentor  # noqa: E402
from opentelemetry.instrumentation.threading import ThreadingInstrumentor  # noqa: E402

FOLDER = "langchain-openllmetry"
PROVIDER, EXPORTER = in_memory_tracing("toolscore-capture-langchain")
trace.set_tracer_provider(PROVIDER)
ThreadingInstrumentor().instrument()
LangchainInstrumentor().instrument()
OpenAIInstrumentor(enrich_assistant=True, use_attributes=True).instrument()

from capture_kit import APP_SPAN_NAME, ScriptedOpenAI, find_span  # noqa: E402
from langchain_agents import all_scenarios, build_agents, check_mode, mode_of, truth_of  # noqa: E402


def meta(name: str) -> dict[str, str]:
    return {
        "framework": "langchain",
        "framework_version": version("langchain"),
        "instrumentation": (
            f"opentelemetry-instrumentation-langchain {version('opentelemetry-instrumentation-langchain')} and "
            f"opentelemetry-instrumentation-openai {version('opentelemetry-instrumentation-openai')} (OpenLLMetry, "
            "as Traceloop.init() sets them up); "
            f"langchain.agents.create_agent, langgraph {version('langgraph')}, langchain-core "
            f"{version('langchain-core')}, langchain-openai {version('langchain-openai')} "
            f"({mode_of(name).describe()}), "
            f"opentelemetry-sdk {version('opentelemetry-sdk')}"
        ),
        "conventions": (
            "OpenLLMetry/traceloop LangChain spans with GenAI attributes (gen_ai.operation.name "
            "invoke_agent/execute_task/execute_tool/chat, traceloop.span.kind, traceloop.entity.*)"
        ),
    }


def run_span(spans: list, agent_name: str):  # type: ignore[no-untyped-def]
    """The `invoke_agent <agent>` span the graph wrapper opens (not the `<agent>.workflow` span, which also says
    invoke_agent but carries `traceloop.span.kind=workflow`)."""
    return find_span(
        spans,
        f"invoke_agent {agent_name}",
        attributes={"gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": agent_name},
        where=lambda s: "traceloop.span.kind" not in (s.attributes or {}),
    )


async def capture(name: str, out: Path) -> None:
    scen = all_scenarios()[name]
    mode = mode_of(name)
    from capture_kit import Recorder

    recorder = Recorder()
    EXPORTER.clear()
    with ScriptedOpenAI(scen.script) as server:
        built = build_agents(scen, server, recorder, mode)
        if len(built.top_level(scen)) > 1:
            with PROVIDER.get_tracer("toolscore.capture").start_as_current_span(APP_SPAN_NAME):
                await built.play(scen)
        else:
            await built.play(scen)
        server.assert_consumed()
        check_mode(server, mode)
    built.check(scen)
    PROVIDER.force_flush()
    spans = list(EXPORTER.get_finished_spans())
    runs = {agent.name: run_span(spans, agent.name) for agent in scen.agents}
    truth = truth_of(scen, meta(name), recorder, runs)
    report(name, FOLDER, spans, truth, out=out, toolscore=REPO / ".venv" / "bin" / "toolscore")


async def main(argv: list[str]) -> None:
    out, names = out_option(argv)
    for name in names or list(all_scenarios()):
        await capture(name, out or REPO / "tests" / "testdata")
    if REFUSED:
        raise SystemExit(f"connections refused (outside the loopback): {REFUSED}")


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1:]))
