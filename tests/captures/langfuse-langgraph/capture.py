"""Capture LangChain 1.x `create_agent` runs traced by Langfuse's LangChain `CallbackHandler` (Langfuse SDK v5).

Run from the capture venv (see requirements.txt), from anywhere:

    /work/venvs/langfuse/bin/python tests/captures/langfuse-langgraph/capture.py [--out DIR] [scenario ...]

The scenarios of `../langchain_agents.py` (a..i and create_agent's own) played by `create_agent` graphs (LangGraph
graphs) with `ChatOpenAI` against the kit's scripted OpenAI server. The user's set-up is Langfuse's documented one:
a `Langfuse` client (here on a provider of the script's own, with an in-memory exporter beside Langfuse's processor,
`../langfuse_capture.py`), and `langfuse.langchain.CallbackHandler()` passed in each top-level run's config
(`callbacks`); a sub-agent's graph, invoked inside its tool, inherits it. Captures go to
tests/testdata/traces/langfuse-langgraph/ (truths to tests/testdata/truth/langfuse-langgraph/) unless --out is
given; each is compared with `toolscore extract`.

The run span in the truth is the observation the handler opens for the graph's root run: named after the agent
(create_agent's `name`), `langfuse.observation.type` `agent` when that name contains "agent" (the handler's rule
for chains), else `chain`. See NOTES.md.
"""

from __future__ import annotations

import asyncio
import sys
from importlib.metadata import version
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[2]
sys.path.insert(0, str(HERE.parent))

from langfuse_capture import REFUSED, langfuse_versions, setup  # noqa: E402  (guards the network first)

FOLDER = "langfuse-langgraph"
CAPTURE = setup("toolscore-capture-langfuse-langgraph")

from capture_kit import APP_SPAN_NAME, Recorder, ScriptedOpenAI, find_span, out_option  # noqa: E402
from langchain_agents import all_scenarios, build_agents, check_mode, mode_of, truth_of  # noqa: E402
from langfuse.langchain import CallbackHandler  # noqa: E402
from oi_common import report  # noqa: E402

TYPE = "langfuse.observation.type"


def meta(name: str) -> dict[str, str]:
    return {
        "framework": "langchain",
        "framework_version": version("langchain"),
        "instrumentation": (
            f"Langfuse LangChain CallbackHandler ({langfuse_versions()}); langchain.agents.create_agent, langgraph "
            f"{version('langgraph')}, langchain-core {version('langchain-core')}, langchain-openai "
            f"{version('langchain-openai')} ({mode_of(name).describe()})"
        ),
        "conventions": (
            "Langfuse observations as OTel spans (scope langfuse-sdk): langfuse.observation.type agent/chain/"
            "tool/generation, langfuse.observation.input/output, langfuse.observation.metadata.*"
        ),
    }


def run_span(spans: list, agent_name: str):  # type: ignore[no-untyped-def]
    """The observation of the graph's root run: named after the agent, of type `agent` when the name contains
    "agent", else `chain` (the tool that runs a sub-agent has the same name, and type `tool`)."""
    return find_span(spans, agent_name, where=lambda s: s.attributes.get(TYPE) in ("agent", "chain"))


async def capture(name: str, out: Path) -> None:
    scen = all_scenarios()[name]
    mode = mode_of(name)
    recorder = Recorder()
    CAPTURE.clear()
    handler = CallbackHandler()
    with ScriptedOpenAI(scen.script) as server:
        built = build_agents(scen, server, recorder, mode)
        for agent in built.top_level(scen):  # the user's `config={"callbacks": [handler]}` on each run
            built.graphs[agent.name] = built.graphs[agent.name].with_config(callbacks=[handler])
        if len(built.top_level(scen)) > 1:
            with CAPTURE.provider.get_tracer("toolscore.capture").start_as_current_span(APP_SPAN_NAME):
                await built.play(scen)
        else:
            await built.play(scen)
        server.assert_consumed()
        check_mode(server, mode)
    built.check(scen)
    spans = CAPTURE.spans()
    runs = {agent.name: run_span(spans, agent.name) for agent in scen.agents}
    truth = truth_of(scen, meta(name), recorder, runs)
    report(name, FOLDER, spans, truth, out=out, toolscore=REPO / ".venv" / "bin" / "toolscore")


async def main(argv: list[str]) -> None:
    out, names = out_option(argv)
    for name in names or list(all_scenarios()):
        await capture(name, out or REPO / "tests" / "testdata")
    CAPTURE.langfuse.shutdown()
    if REFUSED:
        raise SystemExit(f"connections refused (outside the loopback): {REFUSED}")


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1:]))
