"""Runs in flight when `toolscore serve` started (or joined a gateway's ring): their earlier spans may have gone to
the replica that had their trace before, so they are flagged incomplete rather than scored as whole."""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Iterator
from contextlib import contextmanager

from tests.pipeline_builders import TRAVEL, Recording, genai_run, registry_with, wait_until
from toolscore.collector.pipeline import Engine, ListSink, PipelineConfig
from toolscore.collector.spans import SpanRecord

RUN = "1000000000000000"


@contextmanager
def engine(flag: bool, idle_s: float = 30.0) -> Iterator[tuple[Engine[SpanRecord], Recording]]:
    telemetry = Recording()
    with registry_with(TRAVEL) as registry:
        config = PipelineConfig(settle_ms=20, trace_idle_timeout_s=idle_s)
        pipeline: Engine[SpanRecord] = Engine(
            registry, ListSink(), lambda r: r, config, telemetry, flag_runs_begun_elsewhere=flag
        )
        pipeline.start()  # on its thread, as serve runs it: the flag reads the wall clock at the start
        try:
            yield pipeline, telemetry
        finally:
            pipeline.shutdown(5.0)


def _starting_at(records: list[SpanRecord], start_ns: int) -> list[SpanRecord]:
    first = min(r.start_ns for r in records)
    return [
        dataclasses.replace(r, start_ns=r.start_ns - first + start_ns, end_ns=r.end_ns - first + start_ns)
        for r in records
    ]


def _outcome(pipeline: Engine[SpanRecord], telemetry: Recording, records: list[SpanRecord]) -> str:
    for item in records:
        assert pipeline.offer(item)
    assert wait_until(lambda: sum(telemetry.outcomes.values()) == 1)
    (outcome,) = telemetry.outcomes
    return outcome


def test_a_run_begun_before_serve_started_is_flagged_incomplete() -> None:
    with engine(flag=True) as (pipeline, telemetry):
        run = _starting_at(genai_run(RUN, ["search_flights", "book_flight"]), time.time_ns() - 5_000_000_000)
        assert _outcome(pipeline, telemetry, run) == "incomplete"


def test_a_run_begun_after_serve_started_is_scored_whole() -> None:
    with engine(flag=True) as (pipeline, telemetry):
        run = _starting_at(genai_run(RUN, ["search_flights", "book_flight"]), time.time_ns())
        assert _outcome(pipeline, telemetry, run) == "matched"


def test_the_in_process_pipeline_does_not_flag_runs_begun_before_it() -> None:
    with engine(flag=False) as (pipeline, telemetry):
        run = _starting_at(genai_run(RUN, ["search_flights", "book_flight"]), time.time_ns() - 5_000_000_000)
        assert _outcome(pipeline, telemetry, run) == "matched"


def test_a_trace_first_seen_past_the_idle_timeout_is_not_flagged() -> None:
    """A run sent long after the start: had it been in flight then, its trace would have come sooner."""
    with engine(flag=True, idle_s=0.2) as (pipeline, telemetry):
        time.sleep(0.3)
        run = _starting_at(genai_run(RUN, ["search_flights", "book_flight"]), time.time_ns() - 5_000_000_000)
        assert _outcome(pipeline, telemetry, run) == "matched"


def test_a_replay_of_old_traces_right_after_the_start_is_not_flagged() -> None:
    """Runs that started more than an hour before the start were not in flight then: a replay."""
    with engine(flag=True) as (pipeline, telemetry):
        run = _starting_at(genai_run(RUN, ["search_flights", "book_flight"]), time.time_ns() - 2 * 3600 * 10**9)
        assert _outcome(pipeline, telemetry, run) == "matched"
