"""An engine built without its thread: nothing happens until the builder steps it, at times of its choosing."""

from __future__ import annotations

import threading

import pytest

from tests.pipeline_builders import TRAVEL, Recording, genai_run, hand_driven, registry_with, traced
from toolscore.collector.pipeline import Engine, ListSink, PipelineConfig
from toolscore.collector.spans import SpanRecord

RUN = "1000000000000000"
SLOW = PipelineConfig(settle_ms=250, max_hold_ms=60_000, trace_idle_timeout_s=60)


def _pipeline_threads() -> set[threading.Thread]:
    return {t for t in threading.enumerate() if t.name == "toolscore-pipeline"}


def test_an_engine_is_built_without_its_thread_and_nothing_happens_until_it_is_stepped() -> None:
    before = _pipeline_threads()
    with hand_driven(SLOW) as driven:
        assert _pipeline_threads() == before
        assert not driven.engine.started
        for span in genai_run(RUN, ["book_flight"]):
            assert driven.engine.offer(span)
        assert driven.sink.released == []  # queued, not taken: no thread takes it
        driven.at(0)
        assert len(driven.sink.released) == 1  # the tool span goes on, the run span is held
        driven.at(249)
        assert driven.sink.enriched == []
        driven.at(250)
        assert [r.span_id for r, _ in driven.sink.enriched] == [RUN]


def test_without_the_thread_flush_and_shutdown_finish_the_work_on_the_callers_thread() -> None:
    with hand_driven(SLOW) as driven:
        driven.offer(genai_run(RUN, ["book_flight"]))
        assert driven.sink.enriched == []
        assert driven.engine.flush(5.0)
        assert [r.span_id for r, _ in driven.sink.enriched] == [RUN]
        assert driven.engine.shutdown(5.0)
        assert driven.engine.shutdown(5.0), "idempotent"


def test_an_engine_on_a_clock_of_its_own_is_stepped_by_hand_and_cannot_be_started() -> None:
    with hand_driven(SLOW) as driven, pytest.raises(RuntimeError, match="stepped by hand"):
        driven.engine.start()


def test_the_span_processor_starts_its_engine_and_an_engine_starts_once() -> None:
    with registry_with(TRAVEL) as registry:
        with traced(registry, SLOW) as (_, processor, _):
            assert processor.engine.started
            with pytest.raises(RuntimeError, match="once"):
                processor.engine.start()
        engine: Engine[SpanRecord] = Engine(registry, ListSink(), lambda r: r, SLOW, Recording())
        engine.start()
        try:
            assert engine.started
        finally:
            assert engine.shutdown(5.0)
