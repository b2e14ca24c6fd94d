"""Captures of LiteLLM's own OpenTelemetry logger (`litellm.callbacks = ["otel"]`) on a hand-written tool loop.

The loop is `openai_tool_loop.Loop` with its model calls made by `litellm.completion` (`litellm_tool_loop.Client`:
`model="openai/scripted-<agent>"`, `api_base` = the scripted server). LiteLLM's logger
(`litellm/integrations/opentelemetry.py`, `OpenTelemetry`) takes the global SDK tracer provider set before it, and
traces only model requests; no tool, no run. A user marks each run with an OTel GenAI agent span made by hand:
`invoke_agent <agent>` (`gen_ai.operation.name=invoke_agent`, `gen_ai.agent.name`), with
`USE_OTEL_LITELLM_REQUEST_SPAN=true`, so that each request has its own `litellm_request` span (without it the
logger writes each response's attributes onto the caller's current span, the run span itself, each overwriting the
last, and sets its `gen_ai.operation.name` to `chat`). What LiteLLM then writes is in NOTES.md. a..i and the
unknown tool; b, h and i streamed (their runs cannot be read: `detached`).

    /work/venvs/litellm/bin/python tests/captures/litellm-otel/capture.py [--out DIR] [SCENARIO ...]
"""

from __future__ import annotations

import contextlib
import importlib.metadata
import os
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # tests/captures

import litellm_tool_loop
import openai_tool_loop
from capture_kit import Agent, Scenario, find_span, truth_for, write_capture
from litellm_tool_loop import all_scenarios, in_memory_provider
from openai_tool_loop import UNKNOWN_TOOL, Loop, Mode

__all__: list[str] = []

FOLDER = "litellm-otel"


def setup() -> dict[str, Any]:
    """Global tracer provider with an in-memory exporter, then LiteLLM's "otel" callback (which takes it)."""
    os.environ["USE_OTEL_LITELLM_REQUEST_SPAN"] = "true"

    spans, provider = in_memory_provider(FOLDER)
    import litellm

    litellm.telemetry = False
    litellm.callbacks = ["otel"]
    return {"spans": spans, "tracer": provider.get_tracer("capture-litellm-otel")}


def run_span(tracer: Any) -> Callable[[Agent], contextlib.AbstractContextManager[Callable[[str], None] | None]]:
    """An OTel GenAI `invoke_agent <agent>` span per run, made by hand."""

    @contextlib.contextmanager
    def agent_span(agent: Agent) -> Iterator[None]:
        attributes = {"gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": agent.name}
        with tracer.start_as_current_span(f"invoke_agent {agent.name}", attributes=attributes):
            yield None

    return agent_span


def capture(name: str, scenario: Scenario, mode: Mode, parts: dict[str, Any], out: Path) -> None:
    """Run one scenario, write its capture and truth."""
    parts["spans"].clear()
    tracer = parts["tracer"]
    loop = litellm_tool_loop.play(lambda client: Loop(scenario, client, mode, run_span(tracer)), scenario, tracer)
    litellm_tool_loop.flush()
    spans = parts["spans"].get_finished_spans()
    runs = [find_span(spans, f"invoke_agent {a.name}") for a in scenario.agents]
    flags = openai_tool_loop.model_only(scenario, openai_tool_loop.FAILURE_NOTE)
    unrecorded = {"get_forecast"} if scenario is UNKNOWN_TOOL else set()
    truth = truth_for(scenario, meta(mode), loop.recorder, runs, flags=flags, unrecorded=unrecorded)
    if mode.streamed:
        truth = detached(truth)
    if write_capture(out / "traces" / FOLDER, out / "truth" / FOLDER, name, spans, truth):
        print(f"wrote {FOLDER}/{name}: {len(spans)} spans")


STREAMED_NOTE = (
    "A streamed litellm.completion is logged from a worker thread that does not carry the caller's context "
    "(CustomStreamWrapper.__next__: executor.submit(logging_obj.success_handler, ...)), so each of its "
    "litellm_request spans is the root of a trace of its own, and nothing under the run span says what the run did: "
    "the calls the tools received are under calls_made, none under calls, and the run is incomplete."
)


def detached(truth: dict[str, Any]) -> dict[str, Any]:
    """The truth of a streamed capture: no model response is under the run span (`STREAMED_NOTE`)."""
    runs = [{**run, "calls": [], "calls_made": run["calls"], "incomplete": True} for run in truth["runs"]]
    return {**truth, "runs": runs, "streamed_note": STREAMED_NOTE}


def meta(mode: Mode) -> dict[str, Any]:
    version = importlib.metadata.version
    return {
        "framework": "litellm (hand-written agent loop on litellm.completion)",
        "framework_version": version("litellm"),
        "instrumentation": f"litellm {version('litellm')} OpenTelemetry logger (litellm.callbacks=['otel']); "
        "runs in hand-made OTel GenAI invoke_agent spans; no tool spans",
        "conventions": "OTel GenAI (gen_ai.input.messages / gen_ai.output.messages as LiteLLM writes them)",
        "api": mode.describe(),
        "streamed": mode.streamed,
    }


def main() -> None:
    openai_tool_loop.main(__doc__.splitlines()[0], all_scenarios(), setup, capture)


if __name__ == "__main__":
    main()
