"""The call diff: every kind of difference, read from each built-in scorer's own parameters."""

from __future__ import annotations

import random
from typing import Any

import pytest

from toolscore.collector.evaluate import KeyDiff, diff_calls, diff_for_scorer, render_diff
from toolscore.scorers import AgentRun, Score, ToolCall, ToolSpec, parse_scorer


def call(name: str, **args: Any) -> ToolCall:
    return ToolCall(name=name, args=args, args_state="value")


def statuses(diff: Any) -> list[tuple[str, int | None, int | None, bool]]:
    return [(row.status, row.expected_index, row.actual_index, row.out_of_order) for row in diff.rows]


def test_identical_calls_are_all_ok() -> None:
    calls = [call("search", q="a"), call("book", id=1)]
    diff = diff_calls(calls, calls)
    assert diff.ok
    assert statuses(diff) == [("ok", 1, 1, False), ("ok", 2, 2, False)]


def test_missing_and_extra_calls() -> None:
    diff = diff_calls([call("search", q="a"), call("book", id=1)], [call("search", q="a"), call("email")])
    assert statuses(diff) == [("ok", 1, 1, False), ("extra", None, 2, False), ("missing", 2, None, False)]
    assert [row.status for row in diff.problems] == ["extra", "missing"]


def test_swapped_calls_mark_the_fewest_out_of_order() -> None:
    expected = [call("a"), call("b"), call("c")]
    diff = diff_calls(expected, [call("b"), call("c"), call("a")])
    assert statuses(diff) == [("ok", 1, 3, True), ("ok", 2, 1, False), ("ok", 3, 2, False)]


def test_order_is_ignored_when_not_ordered() -> None:
    diff = diff_calls([call("a"), call("b")], [call("b"), call("a")], ordered=False)
    assert diff.ok


def test_wrong_args_list_the_differing_keys() -> None:
    diff = diff_calls([call("search", q="otel", limit=5, lang="en")], [call("search", q="otel", limit=3, page=2)])
    (row,) = diff.rows
    assert row.status == "wrong_args"
    assert row.keys == [
        KeyDiff(key="limit", kind="changed", expected=5, actual=3),
        KeyDiff(key="lang", kind="missing", expected="en"),
        KeyDiff(key="page", kind="extra", actual=2),
    ]


def test_same_named_call_with_matching_args_is_paired_before_a_wrong_one() -> None:
    diff = diff_calls([call("w", city="Rome")], [call("w", city="Oslo"), call("w", city="Rome")])
    assert statuses(diff) == [("extra", None, 1, False), ("ok", 1, 2, False)]


def test_not_captured_args_say_so() -> None:
    actual = ToolCall(name="w", args_state="not_captured")
    (row,) = diff_calls([call("w", city="Rome")], [actual]).rows
    assert row.keys == [KeyDiff(key="", kind="changed", expected={"city": "Rome"}, actual="<not captured>")]
    assert "<args not captured>" in render_diff(diff_calls([call("w", city="Rome")], [actual]))


def test_trajectory_rules_decide_which_keys_differ() -> None:
    scorer = parse_scorer(
        {
            "type": "trajectory",
            "mode": "strict",
            "expected": [{"name": "book", "args": {"id": 7, "at": "now"}}],
            "args_match": {
                "mode": "subset",
                "ignore_keys": ["at"],
                "matchers": {"seats": {"type": "number", "value": 2}},
            },
        }
    )
    diff = diff_for_scorer(scorer, (call("book", id=8, at="later", seats=3, note="x"),))
    assert diff is not None
    assert diff.rule == "trajectory mode=strict"
    (row,) = diff.rows
    assert [(k.key, k.kind) for k in row.keys] == [("seats", "changed"), ("id", "changed")]


def test_superset_allows_extra_calls_and_subset_allows_missing_ones() -> None:
    expected = [{"name": "a"}, {"name": "b"}]
    superset = diff_for_scorer(parse_scorer({"type": "trajectory", "mode": "superset", "expected": expected}),
                               (call("a"), call("b"), call("c")))  # fmt: skip
    subset = diff_for_scorer(parse_scorer({"type": "trajectory", "mode": "subset", "expected": expected}), (call("a"),))
    assert superset is not None
    assert subset is not None
    assert superset.ok
    assert subset.ok
    assert "extra (allowed)" in render_diff(superset)
    assert "missing (allowed)" in render_diff(subset)


def test_f1_diff_shows_the_pairs_its_score_counted() -> None:
    """Greedy pairing (tpmjs') gives the first expected call the first same-named call when none has its
    arguments, so the second expected call's twin is taken: the score counts 0 correct, and so must the diff."""
    scorer = parse_scorer(
        {"type": "f1", "expected": [{"name": "s", "args": {"q": "x"}}, {"name": "s", "args": {"q": "a"}}]}
    )
    actual = (call("s", q="a"), call("s", q="b"))
    score = scorer.score(AgentRun(trace_id="1" * 32, span_id="1" * 16, calls=actual))
    assert isinstance(score, Score)
    assert score.explanation.startswith("correct=0, incorrect=2")
    diff = diff_for_scorer(scorer, actual)
    assert diff is not None
    assert statuses(diff) == [("wrong_args", 1, 1, False), ("wrong_args", 2, 2, False)]
    optimal = diff_for_scorer(scorer.model_copy(update={"pairing": "optimal"}), actual)
    assert optimal is not None
    assert statuses(optimal) == [("wrong_args", 1, 2, False), ("ok", 2, 1, False)]


def test_f1_expected_call_without_args_wants_none_as_its_score_does() -> None:
    scorer = parse_scorer({"type": "f1", "expected": [{"name": "w"}]})
    diff = diff_for_scorer(scorer, (call("w", city="Rome"),))
    assert diff is not None
    (row,) = diff.rows
    assert row.status == "wrong_args"
    assert row.keys == [KeyDiff(key="", kind="changed", expected="<no arguments>", actual={"city": "Rome"})]
    ruled = parse_scorer({"type": "f1", "expected": [{"name": "w"}], "args_match": {"mode": "subset"}})
    ruled_diff = diff_for_scorer(ruled, (call("w", city="Rome"),))  # under a rule, no `args` constrains nothing
    assert ruled_diff is not None
    assert ruled_diff.ok


def test_tool_selection_strict_order_compares_calls_by_position() -> None:
    """Mastra's strict order check compares the sequences, so call i stands where name i was expected."""
    scorer = parse_scorer({"type": "tool_selection", "expected_order": ["search", "book"], "strict": True})
    diff = diff_for_scorer(scorer, (call("book", id=1), call("search", q="x"), call("email")))
    assert diff is not None
    assert diff.positional
    assert statuses(diff) == [("wrong_call", 1, 1, False), ("wrong_call", 2, 2, False), ("extra", None, 3, False)]
    assert not diff.ok


def test_tool_selection_flexible_order_compares_names_in_order() -> None:
    scorer = parse_scorer({"type": "tool_selection", "expected_order": ["search", "book"]})
    diff = diff_for_scorer(scorer, (call("book", id=1), call("search", q="x"), call("email")))
    assert diff is not None
    assert statuses(diff) == [("ok", 1, 2, False), ("ok", 2, 1, True), ("extra", None, 3, False)]
    assert [row.status for row in diff.problems] == ["ok"]  # out of order; the extra call is allowed


def _selection_score(scorer: Any, calls: tuple[ToolCall, ...]) -> float | None:
    score = scorer.score(AgentRun(trace_id="1" * 32, span_id="1" * 16, calls=calls))
    assert isinstance(score, Score)
    return score.value


def test_tool_selection_repeated_expected_name_meets_its_first_call_again() -> None:
    """Mastra's flexible order check looks each expected name up by its *first* call, so a name expected
    twice fails even when called twice: the diff pairs both with that call, the second out of order."""
    scorer = parse_scorer({"type": "tool_selection", "expected_order": ["a", "a"]})
    actual = (call("a"), call("a"))
    assert _selection_score(scorer, actual) == 0.0
    diff = diff_for_scorer(scorer, actual)
    assert diff is not None
    assert statuses(diff) == [("ok", 1, 1, False), ("ok", 2, 1, True), ("extra", None, 2, False)]
    assert not diff.ok


def test_tool_selection_calls_in_skipped_states_are_not_counted() -> None:
    """A `partial-call` is no call to Mastra's scorer: it cannot stand for an expected name, and the diff says why."""
    expected_tool = parse_scorer({"type": "tool_selection", "expected_tool": "w"})
    partial = (ToolCall(name="w", args={"city": "Rome"}, args_state="value", state="partial-call"),)
    assert _selection_score(expected_tool, partial) == 0.0
    diff = diff_for_scorer(expected_tool, partial)
    assert diff is not None
    assert statuses(diff) == [("not_counted", None, 1, False), ("missing", 1, None, False)]
    assert [row.status for row in diff.problems] == ["missing"]
    assert 'state "partial-call", not scored' in render_diff(diff)

    order = parse_scorer({"type": "tool_selection", "expected_order": ["search", "book"]})
    actual = (ToolCall(name="search", state="pending"), call("book"), call("search"))
    assert _selection_score(order, actual) == 0.0  # the first *counted* search comes after book
    order_diff = diff_for_scorer(order, actual)
    assert order_diff is not None
    assert statuses(order_diff) == [("not_counted", None, 1, False), ("ok", 1, 3, False), ("ok", 2, 2, True)]
    assert not order_diff.ok


def test_tool_selection_diff_is_ok_exactly_when_the_score_is_1() -> None:
    rng = random.Random(23)
    states = [None, "call", "result", "output-error", "partial-call", "pending"]
    for _ in range(3000):
        spec: dict[str, Any] = {"type": "tool_selection", "strict": rng.random() < 0.5}
        if rng.random() < 0.6:
            spec["expected_order"] = rng.choices("abc", k=rng.randint(0, 3))
        if rng.random() < 0.6 or "expected_order" not in spec:
            spec["expected_tool"] = rng.choice("abc")
        scorer = parse_scorer(spec)
        actual = tuple(
            ToolCall(name=rng.choice(["a", "b", "c", ""]), state=rng.choice(states), message_index=rng.randint(0, 1))
            for _ in range(rng.randint(0, 4))
        )
        diff = diff_for_scorer(scorer, actual)
        assert (diff is not None and diff.ok) == (_selection_score(scorer, actual) == 1.0), (spec, actual, diff)


def test_tool_selection_single_tool_allows_other_calls_unless_strict() -> None:
    loose = diff_for_scorer(parse_scorer({"type": "tool_selection", "expected_tool": "w"}), (call("x"), call("w")))
    assert loose is not None
    assert loose.ok
    strict = parse_scorer({"type": "tool_selection", "expected_tool": "w", "strict": True})
    tight = diff_for_scorer(strict, (call("x"), call("w")))
    assert tight is not None
    assert [row.status for row in tight.problems] == ["extra"]


def test_llm_judge_has_no_call_diff() -> None:
    judge = parse_scorer({"type": "llm_judge", "model": "openai/x"})
    assert diff_for_scorer(judge, (call("a"),)) is None


def test_rendered_diff_puts_calls_beside_the_expected_ones() -> None:
    diff = diff_calls([call("search", q="otel"), call("book", id=1)], [call("search", q="otel"), call("book", id=2)])
    assert render_diff(diff, indent="") == "\n".join(
        [
            "calls, in order:",
            "              expected             actual",
            '  ok          1. search(q="otel")  1. search(q="otel")',
            "✗ wrong args  2. book(id=1)        2. book(id=2)",
            "                id: expected 1, got 2",
        ]
    )


def counts(diff: Any) -> dict[str, int]:
    out = {"ok": 0, "wrong_args": 0, "wrong_call": 0, "missing": 0, "extra": 0}
    for row in diff.rows:
        out[row.status] += 1
    return out


_EXPECTED = [{"name": "a", "args": {"x": 1}}, {"name": "b"}, {"name": "a", "args": {"x": 2}}]
_RUNS = [
    (call("a", x=1), call("b"), call("a", x=2)),
    (call("a", x=1), call("a", x=2)),  # b skipped: every later call moves up a position
    (call("b"), call("a", x=1), call("a", x=2)),
    (call("a", x=2), call("b", y=1), call("a", x=1), call("c")),
    (call("a", x=3), call("a", x=1)),
    (ToolCall(name="b"), call("a", x=1)),
]


@pytest.mark.parametrize("mode", ["exact", "flexible", "strict", "unordered", "subset", "superset"])
@pytest.mark.parametrize("actual", _RUNS, ids=range(len(_RUNS)))
def test_trajectory_diff_rows_are_the_calls_its_score_counted(mode: str, actual: tuple[ToolCall, ...]) -> None:
    """A row is `ok` exactly when the score counted that call as a match: exact and strict pair by position,
    flexible counts name-only leftovers, the other modes pair by a maximum matching."""
    scorer = parse_scorer({"type": "trajectory", "mode": mode, "expected": _EXPECTED})
    score = scorer.score(AgentRun(trace_id="1" * 32, span_id="1" * 16, calls=actual))
    assert isinstance(score, Score)
    diff = diff_for_scorer(scorer, actual)
    assert diff is not None
    n, details = counts(diff), score.details
    if mode == "exact":
        assert (n["ok"], n["wrong_args"]) == (details["exact_matches"], details["name_only_matches"])
        assert n["wrong_call"] + 2 * n["extra"] == details["wrong_or_missing"]
    elif mode == "flexible":
        assert (n["ok"], n["wrong_args"]) == (details["exact_matches"], details["name_only_matches"])
        assert (n["extra"], n["missing"]) == (details["extras"], details["missing"])
    elif mode != "strict":
        assert n["ok"] == details["matched"]
    assert diff.ok == (score.value == 1.0)


@pytest.mark.parametrize("mode", ["exact", "strict"])
def test_exact_and_strict_diffs_pair_by_position(mode: str) -> None:
    """A skipped call shifts the rest: both modes compare call i with expected call i, so `c` called second
    is a wrong call there and the third expected call is missing, though `c` was made."""
    expected = [{"name": "a"}, {"name": "b"}, {"name": "c"}]
    scorer = parse_scorer({"type": "trajectory", "mode": mode, "expected": expected})
    diff = diff_for_scorer(scorer, (call("a"), call("c")))
    assert diff is not None
    assert statuses(diff) == [("ok", 1, 1, False), ("wrong_call", 2, 2, False), ("missing", 3, None, False)]
    assert render_diff(diff, indent="").splitlines()[:4] == [
        f"trajectory mode={mode}, by position:",
        "              expected  actual",
        "  ok          1. a      1. a()",
        "✗ wrong call  2. b      2. c()",
    ]


def test_flexible_diff_shows_evalites_name_only_match() -> None:
    """Evalite's flexible mode compares serialized arguments: an expected call without `args` is name-only
    for a call with some, so the row is wrong args, the arguments shown whole."""
    scorer = parse_scorer({"type": "trajectory", "mode": "flexible", "expected": [{"name": "w"}]})
    diff = diff_for_scorer(scorer, (call("w", city="Rome"),))
    assert diff is not None
    (row,) = diff.rows
    assert row.status == "wrong_args"
    assert row.keys == [KeyDiff(key="", kind="changed", expected="<no arguments>", actual={"city": "Rome"})]


@pytest.mark.parametrize(
    ("pairing", "value", "rows"),
    [
        ("optimal", 1.0, [("ok", 1, 2, False), ("ok", 2, 1, False)]),
        ("greedy", 0.0, [("ok", 1, 1, False), ("wrong_args", 2, 2, False)]),
    ],
)
def test_unordered_diff_pairs_as_the_score_pairs(pairing: str, value: float, rows: list[Any]) -> None:
    """Under a subset rule the first expected call fits both calls: greedy pairing (agentevals', the default)
    takes the one the second needs, and the diff shows that; the optimal pairing's maximum matching does not."""
    scorer = parse_scorer(
        {
            "type": "trajectory",
            "mode": "unordered",
            "expected": [{"name": "a", "args": {"x": 1}}, {"name": "a", "args": {"x": 1, "y": 2}}],
            "args_match": {"mode": "subset"},
            "pairing": pairing,
        }
    )
    actual = (call("a", x=1, y=2), call("a", x=1))
    assert scorer.score(AgentRun(trace_id="1" * 32, span_id="1" * 16, calls=actual)).value == value
    diff = diff_for_scorer(scorer, actual)
    assert diff is not None
    assert statuses(diff) == rows


def test_a_rule_scorer_diff_lists_each_call_with_the_rules_it_broke() -> None:
    scorer = parse_scorer({"type": "tool_policy", "denied": ["drop"], "required": ["confirm"], "ignore_tools": ["x"]})
    diff = diff_for_scorer(scorer, (call("x"), call("search", q="a"), call("drop")))
    assert diff is not None
    assert [(row.status, row.actual_index, row.rules) for row in diff.rows] == [
        ("missing", None, ["required: no call of required 'confirm'"]),
        ("ok", 1, []),
        ("broken", 2, ["denied: denied by 'drop'"]),
    ]
    text = render_diff(diff)
    assert "tool_policy rules, in order:" in text
    assert "✗ broken rule" in text
    assert "denied: denied by 'drop'" in text


def test_an_args_valid_diff_reads_the_catalog_of_the_run_it_is_given() -> None:
    catalog = (ToolSpec(name="w", parameters={"type": "object", "required": ["city"]}),)
    run = AgentRun(calls=(call("w", town="Rome"),), available_tools=catalog)
    diff = diff_for_scorer(parse_scorer({"type": "args_valid"}), run.calls, run=run)
    assert diff is not None
    assert [(row.status, row.rules) for row in diff.rows] == [
        ("broken", ["required: /city: 'city' is a required property"])
    ]


def test_key_diffs_follow_the_direction_and_dotted_paths() -> None:
    from toolscore.collector.evaluate.diff import key_diffs
    from toolscore.scorers._matching import ArgsMatch

    want = call("s", q="otel", limit=5, time={"start": 1, "end": 2})
    got = call("s", q="otel", page=2, time={"start": 9, "end": 3})
    fewer = ArgsMatch(mode="actual_subset", ignore_keys=["time.start"])
    assert [(k.key, k.kind) for k in key_diffs(want, got, fewer)] == [("time", "changed"), ("page", "extra")]
    nested = ArgsMatch(mode="expected_subset", matchers={"time.start": {"type": "number", "value": 1}})  # type: ignore[dict-item]
    assert [(k.key, k.kind) for k in key_diffs(want, got, nested)] == [
        ("time.start", "changed"),
        ("limit", "missing"),
        ("time", "changed"),
    ]


def test_a_strict_diff_pairs_parallel_calls_within_their_message() -> None:
    expected = [{"name": "plan", "message": 0}, {"name": "w", "message": 1}, {"name": "t", "message": 1}]
    scorer = parse_scorer({"type": "trajectory", "mode": "strict", "expected": expected})
    actual = tuple(
        ToolCall.model_validate(c) for c in [expected[0], expected[2], expected[1], {"name": "x", "message": 2}]
    )
    diff = diff_for_scorer(scorer, actual)
    assert diff is not None
    assert statuses(diff) == [("ok", 1, 1, False), ("ok", 2, 3, False), ("ok", 3, 2, False), ("extra", None, 4, False)]


def test_calls_seen_only_in_the_model_output_are_marked() -> None:
    model_only = ToolCall(name="search", args={"q": "a"}, args_state="value", model_only=True)
    diff = diff_calls([call("search", q="a"), call("book")], [model_only, call("book")])

    assert diff.ok
    assert [row.actual for row in diff.rows] == [
        {"name": "search", "args": {"q": "a"}, "model_only": True},
        {"name": "book", "args": {}},
    ]
    lines = render_diff(diff, indent="").splitlines()
    assert [line.strip() for line in lines[2:]] == [
        'ok      1. search(q="a")  1. search(q="a")',
        "seen only in the model's output (no tool span)",
        "ok      2. book()         2. book()",
    ]
