"""`toolscore score` as a user runs it: a real subprocess over JSON Lines."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

pytestmark = pytest.mark.integration  # every test here starts a process

EXAMPLES = Path(__file__).parent.parent / "deploy" / "examples" / "score-requests.jsonl"


def run_cli(*args: str, stdin: str = "") -> tuple[int, list[dict[str, Any]], str]:
    proc = subprocess.run(
        [sys.executable, "-m", "toolscore.collector.cli", "score", *args],
        input=stdin,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    return proc.returncode, [json.loads(line) for line in proc.stdout.splitlines()], proc.stderr


def test_bundled_examples_score_in_input_order() -> None:
    code, results, _ = run_cli("--input", str(EXAMPLES))
    assert code == 0
    assert [r["id"] for r in results] == [json.loads(line)["id"] for line in EXAMPLES.read_text().splitlines()]
    by_id = {r["id"]: r for r in results}
    assert by_id["weather-ok"]["score"] == 1.0
    assert by_id["weather-ok"]["label"] == "pass"
    assert by_id["weather-strict-extra"]["score"] == 0.0
    assert by_id["weather-strict-extra"]["label"] == "fail"
    assert by_id["booking-order"]["score"] == 1.0
    # one exact and one name-only match of two expected: (1 + 0.5) / 2
    assert by_id["trajectory-exact"]["score"] == 0.75
    assert by_id["trajectory-exact"]["details"]["exact_matches"] == 1
    # args given as a JSON string are parsed: one correct of two expected and two actual
    assert by_id["f1"]["score"] == 0.5
    assert set(by_id["f1"]) == {"id", "type", "score", "label", "explanation", "details"}


def test_bad_lines_name_their_line_and_the_rest_go_on(tmp_path: Path) -> None:
    good = {"id": "ok", "scorer": {"type": "tool_selection", "expected_tool": "a"}, "calls": [{"name": "a"}]}
    lines = [
        json.dumps(good),
        "{not json",
        json.dumps({"id": "no-scorer", "calls": []}),
        json.dumps({"id": "bad-type", "scorer": {"type": "nope"}, "calls": []}),
        json.dumps({"id": "bad-param", "scorer": {"type": "trajectory", "expected": [], "mode": "sideways"}}),
        "",
        json.dumps([1, 2]),
        json.dumps({**good, "id": "ok-2"}),
    ]
    code, results, stderr = run_cli(stdin="\n".join(lines) + "\n")
    assert code == 1
    assert [r.get("id") for r in results] == ["ok", None, "no-scorer", "bad-type", "bad-param", None, "ok-2"]
    errors = {r["line"]: r["error"] for r in results if "error" in r}
    assert sorted(errors) == [2, 3, 4, 5, 7]
    assert errors[2]["type"] == "invalid_json"
    assert "scorer" in errors[3]["message"]
    assert "scorer" in errors[4]["message"]
    assert "mode" in errors[5]["message"]
    assert errors[7]["type"] == "invalid_request"
    assert results[0]["score"] == 1.0
    assert results[-1]["score"] == 1.0
    assert "5 line(s) could not be scored" in stderr


def test_a_threshold_outside_0_1_is_refused_as_in_an_expectation() -> None:
    """Every score is in 0-1: a threshold of 80 (meant as 0.8) labels every run fail, -0.5 every run pass."""
    calls = [{"name": "a"}]
    lines = [
        {"id": "pct", "scorer": {"type": "tool_selection", "expected_tool": "a", "threshold": 80}, "calls": calls},
        {"id": "neg", "scorer": {"type": "llm_judge", "model": "openai/x", "threshold": -0.5}, "calls": calls},
        {"id": "edge", "scorer": {"type": "f1", "expected": calls, "threshold": 1}, "calls": calls},
    ]
    code, results, stderr = run_cli(stdin="".join(json.dumps(line) + "\n" for line in lines))
    assert code == 1
    by_id = {r["id"]: r for r in results}
    assert by_id["pct"]["error"] == {
        "type": "invalid_request",
        "message": "scorer.threshold: must be between 0 and 1, the range every score is in, got 80: "
        "every run would fail",
    }
    assert by_id["neg"]["error"]["message"].startswith("scorer.threshold: must be between 0 and 1")
    assert by_id["neg"]["error"]["message"].endswith("got -0.5: every run would pass")
    assert by_id["edge"]["label"] == "pass"
    assert "2 line(s) could not be scored" in stderr


def test_output_file_and_absent_null_empty_args_stay_apart(tmp_path: Path) -> None:
    expected = [{"name": "a", "args": {}}]
    lines = [
        {"id": "absent", "scorer": {"type": "trajectory", "expected": expected}, "calls": [{"name": "a"}]},
        {"id": "null", "scorer": {"type": "trajectory", "expected": expected}, "calls": [{"name": "a", "args": None}]},
        {"id": "empty", "scorer": {"type": "trajectory", "expected": expected}, "calls": [{"name": "a", "args": {}}]},
    ]
    source = tmp_path / "in.jsonl"
    source.write_text("".join(json.dumps(line) + "\n" for line in lines))
    out = tmp_path / "out.jsonl"
    code, stdout_results, _ = run_cli("--input", str(source), "--output", str(out))
    assert code == 0
    assert stdout_results == []
    scores = {r["id"]: r["score"] for r in map(json.loads, out.read_text().splitlines())}
    assert scores == {"absent": 0.5, "null": 0.5, "empty": 1.0}


def test_windows_keep_order_across_many_lines() -> None:
    scorer = {"type": "tool_selection", "expected_tool": "a"}
    lines = [json.dumps({"id": i, "scorer": scorer, "calls": [{"name": "ab"[i % 2]}]}) for i in range(600)]
    code, results, _ = run_cli(stdin="\n".join(lines))
    assert code == 0
    assert [r["id"] for r in results] == list(range(600))
    assert [r["score"] for r in results] == [1.0 if i % 2 == 0 else 0.0 for i in range(600)]


def test_a_bad_call_or_input_is_named_where_it_is_in_the_line_not_under_scorer() -> None:
    lines = [
        {"id": "calls", "scorer": {"type": "f1", "expected": []}, "calls": [{"name": "a"}, {"name": 5}], "input": 7},
        {"id": "spec", "scorer": {"type": "trajectory", "expected": [], "mode": "strickt", "weigths": {}}},
        {"id": "judge", "scorer": {"type": "llm_judge"}, "calls": []},
        {
            "id": "matcher",
            "scorer": {"type": "f1", "expected": [], "args_match": {"matchers": {"u": {"type": "regex"}}}},
        },
    ]
    code, results, _ = run_cli(stdin="".join(json.dumps(line) + "\n" for line in lines))
    assert code == 1
    messages = {r["id"]: r["error"]["message"] for r in results}
    assert messages["calls"] == (
        "calls[1].name: expected a string, got the number 5; input: expected a string, got the number 7"
    )
    assert messages["spec"] == (
        "scorer.mode: expected 'exact', 'flexible', 'strict', 'unordered', 'subset' or 'superset', got 'strickt'; "
        "did you mean `strict`?; scorer.weigths: unknown key; did you mean `weights`?"
    )
    assert messages["judge"] == "scorer.model: required key missing"
    assert messages["matcher"] == "scorer.args_match.matchers.u.pattern: required key missing"


def test_bundled_examples_of_the_reference_free_scorers_name_each_broken_rule() -> None:
    code, results, _ = run_cli("--input", str(EXAMPLES))
    assert code == 0
    by_id = {r["id"]: r for r in results}
    policy = by_id["policy-confirm-before-delete"]
    assert (policy["score"], [v["index"] for v in policy["details"]["violations"]]) == (0.75, [1])
    args = by_id["args-valid-catalog"]  # the catalog comes with the request, as a trace records it
    assert args["score"] == 0.25
    assert [(v["index"], v["rule"], v.get("pointer")) for v in args["details"]["violations"]] == [
        (1, "required", "/city"),
        (1, "additionalProperties", "/town"),
        (2, "unknown_tool", None),
        (3, "not_json", None),
    ]
    assert by_id["efficiency-repeats"]["score"] == 2 / 3
    errors = by_id["tool-errors-recovered"]
    assert errors["score"] == 2 / 3
    assert [v["tool"] for v in errors["details"]["unrecovered"]] == ["book"]
