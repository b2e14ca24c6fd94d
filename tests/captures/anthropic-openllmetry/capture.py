"""Captures of `opentelemetry-instrumentation-anthropic` (OpenLLMetry) on a hand-written tool loop on `anthropic`.

The loop is `anthropic_loop.Loop` (tests/captures/): Messages API with `tools`, `tool_use` blocks answered with
`tool_result` blocks, against the kit's scripted server (`POST /v1/messages`). The instrumentor makes one
`anthropic.chat` span per request (`gen_ai.output.messages` with the `tool_use` blocks as `tool_call` parts,
`gen_ai.response.finish_reasons` the stop reason mapped to the GenAI enum: `tool_use` -> `tool_call`); it
traces no tool, so every call is `model_only`. Each conversation is a `<agent>.agent` span with the attributes
traceloop-sdk's `@agent(name=...)` decorator gives it (`traceloop.span.kind=agent`, `traceloop.entity.name`):
OpenLLMetry's way to mark an agent (traceloop-sdk itself does not install beside these pins), and the run's
span in the truth. The client's own tracing (scope `com.anthropic.sdk.python`) adds an
`anthropic.messages.create` span beside each `anthropic.chat` span. See NOTES.md.

`--content off` sets TRACELOOP_TRACE_CONTENT=false (the default is true) and writes into
`anthropic-openllmetry-nocontent/` the scenarios `CONTENT_OFF`: the spans then hold no call at all, only the
finish reason, and each run that made calls is marked `incomplete` in the truth. `--client-content` also turns
the `anthropic` client's own content capture on (`ANTHROPIC_OPEN_TELEMETRY_TRACES_CONTENT_MODE=content`) and writes
into `anthropic-openllmetry-clientcontent/` the scenarios `CLIENT_CONTENT`: the client's span beside each
`anthropic.chat` span then lists the same calls (one response recorded twice, side by side).

    cd tests/captures/anthropic-openllmetry
    /work/venvs/anthropic/bin/python capture.py [--content off | --client-content] [--out DIR] [SCENARIO ...]
"""

from __future__ import annotations

import importlib.metadata
import os
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # tests/captures

import anthropic_loop
from capture_kit import Agent, Scenario

__all__: list[str] = []

FOLDER = "anthropic-openllmetry"
SCOPE = "capture-anthropic-openllmetry"
CONTENT_OFF = ("a_single_tool", "b_sequential", "c_parallel", "d_no_tool", "g_two_runs_one_trace")
"""The content-off captures: plain, streamed (`messages.stream`) and raw-streamed responses, a run with no call,
and two runs in one trace."""
CLIENT_CONTENT = ("a_single_tool", "b_sequential", "c_parallel", "e_tool_error_retry")
"""The captures with the client's own content capture on too: plain, streamed and raw-streamed, and a failure."""


def meta(content: bool, client_content: bool) -> Any:
    def framework_meta(mode: str) -> dict[str, Any]:
        version = importlib.metadata.version
        return {
            "framework": "anthropic (hand-written agent loop)",
            "framework_version": version("anthropic"),
            "instrumentation": (
                f"opentelemetry-instrumentation-anthropic {version('opentelemetry-instrumentation-anthropic')} "
                f"(AnthropicInstrumentor().instrument(), span attributes; "
                f"TRACELOOP_TRACE_CONTENT={'true' if content else 'false'}); runs in `<agent>.agent` spans with "
                f"traceloop-sdk's @agent attributes; the client's own tracing on ("
                f"{'ANTHROPIC_OPEN_TELEMETRY_TRACES_CONTENT_MODE=content' if client_content else 'its default'}); "
                f"opentelemetry-sdk {version('opentelemetry-sdk')}"
            ),
            "conventions": "OpenLLMetry (anthropic.chat spans with gen_ai.output.messages), no tool spans",
            "streamed": mode != "plain",
        }

    return framework_meta


def main() -> None:
    content = True
    if "--content" in sys.argv:
        at = sys.argv.index("--content")
        content = {"on": True, "off": False}[sys.argv[at + 1]]
        del sys.argv[at : at + 2]
    client_content = "--client-content" in sys.argv
    if client_content:
        sys.argv.remove("--client-content")
        os.environ["ANTHROPIC_OPEN_TELEMETRY_TRACES_CONTENT_MODE"] = "content"
    os.environ["TRACELOOP_TRACE_CONTENT"] = "true" if content else "false"
    os.environ["TRACELOOP_TELEMETRY"] = "false"
    folder = FOLDER if content else f"{FOLDER}-nocontent"
    folder = f"{FOLDER}-clientcontent" if client_content else folder
    exporter = anthropic_loop.setup(folder)
    from opentelemetry import trace
    from opentelemetry.instrumentation.anthropic import AnthropicInstrumentor

    AnthropicInstrumentor().instrument()
    tracer = trace.get_tracer(SCOPE)

    def run_span(agent: Agent) -> Any:
        attributes = {"traceloop.span.kind": "agent", "traceloop.entity.name": agent.name}
        return tracer.start_as_current_span(f"{agent.name}.agent", attributes=attributes)

    def play_one(scenario: Scenario) -> tuple[list[Any], dict[str, Any]]:
        return anthropic_loop.capture(
            scenario,
            exporter,
            run_span,
            scope=SCOPE,
            meta=meta(content, client_content),
            span_name="{}.agent",
            incomplete=not content,
        )

    names = CLIENT_CONTENT if client_content else anthropic_loop.ALL if content else CONTENT_OFF
    scenarios = {n: anthropic_loop.ALL[n] for n in names}
    anthropic_loop.main(__doc__.splitlines()[0], folder, scenarios, play_one)


if __name__ == "__main__":
    main()
