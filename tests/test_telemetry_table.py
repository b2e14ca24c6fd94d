"""The metric table is the truth: docs/metrics.md matches it, and everything emitted is in it (and bounded)."""

from __future__ import annotations

import ast
import itertools
import re
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import Gauge, Histogram, InMemoryMetricReader, Metric, Sum

from tests.pipeline_builders import TRAVEL, agent_run, registry_with, traced
from toolscore.collector.extract import EXTRACTORS
from toolscore.collector.pipeline import PipelineConfig
from toolscore.collector.telemetry import RunSpanRef, create_telemetry
from toolscore.collector.telemetry.limits import AttributeLimiter
from toolscore.collector.telemetry.metrics_table import ATTRIBUTES, METRICS, OTHER_VALUE, REFUSAL_REASONS, metric
from toolscore.collector.telemetry.readme import (
    CONFIG_MARKERS,
    METRICS_MARKERS,
    render_config,
    render_metrics,
    replace_block,
)
from toolscore.scorers import Score, ScoreFailure

METRICS_PAGE = Path(__file__).resolve().parent.parent / "docs" / "metrics.md"
BASE = Path(__file__).resolve().parent.parent / "collector" / "telemetry" / "base.py"


@pytest.fixture
def meters() -> Iterator[tuple[MeterProvider, InMemoryMetricReader]]:
    reader = InMemoryMetricReader()
    provider = MeterProvider(metric_readers=[reader])
    yield provider, reader
    provider.shutdown()


def _metrics(reader: InMemoryMetricReader) -> dict[str, Metric]:
    data = reader.get_metrics_data()
    assert data is not None
    return {m.name: m for rm in data.resource_metrics for sm in rm.scope_metrics for m in sm.metrics}


def _points(m: Metric) -> list[dict[str, Any]]:
    return [dict(point.attributes or {}) for point in m.data.data_points]


def _kind(m: Metric) -> str:
    if isinstance(m.data, Histogram):
        return "histogram"
    if isinstance(m.data, Gauge):
        return "observable_gauge"
    assert isinstance(m.data, Sum)
    return "counter" if m.data.is_monotonic else "up_down_counter"


@pytest.mark.parametrize(("markers", "render"), [(METRICS_MARKERS, render_metrics), (CONFIG_MARKERS, render_config)])
def test_metrics_page_holds_the_rendered_block(markers: tuple[str, str], render: Any) -> None:
    text = METRICS_PAGE.read_text(encoding="utf-8")
    expected = replace_block(text, markers, render())
    if text != expected:
        start, end = markers
        print(f"docs/metrics.md must contain:\n{start}\n{render()}\n{end}")
    assert text == expected


def _emit_every_metric(telemetry: Any) -> None:
    """Every telemetry method, with every value the table allows, plus one it does not."""
    telemetry.spans_received(5)
    telemetry.spans_passed(4)
    for reason in ATTRIBUTES["toolscore.drop.reason"].values or ():
        telemetry.spans_dropped(1, reason)
    telemetry.late_spans(2)
    telemetry.log_records(3, "received")
    for reason in ATTRIBUTES["toolscore.log_record.reason"].values or ():
        telemetry.log_records(1, "refused" if reason in ("not_genai_event", "no_span_context") else "dropped", reason)
    telemetry.duplicate_spans(1)
    telemetry.spans_forgotten(1)
    for reason in ATTRIBUTES["toolscore.call.drop.reason"].values or ():
        telemetry.calls_dropped(2, reason)
    for convention in ATTRIBUTES["toolscore.convention"].values or ():
        telemetry.spans_unreadable(1, convention)
    for reason in ATTRIBUTES["toolscore.forget.reason"].values or ():
        telemetry.dedupe_forgotten(3, reason)
    forward = telemetry  # the forwarder's and score store's methods are not part of PipelineTelemetry
    forward.spans_forwarded(3)
    for reason in ATTRIBUTES["toolscore.forward.drop.reason"].values or ():
        forward.spans_forward_dropped(1, reason)
    forward.forward_retried()
    for reason in ATTRIBUTES["toolscore.score_store.drop.reason"].values or ():
        forward.score_results_dropped(2, reason)
    for outcome in ATTRIBUTES["toolscore.phoenix.outcome"].values or ():
        forward.annotations(2, outcome)
    for reason in ATTRIBUTES["toolscore.refusal.reason"].values or ():
        telemetry.request_refused(reason, spans=3)
    telemetry.spans_refused(2, "invalid")
    for outcome in ATTRIBUTES["toolscore.wait.outcome"].values or ():
        telemetry.request_waited(0.3, outcome)
    for outcome in ATTRIBUTES["toolscore.run.outcome"].values or ():
        telemetry.run_finished(outcome, "planner")
    for outcome in ATTRIBUTES["toolscore.judge.outcome"].values or ():
        telemetry.judge_outcome(outcome)
    run = RunSpanRef("0af7651916cd43dd8448eb211c80319c", "b7ad6b7169203331")
    telemetry.score_recorded(Score(name="f1", value=0.5, label="fail"), "book-flight", 2, "planner", run)
    telemetry.score_recorded(ScoreFailure(name="judge", error_type="judge_timeout"), "book-flight", 2, None, None)
    telemetry.run_verdict("book-flight", "planner", False)
    telemetry.run_verdict("book-flight", None, True)
    telemetry.run_verdict("book-flight", "planner", True, "1.2.0")
    telemetry.score_delay(0.25)
    telemetry.observe_pending(lambda: 3, 500)
    telemetry.observe_pending_bytes(lambda: 4096, 1 << 20)
    telemetry.observe_expectations(lambda: [("book-flight", "page"), ("weather", None)])
    telemetry.observe_registry(lambda: (1.5, 2))
    telemetry.observe_registry(lambda: None)  # a matcher that is not a Registry
    telemetry.run_finished("not-an-outcome", None)


def test_every_emitted_metric_and_attribute_is_in_the_table(meters: tuple[MeterProvider, InMemoryMetricReader]) -> None:
    provider, reader = meters
    _emit_every_metric(create_telemetry(meter_provider=provider))

    emitted = _metrics(reader)
    assert set(emitted) == {spec.name for spec in METRICS}
    for name, m in emitted.items():
        spec = metric(name)
        kind = "counter" if spec.kind == "observable_counter" else spec.kind  # exported as a monotonic sum
        assert (m.unit, _kind(m), m.description) == (spec.unit, kind, spec.description)
        for point in m.data.data_points:
            if spec.buckets is not None:
                assert tuple(point.explicit_bounds) == spec.buckets  # type: ignore[union-attr]
            attributes = dict(point.attributes or {})
            assert set(attributes) <= set(spec.attributes), name
            for key, value in attributes.items():
                allowed = ATTRIBUTES[key].values
                assert allowed is None or value in (*allowed, OTHER_VALUE), (name, key, value)
    refused = {p["toolscore.refusal.reason"] for p in _points(emitted["toolscore.receiver.refused"])}
    assert refused == set(REFUSAL_REASONS)
    refused_spans = {
        (dict(p.attributes or {})["toolscore.refusal.reason"], p.value)  # type: ignore[union-attr]
        for p in emitted["toolscore.spans"].data.data_points
        if dict(p.attributes or {}).get("toolscore.span.outcome") == "refused"
    }
    assert refused_spans == {(reason, 5 if reason == "invalid" else 3) for reason in REFUSAL_REASONS}
    waits = {p["toolscore.wait.outcome"] for p in _points(emitted["toolscore.receiver.wait.duration"])}
    assert waits == {"accepted", "refused", "shutdown"}
    store_dropped = {p["toolscore.score_store.drop.reason"] for p in _points(emitted["toolscore.score_store.dropped"])}
    assert store_dropped == {"queue_full", "write_failed", "shutdown"}
    runs = {(p["toolscore.run.outcome"], p.get("gen_ai.agent.name")) for p in _points(emitted["toolscore.runs"])}
    assert runs == {("matched", "planner"), ("unmatched", "planner"), ("incomplete", "planner"), (OTHER_VALUE, None)}
    failure = {
        "gen_ai.evaluation.name": "judge",
        "toolscore.expectation.name": "book-flight",
        "error.type": "judge_timeout",
    }
    assert failure in _points(emitted["toolscore.evaluations"])
    assert [p.value for p in emitted["toolscore.pending.traces"].data.data_points] == [3]  # type: ignore[union-attr]
    limit = emitted["toolscore.pending.traces.limit"].data.data_points
    assert [p.value for p in limit] == [500]  # type: ignore[union-attr]
    assert [p.value for p in emitted["toolscore.pending.bytes"].data.data_points] == [4096]  # type: ignore[union-attr]
    bytes_limit = emitted["toolscore.pending.bytes.limit"].data.data_points
    assert [p.value for p in bytes_limit] == [1 << 20]  # type: ignore[union-attr]
    assert [p.value for p in emitted["toolscore.registry.sync.age"].data.data_points] == [1.5]  # type: ignore[union-attr]
    assert [p.value for p in emitted["toolscore.registry.unreadable"].data.data_points] == [2]  # type: ignore[union-attr]
    assert _points(emitted["toolscore.expectation.info"]) == [
        {"toolscore.expectation.name": "book-flight", "toolscore.expectation.severity": "page"},
    ], "only expectations with scores: `weather` has none"


@pytest.mark.parametrize(
    ("alias", "attribute"),
    [
        ("DropReason", "toolscore.drop.reason"),
        ("RunOutcome", "toolscore.run.outcome"),
        ("JudgeOutcome", "toolscore.judge.outcome"),
        ("WaitOutcome", "toolscore.wait.outcome"),
    ],
)
def test_the_value_aliases_list_the_values_of_their_attribute(alias: str, attribute: str) -> None:
    """The value aliases' docstrings, what a reader of the pipeline's code sees, list exactly the table's values."""
    module = ast.parse(BASE.read_text(encoding="utf-8"))
    docs = {
        target.id: after.value.value
        for node, after in itertools.pairwise(module.body)
        if isinstance(node, ast.Assign)
        for target in node.targets
        if isinstance(target, ast.Name) and isinstance(after, ast.Expr) and isinstance(after.value, ast.Constant)
    }
    assert set(re.findall(r"``(\w+)``", docs[alias])) == set(ATTRIBUTES[attribute].values or ())


def test_the_convention_attribute_lists_every_convention_the_pipeline_reads() -> None:
    assert ATTRIBUTES["toolscore.convention"].values == tuple(extractor.name for extractor in EXTRACTORS)


def test_capped_attribute_overflows_to_other_and_is_counted(meters: tuple[MeterProvider, InMemoryMetricReader]) -> None:
    provider, reader = meters
    telemetry = create_telemetry(meter_provider=provider, max_attribute_values=3)
    for i in range(10):
        telemetry.score_recorded(Score(name="f1", value=1.0, label="pass"), "exp", 1, f"agent-{i}", None)
    emitted = _metrics(reader)

    agents = {p["gen_ai.agent.name"] for p in _points(emitted["toolscore.evaluation.score"])}
    assert agents == {"agent-0", "agent-1", "agent-2", OTHER_VALUE}
    overflow = emitted["toolscore.attribute.overflow"].data.data_points
    assert [(dict(p.attributes or {}), p.value) for p in overflow] == [  # type: ignore[union-attr]
        ({"toolscore.attribute.name": "gen_ai.agent.name"}, 7)
    ]


def test_in_process_pipeline_reports_its_scored_expectations_and_pending_limit(
    meters: tuple[MeterProvider, InMemoryMetricReader],
) -> None:
    provider, reader = meters
    telemetry = create_telemetry(meter_provider=provider)
    paging = {**TRAVEL, "labels": {"severity": "page", "owner": "travel-team"}}
    quiet = {**TRAVEL, "name": "travel.no-severity"}
    unused = {**TRAVEL, "name": "unused", "labels": {"severity": "page"}, "match": {"agent": "nobody"}}
    with registry_with(paging, quiet, unused) as registry:
        config = PipelineConfig(settle_ms=20, max_pending_traces=250, max_pending_bytes=50_000)
        with traced(registry, config, telemetry) as (tracer, processor, _):
            assert "toolscore.expectation.info" not in _metrics(reader), "nothing scored yet"
            agent_run(tracer)
            assert processor.force_flush(5_000)
            emitted = _metrics(reader)
            registry.put({**quiet, "labels": {"severity": "ticket"}})
            relabelled = _points(_metrics(reader)["toolscore.expectation.info"])
    runs = emitted["toolscore.runs"].data.data_points
    assert [(dict(p.attributes or {}), p.value) for p in runs] == [  # type: ignore[union-attr]
        ({"toolscore.run.outcome": "matched", "gen_ai.agent.name": "travel"}, 1)
    ], "the dashboard filters runs by agent"
    info = emitted["toolscore.expectation.info"].data.data_points
    assert [(dict(p.attributes or {}), p.value) for p in info] == [  # type: ignore[union-attr]
        ({"toolscore.expectation.name": "travel", "toolscore.expectation.severity": "page"}, 1),
        ({"toolscore.expectation.name": "travel.no-severity"}, 1),
    ], "`unused` matched no run: no series, and no share of the name budget"
    limit = emitted["toolscore.pending.traces.limit"].data.data_points
    assert [p.value for p in limit] == [250]  # type: ignore[union-attr]
    bytes_limit = emitted["toolscore.pending.bytes.limit"].data.data_points
    assert [p.value for p in bytes_limit] == [50_000]  # type: ignore[union-attr]
    assert [p.value for p in emitted["toolscore.registry.unreadable"].data.data_points] == [0]  # type: ignore[union-attr]
    assert len(emitted["toolscore.registry.sync.age"].data.data_points) == 1, "the registry reports its store"
    assert {"toolscore.expectation.name": "travel.no-severity", "toolscore.expectation.severity": "ticket"} in (
        relabelled
    ), "a label change shows at the next collection"


def test_score_delay_runs_from_the_run_spans_arrival_as_its_description_says(
    meters: tuple[MeterProvider, InMemoryMetricReader],
) -> None:
    """A run span stamped an hour ago (a sender's clock behind toolscore's) is scored within the settle window:
    the delay is counted from its arrival, and the description says so rather than "from the run span's end"."""
    provider, reader = meters
    with (
        registry_with(TRAVEL) as registry,
        traced(registry, PipelineConfig(settle_ms=20), create_telemetry(meter_provider=provider)) as (tracer, proc, _),
    ):
        agent_run(tracer, t0=time.time_ns() - 3600 * 10**9)
        assert proc.force_flush(5_000)
    delay = _metrics(reader)["toolscore.score.delay"]
    (point,) = delay.data.data_points
    assert point.count == 1  # type: ignore[union-attr]
    assert 0 < point.sum < 5  # type: ignore[union-attr]  # not the hour the span's own stamps say
    assert delay.description.startswith("Time from a scored run span's arrival in the pipeline")
    assert "skew" in delay.description


def test_expectation_info_follows_the_capped_names_without_spending_the_budget(
    meters: tuple[MeterProvider, InMemoryMetricReader],
) -> None:
    provider, reader = meters
    telemetry = create_telemetry(meter_provider=provider, max_attribute_values=2)
    telemetry.observe_expectations(lambda: [(f"exp-{i}", "page") for i in range(5)])
    for i in (4, 3, 2, 1, 0):
        telemetry.score_recorded(Score(name="f1", value=1.0, label="pass"), f"exp-{i}", 1, None, None)
    _metrics(reader)
    emitted = _metrics(reader)
    names = [p["toolscore.expectation.name"] for p in _points(emitted["toolscore.expectation.info"])]
    assert names == ["exp-3", "exp-4"], "the first two scored, as in the score metrics"
    overflow = emitted["toolscore.attribute.overflow"].data.data_points
    assert [p.value for p in overflow] == [3], "three scores overflowed; collecting the info counts nothing"  # type: ignore[union-attr]


def test_limiter_never_admits_more_than_its_bound_under_concurrency() -> None:
    overflows: list[str] = []
    limiter = AttributeLimiter(50, overflows.append)
    results: list[str] = []

    def admit(offset: int) -> None:
        results.extend(limiter.bound("toolscore.expectation.name", f"exp-{offset + i}") for i in range(200))

    threads = [threading.Thread(target=admit, args=(k * 100,)) for k in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert limiter.distinct("toolscore.expectation.name") == 50
    assert len(set(results) - {OTHER_VALUE}) == 50
    assert len(overflows) == results.count(OTHER_VALUE)


def test_limiter_rejects_a_bound_below_one() -> None:
    with pytest.raises(ValueError, match="max_attribute_values must be >= 1"):
        AttributeLimiter(0)
