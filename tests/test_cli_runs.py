"""`toolscore runs`: the score store's recent runs as a table or JSON, filtered by agent, expectation, label, time."""

from __future__ import annotations

import json
import sqlite3
import time
from contextlib import closing
from pathlib import Path

import pytest
from click.testing import CliRunner

from tests.registry_builders import doc
from toolscore.collector.cli import main
from toolscore.collector.registry import Expectation, Registry, RegistryConfig, SqliteStoreConfig
from toolscore.collector.serve.scores import ScoreStoreConfig
from toolscore.collector.serve.scores._store import ScoreStore
from toolscore.scorers import AgentRun, Score, ScoreFailure, ToolCall

TRAVEL = Expectation.model_validate({**doc("travel"), "version": 2})
REFUND = Expectation.model_validate({**doc("refund"), "version": 1})
HOUR_NS = 3600 * 10**9


def run(n: int, agent: str, *calls: ToolCall) -> AgentRun:
    request = f"Request {n}\nsecond line" if agent == "support" else None
    return AgentRun(trace_id=f"{n:032x}", span_id=f"{n:016x}", agent_name=agent, input=request, calls=calls)


def call(name: str, **args: object) -> ToolCall:
    return ToolCall(name=name, args=args, args_state="value")


@pytest.fixture
def db(tmp_path: Path) -> str:
    """Three runs: travel (pass, 3 h old), support (fail), travel (judge error)."""
    path = tmp_path / "scores.db"
    store = ScoreStore(ScoreStoreConfig(path=str(path), write_interval_ms=10))
    store.record(run(1, "travel", call("search_flights", to="LIS"), call("book_flight")), TRAVEL, _score(1.0))
    store.record(run(2, "support", call("refund", order="A1" * 40)), REFUND, _score(0.0))
    store.record(run(3, "travel"), TRAVEL, ScoreFailure(name="judge", error_type="judge_timeout", message="20 s"))
    assert store.close()
    with closing(sqlite3.connect(path)) as conn, conn:
        conn.execute("UPDATE runs SET scored_ns = ? WHERE span_id = ?", (time.time_ns() - 3 * HOUR_NS, f"{1:016x}"))
    return str(path)


def _score(value: float) -> Score:
    return Score(name="tool_selection", value=value, label="pass" if value else "fail", explanation=f"v={value}")


def invoke(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(main, ["runs", *args])
    return result.exit_code, result.stdout, result.stderr


def span_ids(output: str) -> list[str]:
    return [item["span_id"][-1] for item in json.loads(output)]


def test_table_lists_runs_newest_first_with_calls_and_scores(db: str) -> None:
    code, out, _ = invoke("--db", db)
    assert code == 0
    lines = out.splitlines()
    assert lines[0].split() == [
        "SCORED", "AGENT", "REQUEST", "RUN", "CALLS", "EXPECTATION", "SCORER", "SCORE", "LABEL", "WHY", "(failing)"
    ]  # fmt: skip
    assert [line.split()[2] for line in lines[1:]] == ["travel", "support", "travel"]  # after date and time
    assert "error: judge_timeout" in lines[1]
    assert "refund(" in lines[2]
    assert "…" in lines[2]  # long arguments cut in the table
    assert "0.000  fail" in lines[2]
    assert "Request 2" in lines[2]
    assert "second line" not in out  # the request's first line
    assert lines[2].rstrip().endswith("v=0.0")  # why it failed
    assert lines[1].rstrip().endswith("20 s")  # why the scorer erred
    assert not lines[3].rstrip().endswith("v=1.0")  # a pass needs no why
    assert 'search_flights({"to":"LIS"}), book_flight({})' in lines[3]
    assert "1.000  pass" in lines[3]


def test_json_output_holds_calls_and_scores_whole(db: str) -> None:
    code, out, _ = invoke("--db", db, "-o", "json", "--agent", "support")
    assert code == 0
    (item,) = json.loads(out)
    assert item["calls"][0]["args"] == {"order": "A1" * 40}
    assert item["request"] == "Request 2\nsecond line"  # whole
    assert item["scores"] == [
        {
            "expectation": "refund",
            "version": 1,
            "scorer": "tool_selection",
            "value": 0.0,
            "label": "fail",
            "error_type": None,
            "explanation": "v=0.0",
        }
    ]


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        (("--agent", "travel"), ["3", "1"]),
        (("--expectation", "travel"), ["3", "1"]),
        (("--label", "pass"), ["1"]),
        (("--label", "fail"), ["2"]),
        (("--label", "error"), ["3"]),
        (("--since", "2h"), ["3", "2"]),
        (("--since", "4h", "--agent", "travel"), ["3", "1"]),
        (("--limit", "1"), ["3"]),
        (("--since", "1000000d"), ["3", "2", "1"]),  # before 1677, past what the store's integers hold: all
        (("--since", "0001-01-01"), ["3", "2", "1"]),
        (("--since", "9999-12-31T23:59:59"), []),
    ],
)
def test_filters(db: str, args: tuple[str, ...], expected: list[str]) -> None:
    code, out, _ = invoke("--db", db, "-o", "json", *args)
    assert code == 0
    assert span_ids(out) == expected


def test_reading_a_stopped_collectors_store_leaves_it_as_it_was(db: str) -> None:
    """No -wal and -shm beside it afterwards, as a read-only `mode=ro` connection leaves them in WAL mode."""
    before = Path(db).read_bytes()
    assert sorted(p.name for p in Path(db).parent.iterdir()) == ["scores.db"]
    code, out, _ = invoke("--db", db, "-o", "json")
    assert (code, span_ids(out)) == (0, ["3", "2", "1"])
    assert sorted(p.name for p in Path(db).parent.iterdir()) == ["scores.db"]
    assert Path(db).read_bytes() == before


def test_no_match_says_so_and_succeeds(db: str) -> None:
    code, out, err = invoke("--db", db, "--agent", "nobody")
    assert (code, out) == (0, "")
    assert "no scored runs match" in err


def test_missing_store_and_bad_since_fail_clearly(tmp_path: Path, db: str) -> None:
    code, _, err = invoke("--db", str(tmp_path / "none.db"))
    assert code == 1
    assert "no score store at" in err
    code, _, err = invoke("--db", db, "--since", "last week")
    assert code == 2
    assert "expected a duration like 10m, 2h, 1d or an ISO time" in err


def test_a_file_that_is_not_a_store_fails_clearly(tmp_path: Path) -> None:
    other = tmp_path / "notes.txt"
    other.write_text("not a database, though long enough to be read as one\n" * 20)
    code, _, err = invoke("--db", str(other))
    assert code == 1
    assert f"{other} is not a toolscore score store: file is not a database" in err


def test_a_registry_given_for_the_score_store_is_named_and_left_unchanged(tmp_path: Path) -> None:
    """`toolscore serve` keeps both SQLite files in `.toolscore/`: the other one is named for what it is."""
    path = tmp_path / "registry.db"
    registry = Registry(config=RegistryConfig(store=SqliteStoreConfig(path=str(path))))
    registry.put({"name": "travel", "match": {"agent": "travel"}, "scorers": [{"type": "trajectory", "expected": []}]})
    registry.close()
    before = path.read_bytes()
    code, _, err = invoke("--db", str(path))
    assert code == 1
    assert err.startswith(
        f"Error: {path} is a toolscore registry (the expectations `toolscore expectations` manages), not a score "
        "store: give the collector's score_store.path with --db"
    )
    assert path.read_bytes() == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["registry.db"]  # no -wal, no -shm left beside it


def test_a_scorer_sampled_out_of_a_run_is_listed_as_sampled(tmp_path: Path) -> None:
    sampled = Expectation.model_validate(
        {
            **doc("sampled"),
            "version": 4,
            "scorers": [{"type": "tool_selection", "expected_tool": "x", "sample_rate": 0}],
        }
    )
    both = Expectation.model_validate(
        {
            **doc("both"),
            "scorers": [doc("both")["scorers"][0], {**doc("both")["scorers"][0], "sample_rate": 0.0, "name": "costly"}],
        }
    )
    path = tmp_path / "scores.db"
    store = ScoreStore(ScoreStoreConfig(path=str(path), write_interval_ms=10))
    store.record(run(1, "travel"), TRAVEL, _score(1.0))
    store.record(run(1, "travel"), sampled, _score(1.0))  # stands for a result of another of its scorers
    store.record(run(2, "travel"), both, _score(1.0))
    assert store.close()
    code, out, _ = invoke("--db", str(path))
    assert code == 0
    lines = out.splitlines()
    costly = next(line for line in lines if "costly" in line)
    assert costly.split()[:4] == ["both", "costly", "-", "sampled"]
    assert costly.rstrip().endswith("not run on this run (sample_rate 0)")
    assert sum("not run on this run" in line for line in lines) == 2
    code, out, _ = invoke("--db", str(path), "-o", "json")
    items = {item["span_id"][-1]: item for item in json.loads(out)}
    assert items["1"]["sampled_out"] == [
        {"expectation": "sampled", "version": 4, "scorer": "tool_selection", "sample_rate": 0.0}
    ]
    assert [s["scorer"] for s in items["2"]["sampled_out"]] == ["costly"]
