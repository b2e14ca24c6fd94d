"""Captures of `openinference-instrumentation-litellm` on a hand-written tool loop on `litellm.completion`.

The loop is `openai_tool_loop.Loop` with its model calls made by `litellm.completion` (`litellm_tool_loop.Client`:
`model="openai/scripted-<agent>"`, `api_base` = the scripted server). `LiteLLMInstrumentor` wraps
`litellm.completion` and traces each request as an OpenInference LLM span (named `completion`); it traces no tool
and no run. A user marks each run with an OpenInference AGENT span made with `OITracer` (as in
`openai-openinference/`), the final text its output. No tool span exists: every call of the truth is `model_only`,
read from the LLM spans' `llm.output_messages`. a..i and the unknown tool; b, h and i streamed.

    /work/venvs/litellm/bin/python tests/captures/litellm-openinference/capture.py [--out DIR] [SCENARIO ...]
"""

from __future__ import annotations

import contextlib
import importlib.metadata
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

FOLDER = "litellm-openinference"


def setup() -> dict[str, Any]:
    """Global tracer provider with an in-memory exporter, the instrumentor, and OpenInference's tracer."""
    from openinference.instrumentation import OITracer, TraceConfig
    from openinference.instrumentation.litellm import LiteLLMInstrumentor

    spans, provider = in_memory_provider(FOLDER)
    LiteLLMInstrumentor().instrument(tracer_provider=provider)
    import litellm

    litellm.telemetry = False
    tracer = OITracer(provider.get_tracer("capture-litellm-openinference"), config=TraceConfig())
    return {"spans": spans, "tracer": tracer}


def run_span(tracer: Any) -> Callable[[Agent], contextlib.AbstractContextManager[Callable[[str], None] | None]]:
    """An AGENT span per run, as OpenInference's manual tracing makes one; the final text is its output."""

    @contextlib.contextmanager
    def agent_span(agent: Agent) -> Iterator[Callable[[str], None]]:
        with tracer.start_as_current_span(agent.name, openinference_span_kind="agent") as span:
            span.set_attribute("agent.name", agent.name)
            span.set_input(agent.prompt)
            yield span.set_output

    return agent_span


def capture(name: str, scenario: Scenario, mode: Mode, parts: dict[str, Any], out: Path) -> None:
    """Run one scenario, write its capture and truth."""
    parts["spans"].clear()
    tracer = parts["tracer"]
    loop = litellm_tool_loop.play(lambda client: Loop(scenario, client, mode, run_span(tracer)), scenario, tracer)
    litellm_tool_loop.flush()
    spans = parts["spans"].get_finished_spans()
    runs = [find_span(spans, a.name, attributes={"openinference.span.kind": "AGENT"}) for a in scenario.agents]
    flags = openai_tool_loop.model_only(scenario, openai_tool_loop.FAILURE_NOTE)
    unrecorded = {"get_forecast"} if scenario is UNKNOWN_TOOL else set()
    parallel = {a.name for a in scenario.agents if any(len(turn.calls) > 1 for turn in a.turns)}
    for call in [c for a in scenario.agents if a.name in parallel for c in a.calls]:
        flags[call.id]["outcome_captured"] = False
    truth = truth_for(scenario, meta(mode), loop.recorder, runs, flags=flags, unrecorded=unrecorded)
    if parallel:
        runs_out = [{**run, "incomplete": True} if run["agent_name"] in parallel else run for run in truth["runs"]]
        truth = {**truth, "runs": runs_out, "answers_note": ANSWERS_NOTE}
    if write_capture(out / "traces" / FOLDER, out / "truth" / FOLDER, name, spans, truth):
        print(f"wrote {FOLDER}/{name}: {len(spans)} spans")


ANSWERS_NOTE = (
    "openinference-instrumentation-litellm writes a tool message's role and content, not its tool_call_id: after "
    "a response of several calls the answers do not say which call each answers, so no call's outcome can be read "
    "(outcome_captured: false) and the run is incomplete. After a response of one call, its one answer is that "
    "call's."
)


def meta(mode: Mode) -> dict[str, Any]:
    version = importlib.metadata.version
    return {
        "framework": "litellm (hand-written agent loop on litellm.completion)",
        "framework_version": version("litellm"),
        "instrumentation": (
            f"openinference-instrumentation-litellm {version('openinference-instrumentation-litellm')} "
            f"(openinference-instrumentation {version('openinference-instrumentation')}, default TraceConfig); "
            "runs in OITracer AGENT spans made by the loop; no TOOL spans"
        ),
        "conventions": "OpenInference semantic conventions (LLM spans with llm.output_messages, AGENT run spans)",
        "api": mode.describe(),
        "streamed": mode.streamed,
    }


def main() -> None:
    openai_tool_loop.main(__doc__.splitlines()[0], all_scenarios(), setup, capture)


if __name__ == "__main__":
    main()
