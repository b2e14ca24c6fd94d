"""`efficiency`: repeated identical calls, loops of one tool, and calls over a cap are wasted calls."""

from __future__ import annotations

from typing import Any

import pytest

from toolscore.scorers import AgentRun, Score, ToolCall, parse_scorer


def score(spec: dict[str, Any], *calls: ToolCall) -> Score:
    result = parse_scorer({"type": "efficiency", **spec}).score(AgentRun(calls=calls))
    assert isinstance(result, Score), result
    return result


def call(name: str, args: Any = None, **kwargs: Any) -> ToolCall:
    return ToolCall(name=name, args=args, args_state="absent" if args is None else "value", **kwargs)


def wasted(result: Score) -> list[tuple[int, str]]:
    return [(v["index"], v["rule"]) for v in result.details["violations"]]


def test_an_empty_run_wastes_nothing() -> None:
    assert score({}).value == 1.0


def test_the_default_allows_one_repeat_of_an_identical_call() -> None:
    same = [call("search", {"q": "a", "n": 1}), call("search", {"n": 1, "q": "a"}), call("search", {"q": "a", "n": 1})]
    result = score({}, *same, call("search", {"q": "b"}))
    assert wasted(result) == [(2, "repeat")]
    assert result.details["violations"][0]["first"] == 0
    assert result.value == 0.75


def test_no_arguments_null_and_an_empty_object_are_one_call_but_uncaptured_arguments_never_repeat() -> None:
    result = score(
        {"max_repeats": 0}, call("now"), call("now", {}), ToolCall(name="now", args=None, args_state="value")
    )
    assert wasted(result) == [(1, "repeat"), (2, "repeat")]
    hidden = ToolCall(name="now", args_state="not_captured")
    assert wasted(score({"max_repeats": 0}, hidden, hidden)) == []


def test_a_loop_of_one_tool_is_wasted_past_max_consecutive_whatever_the_arguments() -> None:
    calls = [call("read", {"page": i}) for i in range(7)]
    result = score({"max_consecutive": 5}, *calls, call("answer"), call("read", {"page": 9}))
    assert wasted(result) == [(5, "loop"), (6, "loop")]
    assert wasted(score({"max_consecutive": None}, *calls)) == []


def test_calls_over_max_calls_are_wasted_and_each_counts_once() -> None:
    result = score({"max_calls": 2, "max_repeats": 0}, call("a"), call("b"), call("a"))
    assert wasted(result) == [(2, "repeat"), (2, "max_calls")]
    assert result.value == pytest.approx(2 / 3)
    assert result.explanation.startswith("2 of 3 calls were needed; call 2 a: identical to call 0")
