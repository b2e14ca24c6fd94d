"""Captures of MLflow Tracing (`mlflow.openai.autolog()`) on a hand-written tool loop, exported over OTLP.

The loop is `openai_tool_loop.Loop`. MLflow's OpenAI autolog traces each model request as a CHAT_MODEL span; a user
marks each run and each tool the way MLflow's docs for tool-calling agents do: the run in an AGENT span
(`mlflow.start_span(name=<agent>, span_type=SpanType.AGENT)`, the fluent form of `@mlflow.trace(span_type=
SpanType.AGENT)`), each tool function decorated with `@mlflow.trace(span_type=SpanType.TOOL)`. g's two runs are
under the application span `conversation` (`mlflow.start_span`); f's sub-agent runs inside its tool function.

MLflow exports over OTLP when `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT` is set (`mlflow/tracing/utils/otlp.py`,
`should_use_otlp_exporter`): its own tracer provider gets an `OtelSpanProcessor` (a `BatchSpanProcessor`) with the
OTel SDK's `OTLPSpanExporter` (`OTEL_EXPORTER_OTLP_TRACES_PROTOCOL`, default grpc; here `http/protobuf`). The
capture is what that exporter sent to a receiver on 127.0.0.1 (`js_capture.Receiver`), merged into one request.

Chat Completions for a..i and the unknown tool (b, h, i streamed); through the Responses API:
`k_responses_parallel` (c), `l_responses_streamed` (i, streamed), `m_responses_error` (e).

    /work/venvs/mlflow/bin/python tests/captures/mlflow-openai/capture.py [--genai] [--out DIR] [SCENARIO ...]

`--genai`: the same scenarios exported with `MLFLOW_ENABLE_OTEL_GENAI_SEMCONV=true`, MLflow's translation of every
span to the OTel GenAI conventions before export (`mlflow/tracing/processor/otel.py`, `OtelSpanProcessor.on_end`;
`mlflow/tracing/export/genai_semconv/translator.py`), into tests/testdata/traces/mlflow-openai-genai/. The
translation renames the spans and drops every `mlflow.*` attribute, so the runs of the truth are found by the span
ids the capture saw go into the translator (`Originals`).
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

GENAI = "--genai" in sys.argv
if GENAI:
    sys.argv.remove("--genai")
    os.environ["MLFLOW_ENABLE_OTEL_GENAI_SEMCONV"] = "true"

for _name, _value in {
    "MLFLOW_DISABLE_TELEMETRY": "true",
    "DO_NOT_TRACK": "true",
    "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL": "http/protobuf",
    "OTEL_SERVICE_NAME": "capture-mlflow-openai",
}.items():
    os.environ[_name] = _value

import openai_tool_loop  # noqa: E402
from capture_kit import Agent, Scenario, loopback_only_connections, truth_for  # noqa: E402
from js_capture import Receiver, attr, spans_of, write_request  # noqa: E402
from mlflow_originals import Originals  # noqa: E402
from openai_tool_loop import UNKNOWN_TOOL, Loop, Mode  # noqa: E402

__all__: list[str] = []

REFUSED = loopback_only_connections()
FOLDER = "mlflow-openai-genai" if GENAI else "mlflow-openai"


def all_scenarios() -> dict[str, tuple[Scenario, Mode]]:
    return openai_tool_loop.all_scenarios()


class AppSpans:
    """What `openai_tool_loop.play` needs of a tracer (g's application span), as an MLflow user makes it."""

    def start_as_current_span(self, name: str) -> contextlib.AbstractContextManager[Any]:
        import mlflow

        return mlflow.start_span(name=name)


def setup() -> dict[str, Any]:
    """The OTLP receiver, then MLflow (its tracer provider reads the endpoint when first used) and the autolog."""
    receiver = Receiver().__enter__()
    os.environ["OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"] = f"{receiver.endpoint}/v1/traces"
    import mlflow

    mlflow.openai.autolog()
    return {"receiver": receiver, "originals": Originals()}


def run_span(agent: Agent) -> contextlib.AbstractContextManager[Callable[[str], None] | None]:
    """An AGENT span per run named after the agent, its input the prompt and its output the final text."""
    import mlflow
    from mlflow.entities import SpanType

    @contextlib.contextmanager
    def agent_span() -> Iterator[Callable[[str], None]]:
        with mlflow.start_span(name=agent.name, span_type=SpanType.AGENT) as span:
            span.set_inputs({"question": agent.prompt})
            yield span.set_outputs

    return agent_span()


def traced_tool(fn: Callable[..., Any]) -> Callable[..., Any]:
    """The tool function as MLflow's docs trace one: `@mlflow.trace(span_type=SpanType.TOOL)`."""
    import mlflow
    from mlflow.entities import SpanType

    return mlflow.trace(span_type=SpanType.TOOL)(fn)


def flush() -> None:
    from mlflow.tracing.provider import provider

    provider.get().force_flush()


def capture(name: str, scenario: Scenario, mode: Mode, parts: dict[str, Any], out: Path) -> None:
    """Run one scenario, write what MLflow exported and its truth."""
    receiver: Receiver = parts["receiver"]
    originals: Originals = parts["originals"]
    receiver.bodies.clear()
    originals.clear()
    loop = openai_tool_loop.play(
        lambda client: Loop(scenario, client, mode, run_span, wrap_tool=traced_tool), scenario, AppSpans()
    )
    flush()
    request = receiver.request()
    spans = spans_of(request)
    runs = {}
    for agent in scenario.agents:
        found = [s for s in spans if originals.name_and_type(s, attr) == (agent.name, "AGENT")]
        if len(found) != 1:
            raise LookupError(f"{name}: {len(found)} AGENT spans named {agent.name}")
        runs[agent.name] = (found[0].trace_id.hex(), found[0].span_id.hex())
    unrecorded = {"get_forecast"} if scenario is UNKNOWN_TOOL else set()
    flags = {"call_mu1": {"model_only": True}} if scenario is UNKNOWN_TOOL else None
    truth = truth_for(scenario, meta(mode), loop.recorder, runs, unrecorded=unrecorded, flags=flags)
    write_request(out, FOLDER, name, request, truth)
    print(f"wrote {FOLDER}/{name}: {len(spans)} spans")


def meta(mode: Mode) -> dict[str, Any]:
    version = importlib.metadata.version
    return {
        "framework": "openai (hand-written agent loop)",
        "framework_version": version("openai"),
        "instrumentation": (
            f"mlflow-tracing {version('mlflow-tracing')} (mlflow.openai.autolog(); runs in AGENT spans from "
            "mlflow.start_span, tools decorated @mlflow.trace(span_type=TOOL)), exported by its OTLP exporter "
            f"(opentelemetry-exporter-otlp-proto-http {version('opentelemetry-exporter-otlp-proto-http')}, "
            "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT set)"
        ),
        "conventions": (
            "OTel GenAI semantic conventions as MLflow translates its spans (MLFLOW_ENABLE_OTEL_GENAI_SEMCONV=true)"
            if GENAI
            else "MLflow Tracing span attributes (mlflow.spanType, mlflow.spanInputs, mlflow.spanOutputs)"
        ),
        "api": mode.describe(),
        "streamed": mode.streamed,
    }


def main() -> None:
    try:
        openai_tool_loop.main(__doc__.splitlines()[0], all_scenarios(), setup, capture)
    finally:
        if REFUSED:
            raise SystemExit(f"connections refused (outside the loopback): {REFUSED}")


if __name__ == "__main__":
    main()
