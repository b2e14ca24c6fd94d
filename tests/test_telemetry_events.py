"""One `gen_ai.evaluation.result` log record per score, parented to the run span it evaluates."""

from __future__ import annotations

import threading
from collections.abc import Iterator

import pytest
from opentelemetry._logs import SeverityNumber
from opentelemetry.sdk._logs import LoggerProvider
from opentelemetry.sdk._logs.export import InMemoryLogRecordExporter, SimpleLogRecordProcessor
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import InMemoryMetricReader
from opentelemetry.sdk.trace import TracerProvider

from toolscore.collector.telemetry import NoopTelemetry, PipelineTelemetry, RunSpanRef, create_telemetry
from toolscore.collector.telemetry.otel import EVALUATION_EVENT, OTelPipelineTelemetry
from toolscore.scorers import Score, ScoreFailure

TRACE_ID = "0af7651916cd43dd8448eb211c80319c"
SPAN_ID = "b7ad6b7169203331"


@pytest.fixture
def logs() -> Iterator[tuple[LoggerProvider, InMemoryLogRecordExporter]]:
    exporter = InMemoryLogRecordExporter()
    provider = LoggerProvider()
    provider.add_log_record_processor(SimpleLogRecordProcessor(exporter))
    yield provider, exporter
    provider.shutdown()


def test_score_event_is_parented_to_the_run_span(logs: tuple[LoggerProvider, InMemoryLogRecordExporter]) -> None:
    provider, exporter = logs
    telemetry = create_telemetry(logger_provider=provider)
    score = Score(name="f1", value=0.8, label="pass", explanation="correct=2, precision=2/3, recall=2/2, F1=0.800")
    telemetry.score_recorded(score, "book-flight", 3, "planner", RunSpanRef(TRACE_ID, SPAN_ID))

    (record,) = [data.log_record for data in exporter.get_finished_logs()]
    assert record.event_name == EVALUATION_EVENT
    assert (f"{record.trace_id:032x}", f"{record.span_id:016x}", int(record.trace_flags)) == (TRACE_ID, SPAN_ID, 1)
    assert record.severity_number == SeverityNumber.INFO
    assert dict(record.attributes or {}) == {
        "gen_ai.evaluation.name": "f1",
        "gen_ai.evaluation.score.value": 0.8,
        "gen_ai.evaluation.score.label": "pass",
        "gen_ai.evaluation.explanation": "correct=2, precision=2/3, recall=2/2, F1=0.800",
        "toolscore.expectation.name": "book-flight",
        "toolscore.expectation.version": 3,
        "gen_ai.agent.name": "planner",
    }


def test_failure_event_carries_error_type_and_no_score(logs: tuple[LoggerProvider, InMemoryLogRecordExporter]) -> None:
    provider, exporter = logs
    telemetry = create_telemetry(logger_provider=provider)
    failure = ScoreFailure(name="judge", error_type="judge_timeout", message="no answer in 20 s")
    telemetry.score_recorded(failure, "book-flight", 1, None, RunSpanRef(TRACE_ID, SPAN_ID))

    (record,) = [data.log_record for data in exporter.get_finished_logs()]
    assert record.severity_number == SeverityNumber.WARN
    assert dict(record.attributes or {}) == {
        "gen_ai.evaluation.name": "judge",
        "error.type": "judge_timeout",
        "gen_ai.evaluation.explanation": "no answer in 20 s",
        "toolscore.expectation.name": "book-flight",
        "toolscore.expectation.version": 1,
    }


def test_event_and_metric_text_is_valid_utf8(logs: tuple[LoggerProvider, InMemoryLogRecordExporter]) -> None:
    """A lone surrogate (decoded JSON can hold one) would make the OTLP exporters refuse the whole batch."""
    provider, exporter = logs
    reader = InMemoryMetricReader()
    meters = MeterProvider(metric_readers=[reader])
    telemetry = create_telemetry(logger_provider=provider, meter_provider=meters)
    score = Score(name="trajectory", value=0.0, label="fail", explanation="called search\ud800")
    telemetry.score_recorded(score, "book-flight", 1, "planner\udc00", RunSpanRef(TRACE_ID, SPAN_ID))

    (record,) = [data.log_record for data in exporter.get_finished_logs()]
    attributes = dict(record.attributes or {})
    assert attributes["gen_ai.evaluation.explanation"] == "called search\ufffd"
    assert attributes["gen_ai.agent.name"] == "planner\ufffd"
    (key,) = _points(reader, "toolscore.evaluations")
    assert ("gen_ai.agent.name", "planner\ufffd") in key
    meters.shutdown()


@pytest.mark.parametrize("run_span", [None, RunSpanRef("not-hex", SPAN_ID), RunSpanRef("0" * 32, "0" * 16)])
def test_event_without_a_valid_run_span_is_not_parented_to_the_current_span(
    logs: tuple[LoggerProvider, InMemoryLogRecordExporter], run_span: RunSpanRef | None
) -> None:
    provider, exporter = logs
    telemetry = create_telemetry(logger_provider=provider)
    tracer = TracerProvider().get_tracer("test")
    with tracer.start_as_current_span("unrelated") as current:
        assert current.get_span_context().is_valid
        telemetry.score_recorded(Score(name="f1", value=1.0, label="pass"), "exp", 1, None, run_span)

    (record,) = [data.log_record for data in exporter.get_finished_logs()]
    assert (record.trace_id, record.span_id) == (0, 0)


def test_a_failing_pending_callback_does_not_hide_the_others() -> None:
    reader = InMemoryMetricReader()
    provider = MeterProvider(metric_readers=[reader])
    telemetry = create_telemetry(meter_provider=provider)

    def broken() -> int:
        raise RuntimeError("store gone")

    telemetry.observe_pending(lambda: 4)
    telemetry.observe_pending(broken)
    telemetry.observe_pending(lambda: 1)
    data = reader.get_metrics_data()
    provider.shutdown()
    assert data is not None
    values = [
        point.value  # type: ignore[union-attr]
        for rm in data.resource_metrics
        for sm in rm.scope_metrics
        for m in sm.metrics
        if m.name == "toolscore.pending.traces"
        for point in m.data.data_points
    ]
    assert values == [5]


def test_factory_returns_the_noop_when_disabled_and_both_satisfy_the_protocol() -> None:
    off = create_telemetry(enabled=False)
    on = create_telemetry()
    assert isinstance(off, NoopTelemetry)
    assert isinstance(on, OTelPipelineTelemetry)
    assert isinstance(off, PipelineTelemetry)
    assert isinstance(on, PipelineTelemetry)
    off.score_recorded(Score(name="f1", value=1.0, label="pass"), "exp", 1, None, None)


def _points(reader: InMemoryMetricReader, name: str) -> dict[tuple[tuple[str, object], ...], float]:
    data = reader.get_metrics_data()
    assert data is not None
    return {
        tuple(sorted((point.attributes or {}).items())): point.value  # type: ignore[union-attr]
        for rm in data.resource_metrics
        for sm in rm.scope_metrics
        for m in sm.metrics
        if m.name == name
        for point in m.data.data_points
    }


def test_per_score_counters_are_exact_at_every_collection_even_while_scores_arrive() -> None:
    """Counts summed between collections reach each collection whole, and none is lost to a race."""
    reader = InMemoryMetricReader()
    provider = MeterProvider(metric_readers=[reader])
    telemetry = create_telemetry(meter_provider=provider)
    passed = Score(name="tool_selection", value=1.0, label="pass", explanation="")
    failed = ScoreFailure(name="judge", error_type="judge_timeout", message="20 s")
    key_pass = (
        ("gen_ai.agent.name", "travel"),
        ("gen_ai.evaluation.name", "tool_selection"),
        ("gen_ai.evaluation.score.label", "pass"),
        ("toolscore.expectation.name", "trips"),
    )

    for _ in range(3):
        telemetry.score_recorded(passed, "trips", 1, "travel", None)
    telemetry.score_recorded(failed, "trips", 1, "travel", None)
    telemetry.run_finished("matched", "travel")
    evaluations = _points(reader, "toolscore.evaluations")
    assert evaluations[key_pass] == 3
    assert sum(evaluations.values()) == 4
    assert _points(reader, "toolscore.runs") == {
        (("gen_ai.agent.name", "travel"), ("toolscore.run.outcome", "matched")): 1
    }

    def record(n: int) -> None:
        for _ in range(n):
            telemetry.score_recorded(passed, "trips", 1, "travel", None)

    writers = [threading.Thread(target=record, args=(2000,)) for _ in range(3)]
    for writer in writers:
        writer.start()
    while any(writer.is_alive() for writer in writers):
        _points(reader, "toolscore.evaluations")  # collections in the middle of the adds
    assert _points(reader, "toolscore.evaluations")[key_pass] == 3 + 3 * 2000
    provider.shutdown()


class _Failing(SimpleLogRecordProcessor):
    def on_emit(self, log_data: object) -> None:  # type: ignore[override]
        raise RuntimeError("log pipeline broken")


def test_a_failing_log_pipeline_costs_the_event_and_nothing_else() -> None:
    """score_recorded runs on the pipeline's worker: a broken logs SDK must not raise there, nor lose the metrics."""
    logs = LoggerProvider()
    logs.add_log_record_processor(_Failing(InMemoryLogRecordExporter()))
    reader = InMemoryMetricReader()
    telemetry = create_telemetry(meter_provider=MeterProvider(metric_readers=[reader]), logger_provider=logs)
    score = Score(name="f1", value=0.8, label="pass", explanation="")
    telemetry.score_recorded(score, "book-flight", 3, "planner", RunSpanRef(TRACE_ID, SPAN_ID))
    data = reader.get_metrics_data()
    assert data is not None
    recorded = {
        metric.name: [point.attributes for point in metric.data.data_points]  # type: ignore[union-attr]
        for rm in data.resource_metrics
        for sm in rm.scope_metrics
        for metric in sm.metrics
    }
    assert recorded["toolscore.evaluation.score"] == [
        {"gen_ai.evaluation.name": "f1", "toolscore.expectation.name": "book-flight", "gen_ai.agent.name": "planner"}
    ]
    assert recorded["toolscore.evaluations"][0]["gen_ai.evaluation.score.label"] == "pass"
