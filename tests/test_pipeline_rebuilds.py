"""How often a pending trace is rebuilt: the benchmarks' traces (an agent run at the root) once each, both sources.

A trace is rebuilt at each of its runs' settles and again when it finishes (`runs`). When its root is
a run already scored with everything under it, the finish has nothing left to score and rebuilds
nothing: every tool span of such a trace is read once. The engine's `stats` (the `ExtractStats` every
rebuild adds to) count the rebuilt traces and the calls built, so the rebuilds are counted without
looking inside the engine. The traces are `bench_extract`'s, made with the real SDK: an `invoke_agent`
root, `chat` spans and 3-8 `execute_tool` spans, ending children first.
"""

from __future__ import annotations

import random
from typing import Any

from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import Tracer

from tests.bench.bench_extract import EPOCH_NS
from tests.bench.bench_extract import _run as bench_run
from tests.bench.bench_inprocess import EXPECTATION, RESOURCE
from tests.pipeline_builders import Recording, registry_with, wait_until
from toolscore.collector.extract import rebuild_runs
from toolscore.collector.pipeline import Engine, PipelineConfig, ToolscoreSpanProcessor
from toolscore.collector.serve.ingest import IngestResult
from toolscore.collector.serve.pipeline import CollectorPipeline
from toolscore.collector.sources import spans_from_readable

TRACES = 12
CONFIG = PipelineConfig(settle_ms=20)
SCOPE = ("opentelemetry.instrumentation.openai_agents", "0.9.0")


def _play(tracer: Tracer, seed: int = 3) -> None:
    rng = random.Random(seed)
    for i in range(TRACES):
        bench_run(tracer, rng, EPOCH_NS + i * 10**9)


def _tool_spans(spans: list[ReadableSpan]) -> int:
    return sum(span.name.startswith("execute_tool") for span in spans)


def _settled(engine: Engine[Any], telemetry: Recording) -> bool:
    """Every run scored at its settle and every trace finished, before any flush."""
    return sum(telemetry.outcomes.values()) == TRACES and len(engine.store) == 0


def test_an_agent_run_at_its_trace_root_is_rebuilt_once_in_process() -> None:
    exporter = InMemorySpanExporter()
    telemetry = Recording()
    provider = TracerProvider(resource=RESOURCE)
    with registry_with(EXPECTATION) as registry:
        processor = ToolscoreSpanProcessor(registry, SimpleSpanProcessor(exporter), CONFIG, telemetry)
        provider.add_span_processor(processor)
        try:
            _play(provider.get_tracer(*SCOPE))
            assert wait_until(lambda: _settled(processor.engine, telemetry))
            stats = processor.engine.stats
            spans = list(exporter.get_finished_spans())
        finally:
            provider.shutdown()
    assert (stats.traces, stats.runs) == (TRACES, TRACES), "one rebuild per trace, none at its finish"
    assert stats.calls == _tool_spans(spans), "each tool span is read into a call once"
    live = {
        span.context.span_id: (span.attributes or {})["toolscore.tool_calls"]
        for span in spans
        if span.context is not None and span.name.startswith("invoke_agent")
    }
    offline = {
        int(run.span_id or "", 16): tuple(call.name for call in run.calls)
        for run in rebuild_runs(spans_from_readable(spans))
    }
    assert live == offline


def test_an_agent_run_at_its_trace_root_is_rebuilt_once_in_serve() -> None:
    exporter = InMemorySpanExporter()
    provider = TracerProvider(resource=RESOURCE)
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    _play(provider.get_tracer(*SCOPE))
    provider.shutdown()
    spans = list(exporter.get_finished_spans())
    telemetry = Recording()
    with registry_with(EXPECTATION) as registry:
        pipeline = CollectorPipeline(registry, None, CONFIG, telemetry)
        try:
            data = encode_spans(spans).SerializeToString()
            assert pipeline.accept(ExportTraceServiceRequest.FromString(data), data) == IngestResult()
            assert wait_until(lambda: _settled(pipeline.engine, telemetry))
            stats = pipeline.engine.stats
        finally:
            assert pipeline.shutdown(5)
    assert (stats.traces, stats.runs) == (TRACES, TRACES), "one rebuild per trace, none at its finish"
    assert stats.calls == _tool_spans(spans), "each tool span is read into a call once"
    assert len(telemetry.scores) == 2 * TRACES, "both of the expectation's scorers scored every run"
