"""`tool_selection`: Mastra's tool-call accuracy, edge cases beyond the recorded corpus."""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import ValidationError

from toolscore.scorers import AgentRun, Score, ToolCall, ToolSelection
from toolscore.scorers._tool_selection import check_order


def run_of(*calls: str | dict[str, Any]) -> AgentRun:
    return AgentRun(calls=tuple(ToolCall.model_validate({"name": c} if isinstance(c, str) else c) for c in calls))


def score(run: AgentRun, **params: Any) -> Score:
    result = ToolSelection(**params).score(run)
    assert isinstance(result, Score)
    return result


@pytest.mark.parametrize("params", [{}, {"strict": True}, {"expected_tool": ""}, {"expected_tool": None}])
def test_construction_needs_a_tool_or_an_order(params: dict[str, Any]) -> None:
    with pytest.raises(ValidationError, match="Either expected_tool or expected_order must be provided"):
        ToolSelection(**params)


def test_empty_order_counts_as_given_and_then_always_scores_zero() -> None:
    scorer = ToolSelection(expected_tool="", expected_order=[])
    for run in (run_of(), run_of("a"), run_of("a", "b")):
        result = scorer.score(run)
        assert isinstance(result, Score)
        assert result.value == 0.0


@pytest.mark.parametrize(
    ("expected", "actual", "ok"),
    [
        (["a", "a"], ["a", "a"], False),  # a repeated expected name always fails flexible mode
        (["a", "b", "a"], ["a", "b", "a"], False),
        (["b", "a"], ["a", "b", "a"], False),  # later occurrences are never used
        (["a", "b"], ["b", "a", "b"], False),
        (["a", "b", "c"], ["a", "c", "b", "c"], False),
        (["a", "b", "c"], ["a", "x", "b", "y", "c"], True),  # extras between and after are fine
        (["a"], ["a", "a", "a"], True),
        (["a", "b"], ["a"], False),
        ([], ["a"], True),
        ([], [], True),
    ],
)
def test_flexible_order_uses_first_occurrences(expected: list[str], actual: list[str], ok: bool) -> None:
    assert check_order(actual, expected, strict=False) is ok


@pytest.mark.parametrize(
    ("expected", "actual", "ok"),
    [
        (["a", "a"], ["a", "a"], True),
        (["a", "a"], ["a"], False),
        (["a", "b"], ["a", "b", "c"], False),
        (["a", "b"], ["b", "a"], False),
        ([], [], True),
        ([], ["a"], False),
    ],
)
def test_strict_order_is_the_identical_sequence(expected: list[str], actual: list[str], ok: bool) -> None:
    assert check_order(actual, expected, strict=True) is ok
    result = score(run_of(*actual), expected_order=expected, strict=True)
    assert result.details["correct_order_called"] is ok


def test_repeated_expected_names_fail_flexible_but_pass_strict() -> None:
    run = run_of("a", "a")
    assert score(run, expected_order=["a", "a"]).value == 0.0
    assert score(run, expected_order=["a", "a"], strict=True).value == 1.0


def test_order_decides_the_score_and_expected_tool_only_the_detail() -> None:
    result = score(run_of("a", "b"), expected_tool="z", expected_order=["a", "b"])
    assert result.value == 1.0
    assert result.details["correct_tool_called"] is False
    assert result.details["correct_order_called"] is True


def test_strict_single_tool_must_be_the_only_call() -> None:
    assert score(run_of("a"), expected_tool="a", strict=True).value == 1.0
    assert score(run_of("a", "a"), expected_tool="a", strict=True).value == 0.0
    assert score(run_of("b", "a"), expected_tool="a", strict=True).value == 0.0
    assert score(run_of("b", "a"), expected_tool="a").value == 1.0


def test_names_compare_exactly() -> None:
    assert score(run_of("Search"), expected_tool="search").value == 0.0
    assert score(run_of("search "), expected_tool="search").value == 0.0


def test_empty_order_falls_back_to_single_tool_and_details_can_disagree() -> None:
    no_calls = score(run_of(), expected_order=[])
    assert (no_calls.value, no_calls.details["correct_order_called"]) == (0.0, True)
    strict = score(run_of("a"), expected_tool="a", expected_order=[], strict=True)
    assert (strict.value, strict.details["correct_order_called"]) == (1.0, False)


def test_only_named_calls_in_counted_states_count() -> None:
    run = run_of(
        {"name": "a", "state": "partial-call"},
        {"name": "b", "state": "output-available"},
        {"name": "c", "state": "RESULT"},
        {"name": "d", "state": ""},
        {"name": "", "state": "result"},
        {"name": "e"},
        {"name": "f", "state": "call"},
        {"name": "g", "state": "output-error"},
    )
    assert score(run, expected_tool="e").details["actual_tools"] == ["e", "f", "g"]
    assert score(run, expected_tool="a").value == 0.0


def test_no_counted_call_scores_zero_whatever_the_options() -> None:
    run = run_of({"name": "a", "state": "pending"})
    options: list[dict[str, Any]] = [{"expected_tool": "a"}, {"expected_order": ["a"]}, {"expected_order": []}]
    for params in options:
        result = score(run, **params)
        assert result.value == 0.0
        assert result.details["has_tool_calls"] is False


def test_call_infos_count_skipped_invocations_and_fall_back_to_positional_ids() -> None:
    run = run_of(
        {"name": "a", "state": "pending", "message": 0},
        {"name": "b", "message": 0},
        {"name": "c", "message": 2, "id": "call_9"},
        {"name": "d", "message": 2},
    )
    infos = score(run, expected_tool="b").details["tool_call_infos"]
    assert infos == [
        {"tool_name": "b", "tool_call_id": "0-1", "message_index": 0, "invocation_index": 1},
        {"tool_name": "c", "tool_call_id": "call_9", "message_index": 2, "invocation_index": 0},
        {"tool_name": "d", "tool_call_id": "2-1", "message_index": 2, "invocation_index": 1},
    ]


def test_calls_are_read_in_message_order() -> None:
    run = run_of({"name": "late", "message": 1}, {"name": "early", "message": 0})
    result = score(run, expected_order=["early", "late"])
    assert result.details["actual_tools"] == ["early", "late"]
    assert result.value == 1.0


def test_details_follow_mastra_and_leave_absent_options_out() -> None:
    only_tool = score(run_of("a"), expected_tool="a").details
    assert list(only_tool) == [
        "expected_tool",
        "actual_tools",
        "strict_mode",
        "has_tool_calls",
        "correct_tool_called",
        "tool_call_infos",
        "correct_order_called",
    ]
    assert only_tool["correct_order_called"] is None
    only_order = score(run_of("a"), expected_order=["a"]).details
    assert "expected_tool" not in only_order
    assert only_order["expected_tool_order"] == ["a"]
    assert only_order["strict_mode"] is False


def test_explanation_names_the_rule_the_calls_and_the_score() -> None:
    result = score(run_of("b", "a"), expected_tool="a", strict=True)
    assert "'a'" in result.explanation
    assert "the only call" in result.explanation
    assert "['b', 'a']" in result.explanation
    assert result.explanation.endswith("score 0")
    assert result.label == "fail"


def test_threshold_sets_the_label() -> None:
    result = ToolSelection(expected_tool="a", threshold=0.0).score(run_of("b"))
    assert isinstance(result, Score)
    assert result.label == "pass"
