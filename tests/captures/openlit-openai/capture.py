"""Captures of OpenLIT (`openlit.init()`) on a hand-written tool loop on the `openai` client.

The loop is what an OpenLIT user writes by hand: `openlit.init()` instruments the `openai` client
(and, as it does by default, every HTTP client library it finds), each agent run is wrapped in
`openlit.start_trace(<agent>)` (OpenLIT's manual-tracing context manager) and each tool function is
decorated with `@openlit.trace` (its manual-tracing decorator). The model is the kit's scripted
OpenAI server on 127.0.0.1.

OpenLIT's own spans for the model calls are `chat <model>` spans (`gen_ai.operation.name=chat`)
carrying the calls as `tool_call` parts of `gen_ai.output.messages` (plus comma-joined
`gen_ai.tool.name`/`gen_ai.tool.call.id`/`gen_ai.tool.args`); OpenLIT writes no `execute_tool` and no
`invoke_agent` span for a hand-written loop: every call of the truth is `model_only`. The manual
spans carry no GenAI operation (see NOTES.md).

Chat Completions for every scenario; b, h and i streamed; `k_responses_streamed` is i through the
Responses API, streamed. A non-streamed Responses API loop is not captured: OpenLIT's span then lists
only the last function_call of each response, and toolscore reads no call from it (see NOTES.md).

    /work/venvs/openlit/bin/python tests/captures/openlit-openai/capture.py [--out DIR] [SCENARIO ...]
"""

from __future__ import annotations

import contextlib
import importlib.metadata
import os
import sys
from collections.abc import Callable, Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # tests/captures

os.environ.setdefault("OPENAI_API_KEY", "scripted-not-a-key")

import openai_tool_loop
import openlit_capture
from capture_kit import SCENARIOS, Agent, Scenario, find_span, truth_for
from openai_tool_loop import Loop, Mode

__all__: list[str] = []

FOLDER = "openlit-openai"
STREAMED = {"b_sequential", "h_complex_args", "i_parallel_random_ids", "k_responses_streamed"}
RESPONSES = {"k_responses_streamed"}
EXTRA = {
    "k_responses_streamed": (
        "i_parallel_random_ids",
        "As i, through the Responses API, streamed: one response with four function_call items.",
    ),
}


def all_scenarios() -> dict[str, Scenario]:
    found = dict(SCENARIOS)
    for name, (base, description) in EXTRA.items():
        found[name] = replace(SCENARIOS[base], name=name, description=description)
    return found


def loop(scenario: Scenario, client: Any) -> Loop:
    """The shared loop (`openai_tool_loop`), each run in `openlit.start_trace(<agent>)` (its result the final
    text), each tool wrapped with `@openlit.trace`."""
    import openlit

    @contextlib.contextmanager
    def start_trace(agent: Agent) -> Iterator[Callable[[str], None]]:
        with openlit.start_trace(agent.name) as traced:
            yield traced.set_result

    mode = Mode("responses" if scenario.name in RESPONSES else "chat", streamed=scenario.name in STREAMED)
    return Loop(scenario, client, mode, start_trace, wrap_tool=openlit.trace)


def capture(name: str, scenario: Scenario, exporter: Any, out: Path) -> dict[str, Any]:
    """Run one scenario, write its capture and truth, and return the truth."""
    from opentelemetry import trace

    exporter.clear()
    played = openai_tool_loop.play(
        lambda client: loop(scenario, client), scenario, trace.get_tracer("capture-openlit-openai")
    )
    spans = exporter.get_finished_spans()
    runs = [find_span(spans, a.name, where=_start_trace_span) for a in scenario.agents]
    flags = openai_tool_loop.model_only(scenario, "the tool's @openlit.trace span (ERROR) and the tool message text")
    truth = truth_for(scenario, meta(played), played.recorder, runs, flags=flags)
    openlit_capture.write(out, FOLDER, name, spans, truth)
    return truth


def _start_trace_span(span: Any) -> bool:
    """An `openlit.start_trace` span (scope `openlit`, no `function.args`: an `@openlit.trace` span has them)."""
    return span.instrumentation_scope.name == "openlit" and "function.args" not in (span.attributes or {})


def meta(loop: Loop) -> dict[str, Any]:
    version = importlib.metadata.version
    api = "Responses API" if loop.responses else "Chat Completions"
    return {
        "framework": "openai (hand-written agent loop)",
        "framework_version": version("openai"),
        "instrumentation": (
            f"openlit {version('openlit')} (openlit.init(), capture_message_content=True, metrics off); "
            f"runs in openlit.start_trace(<agent>), tools decorated with @openlit.trace; "
            f"opentelemetry-sdk {version('opentelemetry-sdk')}"
        ),
        "conventions": "OpenLIT's OTel GenAI spans (chat spans with gen_ai.output.messages), no execute_tool spans",
        "api": api + (", streamed" if loop.streamed else ""),
        "streamed": loop.streamed,
    }


def main() -> None:
    openlit_capture.main(__doc__.splitlines()[0], FOLDER, all_scenarios(), capture)


if __name__ == "__main__":
    main()
