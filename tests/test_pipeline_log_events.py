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
from tests.pipeline_builders import EPOCH_NS, HandDriven, NotingRegistry, hand_driven
from toolscore.collector.pipeline import Engine, PipelineConfig
from toolscore.collector.sources.log_events import LogEvent
from toolscore.collector.spans import SpanEvent, SpanRecord

OTHER_TRACE = "1bf7651916cd43dd8448eb211c80319c"


@dataclass
class _Pipeline:
    """An engine stepped by hand (`HandDriven`) over a `NotingRegistry`."""

    driven: HandDriven

    @property
    def engine(self) -> Engine[SpanRecord]:
        return self.driven.engine

    @property
    def registry(self) -> NotingRegistry:
        return self.engine.registry  # type: ignore[return-value]

    def calls(self) -> list[list[str]]:
        return [[call.name for call in run.calls] for run in self.registry.runs]

    def log_records(self) -> dict[str, int]:
        counts = self.driven.telemetry.counts
        return {key[12:]: n for key, n in counts.items() if key.startswith("log_records:") and n}

    def events(self, *events: LogEvent) -> list[bool]:
        """Offer the events, then step at the current time (the engine takes them as they come)."""
        offered = [self.engine.offer_event(event) for event in events]
        self.engine.step(self.driven.now_ns)
        return offered


@contextmanager
def _pipeline(**config: object) -> Iterator[_Pipeline]:
    with hand_driven(PipelineConfig(**config), registry=NotingRegistry) as driven:  # type: ignore[arg-type]
        yield _Pipeline(driven)


def test_without_its_event_the_run_has_the_tool_spans_order() -> None:
    with _pipeline(settle_ms=20) as pipeline:
        pipeline.driven.offer(run_spans())
        pipeline.driven.at(20)
        assert pipeline.calls() == [START_ORDER]


def test_an_event_before_its_span_waits_for_it_and_joins() -> None:
    with _pipeline(settle_ms=20) as pipeline:
        assert pipeline.events(log_event()) == [True]
        assert pipeline.log_records() == {"received": 1}
        pipeline.driven.offer(run_spans())
        pipeline.driven.at(20)
        assert pipeline.calls() == [MODEL_ORDER]  # settled, not flushed
        assert pipeline.engine.store.size == 0  # the waiting event's bytes went with its trace
        assert pipeline.log_records() == {"received": 1}


def test_an_event_after_its_span_joins_and_restarts_the_runs_settle_time() -> None:
    with _pipeline(settle_ms=300, trace_idle_timeout_s=60) as pipeline:
        driven = pipeline.driven
        driven.offer(run_spans())  # the run span settles at 300 ms, unless something of its run comes
        driven.at(200)
        user = SpanEvent("gen_ai.user.message", EPOCH_NS + 1_100, {"body": {"content": "Paris?"}})
        pipeline.events(log_event(user))  # settles at 500 ms now
        driven.at(400)
        assert pipeline.registry.runs == []
        pipeline.events(log_event())  # at 700 ms
        driven.at(699)
        assert pipeline.registry.runs == []
        driven.at(700)
        assert pipeline.calls() == [MODEL_ORDER]
        assert pipeline.log_records() == {"received": 2}


def test_a_duplicate_event_is_joined_once_and_counted() -> None:
    with _pipeline(settle_ms=20) as pipeline:
        pipeline.events(log_event(), log_event())  # the second waits for its span: a duplicate of the waiting one
        assert pipeline.log_records() == {"received": 2, "duplicate": 1}
        pipeline.driven.offer(run_spans()[:1])
        assert pipeline.engine.store.stats()["spans"] == 1
        pipeline.events(log_event())  # joined to its span: a duplicate of the joined one
        assert pipeline.log_records() == {"received": 3, "duplicate": 2}
        trace = next(iter(pipeline.engine.store.traces.values()))
        assert [event.name for event in trace.records[CHAT].span.events] == ["gen_ai.choice"]


def test_an_event_for_a_scored_trace_is_late() -> None:
    with _pipeline(settle_ms=20) as pipeline:
        pipeline.driven.offer(run_spans())
        pipeline.driven.at(20)
        pipeline.events(log_event(), log_event(span_id=RUN))
        assert pipeline.log_records() == {"received": 2, "late": 2}
        assert pipeline.calls() == [START_ORDER]
        assert len(pipeline.engine.store) == 0


def test_events_whose_span_never_comes_are_dropped_with_their_trace() -> None:
    with _pipeline(settle_ms=20, trace_idle_timeout_s=30) as pipeline:
        pipeline.events(log_event(trace_id=OTHER_TRACE))
        pipeline.driven.at(29_999)
        assert len(pipeline.engine.store) == 1
        pipeline.driven.at(30_000)
        assert pipeline.log_records() == {"received": 1, "dropped:span_never_came": 1}
        assert len(pipeline.engine.store) == 0
        assert pipeline.engine.store.size == 0


def test_events_waiting_for_their_span_are_bounded_per_trace() -> None:
    with _pipeline(settle_ms=20, max_spans_per_trace=4) as pipeline:
        pipeline.events(*(log_event(choice(EPOCH_NS + i)) for i in range(6)))
        assert pipeline.log_records() == {"received": 6, "dropped:max_spans_per_trace": 2}
        assert next(iter(pipeline.engine.store.traces.values())).early_count == 4


def test_events_count_against_max_pending_bytes_and_evict_the_oldest_trace() -> None:
    with _pipeline(settle_ms=5_000, max_pending_bytes=6_500) as pipeline:
        pipeline.events(*(log_event(choice(EPOCH_NS + i), trace_id=OTHER_TRACE) for i in range(3)))
        assert pipeline.log_records() == {"received": 3}
        held = pipeline.engine.store.size
        assert 3 * 1_500 < held <= 6_500  # each event counts for its text and costs
        pipeline.events(*(log_event(choice(EPOCH_NS + i)) for i in range(3)))
        assert pipeline.log_records() == {"received": 6, "dropped:max_pending_bytes": 3}
        assert list(pipeline.engine.store.traces) == [run_spans()[0].trace_id]
        assert pipeline.engine.store.size == held


def test_the_queue_of_events_is_bounded_and_counts_what_it_refuses() -> None:
    with _pipeline(settle_ms=20, queue_size=2) as pipeline:
        offered = pipeline.events(*(log_event(choice(EPOCH_NS + i)) for i in range(4)))  # one step after all four
        assert offered == [True, True, False, False]
        assert pipeline.log_records() == {"received": 4, "dropped:queue_full": 2}
