"""When a run is finished, through the source-agnostic engine (carriers are the `SpanRecord`s themselves)."""

from __future__ import annotations

from tests.pipeline_builders import TRACE, genai_run, record, recording_engine, tool_attrs, wait_until
from toolscore.collector.pipeline import Engine, ListSink, PipelineConfig
from toolscore.collector.spans import SpanRecord

RUN = "1000000000000000"
INNER = "2000000000000000"
ROOT = "9000000000000000"


def offer(pipeline: Engine[SpanRecord], records: list[SpanRecord]) -> None:
    for item in records:
        assert pipeline.offer(item)


def scores(sink: ListSink[SpanRecord], span_id: str = RUN) -> dict[str, object]:
    found = [e.attributes for r, e in sink.enriched if r.span_id == span_id]
    assert len(found) == 1, f"run {span_id} enriched {len(found)} times"
    return found[0]


SLOW = PipelineConfig(settle_ms=60_000, max_hold_ms=60_000)


def test_run_span_is_held_until_it_settles_children_go_on_at_once() -> None:
    with recording_engine(SLOW) as (pipeline, sink, _):
        offer(pipeline, genai_run(RUN, ["search_flights", "book_flight"]))
        assert wait_until(lambda: len(sink.released) == 2)
        assert sink.enriched == []
        assert pipeline.flush(5.0)
        assert scores(sink)["toolscore.tool_calls"] == ["search_flights", "book_flight"]


def test_a_span_arriving_under_the_ended_run_before_it_settles_is_part_of_the_run() -> None:
    run_span, *_ = reversed(genai_run(RUN, []))
    straggler = record("1000000000000007", RUN, "execute_tool book_flight", tool_attrs("book_flight", "c9"))
    with recording_engine(SLOW) as (pipeline, sink, _):
        offer(pipeline, [run_span, straggler])
        assert pipeline.flush(5.0)
        assert scores(sink)["toolscore.tool_calls"] == ["book_flight"]


def test_late_span_of_a_scored_run_passes_on_and_is_counted_without_a_new_score() -> None:
    with recording_engine(PipelineConfig(settle_ms=20)) as (pipeline, sink, telemetry):
        offer(pipeline, genai_run(RUN, ["search_flights", "book_flight"]))
        assert pipeline.flush(5.0)
        late = record("1000000000000009", RUN, "execute_tool cancel", tool_attrs("cancel", "c9"))
        offer(pipeline, [late])
        assert pipeline.flush(5.0)
        assert sink.released[-1] is late
        assert telemetry.counts["late"] == 1
        assert scores(sink)["toolscore.tool_calls"] == ["search_flights", "book_flight"]


def test_redelivered_spans_do_not_change_the_score() -> None:
    spans = genai_run(RUN, ["search_flights", "book_flight"])
    with recording_engine(SLOW) as (pipeline, sink, telemetry):
        offer(pipeline, spans + spans)
        assert pipeline.flush(5.0)
        once = scores(sink)
        offer(pipeline, spans)  # again, after the trace is finished
        assert pipeline.flush(5.0)
        assert scores(sink) == once
        assert once["toolscore.tool_calls"] == ["search_flights", "book_flight"]
        assert len(sink.released) + len(sink.enriched) == 3 * len(spans)
        assert len(telemetry.scores) == 2


def test_trace_without_run_span_is_scored_after_idle_timeout_as_incomplete() -> None:
    tool = record("3000000000000001", "3000000000000000", "execute_tool book_flight", tool_attrs("book_flight", "c1"))
    with recording_engine(PipelineConfig(settle_ms=20, trace_idle_timeout_s=0.05)) as (pipeline, sink, telemetry):
        offer(pipeline, [tool])
        assert wait_until(lambda: telemetry.outcomes["incomplete"] == 1)
        assert sink.released == [tool]
        assert sink.enriched == []


def test_trace_without_run_span_is_complete_once_its_root_has_ended() -> None:
    tool = record("3000000000000001", ROOT, "execute_tool book_flight", tool_attrs("book_flight", "c1"))
    root = record(ROOT, None, "POST /chat", {})
    with recording_engine(PipelineConfig(settle_ms=20, trace_idle_timeout_s=60)) as (pipeline, _, telemetry):
        offer(pipeline, [tool, root])
        assert wait_until(lambda: sum(telemetry.outcomes.values()) == 1)
        assert telemetry.outcomes == {"unmatched": 1}
        assert len(pipeline.store) == 0


def test_nested_runs_are_scored_each_on_its_own_span() -> None:
    inner = genai_run(INNER, ["search_flights"], parent=RUN)
    outer = genai_run(RUN, ["book_flight"])
    with recording_engine(PipelineConfig(settle_ms=20)) as (pipeline, sink, _):
        offer(pipeline, inner + outer)
        assert pipeline.flush(5.0)
        assert scores(sink, INNER)["toolscore.tool_calls"] == ["search_flights"]
        assert scores(sink, RUN)["toolscore.tool_calls"] == ["book_flight"]


def test_two_runs_in_one_trace_settle_independently() -> None:
    first = genai_run(RUN, ["search_flights"], parent=ROOT)
    second = genai_run(INNER, ["book_flight"], parent=ROOT)
    with recording_engine(PipelineConfig(settle_ms=20, max_hold_ms=60_000, trace_idle_timeout_s=60)) as (
        pipeline,
        sink,
        _,
    ):
        offer(pipeline, first)
        assert wait_until(lambda: len(sink.enriched) == 1)  # the second run has not even started
        offer(pipeline, second)
        assert wait_until(lambda: len(sink.enriched) == 2)
        assert [r.span_id for r, _ in sink.enriched] == [RUN, INNER]
        assert TRACE in pipeline.store.traces  # the root is still open
