"""Captures of `opentelemetry-instrumentation-openai-v2` 2.4b0 on a hand-written tool loop, in its two forms.

- `--form latest` (venv from requirements-latest.txt: util-genai 1.1b0): the newest GenAI conventions
  (`OTEL_SEMCONV_STABILITY_OPT_IN=gen_ai_latest_experimental`, content `span_only`). Chat spans carry
  the calls as `tool_call` parts of `gen_ai.output.messages`; the run span is util-genai's
  `TelemetryHandler.invoke_local_agent`. No `execute_tool` span exists unless the loop makes one with
  `TelemetryHandler.tool`, which scenarios `j_tool_spans_parallel` and `k_tool_spans_error` do.
  Written into tests/testdata/traces/openai-v2-latest/.
- `--form events` (venv from requirements-events.txt: util-genai 0.4b0, the last util release whose
  `is_experimental_mode()` still reads the opt-in; from 1.0b0 on it always answers True, so 2.4b0
  never takes its default path): no opt-in, content capture `true`. Chat spans carry no content; the
  messages and calls are OTel log records (`gen_ai.user.message`, `gen_ai.choice`, ...) tied to the
  chat span's context, written beside the traces as `<scenario>.logs.pb` / `.logs.json`. Written into
  tests/testdata/traces/openai-v2-events/.

Every call is `model_only` in the truth unless the loop made an `execute_tool` span for it. The
Responses API is not instrumented by 2.4b0 (only chat completions and embeddings are wrapped), so
only Chat Completions is used.

    /work/venvs/openai-v2/bin/python tests/captures/openai-v2/capture.py --form latest [SCENARIO ...]
    /work/venvs/openai-v2-events/bin/python tests/captures/openai-v2/capture.py --form events [SCENARIO ...]
"""

from __future__ import annotations

import argparse
import contextlib
import importlib.metadata
import os
import sys
from collections.abc import Callable, Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # tests/captures
sys.path.insert(0, str(Path(__file__).resolve().parent))

import openai_tool_loop
from capture_kit import SCENARIOS, Agent, Scenario, find_span, truth_for, write_capture
from openai_tool_loop import Loop, Mode

__all__: list[str] = []

REPO = Path(__file__).resolve().parents[3]
FORMS: dict[str, dict[str, Any]] = {
    "latest": {
        "folder": "openai-v2-latest",
        "env": {
            "OTEL_SEMCONV_STABILITY_OPT_IN": "gen_ai_latest_experimental",
            "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT": "span_only",
        },
        "util_genai": "1.1b0",
        "streamed": {"b_sequential", "h_complex_args", "i_parallel_random_ids", "j_tool_spans_parallel"},
    },
    "events": {
        "folder": "openai-v2-events",
        "env": {"OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT": "true"},
        "util_genai": "0.4b0",
        "streamed": {"b_sequential", "h_complex_args", "i_parallel_random_ids"},
    },
}
TOOL_SPAN_SCENARIOS = {
    "j_tool_spans_parallel": (
        "i_parallel_random_ids",
        "As i, streamed, and the loop records each call in an "
        "execute_tool span (TelemetryHandler.tool) as well: tool spans and the chat "
        "span's tool_call parts describe the same four calls.",
    ),
    "k_tool_spans_error": (
        "e_tool_error_retry",
        "As e, and the loop records each call in an execute_tool span "
        "(TelemetryHandler.tool): the failing call's span has status ERROR.",
    ),
}


def all_scenarios(form: str) -> dict[str, tuple[Scenario, bool]]:
    """Scenario name -> (scenario, whether the loop records execute_tool spans)."""
    found = {name: (s, False) for name, s in SCENARIOS.items()}
    if form == "latest":
        for name, (base, description) in TOOL_SPAN_SCENARIOS.items():
            found[name] = (replace(SCENARIOS[base], name=name, description=description), True)
    return found


def loop(scenario: Scenario, client: Any, handler: Any, form: str, tool_spans: bool) -> Loop:
    """The shared loop (`openai_tool_loop`, Chat Completions), each run in util-genai's `invoke_local_agent`
    span, each call in `TelemetryHandler.tool`'s `execute_tool` span when `tool_spans`."""
    mode = Mode("chat", streamed=scenario.name in FORMS[form]["streamed"])

    def agent_span(agent: Agent) -> contextlib.AbstractContextManager[None]:
        return _agent_span(handler, form, agent, played.offered(agent))

    def call_tool(call_id: str, name: str, args: dict[str, Any], fn: Callable[..., Any]) -> Any:
        if not tool_spans:
            return fn(**args)
        with handler.tool(name) as invocation:  # an exception leaving it ends the span ERROR
            invocation.tool_call_id = call_id
            invocation.tool_type = "function"
            invocation.arguments = args
            result = str(fn(**args))
            invocation.tool_result = result
            return result

    played = Loop(scenario, client, mode, agent_span, call_tool=call_tool)
    return played


@contextlib.contextmanager
def _agent_span(handler: Any, form: str, agent: Agent, schemas: list[dict[str, Any]]) -> Iterator[None]:
    if form == "latest":
        from opentelemetry.util.genai.types import FunctionToolDefinition

        with handler.invoke_local_agent(agent_name=agent.name, request_model=agent.model) as invocation:
            invocation.tool_definitions = [
                FunctionToolDefinition(
                    name=s["function"]["name"],
                    description=s["function"]["description"],
                    parameters=s["function"]["parameters"],
                )
                for s in schemas
            ]
            yield
    else:  # util-genai 0.4b0: the provider is positional, the agent's name an attribute
        with handler.invoke_local_agent("openai", request_model=agent.model) as invocation:
            invocation.agent_name = agent.name
            yield


def capture(
    name: str, scenario: Scenario, *, tool_spans: bool, form: str, parts: dict[str, Any], out: Path
) -> dict[str, Any]:
    """Run one scenario, write its capture and truth, and return the truth."""
    from opentelemetry import trace

    parts["spans"].clear()
    parts["logs"].clear()
    played = openai_tool_loop.play(
        lambda client: loop(scenario, client, parts["handler"], form, tool_spans),
        scenario,
        trace.get_tracer("capture-openai-v2"),
    )
    spans = parts["spans"].get_finished_spans()
    runs = [find_span(spans, f"invoke_agent {a.name}") for a in scenario.agents]
    flags = {} if tool_spans else {c.id: {"model_only": True} for a in scenario.agents for c in a.calls}
    for call in [c for a in scenario.agents for c in a.calls if scenario.raises(c.name, c.args)]:
        if not tool_spans:  # nothing structured says so: only the loop's "Error: ..." tool message text
            flags[call.id] = {**flags[call.id], "error_note": "only in the tool message text fed back to the model"}
    truth = truth_for(scenario, meta(form, tool_spans, played.streamed), played.recorder, runs, flags=flags)
    logs = parts["logs"].get_finished_logs() if form == "events" else None
    folder = FORMS[form]["folder"]
    written = write_capture(out / "traces" / folder, out / "truth" / folder, name, spans, truth, logs=logs)
    if written:
        print(f"wrote {folder}/{name}: {len(spans)} spans" + (f", {len(logs)} log records" if logs else ""))
    return truth


def meta(form: str, tool_spans: bool, streamed: bool) -> dict[str, Any]:
    version = importlib.metadata.version
    env = " ".join(f"{k}={v}" for k, v in FORMS[form]["env"].items())
    how = "TelemetryHandler.invoke_local_agent run span"
    how += "; execute_tool spans from TelemetryHandler.tool" if tool_spans else "; no execute_tool spans"
    extra: dict[str, Any] = {}
    if form == "events":
        how += "; messages and calls as OTel log records (.logs.pb/.logs.json)"
        extra["calls_in"] = "log records beside the trace (<scenario>.logs.pb/.logs.json): event gen_ai.choice"
    return {
        "framework": "openai (hand-written agent loop)",
        "framework_version": version("openai"),
        "instrumentation": (
            f"opentelemetry-instrumentation-openai-v2 {version('opentelemetry-instrumentation-openai-v2')}"
            f" + opentelemetry-util-genai {version('opentelemetry-util-genai')} ({env}); {how}"
        ),
        "conventions": "OpenTelemetry GenAI semantic conventions (gen_ai.*)"
        + (", v1.30.0 events form" if form == "events" else ", latest experimental"),
        "streamed": streamed,
        **extra,
    }


def setup(form: str) -> dict[str, Any]:
    """Environment, providers (global: the instrumentation and util-genai use them) and instrumentation."""
    have = importlib.metadata.version("opentelemetry-util-genai")
    if have != FORMS[form]["util_genai"]:
        raise SystemExit(
            f"--form {form} needs opentelemetry-util-genai {FORMS[form]['util_genai']}, this venv has "
            f"{have}: use requirements-{form}.txt"
        )
    os.environ.update(FORMS[form]["env"])
    from opentelemetry import _logs, trace
    from opentelemetry.instrumentation.openai_v2 import OpenAIInstrumentor
    from opentelemetry.sdk._logs import LoggerProvider
    from opentelemetry.sdk._logs.export import InMemoryLogRecordExporter, SimpleLogRecordProcessor
    from opentelemetry.sdk.resources import Resource
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
    from opentelemetry.util.genai.handler import TelemetryHandler

    resource = Resource.create({"service.name": f"capture-{FORMS[form]['folder']}"})
    spans, logs = InMemorySpanExporter(), InMemoryLogRecordExporter()
    tracer_provider = TracerProvider(resource=resource)
    tracer_provider.add_span_processor(SimpleSpanProcessor(spans))
    trace.set_tracer_provider(tracer_provider)
    logger_provider = LoggerProvider(resource=resource)
    logger_provider.add_log_record_processor(SimpleLogRecordProcessor(logs))
    _logs.set_logger_provider(logger_provider)
    OpenAIInstrumentor().instrument()
    return {"spans": spans, "logs": logs, "handler": TelemetryHandler()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--form", choices=sorted(FORMS), required=True)
    parser.add_argument("scenarios", nargs="*", help="default: all the form has")
    parser.add_argument("--out", type=Path, default=REPO / "tests" / "testdata", help="default: tests/testdata")
    args = parser.parse_args()
    parts = setup(args.form)
    known = all_scenarios(args.form)
    for name in args.scenarios or list(known):
        scenario, tool_spans = known[name]
        capture(name, scenario, tool_spans=tool_spans, form=args.form, parts=parts, out=args.out)


if __name__ == "__main__":
    main()
