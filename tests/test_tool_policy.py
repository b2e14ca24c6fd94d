"""`tool_policy`: allowed and denied tools (globs), required tools, caps, and ordering rules, call by call."""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import ValidationError

from toolscore.scorers import AgentRun, Score, ToolCall, parse_scorer


def run(*names: str) -> AgentRun:
    return AgentRun(calls=tuple(ToolCall(name=name) for name in names))


def score(spec: dict[str, Any], agent_run: AgentRun) -> Score:
    result = parse_scorer({"type": "tool_policy", **spec}).score(agent_run)
    assert isinstance(result, Score), result
    return result


def rules(result: Score) -> list[tuple[int | None, str]]:
    return [(v["index"], v["rule"]) for v in result.details["violations"]]


def test_a_run_with_no_calls_keeps_every_policy_but_a_required_tool() -> None:
    assert score({"denied": ["*"]}, run()).value == 1.0
    missing = score({"required": ["confirm"]}, run())
    assert (missing.value, rules(missing)) == (0.0, [(None, "required")])


def test_denied_beats_allowed_and_globs_match_case_sensitively() -> None:
    result = score(
        {"allowed": ["search_*", "delete_file"], "denied": ["delete_*"]}, run("search_web", "delete_file", "Search_web")
    )
    assert rules(result) == [(1, "denied"), (2, "not_allowed")]
    assert result.value == pytest.approx(1 / 3)
    assert "call 1 delete_file: denied by 'delete_*'" in result.explanation


def test_glob_brackets_and_question_marks_are_globs_never_regular_expressions() -> None:
    result = score({"denied": ["rm?", "[xy]*", "a.b"]}, run("rm1", "xray", "a.b", "aXb", "rm12"))
    assert [i for i, _ in rules(result)] == [0, 1, 2]


def test_a_missing_required_tool_scores_zero_whatever_the_calls() -> None:
    result = score({"required": ["confirm_*", "search"]}, run("search", "delete"))
    assert result.value == 0.0
    assert result.details["violations"][-1]["tool"] == "confirm_*"


def test_max_calls_counts_every_call_its_pattern_matches_and_the_run_total() -> None:
    result = score(
        {"max_calls": {"search_*": 2}, "max_total_calls": 4}, run("search_a", "search_b", "search_a", "x", "y")
    )
    assert rules(result) == [(2, "max_calls"), (4, "max_total_calls")]
    assert result.value == pytest.approx(3 / 5)


def test_before_needs_an_earlier_call_and_never_after_forbids_any_later_one() -> None:
    spec = {"before": [["confirm", "delete_*"]], "never_after": [["send_email", "edit_*"]]}
    result = score(spec, run("delete_a", "confirm", "delete_b", "send_email", "edit_draft"))
    assert rules(result) == [(0, "before"), (4, "never_after")]
    assert result.details["violations"][0]["pair"] == ["confirm", "delete_*"]


def test_a_call_breaking_two_rules_counts_once_and_is_listed_twice() -> None:
    result = score({"denied": ["drop"], "max_total_calls": 0}, run("drop"))
    assert rules(result) == [(0, "denied"), (0, "max_total_calls")]
    assert (result.value, result.details["broken_calls"]) == (0.0, 1)


def test_with_only_allowed_the_score_is_the_share_of_authorized_calls() -> None:
    """Where it overlaps agentevals' tool-permission evaluator: authorized calls / calls, 1.0 with none."""
    assert score({"allowed": ["a", "b"]}, run("a", "c", "b", "d")).value == 0.5


def test_negative_caps_are_refused_where_they_are_written() -> None:
    with pytest.raises(ValidationError, match="max_calls"):
        parse_scorer({"type": "tool_policy", "max_calls": {"x": -1}})
    with pytest.raises(ValidationError, match="before"):
        parse_scorer({"type": "tool_policy", "before": [["only_one"]]})


def test_the_explanation_says_why_a_run_missing_a_required_tool_scores_zero() -> None:
    result = score({"required": ["confirm"]}, run("search", "book"))
    assert result.explanation == (
        "required tool never called, so 0: 2 of 2 calls break no rule; run: no call of required 'confirm' -> 0"
    )
