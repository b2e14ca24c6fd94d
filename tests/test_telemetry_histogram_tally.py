"""The histograms toolscore sums itself on the provider it builds (`_histogram_tally`) export what the SDK's would.

Each test records the same measurements through `OTelPipelineTelemetry` twice: on an SDK `MeterProvider` (the
SDK's own histograms) and on a `TalliedMeterProvider` whose reader reads the tally, and compares the points
the two readers collect, cumulative and delta, collection after collection.
"""

from __future__ import annotations

import math
import threading
from collections.abc import Iterator
from typing import Any

import pytest
from opentelemetry.sdk.metrics import Histogram as SdkHistogram
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import AggregationTemporality, InMemoryMetricReader, MetricsData
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.util.instrumentation import InstrumentationScope

from toolscore.collector.telemetry import create_telemetry
from toolscore.collector.telemetry._histogram_tally import (
    CARDINALITY_LIMIT,
    HistogramTally,
    TalliedMeterProvider,
    TalliedReader,
    tally_for,
)
from toolscore.collector.telemetry.metrics_table import METRICS
from toolscore.collector.telemetry.otel import SCOPE_NAME, OTelPipelineTelemetry
from toolscore.collector.telemetry.setup import TelemetryConfig, build_meter_provider
from toolscore.scorers import Score, ScoreFailure

HISTOGRAMS = ("toolscore.evaluation.score", "toolscore.score.delay", "toolscore.receiver.wait.duration")
RESOURCE = Resource.create({"service.name": "toolscore-test"})


class _TalliedMemoryReader(TalliedReader, InMemoryMetricReader):
    pass


def _pair(delta: bool, max_values: int | None = None) -> Iterator[tuple[Any, ...]]:
    temporality = {SdkHistogram: AggregationTemporality.DELTA} if delta else None
    sdk_reader = InMemoryMetricReader(preferred_temporality=temporality)
    sdk = MeterProvider(metric_readers=[sdk_reader], resource=RESOURCE)
    tallied_reader = _TalliedMemoryReader(preferred_temporality=temporality)
    tally = tally_for([tallied_reader], METRICS, InstrumentationScope(SCOPE_NAME, ""), RESOURCE)
    assert tally is not None
    tallied = TalliedMeterProvider(tally, metric_readers=[tallied_reader], resource=RESOURCE)
    yield (
        create_telemetry(meter_provider=sdk, max_attribute_values=max_values),
        sdk_reader,
        create_telemetry(meter_provider=tallied, max_attribute_values=max_values),
        tallied_reader,
    )
    sdk.shutdown()
    tallied.shutdown()


@pytest.fixture(params=[False, True], ids=["cumulative", "delta"])
def pair(request: pytest.FixtureRequest) -> Iterator[tuple[Any, ...]]:
    yield from _pair(request.param)


def _histogram_points(data: MetricsData | None) -> dict[tuple[str, tuple[tuple[str, Any], ...]], tuple[Any, ...]]:
    """Per (metric, attributes): what a histogram point says, and its temporality."""
    out: dict[tuple[str, tuple[tuple[str, Any], ...]], tuple[Any, ...]] = {}
    for resource_metrics in data.resource_metrics if data is not None else ():
        for scope_metrics in resource_metrics.scope_metrics:
            for metric in scope_metrics.metrics:
                if metric.name not in HISTOGRAMS:
                    continue
                assert scope_metrics.scope.name == SCOPE_NAME
                for point in metric.data.data_points:
                    key = (metric.name, tuple(sorted(dict(point.attributes or {}).items())))
                    assert key not in out, f"{key} twice in one collection"
                    out[key] = (
                        metric.unit,
                        metric.description,
                        metric.data.aggregation_temporality,  # type: ignore[union-attr]
                        point.count,  # type: ignore[union-attr]
                        round(point.sum, 9),  # type: ignore[union-attr]  # the SDK adds periods up: rounding differs
                        tuple(point.bucket_counts),  # type: ignore[union-attr]
                        tuple(point.explicit_bounds),  # type: ignore[union-attr]
                        point.min,  # type: ignore[union-attr]
                        point.max,  # type: ignore[union-attr]
                    )
    return out


def _record(telemetry: Any, step: int) -> None:
    telemetry.score_recorded(Score(name="trajectory", value=1.0, label="pass"), "travel", 1, "planner", None)
    telemetry.score_recorded(Score(name="trajectory", value=0.5, label="fail"), "travel", 1, "planner", None)
    telemetry.score_recorded(Score(name="f1", value=0.0, label="fail"), "travel", 1, None, None)
    telemetry.score_recorded(Score(name="f1", value=0.25 * step, label="fail"), "travel", 1, None, None)
    telemetry.score_recorded(ScoreFailure(name="judge", error_type="judge_timeout", message="late"), "x", 1, None, None)
    for seconds in (0.0, 0.1, 0.25, 1.0, 3.0 + step, 10_000.0, -1.0):  # -1: recorded as 0, as before
        telemetry.score_delay(seconds)
    telemetry.request_waited(0.02 * step, "taken")
    telemetry.request_waited(0.5, "refused")


def test_the_tally_exports_the_sdk_histograms_points(pair: tuple[Any, ...]) -> None:
    sdk, sdk_reader, tallied, tallied_reader = pair
    assert isinstance(tallied, OTelPipelineTelemetry)
    for step in (1, 2, 3):
        _record(sdk, step)
        _record(tallied, step)
        if step == 2:
            continue  # two steps' measurements in one collection
        want, got = (
            _histogram_points(sdk_reader.get_metrics_data()),
            _histogram_points(tallied_reader.get_metrics_data()),
        )
        assert set(want) == {key for key in want if key[0] in HISTOGRAMS}
        assert len(want) == 5  # two score series, one delay, two waits
        assert got == want


def test_a_delta_reader_gets_each_period_once() -> None:
    _, _, tallied, tallied_reader = next(_pair(delta=True))
    tallied.run_finished("scored", "planner")  # as the engine does: a counter moves with each delay
    tallied.score_delay(0.5)
    (point,) = _histogram_points(tallied_reader.get_metrics_data()).values()
    assert point[2] is AggregationTemporality.DELTA
    assert point[3] == 1
    assert _histogram_points(tallied_reader.get_metrics_data()) == {}, "nothing new: no point, as the SDK"
    tallied.run_finished("scored", "planner")
    tallied.score_delay(2.0)
    (point,) = _histogram_points(tallied_reader.get_metrics_data()).values()
    assert (point[3], point[4], point[7], point[8]) == (1, 2.0, 2.0, 2.0)


def test_points_of_a_collection_the_sdk_has_no_data_for_go_with_the_next() -> None:
    """The SDK does not hand a reader an empty collection; the tally's points wait, none is lost."""
    _, _, tallied, tallied_reader = next(_pair(delta=True))
    tallied.score_delay(0.5)  # alone: no counter moved, the SDK collects nothing
    assert tallied_reader.get_metrics_data() is None
    tallied.score_recorded(Score(name="f1", value=1.0, label="pass"), "travel", 1, None, None)
    points = _histogram_points(tallied_reader.get_metrics_data())
    assert points[("toolscore.score.delay", ())][3] == 1
    assert (
        points[
            ("toolscore.evaluation.score", (("gen_ai.evaluation.name", "f1"), ("toolscore.expectation.name", "travel")))
        ][3]
        == 1
    )


def test_values_the_sdk_leaves_out_are_left_out() -> None:
    tally = HistogramTally(METRICS, InstrumentationScope(SCOPE_NAME, ""), RESOURCE)
    sink = tally.sink(delta=False)
    for value in (math.nan, math.inf, -math.inf, -0.5):
        tally.record("toolscore.score.delay", value, ())
    assert tally.collect(sink, 1) == []
    tally.record("toolscore.score.delay", 0.0, ())
    (metric,) = tally.collect(sink, 2)
    assert metric.data.data_points[0].count == 1  # type: ignore[union-attr]


def test_concurrent_records_all_count() -> None:
    tally = HistogramTally(METRICS, InstrumentationScope(SCOPE_NAME, ""), RESOURCE)
    sinks = [tally.sink(delta=False), tally.sink(delta=True)]

    def record() -> None:
        for i in range(2000):
            tally.record("toolscore.evaluation.score", (i % 11) / 10, (("gen_ai.evaluation.name", "f1"),))

    threads = [threading.Thread(target=record) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    for sink in sinks:
        (metric,) = tally.collect(sink, 10)
        (point,) = metric.data.data_points  # type: ignore[union-attr]
        assert point.count == sum(point.bucket_counts) == 8000  # type: ignore[union-attr]


def test_merged_adds_a_scope_and_a_resource_when_the_sdk_collected_none() -> None:
    scope = InstrumentationScope(SCOPE_NAME, "9.9")
    tally = HistogramTally(METRICS, scope, RESOURCE)
    sink = tally.sink(delta=False)
    empty = MetricsData(resource_metrics=[])
    assert tally.merged(sink, empty) is empty, "nothing tallied: the SDK's data as it is"
    tally.record("toolscore.score.delay", 0.2, ())
    merged = tally.merged(sink, empty)
    (resource_metrics,) = merged.resource_metrics
    assert resource_metrics.resource is RESOURCE
    (scope_metrics,) = resource_metrics.scope_metrics
    assert scope_metrics.scope == scope
    assert [metric.name for metric in scope_metrics.metrics] == ["toolscore.score.delay"]


@pytest.mark.parametrize(("exemplar_filter", "tallied"), [(None, True), ("trace_based", False), ("always_off", False)])
def test_the_built_provider_tallies_unless_exemplars_are_asked_for(
    monkeypatch: pytest.MonkeyPatch, exemplar_filter: str | None, tallied: bool
) -> None:
    """With OTEL_METRICS_EXEMPLAR_FILTER set (even to always_off) the SDK decides exemplars, so its histograms stay."""
    if exemplar_filter is not None:
        monkeypatch.setenv("OTEL_METRICS_EXEMPLAR_FILTER", exemplar_filter)
    provider, server = build_meter_provider(TelemetryConfig(prometheus_enabled=True, prometheus_port=0), RESOURCE)
    assert provider is not None
    assert server is not None
    try:
        assert isinstance(provider, TalliedMeterProvider) is tallied
    finally:
        provider.shutdown()
        server.shutdown()
        server.server_close()


def test_a_reader_that_cannot_read_the_tally_keeps_the_sdk_histograms() -> None:
    assert tally_for([InMemoryMetricReader()], METRICS, InstrumentationScope(SCOPE_NAME, ""), RESOURCE) is None
    assert tally_for([], METRICS, InstrumentationScope(SCOPE_NAME, ""), RESOURCE) is None


@pytest.mark.parametrize("delta", [False, True])
def test_attribute_sets_past_the_limit_share_the_overflow_point_as_in_the_sdk(delta: bool) -> None:
    sdk, sdk_reader, tallied, tallied_reader = next(_pair(delta, max_values=CARDINALITY_LIMIT * 2))
    for telemetry in (sdk, tallied):
        for i in range(CARDINALITY_LIMIT + 50):
            telemetry.score_recorded(Score(name=f"scorer-{i}", value=i % 3 / 2, label="pass"), "e", 1, None, None)
    want, got = _histogram_points(sdk_reader.get_metrics_data()), _histogram_points(tallied_reader.get_metrics_data())
    assert len(want) == CARDINALITY_LIMIT + 1
    assert want[("toolscore.evaluation.score", (("otel.metric.overflow", True),))][3] == 50
    assert got == want
