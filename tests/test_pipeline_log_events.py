"""GenAI log events join their spans in the pipeline, whichever comes first, under the spans' bounds and settle.

The runs are seen as the engine scores them (`NotingRegistry`): the model's order of the parallel calls
(`MODEL_ORDER`) comes only from the chat span's `gen_ai.choice` event, so a run scored in that order had
the event joined; in `START_ORDER` it had not.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass

from tests.log_event_builders import CHAT, MODEL_ORDER, RUN, START_ORDER, choice, log_event, run_spans
from tests.pipeline_builders import EPOCH_NS, TRAVEL, NotingRegistry, Recording, registry_with, wait_until
from toolscore.collector.pipeline import Engine, ListSink, PipelineConfig
from toolscore.collector.spans import SpanEvent, SpanRecord

OTHER_TRACE = "1bf7651916cd43dd8448eb211c80319c"


@dataclass
class _Pipeline:
    engine: Engine[SpanRecord]
    registry: NotingRegistry
    telemetry: Recording
    sink: ListSink[SpanRecord]

    def calls(self) -> list[list[str]]:
        return [[call.name for call in run.calls] for run in self.registry.runs]

    def log_records(self) -> dict[str, int]:
        return {key[12:]: n for key, n in self.telemetry.counts.items() if key.startswith("log_records:") and n}


@contextmanager
def _pipeline(**config: object) -> Iterator[_Pipeline]:
    telemetry, sink = Recording(), ListSink[SpanRecord]()
    with registry_with(TRAVEL) as registry:
        noting = NotingRegistry(registry)
        engine: Engine[SpanRecord] = Engine(noting, sink, lambda r: r, PipelineConfig(**config), telemetry)  # type: ignore[arg-type]
        try:
            yield _Pipeline(engine, noting, telemetry, sink)
        finally:
            engine.shutdown(5.0)


def _offer(pipeline: _Pipeline, spans: list[SpanRecord]) -> None:
    for span in spans:
        assert pipeline.engine.offer(span)


def test_without_its_event_the_run_has_the_tool_spans_order() -> None:
    with _pipeline(settle_ms=20) as pipeline:
        _offer(pipeline, run_spans())
        assert pipeline.engine.flush(5.0)
        assert pipeline.calls() == [START_ORDER]


def test_an_event_before_its_span_waits_for_it_and_joins() -> None:
    with _pipeline(settle_ms=20) as pipeline:
        assert pipeline.engine.offer_event(log_event())
        assert wait_until(lambda: pipeline.log_records().get("received") == 1)
        _offer(pipeline, run_spans())
        assert wait_until(lambda: len(pipeline.registry.runs) == 1)  # settled, not flushed
        assert pipeline.calls() == [MODEL_ORDER]
        assert pipeline.engine.store.size == 0  # the waiting event's bytes went with its trace
        assert pipeline.log_records() == {"received": 1}


def test_an_event_after_its_span_joins_and_restarts_the_runs_settle_time() -> None:
    with _pipeline(settle_ms=300) as pipeline:
        spans = run_spans()
        _offer(pipeline, spans[:-1])  # the chat and tool spans: kept, the run still open
        assert wait_until(lambda: pipeline.engine.store.stats()["spans"] == 3)
        _offer(pipeline, spans[-1:])
        user = SpanEvent("gen_ai.user.message", EPOCH_NS + 1_100, {"body": {"content": "Paris?"}})
        assert pipeline.engine.offer_event(log_event(user))  # one batch
        assert wait_until(lambda: pipeline.log_records().get("received") == 1)
        assert pipeline.engine.offer_event(log_event())  # another
        assert wait_until(lambda: len(pipeline.registry.runs) == 1, timeout_s=10)
        assert pipeline.calls() == [MODEL_ORDER]
        assert pipeline.log_records() == {"received": 2}


def test_a_duplicate_event_is_joined_once_and_counted() -> None:
    with _pipeline(settle_ms=20) as pipeline:
        assert pipeline.engine.offer_event(log_event())
        assert pipeline.engine.offer_event(log_event())  # waiting for its span: a duplicate of the waiting one
        assert wait_until(lambda: pipeline.log_records().get("duplicate") == 1)
        _offer(pipeline, run_spans()[:1])
        assert wait_until(lambda: pipeline.engine.store.stats()["spans"] == 1)
        assert pipeline.engine.offer_event(log_event())  # joined to its span: a duplicate of the joined one
        assert wait_until(lambda: pipeline.log_records().get("duplicate") == 2)
        trace = next(iter(pipeline.engine.store.traces.values()))
        assert [event.name for event in trace.records[CHAT].span.events] == ["gen_ai.choice"]


def test_an_event_for_a_scored_trace_is_late() -> None:
    with _pipeline(settle_ms=20) as pipeline:
        _offer(pipeline, run_spans())
        assert pipeline.engine.flush(5.0)
        assert pipeline.engine.offer_event(log_event())
        assert pipeline.engine.offer_event(log_event(span_id=RUN))
        assert pipeline.engine.flush(5.0)
        assert pipeline.log_records() == {"received": 2, "late": 2}
        assert pipeline.calls() == [START_ORDER]
        assert len(pipeline.engine.store) == 0


def test_events_whose_span_never_comes_are_dropped_with_their_trace() -> None:
    with _pipeline(settle_ms=20, trace_idle_timeout_s=0.05) as pipeline:
        assert pipeline.engine.offer_event(log_event(trace_id=OTHER_TRACE))
        assert wait_until(lambda: pipeline.log_records().get("dropped:span_never_came") == 1)
        assert len(pipeline.engine.store) == 0
        assert pipeline.engine.store.size == 0


def test_events_waiting_for_their_span_are_bounded_per_trace() -> None:
    with _pipeline(settle_ms=20, max_spans_per_trace=4) as pipeline:
        for i in range(6):
            assert pipeline.engine.offer_event(log_event(choice(EPOCH_NS + i)))
        assert wait_until(lambda: pipeline.log_records().get("dropped:max_spans_per_trace") == 2)
        assert next(iter(pipeline.engine.store.traces.values())).early_count == 4


def test_events_count_against_max_pending_bytes_and_evict_the_oldest_trace() -> None:
    with _pipeline(settle_ms=5_000, max_pending_bytes=6_500) as pipeline:
        for i in range(3):
            assert pipeline.engine.offer_event(log_event(choice(EPOCH_NS + i), trace_id=OTHER_TRACE))
        assert wait_until(lambda: pipeline.log_records().get("received") == 3)
        held = pipeline.engine.store.size
        assert 3 * 1_500 < held <= 6_500  # each event counts for its text and costs
        for i in range(3):
            assert pipeline.engine.offer_event(log_event(choice(EPOCH_NS + i)))
        assert wait_until(lambda: pipeline.log_records().get("dropped:max_pending_bytes") == 3)
        assert list(pipeline.engine.store.traces) == [run_spans()[0].trace_id]
        assert pipeline.engine.store.size == held


def test_the_queue_of_events_is_bounded_and_counts_what_it_refuses() -> None:
    with _pipeline(settle_ms=20, queue_size=2) as pipeline:
        with pipeline.engine._busy:  # the worker cannot drain while this holds its step
            offered = [pipeline.engine.offer_event(log_event(choice(EPOCH_NS + i))) for i in range(4)]
        assert offered == [True, True, False, False]
        assert wait_until(lambda: pipeline.log_records().get("dropped:queue_full") == 2)
