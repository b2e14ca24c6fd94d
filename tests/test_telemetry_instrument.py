"""`instrument(registry)`: one call puts scoring in front of the export, with telemetry wired."""

from __future__ import annotations

import logging
import os
import subprocess
import sys
import textwrap
from collections.abc import Iterator

import pytest
from opentelemetry.context import Context
from opentelemetry.exporter.otlp.proto.grpc.trace_exporter import OTLPSpanExporter as GrpcSpanExporter
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter as HttpSpanExporter
from opentelemetry.sdk._logs import LoggerProvider
from opentelemetry.sdk._logs.export import InMemoryLogRecordExporter, SimpleLogRecordProcessor
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import InMemoryMetricReader
from opentelemetry.sdk.trace import ReadableSpan, Span, SpanProcessor, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from tests.otlp_downstream import TelemetryReceiver
from toolscore.collector.instrumentation import instrument, span_exporter_from_env
from toolscore.collector.pipeline import PipelineConfig, ToolscoreSpanProcessor
from toolscore.collector.registry import Registry
from toolscore.collector.registry.stores import MemoryStore
from toolscore.collector.telemetry import NoopTelemetry

EXPECTATION = {
    "name": "book-flight",
    "match": {"agent": "travel"},
    "scorers": [{"type": "tool_selection", "expected_tool": "book_flight"}],
}


@pytest.fixture
def registry() -> Iterator[Registry]:
    with Registry(MemoryStore()) as registry:
        registry.put(EXPECTATION)
        yield registry


def _agent_run(provider: TracerProvider, tool: str) -> str:
    """One OTel GenAI agent run that calls `tool`; returns the run span's id (16 hex digits)."""
    tracer = provider.get_tracer("app")
    agent_attributes = {"gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": "travel"}
    with tracer.start_as_current_span("invoke_agent travel", attributes=agent_attributes) as run:
        tool_attributes = {"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": tool}
        with tracer.start_as_current_span(f"execute_tool {tool}", attributes=tool_attributes):
            pass
    return f"{run.get_span_context().span_id:016x}"


def test_instrument_scores_the_run_and_reports_it(registry: Registry) -> None:
    provider = TracerProvider()
    spans = InMemorySpanExporter()
    reader = InMemoryMetricReader()
    meters = MeterProvider(metric_readers=[reader])
    events = InMemoryLogRecordExporter()
    loggers = LoggerProvider()
    loggers.add_log_record_processor(SimpleLogRecordProcessor(events))
    processor = instrument(
        registry,
        tracer_provider=provider,
        next_processor=SimpleSpanProcessor(spans),
        config=PipelineConfig(settle_ms=10),
        meter_provider=meters,
        logger_provider=loggers,
    )
    run_span_id = _agent_run(provider, "book_flight")
    assert processor.force_flush(10_000)
    provider.shutdown()

    by_name = {span.name: span for span in spans.get_finished_spans()}
    assert set(by_name) == {"invoke_agent travel", "execute_tool book_flight"}
    run_events = [e for e in by_name["invoke_agent travel"].events if e.name == "gen_ai.evaluation.result"]
    assert [dict(e.attributes or {}).get("gen_ai.evaluation.score.label") for e in run_events] == ["pass"]
    (record,) = [data.log_record for data in events.get_finished_logs()]
    assert (record.event_name, f"{record.span_id:016x}") == ("gen_ai.evaluation.result", run_span_id)
    data = reader.get_metrics_data()
    assert data is not None
    evaluations = [
        dict(point.attributes or {})
        for rm in data.resource_metrics
        for sm in rm.scope_metrics
        for m in sm.metrics
        if m.name == "toolscore.evaluations"
        for point in m.data.data_points
    ]
    assert [(p["toolscore.expectation.name"], p["gen_ai.evaluation.score.label"]) for p in evaluations] == [
        ("book-flight", "pass")
    ]
    meters.shutdown()
    loggers.shutdown()


def test_telemetry_is_off_when_the_environment_says_so(registry: Registry, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TOOLSCORE_TELEMETRY_ENABLED", "false")
    provider = TracerProvider()
    processor = instrument(
        registry, tracer_provider=provider, next_processor=SimpleSpanProcessor(InMemorySpanExporter())
    )
    try:
        assert isinstance(processor.engine.telemetry, NoopTelemetry)
    finally:
        provider.shutdown()


def test_instrumenting_a_provider_twice_keeps_one_processor(
    registry: Registry, caplog: pytest.LogCaptureFixture
) -> None:
    """A re-imported module or a re-run notebook cell calls it again: every span must still go out once."""
    provider = TracerProvider()
    spans = InMemorySpanExporter()
    first = instrument(registry, tracer_provider=provider, next_processor=SimpleSpanProcessor(spans))
    again = instrument(registry, tracer_provider=provider, next_processor=SimpleSpanProcessor(spans))
    assert again is first
    assert "called again for the same tracer provider" in caplog.text
    _agent_run(provider, "book_flight")
    assert first.force_flush(10_000)
    assert sorted(span.name for span in spans.get_finished_spans()) == [
        "execute_tool book_flight",
        "invoke_agent travel",
    ]
    first.shutdown()
    spans.clear()
    renewed = instrument(registry, tracer_provider=provider, next_processor=SimpleSpanProcessor(spans))
    assert renewed is not first  # the first was shut down: a new one takes its place
    provider.shutdown()


def test_exporter_and_next_processor_together_are_refused(registry: Registry) -> None:
    with pytest.raises(ValueError, match="either exporter= or next_processor="):
        instrument(
            registry,
            tracer_provider=TracerProvider(),
            exporter=InMemorySpanExporter(),
            next_processor=SimpleSpanProcessor(InMemorySpanExporter()),
        )


@pytest.mark.parametrize(
    ("variables", "expected"),
    [
        ({}, GrpcSpanExporter),
        ({"OTEL_EXPORTER_OTLP_PROTOCOL": "http/protobuf"}, HttpSpanExporter),
        ({"OTEL_TRACES_EXPORTER": "none"}, type(None)),
    ],
)
def test_span_exporter_follows_the_otel_variables(
    monkeypatch: pytest.MonkeyPatch, variables: dict[str, str], expected: type
) -> None:
    for name in ("OTEL_TRACES_EXPORTER", "OTEL_EXPORTER_OTLP_PROTOCOL", "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL"):
        monkeypatch.delenv(name, raising=False)
    for name, value in variables.items():
        monkeypatch.setenv(name, value)
    exporter = span_exporter_from_env()
    assert type(exporter) is expected
    if exporter is not None:
        exporter.shutdown()


@pytest.mark.integration
def test_without_a_provider_a_global_sdk_provider_is_installed() -> None:
    """Run in a fresh interpreter: the global tracer provider can be set only once per process."""
    script = textwrap.dedent(
        """
        from opentelemetry import trace
        from opentelemetry.sdk.trace import TracerProvider
        from toolscore.collector.instrumentation import instrument
        from toolscore.collector.registry.stores import MemoryStore; from toolscore.collector.registry import Registry

        assert isinstance(trace.get_tracer_provider(), trace.ProxyTracerProvider)
        with Registry(MemoryStore()) as registry:
            processor = instrument(registry)
            provider = trace.get_tracer_provider()
            assert isinstance(provider, TracerProvider)
            assert processor in provider._active_span_processor._span_processors
            provider.shutdown()
        print("installed")
        """
    )
    env = {"OTEL_TRACES_EXPORTER": "none", "PATH": ""}
    done = subprocess.run(
        [sys.executable, "-c", script], check=False, capture_output=True, text=True, env=env, timeout=60
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "installed"


def test_the_package_attribute_is_callable_as_instrument(registry: Registry) -> None:
    import toolscore.collector

    provider = TracerProvider()
    processor = toolscore.collector.instrument(
        registry, tracer_provider=provider, next_processor=SimpleSpanProcessor(InMemorySpanExporter())
    )
    try:
        assert processor in provider._active_span_processor._span_processors
    finally:
        provider.shutdown()


class _Hooks(SpanProcessor):
    """An application's processor with start and ending hooks (a vendor's, a baggage copier): records them."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, str]] = []

    def on_start(self, span: Span, parent_context: Context | None = None) -> None:
        self.calls.append(("start", span.name))

    def _on_ending(self, span: Span) -> None:
        self.calls.append(("ending", span.name))

    def on_end(self, span: ReadableSpan) -> None:
        self.calls.append(("end", span.name))


def test_a_provider_that_already_exports_keeps_its_export_behind_toolscore(
    registry: Registry, caplog: pytest.LogCaptureFixture
) -> None:
    """The usual instrumented application: its own export is there first. Adding one beside it sent every
    span twice, and each run span once unscored; now its processors receive every span once, through toolscore."""
    provider = TracerProvider()
    spans, hooks = InMemorySpanExporter(), _Hooks()
    provider.add_span_processor(SimpleSpanProcessor(spans))
    provider.add_span_processor(hooks)
    tracer = provider.get_tracer("app")  # taken before instrument(), as module-level tracers are
    caplog.set_level(logging.INFO, "toolscore.collector.instrumentation")
    processor = instrument(registry, tracer_provider=provider, config=PipelineConfig(settle_ms=10))
    assert provider._active_span_processor._span_processors == (processor,)
    assert "(SimpleSpanProcessor, _Hooks) now receive every span through toolscore" in caplog.text
    with tracer.start_as_current_span("GET /health"):
        pass
    run_span_id = _agent_run(provider, "book_flight")
    assert processor.force_flush(10_000)
    provider.shutdown()

    exported = spans.get_finished_spans()
    assert sorted(span.name for span in exported) == ["GET /health", "execute_tool book_flight", "invoke_agent travel"]
    (run,) = [span for span in exported if span.name == "invoke_agent travel"]
    assert f"{run.context.span_id:016x}" == run_span_id
    assert [e.name for e in run.events] == ["gen_ai.evaluation.result"]
    assert (run.attributes or {})["toolscore.evaluation.book_flight.tool_selection.label"] == "pass"
    names = ("GET /health", "execute_tool book_flight", "invoke_agent travel")
    for hook in ("start", "ending", "end"):
        assert sorted(name for kind, name in hooks.calls if kind == hook) == sorted(names), hook


def test_an_exporter_given_leaves_the_providers_processors_beside_toolscore(registry: Registry) -> None:
    """Asked for an export of its own, toolscore adds it and leaves the application's where it is."""
    provider = TracerProvider()
    theirs, ours = InMemorySpanExporter(), InMemorySpanExporter()
    provider.add_span_processor(SimpleSpanProcessor(theirs))
    processor = instrument(
        registry,
        tracer_provider=provider,
        next_processor=SimpleSpanProcessor(ours),
        config=PipelineConfig(settle_ms=10),
    )
    _agent_run(provider, "book_flight")
    assert processor.force_flush(10_000)
    provider.shutdown()
    scored = {s.name: bool(s.events) for s in ours.get_finished_spans()}
    assert scored == {"invoke_agent travel": True, "execute_tool book_flight": False}
    assert {s.name: bool(s.events) for s in theirs.get_finished_spans()} == {
        "invoke_agent travel": False,
        "execute_tool book_flight": False,
    }


def test_a_processor_wired_by_hand_is_not_put_behind_a_second(
    registry: Registry, caplog: pytest.LogCaptureFixture
) -> None:
    provider = TracerProvider()
    spans = InMemorySpanExporter()
    wired = ToolscoreSpanProcessor(registry, SimpleSpanProcessor(spans), config=PipelineConfig(settle_ms=10))
    provider.add_span_processor(wired)
    assert instrument(registry, tracer_provider=provider) is wired
    assert "called again for the same tracer provider" in caplog.text
    _agent_run(provider, "book_flight")
    assert wired.force_flush(10_000)
    provider.shutdown()
    assert sorted(span.name for span in spans.get_finished_spans()) == [
        "execute_tool book_flight",
        "invoke_agent travel",
    ]


@pytest.mark.integration
def test_without_global_providers_metrics_and_events_follow_the_otel_variables(
    otlp_collector: tuple[str, TelemetryReceiver],
) -> None:
    """An application that sets no meter or logger provider: the API's proxies would drop everything, so
    instrument() builds toolscore's own from OTEL_EXPORTER_OTLP_ENDPOINT, flushed when the provider shuts
    down. In a fresh interpreter: the global providers can be set only once per process."""
    endpoint, sink = otlp_collector
    script = textwrap.dedent(
        """
        from opentelemetry.sdk.trace import TracerProvider
        from opentelemetry.sdk.trace.export import SimpleSpanProcessor
        from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
        from tests.test_telemetry_instrument import EXPECTATION, _agent_run
        from toolscore.collector.instrumentation import instrument
        from toolscore.collector.pipeline import PipelineConfig
        from toolscore.collector.registry.stores import MemoryStore; from toolscore.collector.registry import Registry

        provider = TracerProvider()
        spans = InMemorySpanExporter()
        provider.add_span_processor(SimpleSpanProcessor(spans))
        with Registry(MemoryStore()) as registry:
            registry.put(EXPECTATION)
            instrument(registry, tracer_provider=provider, config=PipelineConfig(settle_ms=10))
            print(_agent_run(provider, "book_flight"))
            provider.shutdown()
        print(len(spans.get_finished_spans()))
        """
    )
    env = {**os.environ, "OTEL_EXPORTER_OTLP_ENDPOINT": endpoint, "OTEL_METRIC_EXPORT_INTERVAL": "600000"}
    for name in ("OTEL_METRICS_EXPORTER", "OTEL_LOGS_EXPORTER", "OTEL_SDK_DISABLED", "TOOLSCORE_TELEMETRY_ENABLED"):
        env.pop(name, None)
    done = subprocess.run(
        [sys.executable, "-c", script], check=False, capture_output=True, text=True, env=env, timeout=60
    )
    assert done.returncode == 0, done.stderr
    run_span_id, exported = done.stdout.split()
    assert exported == "2"
    assert [(r.event_name, r.span_id.hex()) for r in sink.log_records()] == [("gen_ai.evaluation.result", run_span_id)]
    assert {"toolscore.evaluation.score", "toolscore.evaluations", "toolscore.runs"} <= sink.metric_names()


def test_an_application_meter_provider_is_used_rather_than_one_of_toolscores(
    registry: Registry, otlp_collector: tuple[str, TelemetryReceiver], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Given (or set globally) by the application, its providers get the telemetry, whatever OTEL_* say."""
    endpoint, sink = otlp_collector
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", endpoint)
    reader = InMemoryMetricReader()
    meters = MeterProvider(metric_readers=[reader])
    loggers = LoggerProvider()
    events = InMemoryLogRecordExporter()
    loggers.add_log_record_processor(SimpleLogRecordProcessor(events))
    provider = TracerProvider()
    processor = instrument(
        registry,
        tracer_provider=provider,
        next_processor=SimpleSpanProcessor(InMemorySpanExporter()),
        config=PipelineConfig(settle_ms=10),
        meter_provider=meters,
        logger_provider=loggers,
    )
    _agent_run(provider, "book_flight")
    assert processor.force_flush(10_000)
    provider.shutdown()
    assert len(events.get_finished_logs()) == 1
    assert reader.get_metrics_data() is not None
    assert (sink.logs, sink.metrics) == ([], [])
    meters.shutdown()
    loggers.shutdown()
