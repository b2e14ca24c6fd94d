"""Runs carry their agent's version: read from the run span or its resource, bounded per agent in the metrics."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from opentelemetry import baggage, context
from opentelemetry import trace as trace_api
from opentelemetry.processor.baggage import ALLOW_ALL_BAGGAGE_KEYS, BaggageSpanProcessor
from opentelemetry.sdk._logs import LoggerProvider
from opentelemetry.sdk._logs.export import InMemoryLogRecordExporter, SimpleLogRecordProcessor
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import InMemoryMetricReader, Metric
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from tests.pipeline_builders import TRAVEL, Recording, registry_with, run_attrs, tool_attrs, wait_until
from toolscore.collector.instrumentation import instrument
from toolscore.collector.pipeline import PipelineConfig, ToolscoreSpanProcessor
from toolscore.collector.pipeline.agent_version import AgentVersionConfig, agent_version
from toolscore.collector.registry import Expectation
from toolscore.collector.serve._phoenix import annotation
from toolscore.collector.telemetry import create_telemetry
from toolscore.collector.telemetry.metrics_table import OTHER_VALUE
from toolscore.collector.telemetry.setup import TelemetryConfig
from toolscore.scorers import AgentRun, Score

VERSION_RUNS = "toolscore.expectation.version.runs"


@pytest.fixture
def meters() -> Iterator[tuple[MeterProvider, InMemoryMetricReader]]:
    reader = InMemoryMetricReader()
    provider = MeterProvider(metric_readers=[reader])
    yield provider, reader
    provider.shutdown()


def _points(reader: InMemoryMetricReader, name: str) -> list[tuple[dict[str, Any], Any]]:
    data = reader.get_metrics_data()
    assert data is not None
    metrics: dict[str, Metric] = {
        m.name: m for rm in data.resource_metrics for sm in rm.scope_metrics for m in sm.metrics
    }
    if name not in metrics:
        return []
    return [(dict(p.attributes or {}), p.value) for p in metrics[name].data.data_points]  # type: ignore[union-attr]


def test_span_version_wins_over_the_resource_version() -> None:
    run = AgentRun(attributes={"gen_ai.agent.version": "2.0"}, resource={"service.version": "1.9"})
    assert agent_version(run) == "2.0"
    assert agent_version(AgentRun(resource={"service.version": "1.9"})) == "1.9"
    assert agent_version(AgentRun(attributes={"gen_ai.agent.version": "  "})) is None


def test_openinference_prompt_version_and_a_configured_baggage_key_are_read() -> None:
    assert agent_version(AgentRun(attributes={"llm.prompt_template.version": "v7"})) == "v7"
    config = AgentVersionConfig(span_attributes=("prompt.version",), resource_attributes=())
    run = AgentRun(attributes={"prompt.version": 3, "gen_ai.agent.version": "x"}, resource={"service.version": "1"})
    assert agent_version(run, config) == "3"


def test_verdicts_are_counted_per_version(meters: tuple[MeterProvider, InMemoryMetricReader]) -> None:
    provider, reader = meters
    telemetry = create_telemetry(meter_provider=provider)
    telemetry.run_verdict("book", "planner", True, "1.0")
    telemetry.run_verdict("book", "planner", True, "1.0")
    telemetry.run_verdict("book", "planner", False, "1.1")
    telemetry.run_verdict("book", "planner", True, None)  # no version: not in the per-version metric
    points = sorted(_points(reader, VERSION_RUNS), key=lambda p: p[0]["toolscore.agent.version"])
    base = {"toolscore.expectation.name": "book", "gen_ai.agent.name": "planner"}
    assert points == [
        ({**base, "toolscore.agent.version": "1.0", "toolscore.run.verdict": "pass"}, 2),
        ({**base, "toolscore.agent.version": "1.1", "toolscore.run.verdict": "fail"}, 1),
    ]


def test_a_thousand_versions_keep_n_plus_one_series_per_agent(
    meters: tuple[MeterProvider, InMemoryMetricReader],
) -> None:
    provider, reader = meters
    telemetry = create_telemetry(meter_provider=provider, max_agent_versions=4)
    for i in range(1000):
        for agent in ("planner", "booker"):
            telemetry.run_verdict("book", agent, True, f"v{i}")
        if i % 100 == 0:
            reader.get_metrics_data()  # collections along the way must not keep retired versions' series
    for agent in ("planner", "booker"):
        telemetry.run_verdict("book", agent, False, "v3")  # a straggler of a retired version
    points = _points(reader, VERSION_RUNS)
    for agent in ("planner", "booker"):
        versions = {p["toolscore.agent.version"] for p, _ in points if p["gen_ai.agent.name"] == agent}
        assert versions == {"v996", "v997", "v998", "v999", OTHER_VALUE}
    first_seen = _points(reader, "toolscore.agent.version.first_seen")
    assert sorted(p["toolscore.agent.version"] for p, _ in first_seen if p["gen_ai.agent.name"] == "planner") == [
        "v996",
        "v997",
        "v998",
        "v999",
    ]
    other = {p["gen_ai.agent.name"]: n for p, n in points if p["toolscore.agent.version"] == OTHER_VALUE}
    assert other == {"planner": 1, "booker": 1}
    folds = [
        n
        for p, n in _points(reader, "toolscore.attribute.overflow")
        if p == {"toolscore.attribute.name": "toolscore.agent.version"}
    ]
    assert folds == [2]


def _verdict_versions(resource: dict[str, Any], config: PipelineConfig, **run_extra: Any) -> list[str | None]:
    telemetry = Recording()
    provider = TracerProvider(resource=Resource.create(resource))
    with registry_with(TRAVEL) as registry:
        provider.add_span_processor(
            ToolscoreSpanProcessor(registry, SimpleSpanProcessor(InMemorySpanExporter()), config, telemetry)
        )
        tracer = provider.get_tracer("toolscore-tests")
        run = tracer.start_span("invoke_agent travel", attributes=run_attrs(**run_extra))
        with trace_api.use_span(run, end_on_exit=True):
            for i, name in enumerate(("search_flights", "book_flight")):
                tracer.start_span(f"execute_tool {name}", attributes=tool_attrs(name, f"call_{i}")).end()
        assert wait_until(lambda: bool(telemetry.verdicts))
        provider.shutdown()
    return telemetry.versions


def test_the_pipeline_gives_each_verdict_the_runs_service_version() -> None:
    assert _verdict_versions({"service.version": "2.1.0"}, PipelineConfig(settle_ms=20)) == ["2.1.0"]


def test_the_pipeline_reads_the_configured_attribute_first() -> None:
    config = PipelineConfig(settle_ms=20, agent_version=AgentVersionConfig(span_attributes=("prompt.version",)))
    versions = _verdict_versions({"service.version": "2.1.0"}, config, **{"prompt.version": "p9"})
    assert versions == ["p9"]


def _scored_run(resource: dict[str, Any]) -> tuple[ReadableSpan, list[dict[str, Any]]]:
    """One travel run through the span processor with the real telemetry: its exported run span, and the
    attributes of its `gen_ai.evaluation.result` log records."""
    exporter, log_exporter = InMemorySpanExporter(), InMemoryLogRecordExporter()
    logs = LoggerProvider()
    logs.add_log_record_processor(SimpleLogRecordProcessor(log_exporter))
    provider = TracerProvider(resource=Resource.create(resource))
    with registry_with(TRAVEL) as registry:
        telemetry = create_telemetry(logger_provider=logs)
        config = PipelineConfig(settle_ms=20)
        provider.add_span_processor(ToolscoreSpanProcessor(registry, SimpleSpanProcessor(exporter), config, telemetry))
        tracer = provider.get_tracer("toolscore-tests")
        run = tracer.start_span("invoke_agent travel", attributes=run_attrs())
        with trace_api.use_span(run, end_on_exit=True):
            for i, name in enumerate(("search_flights", "book_flight")):
                tracer.start_span(f"execute_tool {name}", attributes=tool_attrs(name, f"call_{i}")).end()

        def scored() -> bool:
            return any(s.name.startswith("invoke_agent") for s in exporter.get_finished_spans())

        assert wait_until(scored)
        provider.shutdown()
    (span,) = [s for s in exporter.get_finished_spans() if s.name.startswith("invoke_agent")]
    records = [dict(data.log_record.attributes or {}) for data in log_exporter.get_finished_logs()]
    logs.shutdown()
    return span, records


def test_a_runs_version_is_on_its_span_its_score_events_and_its_evaluation_records() -> None:
    span, records = _scored_run({"service.version": "2.1.0"})
    assert (span.attributes or {})["toolscore.agent.version"] == "2.1.0"
    events = [dict(e.attributes or {}) for e in span.events if e.name == "gen_ai.evaluation.result"]
    assert sorted(e["gen_ai.evaluation.name"] for e in events) == ["tool_selection", "trajectory"]
    assert [e["toolscore.agent.version"] for e in events] == ["2.1.0", "2.1.0"]
    assert sorted(r["gen_ai.evaluation.name"] for r in records) == ["tool_selection", "trajectory"]
    assert [r["toolscore.agent.version"] for r in records] == ["2.1.0", "2.1.0"]


def test_a_run_without_a_version_carries_no_version_attribute() -> None:
    span, records = _scored_run({})
    assert "toolscore.agent.version" not in (span.attributes or {})
    events = [dict(e.attributes or {}) for e in span.events if e.name == "gen_ai.evaluation.result"]
    assert len(events) == len(records) == 2
    assert not any("toolscore.agent.version" in attributes for attributes in (*events, *records))


def test_a_phoenix_annotation_names_the_runs_version_in_its_metadata() -> None:
    expectation = Expectation.model_validate(TRAVEL)
    score = Score(name="tool_selection", value=1.0, label="pass", explanation="ok")
    run = AgentRun(trace_id="a" * 32, span_id="b" * 16, agent_name="travel")
    assert annotation(run, expectation, score, "1.1")["metadata"]["toolscore.agent.version"] == "1.1"
    assert "toolscore.agent.version" not in annotation(run, expectation, score)["metadata"]


def test_a_prompt_version_carried_in_baggage_is_the_runs_version() -> None:
    exporter, telemetry = InMemorySpanExporter(), Recording()
    provider = TracerProvider(resource=Resource.create({"service.version": "2.1.0"}))
    config = PipelineConfig(settle_ms=20, agent_version=AgentVersionConfig(span_attributes=("app.prompt.version",)))
    with registry_with(TRAVEL) as registry:
        provider.add_span_processor(BaggageSpanProcessor(ALLOW_ALL_BAGGAGE_KEYS))  # baggage onto each span
        provider.add_span_processor(ToolscoreSpanProcessor(registry, SimpleSpanProcessor(exporter), config, telemetry))
        tracer = provider.get_tracer("toolscore-tests")
        token = context.attach(baggage.set_baggage("app.prompt.version", "checkout-prompt@7"))
        try:
            with tracer.start_as_current_span("invoke_agent travel", attributes=run_attrs()):
                for i, name in enumerate(("search_flights", "book_flight")):
                    tracer.start_span(f"execute_tool {name}", attributes=tool_attrs(name, f"call_{i}")).end()
        finally:
            context.detach(token)
        assert wait_until(lambda: bool(telemetry.verdicts))
        provider.shutdown()
    assert telemetry.versions == ["checkout-prompt@7"]
    (run,) = [s for s in exporter.get_finished_spans() if s.name.startswith("invoke_agent")]
    assert (run.attributes or {})["toolscore.agent.version"] == "checkout-prompt@7"


def test_the_versions_kept_per_agent_are_read_from_the_environment_in_process(
    meters: tuple[MeterProvider, InMemoryMetricReader], monkeypatch: pytest.MonkeyPatch
) -> None:
    """`instrument()` has no serve YAML: TOOLSCORE_MAX_AGENT_VERSIONS sets its N (the explicit key beats it)."""
    monkeypatch.setenv("TOOLSCORE_MAX_AGENT_VERSIONS", "2")
    assert TelemetryConfig.from_env().max_agent_versions == 2
    assert TelemetryConfig.from_env(max_agent_versions=3).max_agent_versions == 3
    meter_provider, reader = meters
    provider = TracerProvider()
    with registry_with(TRAVEL) as registry:
        processor = instrument(
            registry,
            tracer_provider=provider,
            next_processor=SimpleSpanProcessor(InMemorySpanExporter()),
            config=PipelineConfig(settle_ms=10),
            meter_provider=meter_provider,
        )
        tracer = provider.get_tracer("toolscore-tests")
        for version in ("1.0", "1.1", "1.2", "1.0"):  # 1.0's second run comes after it was retired
            run = tracer.start_span("invoke_agent travel", attributes=run_attrs(**{"gen_ai.agent.version": version}))
            with trace_api.use_span(run, end_on_exit=True):
                for i, name in enumerate(("search_flights", "book_flight")):
                    tracer.start_span(f"execute_tool {name}", attributes=tool_attrs(name, f"call_{i}")).end()
            assert processor.force_flush(10_000)
        provider.shutdown()
    counted = {p["toolscore.agent.version"]: n for p, n in _points(reader, VERSION_RUNS)}
    assert counted == {"1.1": 1, "1.2": 1, OTHER_VALUE: 1}
