"""Runs in flight when `toolscore serve` started (or joined a gateway's ring): their earlier spans may have gone to
the replica that had their trace before, so they are flagged incomplete rather than scored as whole.

The engine is stepped by hand (`hand_driven`): its start is the hand clock's 0 ms, and a trace first seen past the
idle timeout is offered at a later step, not after a sleep. Run spans' own times are wall-clock epoch times, as
the flag compares them with the wall clock read when the engine is built.
"""

from __future__ import annotations

import dataclasses
import time

from tests.pipeline_builders import HandDriven, genai_run, hand_driven
from toolscore.collector.pipeline import PipelineConfig
from toolscore.collector.spans import SpanRecord

RUN = "1000000000000000"
SETTLE_MS = 20


def _config(idle_s: float = 30.0) -> PipelineConfig:
    return PipelineConfig(settle_ms=SETTLE_MS, trace_idle_timeout_s=idle_s)


def _starting_at(records: list[SpanRecord], start_ns: int) -> list[SpanRecord]:
    first = min(r.start_ns for r in records)
    return [
        dataclasses.replace(r, start_ns=r.start_ns - first + start_ns, end_ns=r.end_ns - first + start_ns)
        for r in records
    ]


def _run_started_s_ago(seconds: float) -> list[SpanRecord]:
    return _starting_at(genai_run(RUN, ["search_flights", "book_flight"]), time.time_ns() - int(seconds * 1e9))


def _outcome(driven: HandDriven, records: list[SpanRecord], at_ms: float = 0) -> str:
    """The run's outcome, offered `at_ms` after the engine's start and stepped to its settle."""
    driven.at(at_ms)
    driven.offer(records)
    assert sum(driven.telemetry.outcomes.values()) == 0  # held: its run span settles first
    driven.at(at_ms + SETTLE_MS)
    (outcome,) = driven.telemetry.outcomes.elements()
    return outcome


def test_a_run_begun_before_serve_started_is_flagged_incomplete() -> None:
    with hand_driven(_config(), flag_runs_begun_elsewhere=True) as driven:
        assert _outcome(driven, _run_started_s_ago(5)) == "incomplete"


def test_a_run_begun_after_serve_started_is_scored_whole() -> None:
    with hand_driven(_config(), flag_runs_begun_elsewhere=True) as driven:
        assert _outcome(driven, _run_started_s_ago(-1)) == "matched"


def test_the_in_process_pipeline_does_not_flag_runs_begun_before_it() -> None:
    with hand_driven(_config()) as driven:
        assert _outcome(driven, _run_started_s_ago(5)) == "matched"


def test_a_trace_first_seen_within_the_idle_timeout_of_the_start_is_flagged() -> None:
    with hand_driven(_config(idle_s=0.2), flag_runs_begun_elsewhere=True) as driven:
        assert _outcome(driven, _run_started_s_ago(5), at_ms=199) == "incomplete"


def test_a_trace_first_seen_past_the_idle_timeout_is_not_flagged() -> None:
    """A run sent long after the start: had it been in flight then, its trace would have come sooner."""
    with hand_driven(_config(idle_s=0.2), flag_runs_begun_elsewhere=True) as driven:
        assert _outcome(driven, _run_started_s_ago(5), at_ms=200) == "matched"


def test_a_replay_of_old_traces_right_after_the_start_is_not_flagged() -> None:
    """Runs that started more than an hour before the start were not in flight then: a replay."""
    with hand_driven(_config(), flag_runs_begun_elsewhere=True) as driven:
        assert _outcome(driven, _run_started_s_ago(2 * 3600)) == "matched"
