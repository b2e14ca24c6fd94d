"""The run-level pass rate: one verdict per run and expectation, as `toolscore eval` counts runs.

The scorer pass rate pools every scorer's verdicts; when a run's failures cluster (one run failing two
scorers), it says more runs passed than did. Here ten runs of an expectation with two scorers: six pass
both, two fail one, two fail both: 14 of 20 scorer verdicts pass (70%), 6 of 10 runs (60%).
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import InMemoryMetricReader
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from tests.metric_reader import Meters
from toolscore.collector.instrumentation import instrument
from toolscore.collector.pipeline import PipelineConfig
from toolscore.collector.registry import Registry
from toolscore.collector.registry.stores import MemoryStore
from toolscore.collector.telemetry.otel import OTelPipelineTelemetry

BOOKING = {
    "name": "book-flight",
    "match": {"agent": "travel"},
    "scorers": [
        {"type": "tool_selection", "name": "searches", "expected_tool": "search_flights"},
        {"type": "tool_selection", "name": "books", "expected_tool": "book_flight"},
    ],
}
RUNS = [["search_flights", "book_flight"]] * 6 + [["search_flights"]] * 2 + [["cancel"]] * 2
"""Six runs pass both scorers, two pass `searches` only, two pass neither."""


@pytest.fixture
def meters() -> Iterator[Meters]:
    reader = InMemoryMetricReader()
    provider = MeterProvider(metric_readers=[reader])
    yield Meters(reader, OTelPipelineTelemetry(meter_provider=provider))
    provider.shutdown()


def _agent_run(provider: TracerProvider, tools: list[str]) -> None:
    tracer = provider.get_tracer("app")
    attributes = {"gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": "travel"}
    with tracer.start_as_current_span("invoke_agent travel", attributes=attributes):
        for tool in tools:
            tool_attributes = {"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": tool}
            with tracer.start_as_current_span(f"execute_tool {tool}", attributes=tool_attributes):
                pass


def test_each_run_gets_one_verdict_per_expectation_and_the_pass_rate_counts_runs(meters: Meters) -> None:
    provider = TracerProvider()
    with Registry(MemoryStore()) as registry:
        registry.put(BOOKING)
        processor = instrument(
            registry,
            tracer_provider=provider,
            next_processor=SimpleSpanProcessor(InMemorySpanExporter()),
            config=PipelineConfig(settle_ms=10),
            telemetry=meters.telemetry,
        )
        for tools in RUNS:
            _agent_run(provider, tools)
        assert processor.force_flush(10_000)
        provider.shutdown()

    runs = meters.by("toolscore.expectation.runs", "toolscore.run.verdict")
    assert runs == {"pass": 6, "fail": 4}
    (point,) = [
        attrs for attrs, _ in meters.points("toolscore.expectation.runs") if attrs["toolscore.run.verdict"] == "pass"
    ]
    assert point == {
        "toolscore.expectation.name": "book-flight",
        "gen_ai.agent.name": "travel",
        "toolscore.run.verdict": "pass",
    }
    scorer_verdicts = meters.by("toolscore.evaluations", "gen_ai.evaluation.score.label")
    assert scorer_verdicts == {"pass": 14, "fail": 6}
    assert runs["pass"] / sum(runs.values()) == pytest.approx(0.6)
    assert scorer_verdicts["pass"] / sum(scorer_verdicts.values()) == pytest.approx(0.7)
