"""Capture LangChain 1.x `create_agent` runs traced by OpenInference's LangChain instrumentation.

Run from the capture venv (see requirements.txt), from anywhere:

    /work/venvs/langchain-v1/bin/python tests/captures/langchain-openinference/capture.py [--out DIR] [scenario ...]

The canonical scenarios (a..i) and create_agent's own (`../langchain_agents.py`: unknown tool, structured
output, tool retry and model retry middleware, a streamed graph) are played by `create_agent` graphs with
`ChatOpenAI` against the kit's scripted OpenAI server, traced by `openinference-instrumentation-langchain` into
the OTel SDK's in-memory exporter; connections outside the loopback are refused. Captures go to
tests/testdata/traces/langchain-openinference/ (truths to tests/testdata/truth/langchain-openinference/) unless
--out is given; each is then compared with `toolscore extract` and the differences printed.

The run span in the truth is the graph's root span, named after the agent (`create_agent(name=...)`), AGENT when
the name contains "agent" and CHAIN otherwise (see NOTES.md).
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
}.items():
    os.environ[_name] = _value

from capture_kit import loopback_only_connections, out_option  # noqa: E402

REFUSED = loopback_only_connections()

from capture_kit import APP_SPAN_NAME, ScriptedOpenAI, find_span  # noqa: E402
from langchain_agents import all_scenarios, build_agents, check_mode, mode_of, truth_of  # noqa: E402
from oi_common import in_memory_tracing, report  # noqa: E402
from openinference.instrumentation.langchain import LangChainInstrumentor  # noqa: E402

FOLDER = "langchain-openinference"
PROVIDER, EXPORTER = in_memory_tracing("toolscore-capture-langchain")
LangChainInstrumentor().instrument(tracer_provider=PROVIDER)


def meta(name: str) -> dict[str, str]:
    return {
        "framework": "langchain",
        "framework_version": version("langchain"),
        "instrumentation": (
            f"openinference-instrumentation-langchain {version('openinference-instrumentation-langchain')}; "
            f"langchain.agents.create_agent, langgraph {version('langgraph')}, langchain-core "
            f"{version('langchain-core')}, langchain-openai {version('langchain-openai')} "
            f"({mode_of(name).describe()}), "
            f"opentelemetry-sdk {version('opentelemetry-sdk')}"
        ),
        "conventions": (
            "OpenInference semantic conventions (openinference.span.kind AGENT/CHAIN/LLM/TOOL, tool.name, "
            "input.value, output.value, llm.*)"
        ),
    }


def run_span(spans: list, agent_name: str):  # type: ignore[no-untyped-def]
    """The graph's root span: named after the graph, AGENT or CHAIN (a sub-agent's root is the child of the
    delegating TOOL span of the same name, so TOOL is excluded)."""
    return find_span(
        spans, agent_name, where=lambda s: (s.attributes or {}).get("openinference.span.kind") in ("AGENT", "CHAIN")
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
