"""The score store: runs with calls and scores written off-thread, read back filtered, bounded by count and age."""

from __future__ import annotations

import sqlite3
import time
from contextlib import closing
from pathlib import Path

import pytest

from tests.metric_reader import Meters
from tests.registry_builders import doc
from toolscore.collector.registry import Expectation
from toolscore.collector.serve.scores import ScoreStoreConfig, parse_since, query_runs, query_versions
from toolscore.collector.serve.scores._store import ScoreStore
from toolscore.scorers import AgentRun, Score, ScoreFailure, ToolCall

TRAVEL = Expectation.model_validate({**doc("travel"), "version": 3})
REFUND = Expectation.model_validate({**doc("refund"), "version": 1})


def run(n: int, agent: str = "travel", calls: tuple[str, ...] = ("search_flights", "book_flight")) -> AgentRun:
    return AgentRun(
        trace_id=f"{n:032x}",
        span_id=f"{n:016x}",
        agent_name=agent,
        calls=tuple(ToolCall(name=name, args={"i": i}, args_state="value") for i, name in enumerate(calls)),
    )


def passed(scorer: str = "tool_selection", value: float = 1.0) -> Score:
    return Score(name=scorer, value=value, label="pass" if value >= 0.5 else "fail", explanation=f"value={value}")


def store_at(path: Path, **config: object) -> ScoreStore:
    return ScoreStore(ScoreStoreConfig(path=str(path / "scores.db"), write_interval_ms=10, **config))  # type: ignore[arg-type]


def test_a_scored_run_is_stored_with_its_calls_and_every_score(tmp_path: Path) -> None:
    store = store_at(tmp_path)
    store.record(run(1), TRAVEL, passed())
    store.record(run(1), TRAVEL, ScoreFailure(name="judge", error_type="judge_timeout", message="20 s"))
    store.record(run(1), REFUND, passed("trajectory", 0.25))
    assert store.close()
    (stored,) = query_runs(tmp_path / "scores.db")
    assert (stored.trace_id, stored.span_id, stored.agent) == (f"{1:032x}", f"{1:016x}", "travel")
    assert [(call["name"], call["args"]) for call in stored.calls] == [
        ("search_flights", {"i": 0}),
        ("book_flight", {"i": 1}),
    ]
    assert [
        (s.expectation, s.version, s.scorer, s.value, s.label, s.error_type, s.explanation) for s in stored.scores
    ] == [
        ("travel", 3, "tool_selection", 1.0, "pass", None, "value=1.0"),
        ("travel", 3, "judge", None, None, "judge_timeout", "20 s"),
        ("refund", 1, "trajectory", 0.25, "fail", None, "value=0.25"),
    ]


def test_scores_of_a_run_written_in_a_later_batch_join_its_row(tmp_path: Path) -> None:
    store = store_at(tmp_path)
    store.record(run(1), TRAVEL, passed())
    assert store.flush(5.0)
    store.record(run(1), REFUND, passed("trajectory", 0.25))  # e.g. the judge's score, after the others
    assert store.close()
    (stored,) = query_runs(tmp_path / "scores.db")
    assert [(s.expectation, s.scorer) for s in stored.scores] == [
        ("travel", "tool_selection"),
        ("refund", "trajectory"),
    ]


def test_filters_keep_runs_with_a_matching_score(tmp_path: Path) -> None:
    store = store_at(tmp_path)
    store.record(run(1, "travel"), TRAVEL, passed())
    store.record(run(2, "support"), REFUND, passed(value=0.0))
    store.record(run(3, "travel"), REFUND, ScoreFailure(name="judge", error_type="judge_error"))
    assert store.close()
    db = tmp_path / "scores.db"
    assert [r.span_id[-1] for r in query_runs(db)] == ["3", "2", "1"]
    assert [r.span_id[-1] for r in query_runs(db, agent="travel")] == ["3", "1"]
    assert [r.span_id[-1] for r in query_runs(db, expectation="refund")] == ["3", "2"]
    assert [r.span_id[-1] for r in query_runs(db, label="fail")] == ["2"]
    assert [r.span_id[-1] for r in query_runs(db, label="error", agent="travel")] == ["3"]
    assert [r.span_id[-1] for r in query_runs(db, limit=1)] == ["3"]
    assert query_runs(db, since_ns=time.time_ns() + 10**9) == []


def test_only_the_newest_max_runs_are_kept_with_their_scores(tmp_path: Path) -> None:
    store = store_at(tmp_path, max_runs=3)
    for n in range(1, 6):
        store.record(run(n), TRAVEL, passed())
        store.record(run(n), REFUND, passed())
        assert store.flush(5)
    assert store.close()
    assert [r.span_id[-1] for r in query_runs(tmp_path / "scores.db")] == ["5", "4", "3"]
    with sqlite3.connect(tmp_path / "scores.db") as db:
        assert db.execute("SELECT count(*) FROM scores").fetchone() == (6,)


def test_runs_older_than_max_age_are_deleted(tmp_path: Path) -> None:
    store = store_at(tmp_path, max_age_s=0.3)
    store.record(run(1), TRAVEL, passed())
    assert store.flush(5)
    time.sleep(0.4)
    store.record(run(2), TRAVEL, passed())
    assert store.close()
    assert [r.span_id[-1] for r in query_runs(tmp_path / "scores.db")] == ["2"]


def test_calls_are_capped_and_long_arguments_cut(tmp_path: Path) -> None:
    store = store_at(tmp_path, max_calls=2, max_args_chars=5)
    store.record(run(1, calls=("a", "b", "c")), TRAVEL, passed())
    assert store.close()
    (stored,) = query_runs(tmp_path / "scores.db")
    assert stored.calls_total == 3
    assert [(call["name"], call["args"], call["args_truncated"]) for call in stored.calls] == [
        ("a", '{"i":', True),
        ("b", '{"i":', True),
    ]


def test_only_the_calls_whose_arguments_are_too_long_are_cut(tmp_path: Path) -> None:
    """The list as a whole is longer than `max_args_chars`; one call's arguments are, the others' are not."""
    long_args = {"query": "x" * 40}
    calls = (
        ToolCall(name="a", args={"i": 1}, args_state="value"),
        ToolCall(name="b", args=long_args, args_state="value"),
        ToolCall(name="c", args=2**70, args_state="value"),  # beyond 64 bits: written exactly
        ToolCall(name="d", args_state="not_captured"),
    )
    store = store_at(tmp_path, max_args_chars=30)
    store.record(AgentRun(trace_id="ab" * 16, span_id="cd" * 8, calls=calls), TRAVEL, passed())
    assert store.close()
    (stored,) = query_runs(tmp_path / "scores.db")
    assert [(c["name"], c.get("args"), c.get("args_truncated", False)) for c in stored.calls] == [
        ("a", {"i": 1}, False),
        ("b", '{"query":"' + "x" * 20, True),
        ("c", 2**70, False),
        ("d", None, False),
    ]
    assert stored.calls[3]["args_captured"] is False


def test_lone_surrogates_are_stored_as_replacement_characters(tmp_path: Path) -> None:
    """`"\\ud800"` in a call's arguments is valid JSON and decodes to a lone surrogate, which SQLite refuses."""
    calls = (ToolCall(name="get_weather", args={"city": "Par\ud800is"}, args_state="value"),)
    bad = AgentRun(trace_id="ab" * 16, span_id="cd" * 8, agent_name="weather\udc00", calls=calls)
    explained = Score(name="trajectory", value=0.0, label="fail", explanation="got \ud800")
    store = store_at(tmp_path)
    store.record(bad, TRAVEL, explained)
    assert store.close()
    (stored,) = query_runs(tmp_path / "scores.db")
    assert stored.agent == "weather\ufffd"
    assert stored.calls[0]["args"] == {"city": "Par\ufffdis"}
    assert stored.scores[0].explanation == "got \ufffd"
    assert store.dropped == 0


def test_arguments_nested_deeper_than_the_encoder_goes_are_stored_as_their_text(tmp_path: Path) -> None:
    """Decoded JSON nests up to 1,024 levels; orjson encodes 254, the standard encoder recurses."""
    deep: list[object] = []
    for _ in range(1_000):
        deep = [deep]
    calls = (
        ToolCall(name="a", args={"q": deep}, args_state="value"),
        ToolCall(name="b", args={"q": deep}, args_state="value"),
        ToolCall(name="c", args={"i": 1}, args_state="value"),
    )
    text = '{"q":' + "[" * 1_001 + "]" * 1_001 + "}"
    stored = {}
    for trace_id, kept, max_args_chars in (("ab", calls[:1], 3_000), ("ef", calls[1:], 3_000), ("12", calls[:1], 100)):
        store = store_at(tmp_path, max_args_chars=max_args_chars)
        store.record(AgentRun(trace_id=trace_id * 16, span_id="cd" * 8, calls=kept), TRAVEL, passed())
        assert store.close()
        stored.update({run.trace_id: run.calls for run in query_runs(tmp_path / "scores.db")})
    assert [(c["name"], c["args"], c.get("args_truncated", False)) for c in stored["ab" * 16]] == [("a", text, False)]
    assert [c.get("args") for c in stored["ef" * 16]] == [text, {"i": 1}]
    assert stored["12" * 16][0]["args"] == text[:100]
    assert stored["12" * 16][0]["args_truncated"] is True
    assert all(c["args_text"] for c in (*stored["ab" * 16], stored["ef" * 16][0], *stored["12" * 16]))


def _dropped(meters: Meters) -> dict[str, int]:
    return meters.by("toolscore.score_store.dropped", "toolscore.score_store.drop.reason")


def test_a_result_sqlite_cannot_take_costs_its_run_only_and_the_writer_goes_on(tmp_path: Path, meters: Meters) -> None:
    """SQLite integers are 64-bit: this expectation version raises OverflowError, not `sqlite3.Error`."""
    unwritable = Expectation.model_validate({**doc("travel"), "version": 2**64})
    store = ScoreStore(ScoreStoreConfig(path=str(tmp_path / "scores.db"), write_interval_ms=10), meters.telemetry)
    store.record(run(1), TRAVEL, passed())
    store.record(run(2), unwritable, passed())
    store.record(run(3), TRAVEL, passed())
    assert store.flush(5.0)
    store.record(run(4), unwritable, passed())  # alone in its batch
    assert store.flush(5.0)
    store.record(run(5), TRAVEL, passed())
    assert store.close()
    assert sorted(stored.trace_id for stored in query_runs(tmp_path / "scores.db")) == [f"{n:032x}" for n in (1, 3, 5)]
    assert store.dropped == 2
    assert _dropped(meters) == {"write_failed": 2}


def test_results_after_close_are_counted_not_stored(tmp_path: Path, meters: Meters) -> None:
    store = ScoreStore(ScoreStoreConfig(path=str(tmp_path / "scores.db")), meters.telemetry)
    assert store.close()
    store.record(run(1), TRAVEL, passed())
    assert store.dropped == 1
    assert _dropped(meters) == {"shutdown": 1}
    assert query_runs(tmp_path / "scores.db") == []
    assert store.close()  # idempotent


def test_results_beyond_the_queue_are_counted_not_stored(tmp_path: Path, meters: Meters) -> None:
    """The writer sleeps a minute between batches, so the queue of one result is full until `flush`."""
    config = ScoreStoreConfig(path=str(tmp_path / "scores.db"), queue_size=1, write_interval_ms=60_000)
    store = ScoreStore(config, meters.telemetry)
    for n in range(3):
        store.record(run(n), TRAVEL, passed())
    assert store.flush(5.0)
    assert store.close()
    assert [stored.trace_id for stored in query_runs(tmp_path / "scores.db")] == [f"{0:032x}"]
    assert store.dropped == 2
    assert _dropped(meters) == {"queue_full": 2}


def test_missing_store_and_bad_since_are_reported(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError, match="no score store"):
        query_runs(tmp_path / "absent.db")
    now = 1_767_225_600 * 10**9
    assert parse_since("10m", now) == now - 600 * 10**9
    assert parse_since("2h", now) == now - 7200 * 10**9
    assert parse_since("2026-01-01T00:00:00+00:00") == now
    with pytest.raises(ValueError, match="expected a duration"):
        parse_since("yesterday")


SCHEMA_0 = """
CREATE TABLE runs (
    id INTEGER PRIMARY KEY, trace_id TEXT NOT NULL, span_id TEXT NOT NULL, agent TEXT, calls_json TEXT NOT NULL,
    calls_total INTEGER NOT NULL, incomplete INTEGER NOT NULL, scored_ns INTEGER NOT NULL, UNIQUE (trace_id, span_id)
);
CREATE INDEX runs_scored ON runs (scored_ns);
CREATE TABLE scores (
    run_id INTEGER NOT NULL REFERENCES runs (id) ON DELETE CASCADE, expectation TEXT NOT NULL,
    version INTEGER NOT NULL, scorer TEXT NOT NULL, value REAL, label TEXT, error_type TEXT,
    explanation TEXT NOT NULL, scored_ns INTEGER NOT NULL
);
CREATE INDEX scores_run ON scores (run_id);
"""
"""The store as toolscore wrote it before run ids were the writer's (schema version 0)."""


def store_of_schema_0(tmp_path: Path) -> Path:
    """A version-0 store holding one run (id 7, trace "a" * 32) with one score."""
    path = tmp_path / "scores.db"
    with sqlite3.connect(path) as db:
        db.executescript(SCHEMA_0)
        db.execute("INSERT INTO runs VALUES (7, ?, ?, 'travel', '[]', 0, 0, ?)", ("a" * 32, "b" * 16, time.time_ns()))
        db.execute("INSERT INTO scores VALUES (7, 'travel', 3, 'tool_selection', 1.0, 'pass', NULL, 'ok', 1)")
    db.close()
    return path


def test_a_store_of_schema_0_is_upgraded_with_its_runs_and_scores(tmp_path: Path) -> None:
    path = store_of_schema_0(tmp_path)
    store = store_at(tmp_path, max_runs=1)
    store.record(run(1), TRAVEL, passed())
    assert store.close()
    (kept,) = query_runs(path)  # the old run was the oldest of two: retention deleted it, scores and all
    assert (kept.span_id, [s.scorer for s in kept.scores]) == (f"{1:016x}", ["tool_selection"])
    with sqlite3.connect(path) as db:
        assert db.execute("PRAGMA user_version").fetchone() == (3,)
        assert db.execute("SELECT id FROM runs").fetchall() == [(8,)]  # ids go on after the old ones
        assert db.execute("SELECT count(*) FROM scores").fetchone() == (1,)
        indexes = {name for (name,) in db.execute("SELECT name FROM sqlite_master WHERE type = 'index'")}
        assert indexes == {"runs_scored", "scores_run", "sampled_run"}  # the one on (trace_id, span_id) is gone
        assert db.execute("PRAGMA foreign_key_check").fetchall() == []
        assert db.execute("PRAGMA foreign_key_list(scores)").fetchone()[2] == "runs"
    db.close()


def test_an_upgraded_store_keeps_its_runs(tmp_path: Path) -> None:
    path = store_of_schema_0(tmp_path)
    assert store_at(tmp_path).close()
    (kept,) = query_runs(path)
    assert (kept.trace_id, kept.agent, [(s.expectation, s.value) for s in kept.scores]) == (
        "a" * 32,
        "travel",
        [("travel", 1.0)],
    )


def test_a_store_written_by_a_newer_toolscore_is_refused(tmp_path: Path) -> None:
    assert store_at(tmp_path).close()
    with sqlite3.connect(tmp_path / "scores.db") as db:
        db.execute("PRAGMA user_version = 9")
    db.close()
    with pytest.raises(ValueError, match=r"schema version 9 was written by a newer toolscore \(this one knows 3\)"):
        store_at(tmp_path)


def test_runs_deleted_by_retention_are_forgotten_by_the_writer(tmp_path: Path) -> None:
    """A late result of a run whose row retention deleted starts a new row rather than pointing at nothing."""
    store = store_at(tmp_path, max_runs=1)
    store.record(run(1), TRAVEL, passed())
    assert store.flush(5)
    store.record(run(2), TRAVEL, passed())
    assert store.flush(5)
    store.record(run(1), REFUND, passed("judge", 0.0))
    assert store.close()
    (stored,) = query_runs(tmp_path / "scores.db")
    assert (stored.span_id, [(s.expectation, s.scorer) for s in stored.scores]) == (
        f"{1:016x}",
        [("refund", "judge")],
    )


SCHEMA_1_STORE = Path(__file__).parent / "testdata" / "score_store" / "schema1.db"
"""A store as toolscore wrote it before runs had an agent version (schema 1): two runs of agent `travel`
against expectation `travel` v3, span ids 1 (pass) and 2 (fail), written by that version's `ScoreStore`."""


def _schema_1_copy(tmp_path: Path) -> Path:
    path = tmp_path / "scores.db"
    path.write_bytes(SCHEMA_1_STORE.read_bytes())
    return path


def test_a_version_is_stored_with_its_run_and_read_back(tmp_path: Path) -> None:
    store = store_at(tmp_path)
    store.record(run(1), TRAVEL, passed(), "1.4.0")
    store.record(run(1), REFUND, passed("judge"), "1.4.0")
    store.record(run(2), TRAVEL, passed())
    assert store.close()
    stored = {r.span_id[-1]: r.agent_version for r in query_runs(tmp_path / "scores.db")}
    assert stored == {"1": "1.4.0", "2": None}
    only = query_runs(tmp_path / "scores.db", agent_version="1.4.0")
    assert [(r.span_id[-1], len(r.scores)) for r in only] == [("1", 2)]


def test_a_store_of_schema_1_opens_upgraded_and_keeps_its_runs(tmp_path: Path) -> None:
    path = _schema_1_copy(tmp_path)
    store = store_at(tmp_path, max_age_s=1e12)  # its runs are of the day it was written: not expired here
    store.record(run(3), TRAVEL, passed(), "2.0")
    assert store.close()
    with closing(sqlite3.connect(path)) as db:
        assert db.execute("PRAGMA user_version").fetchone() == (3,)
        columns = [row[1] for row in db.execute("PRAGMA table_info(runs)")]
        assert columns[-3:] == ["agent_version", "values_json", "request"]  # request: added after the migrations
        assert db.execute("SELECT id, agent_version FROM runs ORDER BY id").fetchall() == [
            (1, None),
            (2, None),
            (3, "2.0"),
        ]
    runs = query_runs(path)
    assert [(r.span_id[-1], r.agent_version, [s.label for s in r.scores]) for r in runs] == [
        ("3", "2.0", ["pass"]),
        ("2", None, ["fail"]),
        ("1", None, ["pass"]),
    ]


def test_a_store_of_schema_1_is_read_as_it_is_without_upgrading_it(tmp_path: Path) -> None:
    """`toolscore runs` may read a store no `serve` of this version has opened yet: its runs have no version."""
    path = _schema_1_copy(tmp_path)
    runs = query_runs(path)
    assert [(r.span_id[-1], r.agent_version) for r in runs] == [("2", None), ("1", None)]
    assert query_runs(path, agent_version="1.0") == []
    (row,) = query_versions(path)
    assert (row.agent, row.expectation, row.version, row.runs, row.passed) == ("travel", "travel", None, 2, 1)
    with closing(sqlite3.connect(path)) as db:
        assert db.execute("PRAGMA user_version").fetchone() == (1,)
    assert path.read_bytes() == SCHEMA_1_STORE.read_bytes()


SAMPLED = Expectation.model_validate(
    {
        **doc("sampled"),
        "version": 2,
        "scorers": [
            {"type": "tool_selection", "expected_tool": "book_flight"},
            {"type": "tool_selection", "expected_tool": "search_flights", "name": "never", "sample_rate": 0.0},
        ],
    }
)
"""Two scorers; the second's `sample_rate` 0 leaves it out of every run."""


def test_the_scorers_sampled_out_of_a_run_are_stored_with_it_once(tmp_path: Path) -> None:
    store = store_at(tmp_path)
    store.record(run(1), SAMPLED, passed())
    store.record(run(1), TRAVEL, passed())
    assert store.flush(5)
    store.record(run(2), TRAVEL, passed())
    store.record(run(1), SAMPLED, passed("judge"))  # a late result of run 1: its sampled-out scorer again
    assert store.close()
    by_span = {r.span_id[-1]: r for r in query_runs(tmp_path / "scores.db")}
    assert [(s.expectation, s.version, s.scorer, s.sample_rate) for s in by_span["1"].sampled_out] == [
        ("sampled", 2, "never", 0.0)
    ]
    assert by_span["1"].sampled
    assert (by_span["2"].sampled_out, by_span["2"].sampled) == ((), False)


def test_retention_deletes_a_runs_sampled_out_scorers_with_it(tmp_path: Path) -> None:
    store = store_at(tmp_path, max_runs=1)
    store.record(run(1), SAMPLED, passed())
    assert store.flush(5)
    store.record(run(2), TRAVEL, passed())
    assert store.close()
    with closing(sqlite3.connect(tmp_path / "scores.db")) as db:
        assert db.execute("SELECT count(*) FROM sampled").fetchone() == (0,)


def test_a_runs_scalar_attributes_are_kept_bounded_for_match_selectors(tmp_path: Path) -> None:
    attributes: dict[str, object] = {"tenant": "acme", "tier": 3, "beta": True, "long": "x" * 1000, "list": ["a"]}
    attributes |= {f"k{i:02}": i for i in range(40)}
    resource = {"service.name": "travel-svc", "bad": float("nan")}
    store = store_at(tmp_path)
    store.record(run(1).model_copy(update={"attributes": attributes, "resource": resource}), TRAVEL, passed())
    store.record(run(2), TRAVEL, passed())
    assert store.close()
    with_values, without = sorted(query_runs(tmp_path / "scores.db"), key=lambda r: r.span_id)
    assert (with_values.attributes["tenant"], with_values.attributes["tier"], with_values.attributes["beta"]) == (
        "acme",
        3,
        True,
    )
    assert "long" not in with_values.attributes
    assert "list" not in with_values.attributes
    assert len(with_values.attributes) == 32
    assert with_values.resource == {"service.name": "travel-svc"}
    assert (without.attributes, without.resource) == ({}, {})


SCHEMA_2_STORE = Path(__file__).parent / "testdata" / "score_store" / "schema2.db"
"""A store as toolscore wrote it before runs kept their attributes and sampled-out scorers (schema 2): two runs of
agent `travel` (version 1.0, requests "request 1" and "request 2") against `travel` v3, span 1 passing, 2 failing."""


def test_a_store_of_schema_2_opens_upgraded_and_keeps_its_runs(tmp_path: Path) -> None:
    path = tmp_path / "scores.db"
    path.write_bytes(SCHEMA_2_STORE.read_bytes())
    store = store_at(tmp_path, max_age_s=1e12)
    store.record(run(3).model_copy(update={"attributes": {"tenant": "acme"}}), SAMPLED, passed())
    assert store.close()
    with closing(sqlite3.connect(path)) as db:
        assert db.execute("PRAGMA user_version").fetchone() == (3,)
    runs = query_runs(path)
    assert [(r.span_id[-1], r.request, [s.label for s in r.scores], r.sampled, r.attributes) for r in runs] == [
        ("3", None, ["pass"], True, {"tenant": "acme"}),
        ("2", "request 2", ["fail"], False, {}),
        ("1", "request 1", ["pass"], False, {}),
    ]


def test_a_store_of_schema_2_is_read_as_it_is_without_upgrading_it(tmp_path: Path) -> None:
    path = tmp_path / "scores.db"
    path.write_bytes(SCHEMA_2_STORE.read_bytes())
    runs = query_runs(path)
    assert [(r.span_id[-1], r.agent_version, r.sampled_out, r.attributes) for r in runs] == [
        ("2", "1.0", (), {}),
        ("1", "1.0", (), {}),
    ]
    assert path.read_bytes() == SCHEMA_2_STORE.read_bytes()
