"""Captures of Langfuse's OpenAI drop-in (`from langfuse.openai import openai`) in a hand-written tool loop.

The loop is `openai_tool_loop.Loop` on the `openai` client; importing `langfuse.openai` wraps the client's methods
(`register_tracing`), so each model request is a Langfuse `generation` observation. The user marks each run and
each tool with Langfuse's decorator, as Langfuse documents for agents: the run is a function decorated
`@observe(as_type="agent", name=<agent>)` (its argument, the question, is the observation's input), each tool
function `@observe(as_type="tool")` (named after the function; its input is the decorator's record of the call,
`{"args": [...], "kwargs": {...}}`). No call id is on a tool observation: it comes from the generation that issued
the call. g's two runs are under the application span `conversation` (an OTel span of the script's own on the same
provider); f's sub-agent runs inside its tool function, so its `agent` observation is a child of that tool's.

Chat Completions for a..i and the unknown tool (b, h, i streamed); through the Responses API:
`k_responses_parallel` (c), `l_responses_streamed` (i, streamed) and `m_responses_error` (e). Set-up: a `Langfuse`
client on a provider of the script's own, with an in-memory exporter beside Langfuse's processor
(`../langfuse_capture.py`). See NOTES.md.

    /work/venvs/langfuse/bin/python tests/captures/langfuse-openai/capture.py [--out DIR] [SCENARIO ...]
"""

from __future__ import annotations

import contextlib
import importlib.metadata
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # tests/captures

import openai_tool_loop
from capture_kit import Agent, Scenario, find_span, truth_for, write_capture
from langfuse_capture import REFUSED, langfuse_versions, setup
from openai_tool_loop import UNKNOWN_TOOL, Loop, Mode

__all__: list[str] = []

FOLDER = "langfuse-openai"
TYPE = "langfuse.observation.type"


def all_scenarios() -> dict[str, tuple[Scenario, Mode]]:
    return openai_tool_loop.all_scenarios()


def start() -> dict[str, Any]:
    """The Langfuse client on the script's provider, then the drop-in client imported as a user imports it."""
    capture = setup(f"capture-{FOLDER}")
    from langfuse import observe
    from langfuse.openai import openai  # noqa: F401  (wraps the openai client's methods)

    return {"capture": capture, "observe": observe, "tracer": capture.provider.get_tracer("capture-langfuse-openai")}


class ObservedLoop(Loop):
    """The loop with each run in a function decorated `@observe(as_type="agent")`, named after the agent."""

    def __init__(self, *args: Any, observe: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.observe = observe

    def run(self, agent: Agent, prompt: str | None = None) -> str:
        @self.observe(as_type="agent", name=agent.name)
        def run_agent(question: str) -> str:
            return Loop.run(self, agent, question)

        return run_agent(prompt or agent.prompt)


@contextlib.contextmanager
def no_span(agent: Agent) -> Iterator[None]:
    yield None


def capture(name: str, scenario: Scenario, mode: Mode, parts: dict[str, Any], out: Path) -> None:
    """Run one scenario, write its capture and truth."""
    parts["capture"].clear()
    observe = parts["observe"]

    def loop_of(client: Any) -> Loop:
        def as_tool(fn: Callable[..., Any]) -> Callable[..., Any]:
            return observe(as_type="tool")(fn)

        return ObservedLoop(scenario, client, mode, no_span, wrap_tool=as_tool, observe=observe)

    loop = openai_tool_loop.play(loop_of, scenario, parts["tracer"])
    spans = parts["capture"].spans()
    runs = [find_span(spans, a.name, attributes={TYPE: "agent"}) for a in scenario.agents]
    unrecorded = {"get_forecast"} if scenario is UNKNOWN_TOOL else set()
    flags = {"call_mu1": {"model_only": True}} if scenario is UNKNOWN_TOOL else {}
    truth = truth_for(scenario, meta(mode), loop.recorder, runs, flags=flags, unrecorded=unrecorded)
    if write_capture(out / "traces" / FOLDER, out / "truth" / FOLDER, name, spans, truth):
        print(f"wrote {FOLDER}/{name}: {len(spans)} spans")


def meta(mode: Mode) -> dict[str, Any]:
    version = importlib.metadata.version
    return {
        "framework": "openai (hand-written agent loop)",
        "framework_version": version("openai"),
        "instrumentation": (
            f"Langfuse OpenAI drop-in (from langfuse.openai import openai; {langfuse_versions()}); runs in "
            "@observe(as_type='agent') functions, tools @observe(as_type='tool')"
        ),
        "conventions": "Langfuse observations as OTel spans (scope langfuse-sdk): agent, tool and generation "
        "observations, langfuse.observation.input/output",
        "api": mode.describe(),
        "streamed": mode.streamed,
    }


def main() -> None:
    openai_tool_loop.main(__doc__.splitlines()[0], all_scenarios(), start, capture)
    if REFUSED:
        raise SystemExit(f"connections refused (outside the loopback): {REFUSED}")


if __name__ == "__main__":
    main()
