"""When a run is finished, through the source-agnostic engine (carriers are the `SpanRecord`s themselves)."""

from __future__ import annotations

from collections import Counter

from tests.pipeline_builders import TRACE, genai_run, record, recording_engine, tool_attrs, wait_until
from toolscore.collector.pipeline import Engine, ListSink, PipelineConfig
from toolscore.collector.pipeline.group import Admit, TraceStore
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


def test_a_run_cut_by_the_idle_timeout_is_flagged_incomplete_when_its_span_comes() -> None:
    """A run that goes quiet past `trace_idle_timeout_s` (a slow model call) has its earlier calls finished
    without it; when its later spans and run span come, its score must say that calls are missing."""
    first, second, run_span = genai_run(RUN, ["search_flights", "book_flight"])
    config = PipelineConfig(settle_ms=20, trace_idle_timeout_s=0.05)
    with recording_engine(config) as (pipeline, sink, telemetry):
        offer(pipeline, [first])
        assert wait_until(lambda: telemetry.outcomes["incomplete"] == 1)  # the tool alone, as an inferred run
        offer(pipeline, [second, run_span])
        assert pipeline.flush(5.0)
        assert scores(sink)["toolscore.tool_calls"] == ["book_flight"]
        assert scores(sink)["toolscore.run.incomplete"] is True
        assert telemetry.outcomes["incomplete"] == 2
        assert len(sink.released) + len(sink.enriched) == 3


def test_a_flush_in_the_middle_of_a_run_leaves_its_later_score_flagged_incomplete() -> None:
    first, second, run_span = genai_run(RUN, ["search_flights", "book_flight"])
    with recording_engine(SLOW) as (pipeline, sink, _):
        offer(pipeline, [first])
        assert pipeline.flush(5.0)  # a serverless handler flushing while another request's run goes on
        offer(pipeline, [second, run_span])
        assert pipeline.flush(5.0)
        assert scores(sink)["toolscore.run.incomplete"] is True


def test_a_run_whose_trace_was_evicted_is_flagged_incomplete_when_its_span_comes() -> None:
    first, run_span = genai_run(RUN, ["search_flights"])
    other = genai_run("5000000000000000", ["get_weather"], trace_id="f" * 32)
    with recording_engine(PipelineConfig(settle_ms=60_000, max_hold_ms=60_000, max_pending_traces=1)) as (
        pipeline,
        sink,
        telemetry,
    ):
        offer(pipeline, [first, other[0]])  # the second trace pushes the first out
        assert wait_until(lambda: telemetry.counts["dropped:max_pending_traces"] >= 1)
        offer(pipeline, [run_span])
        assert pipeline.flush(5.0)
        assert scores(sink)["toolscore.tool_calls"] == []
        assert scores(sink)["toolscore.run.incomplete"] is True


def test_a_complete_second_run_in_a_reopened_trace_is_not_flagged() -> None:
    """Reopening alone says nothing: only a run with spans that went out before it is incomplete."""
    first = genai_run(RUN, ["search_flights"], parent=ROOT)
    second = genai_run(INNER, ["book_flight"], parent=ROOT)
    with recording_engine(PipelineConfig(settle_ms=20)) as (pipeline, sink, _):
        offer(pipeline, first)
        assert pipeline.flush(5.0)
        offer(pipeline, second)
        assert pipeline.flush(5.0)
        assert "toolscore.run.incomplete" not in scores(sink, INNER)
        assert scores(sink, INNER)["toolscore.tool_calls"] == ["book_flight"]


def test_a_scored_run_span_sent_again_after_its_trace_reopened_is_a_duplicate() -> None:
    first = genai_run(RUN, ["search_flights"], parent=ROOT)
    second = genai_run(INNER, ["book_flight"], parent=ROOT)
    with recording_engine(PipelineConfig(settle_ms=20)) as (pipeline, sink, telemetry):
        offer(pipeline, first)
        assert pipeline.flush(5.0)
        offer(pipeline, second[:1])  # the trace opens again
        offer(pipeline, first[-1:])  # an at-least-once sender re-sends the scored run span
        offer(pipeline, second[1:])
        assert pipeline.flush(5.0)
        assert scores(sink, RUN)["toolscore.tool_calls"] == ["search_flights"]  # enriched once, not re-scored
        assert scores(sink, INNER)["toolscore.tool_calls"] == ["book_flight"]
        per_run = Counter(ref.span_id for *_, ref in telemetry.scores if ref is not None)
        assert per_run[RUN] == per_run[INNER] > 0


def test_a_span_whose_parent_has_not_come_yet_starts_the_held_runs_settling_again() -> None:
    """It may be under any of them (its parent is on its way): none may settle without it."""
    store: TraceStore[SpanRecord] = TraceStore(max_traces=10, max_spans_per_trace=100)
    run_span = genai_run(RUN, [])[0]
    assert store.admit(run_span, run_span, 0).kind is Admit.HELD
    step = "1000000000000005"  # a model step under the run, ending after the tool it called
    tool = record("1000000000000007", step, "execute_tool book_flight", tool_attrs("book_flight", "c9"))
    assert store.admit(tool, tool, 1).touched == [RUN]
    known = record("1000000000000008", RUN, "execute_tool cancel", tool_attrs("cancel", "c8"))
    assert store.admit(known, known, 2).touched == [RUN]
