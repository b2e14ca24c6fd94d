"""Memory and queue bounds, with the real OTel telemetry read through `InMemoryMetricReader`."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import InMemoryMetricReader
from opentelemetry.sdk.trace import ReadableSpan, SpanProcessor, TracerProvider

from tests.pipeline_builders import TRAVEL, agent_run, genai_run, registry_with, wait_until
from toolscore.collector.pipeline import Engine, ListSink, PipelineConfig, ToolscoreSpanProcessor
from toolscore.collector.pipeline.worker import Worker
from toolscore.collector.spans import SpanRecord
from toolscore.collector.telemetry import create_telemetry


def points(reader: InMemoryMetricReader, name: str) -> dict[tuple[tuple[str, Any], ...], float]:
    """The metric's data points, by sorted attributes."""
    data = reader.get_metrics_data()
    out: dict[tuple[tuple[str, Any], ...], float] = {}
    for resource in data.resource_metrics if data else []:
        for scope in resource.scope_metrics:
            for metric in scope.metrics:
                if metric.name == name:
                    for point in metric.data.data_points:
                        out[tuple(sorted((point.attributes or {}).items()))] = point.value  # type: ignore[union-attr]
    return out


def spans_metric(reader: InMemoryMetricReader, outcome: str, reason: str | None = None) -> float:
    key = [("toolscore.span.outcome", outcome)]
    if reason is not None:
        key.insert(0, ("toolscore.drop.reason", reason))
    return points(reader, "toolscore.spans").get(tuple(key), 0)


@contextmanager
def engine(config: PipelineConfig) -> Iterator[tuple[Engine[SpanRecord], ListSink[SpanRecord], InMemoryMetricReader]]:
    reader = InMemoryMetricReader()
    telemetry = create_telemetry(meter_provider=MeterProvider(metric_readers=[reader]))
    sink: ListSink[SpanRecord] = ListSink()
    with registry_with(TRAVEL) as registry:
        pipeline: Engine[SpanRecord] = Engine(registry, sink, lambda r: r, config, telemetry)
        try:
            yield pipeline, sink, reader
        finally:
            pipeline.shutdown(5.0)


HOLD = {"settle_ms": 60_000, "max_hold_ms": 60_000}


def test_oldest_trace_is_released_unscored_when_pending_traces_are_full() -> None:
    traces = [genai_run("1000000000000000", ["search_flights", "book_flight"], trace_id=f"{i:032x}") for i in (1, 2, 3)]
    with engine(PipelineConfig(max_pending_traces=2, **HOLD)) as (pipeline, sink, reader):
        for spans in traces:
            for span in spans:
                assert pipeline.offer(span)
        assert pipeline.flush(5.0)
        assert traces[0][-1] in sink.released  # the first trace's run span went on unscored
        assert [r.trace_id for r, _ in sink.enriched] == [f"{2:032x}", f"{3:032x}"]
        assert spans_metric(reader, "dropped", "max_pending_traces") == 3
        assert spans_metric(reader, "passed") == spans_metric(reader, "received") == 9


def test_spans_over_the_per_trace_limit_pass_on_and_the_run_is_incomplete() -> None:
    spans = genai_run("1000000000000000", ["a", "b", "c", "d"])
    with engine(PipelineConfig(max_spans_per_trace=3, **HOLD)) as (pipeline, sink, reader):
        for span in spans:
            assert pipeline.offer(span)
        assert pipeline.flush(5.0)
        (_, enrichment), *_ = sink.enriched
        assert enrichment.attributes["toolscore.tool_calls"] == ["a", "b", "c"]
        assert enrichment.attributes["toolscore.run.incomplete"] is True
        assert spans_metric(reader, "dropped", "max_spans_per_trace") == 1
        assert points(reader, "toolscore.runs") == {(("toolscore.run.outcome", "incomplete"),): 1}


class _Gate(SpanProcessor):
    """A next processor that blocks the pipeline's worker thread until opened; the app thread never waits."""

    def __init__(self) -> None:
        self.open = threading.Event()
        self.entered = threading.Event()
        self.spans: list[ReadableSpan] = []
        self.lock = threading.Lock()

    def on_end(self, span: ReadableSpan) -> None:
        if threading.current_thread().name == "toolscore-pipeline":
            self.entered.set()
            self.open.wait(10)
        with self.lock:
            self.spans.append(span)

    def force_flush(self, timeout_millis: int = 30_000) -> bool:
        return True


def test_full_queue_passes_spans_straight_on_and_counts_them() -> None:
    reader = InMemoryMetricReader()
    gate = _Gate()
    with registry_with(TRAVEL) as registry:
        telemetry = create_telemetry(meter_provider=MeterProvider(metric_readers=[reader]))
        processor = ToolscoreSpanProcessor(registry, gate, PipelineConfig(queue_size=4, settle_ms=0), telemetry)
        provider = TracerProvider()
        provider.add_span_processor(processor)
        tracer = provider.get_tracer("t")
        tracer.start_span("first").end()
        assert gate.entered.wait(5)  # the worker is now stuck in `next`
        for _ in range(20):
            agent_run(tracer, tools=("search_flights",))
        assert len(gate.spans) == 40 - 4  # all but the queued four went straight on, on this thread
        gate.open.set()
        assert processor.force_flush(5_000)
        provider.shutdown()
    assert len(gate.spans) == 41
    assert spans_metric(reader, "dropped", "queue_full") == 36
    assert spans_metric(reader, "received") == spans_metric(reader, "passed") == 41


def test_pending_traces_are_observed_as_a_gauge() -> None:
    with engine(PipelineConfig(**HOLD)) as (pipeline, _, reader):
        for span in genai_run("1000000000000000", ["search_flights"]):
            assert pipeline.offer(span)
        assert wait_until(lambda: points(reader, "toolscore.pending.traces") == {(): 1})
        assert pipeline.flush(5.0)
        assert points(reader, "toolscore.pending.traces") == {(): 0}


def test_a_backlog_is_worked_through_in_bounded_steps() -> None:
    """A full queue is not drained in one step: spans go on (and deadlines are served) while the rest wait."""
    opened = threading.Event()
    batches: list[int] = []

    class Batches(ListSink[SpanRecord]):
        def release(self, carriers: Any) -> None:
            batches.append(len(carriers))
            super().release(carriers)

    def decode(record: SpanRecord) -> SpanRecord:
        opened.wait(5)  # the first span holds the worker while the backlog builds
        return record

    spans = [SpanRecord(f"{i + 1:032x}", f"{i + 1:016x}", None, f"GET /{i}") for i in range(3_000)]
    with registry_with(TRAVEL) as registry:
        pipeline: Engine[SpanRecord] = Engine(registry, Batches(), decode, PipelineConfig(queue_size=5_000))
        try:
            assert pipeline.offer(spans[0])
            assert wait_until(lambda: len(pipeline.intake) == 0)  # taken: the worker waits in `decode`
            assert all(pipeline.offer(span) for span in spans[1:])
            opened.set()
            assert wait_until(lambda: sum(batches) == len(spans))
            assert max(batches) <= 1_024
            assert len(batches) >= 3
        finally:
            pipeline.shutdown(5.0)


def test_a_failing_step_does_not_leave_the_worker_spinning_on_a_stale_backlog() -> None:
    """The backlog is asked after every step, failed ones too: a step that raises then waits to be woken."""

    class Failing(Worker):
        def __init__(self) -> None:
            super().__init__("toolscore-test-worker")
            self.steps = 0

        def step(self, now_ns: int) -> None:
            self.steps += 1
            if self.steps > 1:
                raise RuntimeError("a bug in a later step")

        def backlog(self) -> bool:
            return self.steps == 1  # work was waiting after the first step only

        def next_deadline_ns(self) -> int | None:
            return None

    worker = Failing()
    worker.start()
    try:
        worker._wake.set()
        assert wait_until(lambda: worker.steps >= 2)
        time.sleep(0.2)
        assert worker.steps == 2  # the failed step left no backlog: the loop waits instead of stepping again
    finally:
        worker._stopping = True
        worker._wake.set()
