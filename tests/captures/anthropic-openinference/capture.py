"""Captures of `openinference-instrumentation-anthropic` on a hand-written tool loop on the `anthropic` client.

The loop is `anthropic_loop.Loop` (tests/captures/): Messages API with `tools`, `tool_use` blocks answered with
`tool_result` blocks, against the kit's scripted server (`POST /v1/messages`). Each conversation is an AGENT span
made with OpenInference's own manual tracing (`OITracer.start_as_current_span(..., openinference_span_kind=
"agent")`, `agent.name`): OpenInference's way to mark an agent, and the run's span in the truth. The
instrumentor makes one LLM span `messages.create` / `messages.stream` per request (`llm.output_messages`
with the `tool_use` blocks as tool calls, `llm.finish_reason` the stop reason); it traces no tool, so every
call is `model_only`. The client's own tracing (scope `com.anthropic.sdk.python`) adds an
`anthropic.messages.create` span under each LLM span. Besides a..i, `k_is_error` (`anthropic_loop.TYPED_ERRORS`):
e with the failure worded `ToolFailure: ...`, only `is_error` saying it failed. See NOTES.md.

`--hide-outputs` sets OPENINFERENCE_HIDE_OUTPUTS=true (OpenInference's switch for output content, `TraceConfig`)
and writes into `anthropic-openinference-hidden/` the scenarios `HIDDEN`: the LLM spans then hold no call, and each
run that made calls is marked `incomplete` in the truth.

    cd tests/captures/anthropic-openinference
    /work/venvs/anthropic/bin/python capture.py [--hide-outputs] [--out DIR] [SCENARIO ...]
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

FOLDER = "anthropic-openinference"
SCOPE = "capture-anthropic-openinference"
HIDDEN = ("a_single_tool", "b_sequential", "c_parallel", "d_no_tool", "g_two_runs_one_trace")
"""The captures with outputs hidden: plain, streamed (`messages.stream`) and raw-streamed responses, a run with no
call, and two runs in one trace."""


def meta(mode: str) -> dict[str, Any]:
    version = importlib.metadata.version
    hidden = " OPENINFERENCE_HIDE_OUTPUTS=true;" if os.environ.get("OPENINFERENCE_HIDE_OUTPUTS") == "true" else ""
    return {
        "framework": "anthropic (hand-written agent loop)",
        "framework_version": version("anthropic"),
        "instrumentation": (
            f"openinference-instrumentation-anthropic {version('openinference-instrumentation-anthropic')} "
            f"(AnthropicInstrumentor().instrument());{hidden} runs in OITracer AGENT spans "
            f"(openinference-instrumentation {version('openinference-instrumentation')}); "
            f"the client's own tracing on (its default); "
            f"opentelemetry-sdk {version('opentelemetry-sdk')}"
        ),
        "conventions": "OpenInference (LLM spans with llm.output_messages tool calls), no TOOL spans",
        "streamed": mode != "plain",
    }


def main() -> None:
    hidden = "--hide-outputs" in sys.argv
    if hidden:
        sys.argv.remove("--hide-outputs")
        os.environ["OPENINFERENCE_HIDE_OUTPUTS"] = "true"
    folder = f"{FOLDER}-hidden" if hidden else FOLDER
    exporter = anthropic_loop.setup(folder)
    from openinference.instrumentation import OITracer, TraceConfig
    from openinference.instrumentation.anthropic import AnthropicInstrumentor
    from opentelemetry import trace

    AnthropicInstrumentor().instrument()
    tracer = OITracer(trace.get_tracer(SCOPE), config=TraceConfig())

    def run_span(agent: Agent) -> Any:
        attributes = {"agent.name": agent.name, "input.value": agent.prompt}
        return tracer.start_as_current_span(agent.name, openinference_span_kind="agent", attributes=attributes)

    def play_one(scenario: Scenario) -> tuple[list[Any], dict[str, Any]]:
        return anthropic_loop.capture(scenario, exporter, run_span, scope=SCOPE, meta=meta, incomplete=hidden)

    scenarios = (
        {n: anthropic_loop.ALL[n] for n in HIDDEN} if hidden else {**anthropic_loop.ALL, **anthropic_loop.TYPED_ERRORS}
    )
    anthropic_loop.main(__doc__.splitlines()[0], folder, scenarios, play_one)


if __name__ == "__main__":
    main()
