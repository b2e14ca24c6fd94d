"""Captures of `openinference-instrumentation-openai` on a hand-written tool loop on the `openai` client.

The loop is `openai_tool_loop.Loop`. The instrumentor traces each model request as an LLM span; it traces
no tool and no run. A user marks each run the way OpenInference's manual tracing does: an AGENT span named
after the agent (`OITracer.start_as_current_span(..., openinference_span_kind="agent")`, with `agent.name`).
No TOOL span exists: every call of the truth is `model_only`, read from the LLM spans'
`llm.output_messages`. g's two runs are under the application span `conversation`; f's sub-agent runs
inside its tool function, so its AGENT span is a child of the coordinator's.

Two forms (`--form`), one venv:

- `content` (default TraceConfig): into `openai-openinference/`. Chat Completions for a..i and the unknown tool
  (b, h, i streamed); through the Responses API: `k_responses_parallel` (c), `l_responses_streamed` (i,
  streamed), `m_responses_error` (e) and `n_responses_items_back` (e, the loop handing the response's output items
  back as they came).
- `hidden` (`OPENINFERENCE_HIDE_INPUTS`, `_OUTPUTS`, `_INPUT_MESSAGES`, `_OUTPUT_MESSAGES` all true): into
  `openai-openinference-hidden/`, a, c (streamed), d and `k_responses_parallel`. No span holds a call: the truth
  lists the calls the tools received under `calls_made` and none under `calls`, and its runs are `incomplete`.

    /work/venvs/openai-raw/bin/python tests/captures/openai-openinference/capture.py \\
        [--form hidden] [--out DIR] [SCENARIO ...]
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

import openai_tool_loop
from capture_kit import Agent, Scenario, find_span, truth_for, write_capture
from openai_tool_loop import UNKNOWN_TOOL, Loop, Mode

__all__: list[str] = []

FOLDERS = {"content": "openai-openinference", "hidden": "openai-openinference-hidden"}
HIDDEN_ENV = {
    f"OPENINFERENCE_HIDE_{what}": "true" for what in ("INPUTS", "OUTPUTS", "INPUT_MESSAGES", "OUTPUT_MESSAGES")
}
HIDDEN = {"a_single_tool", "c_parallel", "d_no_tool", "k_responses_parallel"}
HIDDEN_STREAMED = {"c_parallel"}


def all_scenarios(form: str) -> dict[str, tuple[Scenario, Mode]]:
    found = openai_tool_loop.all_scenarios(items_back=True)
    if form == "content":
        return found
    return {
        name: (scenario, openai_tool_loop.CHAT_STREAMED if name in HIDDEN_STREAMED else mode)
        for name, (scenario, mode) in found.items()
        if name in HIDDEN
    }


def setup(form: str) -> Callable[[], dict[str, Any]]:
    def start() -> dict[str, Any]:
        if form == "hidden":
            os.environ.update(HIDDEN_ENV)  # read by TraceConfig() when the instrumentor is set up
        return {**instrument(FOLDERS[form]), "form": form}

    return start


def instrument(folder: str) -> dict[str, Any]:
    """Global tracer provider with an in-memory exporter, the instrumentor, and OpenInference's tracer."""
    from openinference.instrumentation import OITracer, TraceConfig
    from openinference.instrumentation.openai import OpenAIInstrumentor
    from opentelemetry import trace
    from opentelemetry.sdk.resources import Resource
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    spans = InMemorySpanExporter()
    provider = TracerProvider(resource=Resource.create({"service.name": f"capture-{folder}"}))
    provider.add_span_processor(SimpleSpanProcessor(spans))
    trace.set_tracer_provider(provider)
    OpenAIInstrumentor().instrument(tracer_provider=provider)
    tracer = OITracer(provider.get_tracer("capture-openai-openinference"), config=TraceConfig())
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
    loop = openai_tool_loop.play(lambda client: Loop(scenario, client, mode, run_span(tracer)), scenario, tracer)
    spans = parts["spans"].get_finished_spans()
    runs = [find_span(spans, a.name, attributes={"openinference.span.kind": "AGENT"}) for a in scenario.agents]
    flags = openai_tool_loop.model_only(scenario, openai_tool_loop.FAILURE_NOTE)
    unrecorded = {"get_forecast"} if scenario is UNKNOWN_TOOL else set()
    form = parts["form"]
    truth = truth_for(scenario, meta(mode, form), loop.recorder, runs, flags=flags, unrecorded=unrecorded)
    if form == "hidden":
        truth = openai_tool_loop.not_captured(truth)
    folder = FOLDERS[form]
    if write_capture(out / "traces" / folder, out / "truth" / folder, name, spans, truth):
        print(f"wrote {folder}/{name}: {len(spans)} spans")


def meta(mode: Mode, form: str) -> dict[str, Any]:
    version = importlib.metadata.version
    config = " ".join(f"{k}={v}" for k, v in HIDDEN_ENV.items()) if form == "hidden" else "default TraceConfig"
    return {
        "framework": "openai (hand-written agent loop)",
        "framework_version": version("openai"),
        "instrumentation": (
            f"openinference-instrumentation-openai {version('openinference-instrumentation-openai')} "
            f"(openinference-instrumentation {version('openinference-instrumentation')}, {config}); "
            "runs in OITracer AGENT spans made by the loop; no TOOL spans"
        ),
        "conventions": "OpenInference semantic conventions (LLM spans with llm.output_messages, AGENT run spans)",
        "api": mode.describe(),
        "streamed": mode.streamed,
    }


def main() -> None:
    form = openai_tool_loop.take_form(list(FOLDERS))
    openai_tool_loop.main(__doc__.splitlines()[0], all_scenarios(form), setup(form), capture)


if __name__ == "__main__":
    main()
