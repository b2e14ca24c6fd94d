"""`ignore_tools`: every scorer can leave a framework's built-in finishing tool out of the run it scores."""

from __future__ import annotations

from typing import Any

import pytest

from toolscore.collector.evaluate import diff_for_scorer
from toolscore.scorers import AgentRun, Score, ToolCall, parse_scorer


def _run(*names: str) -> AgentRun:
    return AgentRun(calls=tuple(ToolCall(name=name, args={"city": "Paris"}, args_state="value") for name in names))


SMOLAGENTS_RUN = _run("get_weather", "final_answer")
"""What smolagents records: the agent's real call, then its built-in `final_answer`, a real traced call too."""

SPECS: list[dict[str, Any]] = [
    {"type": "tool_selection", "expected_tool": "get_weather", "strict": True},
    {"type": "trajectory", "expected": [{"name": "get_weather"}], "mode": "exact"},
    {"type": "trajectory", "expected": [{"name": "get_weather", "args": {"city": "Paris"}}], "mode": "strict"},
    {"type": "f1", "expected": [{"name": "get_weather", "args": {"city": "Paris"}}]},
]


@pytest.mark.parametrize("spec", SPECS, ids=["tool_selection", "trajectory-exact", "trajectory-strict", "f1"])
def test_ignored_finishing_tool_turns_a_fail_into_a_pass(spec: dict[str, Any]) -> None:
    plain = parse_scorer(spec).score(SMOLAGENTS_RUN)
    ignoring = parse_scorer({**spec, "ignore_tools": ["final_answer"]}).score(SMOLAGENTS_RUN)

    assert isinstance(plain, Score)
    assert isinstance(ignoring, Score)
    assert (plain.label, ignoring.label) == ("fail", "pass")
    assert ignoring.value == 1.0


def test_ignore_tools_defaults_to_none_and_leaves_the_run_as_it_is() -> None:
    scorer = parse_scorer(SPECS[1])

    assert scorer.ignore_tools == ()
    assert scorer.scored_calls(SMOLAGENTS_RUN.calls) is SMOLAGENTS_RUN.calls


def test_a_run_of_only_ignored_calls_scores_as_a_run_without_calls() -> None:
    scorer = parse_scorer({"type": "tool_selection", "expected_tool": "get_weather", "ignore_tools": ["finish"]})
    empty = scorer.score(AgentRun())

    result = scorer.score(_run("finish", "finish"))

    assert isinstance(result, Score)
    assert isinstance(empty, Score)
    assert (result.value, result.explanation) == (empty.value, empty.explanation)


def test_the_diff_shows_the_calls_the_score_read() -> None:
    scorer = parse_scorer({**SPECS[1], "expected": [{"name": "get_time"}], "ignore_tools": ["final_answer"]})

    plain = diff_for_scorer(parse_scorer({**SPECS[1], "expected": [{"name": "get_time"}]}), SMOLAGENTS_RUN.calls)
    diff = diff_for_scorer(scorer, SMOLAGENTS_RUN.calls)

    assert diff is not None
    assert plain is not None
    assert [(row.status, row.actual["name"] if row.actual else None) for row in plain.rows] == [
        ("wrong_call", "get_weather"),
        ("extra", "final_answer"),
    ]
    assert [(row.status, row.actual["name"] if row.actual else None) for row in diff.rows] == [
        ("wrong_call", "get_weather"),
    ]


def test_ignore_tools_must_be_names() -> None:
    with pytest.raises(ValueError, match="ignore_tools"):
        parse_scorer({**SPECS[0], "ignore_tools": "final_answer"})
