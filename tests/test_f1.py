"""`f1`: tpmjs' tool-call accuracy, its documented deviations and the opt-in extensions."""

from __future__ import annotations

import itertools
from typing import Any

import pytest

from toolscore.scorers import F1, AgentRun, Score, ToolCall
from toolscore.scorers._f1 import js_round_3, js_to_fixed_1


def call(name: str, *args: Any, **fields: Any) -> dict[str, Any]:
    """A call in tpmjs' spelling; `args` left out means the call had no arguments at all."""
    return {"tool": name, **({"args": args[0]} if args else {}), **fields}


def score(expected: list[dict[str, Any]], actual: list[dict[str, Any]], **params: Any) -> Score:
    run = AgentRun(calls=tuple(ToolCall.model_validate(c) for c in actual))
    result = F1.model_validate({"expected": expected, **params}).score(run)
    assert isinstance(result, Score), result
    return result


def counts(result: Score) -> tuple[int, int, int, int]:
    d = result.details
    return len(d["correct_calls"]), len(d["incorrect_calls"]), len(d["missed_calls"]), len(d["extra_calls"])


@pytest.mark.parametrize(
    ("expected", "actual", "value"),
    [
        ([], [], 1.0),
        ([], [call("a", {})], 0.0),
        ([call("a", {})], [], 0.0),
    ],
)
def test_empty_lists(expected: list[dict[str, Any]], actual: list[dict[str, Any]], value: float) -> None:
    assert score(expected, actual).value == value


def test_incorrect_calls_take_up_precision_without_credit() -> None:
    result = score([call("a", {"x": 1}), call("b", {})], [call("a", {"x": 2}), call("b", {}), call("c", {})])
    assert counts(result) == (1, 1, 0, 1)
    assert result.value == 0.4  # precision 1/3, recall 1/2
    assert "precision=1/3, recall=1/2" in result.explanation


def test_repeated_calls_pair_one_to_one() -> None:
    result = score([call("a", {})] * 3, [call("a", {})] * 2)
    assert counts(result) == (2, 0, 1, 0)
    assert result.value == 0.8
    assert result.details["summary"] == "Accuracy Score: 80.0% | Correct: 2/3 | Incorrect: 0 | Missed: 1 | Extra: 0"


@pytest.mark.parametrize(
    ("want", "got", "equal"),
    [
        ({"a": 1, "b": 2}, {"b": 2, "a": 1}, True),  # key order
        ({"n": 1}, {"n": 1.0}, True),
        ({"n": -0.0}, {"n": 0}, True),
        ({"n": 1}, {"n": "1"}, False),
        ({"n": True}, {"n": 1}, False),
        ({"n": None}, {"n": None}, True),
        ({"n": None}, {}, False),
        ({"n": None}, {"n": {}}, False),
        ({"l": [[1, 2], [3]]}, {"l": [[1, 2], [3]]}, True),
        ({"l": [[1, 2], [3]]}, {"l": [[2, 1], [3]]}, False),  # arrays keep their order
        ({"l": [[1, 2], [3]]}, {"l": [[1, 2], [3, 4]]}, False),
        ({"o": {"p": [{"q": 1}]}}, {"o": {"p": [{"q": 1.0}]}}, True),
        ({"k": 0.30000000000000004}, {"k": 0.3}, False),
        ({"s": "é"}, {"s": "e\u0301"}, False),  # no Unicode normalisation
    ],
)
def test_argument_equality(want: Any, got: Any, equal: bool) -> None:
    result = score([call("a", want)], [call("a", got)])
    assert counts(result) == ((1, 0, 0, 0) if equal else (0, 1, 0, 0))


def test_greedy_pairing_reproduces_tpmjs_quirks_and_optimal_fixes_them() -> None:
    expected = [call("a", {"x": 1}), call("a", {"x": 2})]
    actual = [call("a", {"x": 2}), call("a", {"x": 3})]
    greedy = score(expected, actual)
    assert (counts(greedy), greedy.value) == ((0, 2, 0, 0), 0.0)
    optimal = score(expected, actual, pairing="optimal")
    assert (counts(optimal), optimal.value) == ((1, 1, 0, 0), 0.5)


def test_greedy_spends_a_same_named_call_on_an_earlier_mismatch() -> None:
    expected = [call("a", {"x": 9}), call("a", {"x": 1})]
    greedy = score(expected, [call("a", {"x": 1})])
    assert (counts(greedy), greedy.value) == ((0, 1, 1, 0), 0.0)
    optimal = score(expected, [call("a", {"x": 1})], pairing="optimal")
    assert (counts(optimal), optimal.value) == ((1, 0, 1, 0), 0.667)


def test_optimal_pairing_ignores_list_order() -> None:
    expected = [call("a", {"x": 1}), call("a", {"x": 2}), call("b", {}), call("a", {"x": 3})]
    actual = [call("a", {"x": 3}), call("a", {"x": 2}), call("a", {"x": 9}), call("b", {"y": 1})]
    seen = set()
    for exp_order in itertools.permutations(expected):
        for act_order in itertools.permutations(actual):
            result = score(list(exp_order), list(act_order), pairing="optimal")
            seen.add((result.value, counts(result)))
    assert seen == {(0.5, (2, 2, 0, 0))}


def test_greedy_score_depends_on_list_order() -> None:
    expected = [call("a", {"x": 1}), call("a", {"x": 2})]
    first = score(expected, [call("a", {"x": 2}), call("a", {"x": 3})]).value
    second = score(list(reversed(expected)), [call("a", {"x": 2}), call("a", {"x": 3})]).value
    assert (first, second) == (0.0, 0.5)


@pytest.mark.parametrize(
    ("x", "rounded"),
    [(0.0625, 0.063), (0.3125, 0.313), (0.8125, 0.813), (2 / 3, 0.667), (0.4, 0.4), (0.0004999, 0.0)],
)
def test_scores_round_halves_up_like_math_round(x: float, rounded: float) -> None:
    assert js_round_3(x) == rounded


def test_summary_uses_the_unrounded_score_with_to_fixed() -> None:
    assert js_to_fixed_1(6.25) == "6.3"  # exactly representable: the half rounds up
    assert js_to_fixed_1(1.45) == "1.4"  # 1.45 is 1.4499999999999999556 in binary
    assert js_to_fixed_1(2.5000000000000004) == "2.5"
    assert js_to_fixed_1(100.0) == "100.0"
    assert js_to_fixed_1(0.0) == "0.0"
    expected = [call(f"t{i}", {"i": i}) for i in range(16)]
    actual = [call("t0", {"i": 0})] + [call(f"u{i}", {}) for i in range(15)]
    result = score(expected, actual)
    assert result.value == 0.063
    assert result.details["summary"].startswith("Accuracy Score: 6.3% | Correct: 1/16 | Incorrect: 0 | Missed: 15")


# --- Deviations from tpmjs: the docstring's examples, verbatim ---------------------------------


def test_deviation_null_and_absent_args_compare_as_values() -> None:
    assert score([call("search", None)], [call("search", None)]).value == 1.0
    assert score([call("search")], [call("search")]).value == 1.0
    absent_vs_empty = score([call("search")], [call("search", {})])
    assert (absent_vs_empty.value, counts(absent_vs_empty)) == (0.0, (0, 1, 0, 0))
    assert counts(score([call("search", None)], [call("search")])) == (0, 1, 0, 0)
    assert counts(score([call("search", None)], [call("search", {})])) == (0, 1, 0, 0)


def test_deviation_arrays_never_equal_objects() -> None:
    assert score([call("search", {"l": []})], [call("search", {"l": {}})]).value == 0.0
    assert score([call("search", {"l": [1, 2]})], [call("search", {"l": {"0": 1, "1": 2}})]).value == 0.0
    assert score([call("search", [1, 2])], [call("search", {"0": 1, "1": 2})]).value == 0.0


@pytest.mark.parametrize(
    ("want", "got", "equal"),
    [(5, {}, False), (5, 7, False), (5, 5, True), (True, 1, False), ("", {}, False), ("ab", "ab", True)],
)
def test_deviation_non_object_args_compare_by_value(want: Any, got: Any, equal: bool) -> None:
    assert score([call("search", want)], [call("search", got)]).value == (1.0 if equal else 0.0)


def test_deviations_are_documented_for_the_readme() -> None:
    doc = F1.__doc__ or ""
    block = doc[doc.index("Deviations from tpmjs") :]
    assert "Cannot convert undefined or null to object" in block
    assert "`[]` equals `{}`" in block
    assert "`5` == `7` == `true` == `{}`" in block


# --- argument rules (opt-in) -------------------------------------------------------------------


def test_args_match_applies_to_every_call() -> None:
    expected = [call("a", {"q": "x"}), call("b", {"id": 1})]
    actual = [call("a", {"q": "x", "page": 2}), call("b", {"id": 1, "trace": "t"})]
    assert score(expected, actual).value == 0.0
    assert score(expected, actual, args_match={"mode": "subset"}).value == 1.0


def test_tool_args_apply_per_tool_name() -> None:
    expected = [call("a", {"q": "x"}), call("b", {"id": 1})]
    actual = [call("a", {"q": "x", "page": 2}), call("b", {"id": 1, "trace": "t"})]
    result = score(expected, actual, tool_args={"a": {"mode": "subset"}})
    assert counts(result) == (1, 1, 0, 0)


def test_an_expected_calls_own_match_wins_over_tool_and_default_rules() -> None:
    expected = [call("a", {"ts": 0}, match={"mode": "ignore"}), call("a", {"ts": 0})]
    actual = [call("a", {"ts": 17}), call("a", {"ts": 18})]
    result = score(expected, actual, tool_args={"a": {"mode": "exact"}})
    assert counts(result) == (1, 1, 0, 0)


def test_matchers_and_ignore_keys_replace_equality_for_their_keys() -> None:
    expected = [call("fetch", {"url": "", "request_id": "r1"})]
    actual = [call("fetch", {"url": "https://example.test/a", "request_id": "r2"})]
    rule = {"matchers": {"url": {"type": "regex", "pattern": "https://.*"}}, "ignore_keys": ["request_id"]}
    assert score(expected, actual).value == 0.0
    assert score(expected, actual, args_match=rule).value == 1.0


def test_argument_rules_combine_with_optimal_pairing() -> None:
    expected = [call("a", {"x": 1}), call("a", {"x": 2})]
    actual = [call("a", {"x": 2, "extra": True}), call("a", {"x": 1})]
    greedy = score(expected, actual, args_match={"mode": "subset"})
    optimal = score(expected, actual, args_match={"mode": "subset"}, pairing="optimal")
    assert greedy.value == optimal.value == 1.0


def test_no_rule_anywhere_keeps_peer_semantics() -> None:
    # an expected call written without args: tpmjs semantics say only an argument-less call is equal
    assert score([call("a")], [call("a", {"q": 1})]).value == 0.0
    # under an explicit rule, absent expected args constrain nothing
    assert score([call("a")], [call("a", {"q": 1})], args_match={}).value == 1.0


def test_uncaptured_args_read_as_absent_in_peer_mode() -> None:
    run = AgentRun(calls=(ToolCall(name="a", args_state="not_captured"),))
    result = F1.model_validate({"expected": [call("a")]}).score(run)
    assert isinstance(result, Score)
    assert result.value == 1.0


# --- shapes -------------------------------------------------------------------------------------


def test_expected_calls_accept_every_spelling() -> None:
    expected: list[dict[str, Any]] = [
        {"toolName": "a", "input": {"q": 1}},
        {"name": "b", "arguments": '{"r": 2}'},
        call("c", {}),
    ]
    actual: list[dict[str, Any]] = [
        call("a", {"q": 1}),
        {"name": "b", "args": {"r": 2}},
        {"tool_name": "c", "args": {}},
    ]
    assert score(expected, actual).value == 1.0


def test_details_keep_tpmjs_shapes_in_snake_case() -> None:
    result = score([call("a", {"x": 1}), call("b", {}), call("c", {})], [call("a", {"x": 2}), call("b", {}), call("d")])
    d = result.details
    assert list(d) == [
        "total_expected",
        "total_actual",
        "correct_calls",
        "incorrect_calls",
        "missed_calls",
        "extra_calls",
        "summary",
    ]
    assert d["correct_calls"] == [
        {
            "expected": {"tool": "b", "args": {}},
            "actual": {"tool": "b", "args": {}},
            "status": "correct",
            "args_match": True,
        }
    ]
    assert d["incorrect_calls"] == [
        {
            "expected": {"tool": "a", "args": {"x": 1}},
            "actual": {"tool": "a", "args": {"x": 2}},
            "status": "incorrect",
            "args_match": False,
            "details": "Tool name matches but arguments differ",
        }
    ]
    assert d["missed_calls"] == [
        {
            "expected": {"tool": "c", "args": {}},
            "status": "missed",
            "args_match": False,
            "details": "Expected call was not made",
        }
    ]
    assert d["extra_calls"] == [{"tool": "d"}]


def test_threshold_defaults_to_a_perfect_score() -> None:
    expected, actual = [call("a", {}), call("b", {})], [call("a", {})]
    assert score(expected, actual).label == "fail"
    assert score(expected, actual, threshold=0.6).label == "pass"
