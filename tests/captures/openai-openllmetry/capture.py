"""Captures of `opentelemetry-instrumentation-openai` (Traceloop OpenLLMetry) on a hand-written tool loop.

The loop is `openai_tool_loop.Loop` on the plain `openai` client. The instrumentor traces each model request
(`openai.chat`, `openai.response`); it traces no tool and no run, and without traceloop-sdk there is no
`@agent` decorator. A user marks each run with an OTel GenAI agent span made by hand: `invoke_agent <agent>`
(`gen_ai.operation.name=invoke_agent`, `gen_ai.agent.name`). No tool span exists: every call of the truth is
`model_only`, read from the model spans' `gen_ai.output.messages`. g's two runs are under the application span
`conversation`; f's sub-agent runs inside its tool function, so its run span is a child of the coordinator's.

Two forms (`--form`), one venv:

- `content` (default, `TRACELOOP_TRACE_CONTENT` unset, i.e. true): into `openai-openllmetry/`. Chat
  Completions for a..i and the unknown tool (b, h, i streamed); through the Responses API:
  `k_responses_parallel` (c), `l_responses_streamed` (i, streamed), `m_responses_error` (e) and
  `n_responses_items_back` (e, the loop handing the response's output items back as they came: the trace holds no
  call id and no link from a call to its answer, so the truth has no ids, `outcome_captured: false` calls and an
  `incomplete` run).
- `no-content` (`TRACELOOP_TRACE_CONTENT=false`): into `openai-openllmetry-nocontent/`, a, c (streamed),
  d and `k_responses_parallel`. The spans keep no message, so no call can be read: the truth lists the calls
  the tools received under `calls_made` and none under `calls`, and its runs are `incomplete`.

    /work/venvs/openai-raw/bin/python tests/captures/openai-openllmetry/capture.py \\
        [--form no-content] [--out DIR] [SCENARIO ...]
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

FOLDERS = {"content": "openai-openllmetry", "no-content": "openai-openllmetry-nocontent"}
NO_CONTENT = {"a_single_tool", "c_parallel", "d_no_tool", "k_responses_parallel"}
NO_CONTENT_STREAMED = {"c_parallel"}


ITEMS_BACK = (
    "The loop handed the response's output items back as they came: OpenLLMetry lists each call by its item id "
    "(fc_...), in the output and in the next request's input alike, and only the answers carry the call_id. No call "
    "id, and no outcome (outcome_captured: false), can be read; the run is incomplete."
)


def all_scenarios(form: str) -> dict[str, tuple[Scenario, Mode]]:
    found = openai_tool_loop.all_scenarios(items_back=True)
    if form == "content":
        return found
    return {
        name: (scenario, openai_tool_loop.CHAT_STREAMED if name in NO_CONTENT_STREAMED else mode)
        for name, (scenario, mode) in found.items()
        if name in NO_CONTENT
    }


def setup(form: str) -> Callable[[], dict[str, Any]]:
    def start() -> dict[str, Any]:
        """Global tracer provider with an in-memory exporter, then the instrumentor."""
        if form == "no-content":
            os.environ["TRACELOOP_TRACE_CONTENT"] = "false"
        from opentelemetry import trace
        from opentelemetry.instrumentation.openai import OpenAIInstrumentor
        from opentelemetry.sdk.resources import Resource
        from opentelemetry.sdk.trace import TracerProvider
        from opentelemetry.sdk.trace.export import SimpleSpanProcessor
        from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

        spans = InMemorySpanExporter()
        provider = TracerProvider(resource=Resource.create({"service.name": f"capture-{FOLDERS[form]}"}))
        provider.add_span_processor(SimpleSpanProcessor(spans))
        trace.set_tracer_provider(provider)
        OpenAIInstrumentor().instrument(tracer_provider=provider)
        return {"spans": spans, "tracer": provider.get_tracer("capture-openai-openllmetry"), "form": form}

    return start


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
    tracer, form = parts["tracer"], parts["form"]
    loop = openai_tool_loop.play(lambda client: Loop(scenario, client, mode, run_span(tracer)), scenario, tracer)
    spans = parts["spans"].get_finished_spans()
    runs = [find_span(spans, f"invoke_agent {a.name}") for a in scenario.agents]
    flags = openai_tool_loop.model_only(scenario, openai_tool_loop.FAILURE_NOTE)
    unrecorded = {"get_forecast"} if scenario is UNKNOWN_TOOL else set()
    if mode.items_back:  # the trace holds neither the call ids nor a link from a call to its answer
        for call_id in flags:
            flags[call_id]["outcome_captured"] = False
    truth = truth_for(
        scenario,
        meta(mode, form),
        loop.recorder,
        runs,
        flags=flags,
        unrecorded=unrecorded,
        call_ids=not mode.items_back,
    )
    if mode.items_back:
        truth = {**truth, "runs": [{**run, "incomplete": True} for run in truth["runs"]], "call_ids_note": ITEMS_BACK}
    if form == "no-content":
        truth = openai_tool_loop.not_captured(truth)
    folder = FOLDERS[form]
    if write_capture(out / "traces" / folder, out / "truth" / folder, name, spans, truth):
        print(f"wrote {folder}/{name}: {len(spans)} spans")


def meta(mode: Mode, form: str) -> dict[str, Any]:
    version = importlib.metadata.version
    content = "TRACELOOP_TRACE_CONTENT=false" if form == "no-content" else "TRACELOOP_TRACE_CONTENT unset (true)"
    return {
        "framework": "openai (hand-written agent loop)",
        "framework_version": version("openai"),
        "instrumentation": (
            f"opentelemetry-instrumentation-openai {version('opentelemetry-instrumentation-openai')} "
            f"(Traceloop OpenLLMetry; {content}); runs in hand-made OTel GenAI invoke_agent spans; no tool spans"
        ),
        "conventions": "OpenLLMetry model spans (openai.chat / openai.response, gen_ai.output.messages) "
        "under OTel GenAI invoke_agent run spans",
        "api": mode.describe(),
        "streamed": mode.streamed,
    }


def main() -> None:
    form = openai_tool_loop.take_form(list(FOLDERS))
    openai_tool_loop.main(__doc__.splitlines()[0], all_scenarios(form), setup(form), capture)


if __name__ == "__main__":
    main()
