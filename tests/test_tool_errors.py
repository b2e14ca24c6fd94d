"""`tool_errors`: failed calls, and whether a later call of the tool (or a fallback) recovered them."""

from __future__ import annotations

from typing import Any

from toolscore.scorers import AgentRun, Score, ToolCall, parse_scorer


def score(spec: dict[str, Any], *calls: ToolCall) -> Score:
    result = parse_scorer({"type": "tool_errors", **spec}).score(AgentRun(calls=calls))
    assert isinstance(result, Score), result
    return result


def failed(name: str, kind: str = "TimeoutError") -> ToolCall:
    return ToolCall(name=name, error=True, error_type=kind)


def test_an_empty_run_and_a_run_without_failures_score_one() -> None:
    assert score({}).value == 1.0
    assert score({}, ToolCall(name="a")).value == 1.0


def test_a_later_success_of_the_same_tool_recovers_a_failure() -> None:
    result = score({}, failed("search"), failed("search"), ToolCall(name="search"))
    assert result.value == 1.0
    assert [r["recovered_by"] for r in result.details["recovered"]] == [2, 2]


def test_a_failure_nothing_recovered_is_named_with_its_error_type() -> None:
    result = score({}, ToolCall(name="search"), failed("book", "HTTPError"), failed("book"))
    assert result.value == 1 / 3
    assert [(v["index"], v["error_type"]) for v in result.details["unrecovered"]] == [
        (1, "HTTPError"),
        (2, "TimeoutError"),
    ]
    assert "call 1 book: failed (HTTPError) and no later call recovered it" in result.explanation


def test_a_fallback_tool_recovers_and_an_earlier_success_does_not() -> None:
    calls = (ToolCall(name="search_backup"), failed("search"), ToolCall(name="search_backup"))
    assert score({}, *calls).value == 2 / 3
    recovered = score({"fallbacks": {"search": ["search_*"]}}, *calls)
    assert recovered.value == 1.0
    assert recovered.details["recovered"][0]["recovered_by"] == 2
