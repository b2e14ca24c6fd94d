"""The score store learns of the scorers sampled out of a run from the engine: those of an expectation that
scored it through its results, and an expectation none of whose scorers ran through `on_sampled_out`."""

from __future__ import annotations

from pathlib import Path

from tests.pipeline_builders import TRAVEL, Recording, genai_run, record, registry_with, run_attrs
from toolscore.collector.pipeline import Engine, ListSink, PipelineConfig
from toolscore.collector.serve.scores import ScoreStoreConfig, query_runs
from toolscore.collector.serve.scores._store import ScoreStore
from toolscore.collector.spans import SpanRecord

NEVER = {
    "name": "support.judged",
    "match": {"agent": "support"},
    "scorers": [{"type": "tool_selection", "expected_tool": "refund", "sample_rate": 0}],
}
"""Matches the support agent's runs; its one scorer runs on none of them."""
TRAVEL_HALF = {
    **TRAVEL,
    "name": "travel.sampled",
    "scorers": [{"type": "tool_selection", "expected_tool": "book_flight", "name": "costly", "sample_rate": 0}],
}
"""Matches the travel runs beside TRAVEL, with its one scorer sampled out."""


def test_a_run_whose_matched_expectations_were_sampled_out_is_stored_flagged(tmp_path: Path) -> None:
    store = ScoreStore(ScoreStoreConfig(path=str(tmp_path / "scores.db"), write_interval_ms=10))
    now = 1_000_000_000_000
    support = "b" * 32
    with registry_with(TRAVEL, NEVER, TRAVEL_HALF) as registry:
        engine: Engine[SpanRecord] = Engine(
            registry,
            ListSink(),
            lambda r: r,
            PipelineConfig(settle_ms=20),
            Recording(),
            on_scored=store.record,
            on_sampled_out=store.record_sampled_out,
            clock=lambda: now,
        )
        support_run = [record("c" * 16, None, "invoke_agent support", run_attrs("support"), support)]
        for item in [*genai_run("a" * 16, ["search_flights", "book_flight"]), *support_run]:
            assert engine.offer(item)
        engine.step(now)
        engine.step(now + 50_000_000)
        engine.shutdown(5.0)
    assert store.close()
    by_agent = {run.agent: run for run in query_runs(tmp_path / "scores.db")}
    assert set(by_agent) == {"travel", "support"}
    travel, judged = by_agent["travel"], by_agent["support"]
    assert {s.expectation for s in travel.scores} == {"travel"}
    assert [(s.expectation, s.scorer) for s in travel.sampled_out] == [("travel.sampled", "costly")]
    assert (judged.scores, [(s.expectation, s.scorer) for s in judged.sampled_out]) == (
        (),
        [("support.judged", "tool_selection")],
    )
