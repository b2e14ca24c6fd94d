"""The `trajectory` scorer: Evalite's exact and flexible modes, agentevals' order modes, argument rules."""

from __future__ import annotations

import itertools
import json
import random
from pathlib import Path
from typing import Any

import pytest
from pydantic import ValidationError

from toolscore.scorers import AgentRun, Score, ToolCall, Trajectory
from toolscore.scorers._json_equality import json_equal
from toolscore.scorers._matching import ArgsMatch, ExpectedCall
from toolscore.scorers._pairing import greedy_matching
from toolscore.scorers._trajectory_evalite import (
    args_key,
    exact_plan,
    exact_score,
    key_groups,
    peer_exact_args_test,
    peer_exact_test,
    pop_pairing,
    score_exact,
)

ORDER_MODES = ("strict", "unordered", "subset", "superset")


def run(*calls: dict[str, Any]) -> AgentRun:
    return AgentRun(calls=tuple(ToolCall.model_validate(call) for call in calls))


def score(expected: list[dict[str, Any]], actual: list[dict[str, Any]], **params: Any) -> Score:
    result = Trajectory(expected=expected, **params).score(run(*actual))
    assert isinstance(result, Score), result
    return result


def a(**args: Any) -> dict[str, Any]:
    return {"name": "a", "args": args}


def b(**args: Any) -> dict[str, Any]:
    return {"name": "b", "args": args}


# --- Evalite exact mode ---------------------------------------------------------------------------


def test_exact_mode_counts_every_extra_call_twice() -> None:
    result = score([a(x=1)], [{"name": "z"}, {"name": "y"}, a(x=1)])
    assert result.details == {
        "mode": "exact",
        "exact_matches": 0,
        "name_only_matches": 0,
        "wrong_or_missing": 5,
        "totals": {"reference": 1, "output": 3},
    }
    assert result.value == 0.0


def test_exact_mode_pairs_by_position_over_the_actual_calls() -> None:
    result = score([a(x=1), a(x=2)], [a(x=2), a(x=1)])
    assert (result.details["exact_matches"], result.details["name_only_matches"]) == (0, 2)
    assert result.value == 0.5


def test_exact_mode_ignores_expected_calls_past_the_end_of_the_run() -> None:
    result = score([a(x=1), b(y=2), b(y=3)], [a(x=1)])
    assert result.details["wrong_or_missing"] == 0
    assert result.value == pytest.approx(1 / 3)


def test_expected_call_without_args_is_an_exact_match_in_exact_mode() -> None:
    result = score([{"name": "a"}, {"name": "b"}], [a(q=1), {"name": "b"}])
    assert result.details["exact_matches"] == 2
    assert result.value == 1.0


def test_actual_call_without_args_is_name_only_against_stated_args() -> None:
    result = score([a(lang=43)], [{"name": "a"}])
    assert result.details["name_only_matches"] == 1
    assert result.value == 0.5


@pytest.mark.parametrize(
    ("expected_args", "actual_args", "exact"),
    [
        ({"x": 1, "y": [1, 2]}, {"y": [1.0, 2], "x": 1}, True),
        ({"x": -0.0}, {"x": 0}, True),
        ({"x": [[1], [2]]}, {"x": [[2], [1]]}, False),
        ({"x": 1}, {"x": True}, False),
        ({"x": "1"}, {"x": 1}, False),
        ({}, [], False),
        (None, {}, False),
        (None, None, True),
        ({"n": None}, {}, False),
    ],
)
def test_exact_mode_compares_args_as_json_values(expected_args: Any, actual_args: Any, exact: bool) -> None:
    result = score([{"name": "a", "args": expected_args}], [{"name": "a", "args": actual_args}])
    assert result.details["exact_matches"] == int(exact)
    assert result.value == (1.0 if exact else 0.5)


def test_exact_mode_keeps_evalites_operation_order_to_the_last_bit() -> None:
    # (2 + 0.5*0)/3 - 0.25*(3/3), as Evalite computes it; (2 - 0.75)/3 would be 0.4166666666666667
    first = score([{"name": "a"}, {"name": "b"}, {"name": "c", "args": {"x": 1}}], [a(), b(), {"name": "d"}, b()])
    assert first.value == 0.41666666666666663
    second = score([a(), b(x=1), {"name": "c"}], [a(), b(x=2), {"name": "d"}])
    assert second.value == 0.4166666666666667


def test_explanation_lets_a_reader_recompute_the_score() -> None:
    result = score([a(x=1), b(y=2)], [a(x=1), b(y=3), {"name": "c"}])
    assert "exact=1, name_only=1, wrong_or_missing=2" in result.explanation
    assert "(1 + 0.5*1)/2 - 0.25*(2/2) = 0.5" in result.explanation
    assert result.value == 0.5


_ARGS_SPELLINGS: list[dict[str, Any]] = [
    {},
    {"args": None},
    {"args": {}},
    {"args": {"q": 1, "s": [0, 1]}},
    {"args": {"q": 1.0, "s": [0.0, 1]}},
    {"args": {"q": True, "s": [0, 1]}},
    {"args": {"q": 1, "s": [False, 1]}},
    {"args": {"q": float("nan")}},
    {"args": {"q": (0, 1)}},
    {"args": "not json {"},
    {"args": 0},
    {"args": False},
    {"args_state": "not_captured"},
]


def _evalite_exact(expected: ToolCall, actual: ToolCall) -> bool:
    """Evalite's `getArgumentScore` read from its source: no expected args match anything, no actual args
    match nothing else, otherwise deep JSON equality."""
    if not expected.has_args:
        return True
    return actual.has_args and json_equal(expected.args, actual.args)


def test_exact_mode_scores_by_args_alone_exactly_as_by_the_whole_call() -> None:
    """The exact-mode path that tests `args` alone (`exact_score`) agrees with the per-call tests and with
    Evalite's rule written plainly."""
    rng = random.Random(29)
    plans = 0
    for _ in range(600):
        expected = [{"name": rng.choice("ab"), **rng.choice(_ARGS_SPELLINGS)} for _ in range(rng.randint(1, 4))]
        actual = [ToolCall.model_validate({"name": rng.choice("ab"), **rng.choice(_ARGS_SPELLINGS)})]
        actual += [ToolCall.model_validate(call) for call in rng.sample(expected, rng.randint(0, len(expected)))]
        calls = [ToolCall.model_validate(call) for call in expected]
        args_tests = [peer_exact_args_test(call) for call in calls]
        if None in args_tests:
            continue  # the scorer keeps the per-call tests for this expectation
        plans += 1
        names, weights = tuple(call.name for call in calls), (0.5, 0.25)
        oracle = [lambda got, want=call: _evalite_exact(want, got) for call in calls]
        whole = score_exact(names, [peer_exact_test(call) for call in calls], actual, weights, {})
        plan = exact_plan(names, tuple(args_tests), weights, {}, scorer_name="trajectory", threshold=1.0)  # type: ignore[arg-type]
        alone = exact_score(plan, tuple(actual))
        assert (alone.value, alone.explanation, alone.details) == whole, (expected, actual)
        assert whole == score_exact(names, oracle, actual, weights, {}), (expected, actual)
    assert plans > 300


# --- weights ----------------------------------------------------------------------------------------


def test_null_weights_count_as_zero_like_javascript_null() -> None:
    expected, actual = [a(x=1), b(y=2)], [a(x=1), b(y=3), {"name": "c"}]
    assert score(expected, actual, weights={"name_only": None}).value == 0.25
    assert score(expected, actual, weights={"wrong_penalty": None, "extra_penalty": None}).value == 0.75


def test_weights_out_of_range_are_clamped_into_zero_to_one() -> None:
    expected, actual = [a(x=1), b(y=2)], [a(x=1), b(y=3), {"name": "c"}]
    assert score(expected, actual, weights={"name_only": 2}).value == 1.0
    assert score(expected, actual, weights={"wrong_penalty": -1}).value == 1.0
    assert score([{"name": "a"}], [b(), b()], weights={"wrong_penalty": -1}).value == 1.0
    assert score(expected, actual, weights={"name_only": -0.5, "wrong_penalty": 3}).value == 0.0


def test_exact_weight_is_never_used() -> None:
    expected, actual = [a(x=1), b(y=2)], [a(x=1), b(y=3)]
    assert score(expected, actual, weights={"exact": 0}).value == score(expected, actual).value == 0.75


def test_each_penalty_applies_in_its_own_mode_only() -> None:
    expected, actual = [a(x=1)], [{"name": "z"}, a(x=1)]
    assert score(expected, actual, weights={"extra_penalty": 1}).value == score(expected, actual).value
    flexible = {"mode": "flexible"}
    assert score(expected, actual, weights={"wrong_penalty": 1}, **flexible).value == 0.75
    assert score(expected, actual, weights={"extra_penalty": 1}, **flexible).value == 0.0


def test_evalite_weight_spelling_is_accepted() -> None:
    scorer = Trajectory(expected=[a()], weights={"nameOnly": 0.3, "wrongPenalty": 0.7})  # type: ignore[arg-type]
    assert (scorer.weights.name_only, scorer.weights.wrong_penalty) == (0.3, 0.7)


@pytest.mark.parametrize("bad", [{"name_only": "half"}, {"name_only": float("inf")}, {"bonus": 1}])
def test_bad_weights_are_rejected_naming_the_field(bad: dict[str, Any]) -> None:
    with pytest.raises(ValidationError) as info:
        Trajectory.model_validate({"type": "trajectory", "expected": [a()], "weights": bad})
    assert info.value.errors()[0]["loc"][0] == "weights"


# --- Evalite flexible mode ----------------------------------------------------------------------------


def test_flexible_mode_ignores_order_and_key_order() -> None:
    result = score([a(x=1, y=2), b()], [b(), a(y=2.0, x=1)], mode="flexible")
    assert result.details["exact_matches"] == 2
    assert result.value == 1.0


def test_flexible_mode_takes_the_last_of_equal_expected_calls() -> None:
    # two expected calls with the same serialized key, told apart only by key order
    first, last = {"name": "a", "args": {"x": 1, "y": 2}}, {"name": "a", "args": {"y": 2, "x": 1}}
    result = score([first, last], [a(x=1, y=2)], mode="flexible")
    (missing,) = result.details["details"]["missing_tool_calls"]
    assert list(missing["args"]) == ["x", "y"]


def test_flexible_mode_missing_calls_still_list_name_only_matched_ones() -> None:
    result = score([{"name": "a"}, {"name": "b"}], [a(q=1), {"name": "b"}], mode="flexible")
    assert result.details["name_only_matches"] == 1
    assert result.details["missing"] == 0
    assert result.details["details"] == {
        "matches": [{"name": "b"}],
        "name_only_matches": [{"name": "a", "args": {"q": 1}}],
        "extras": [],
        "missing_tool_calls": [{"name": "a"}],
    }
    assert result.value == 0.75


def test_flexible_mode_tells_absent_null_and_empty_args_apart() -> None:
    for expected_args, actual_args in [(..., {}), (..., None), (None, {})]:
        expected = {"name": "a"} if expected_args is ... else {"name": "a", "args": expected_args}
        result = score([expected], [{"name": "a", "args": actual_args}], mode="flexible")
        assert result.details["name_only_matches"] == 1, (expected_args, actual_args)
    assert score([{"name": "a"}], [{"name": "a"}], mode="flexible").value == 1.0
    assert score([{"name": "a", "args": None}], [{"name": "a", "args": None}], mode="flexible").value == 1.0


def test_flexible_mode_extras_and_missing() -> None:
    result = score([a(x=1), b(y=1), b(y=2)], [a(x=1), {"name": "c"}, {"name": "d"}], mode="flexible")
    assert (result.details["extras"], result.details["missing"]) == (2, 2)
    assert result.value == pytest.approx(1 / 3 - 0.25 * 2 / 3)


def test_flexible_mode_repeated_calls_match_one_for_one() -> None:
    result = score([a(x=1), a(x=1)], [a(x=1), a(x=1), a(x=1)], mode="flexible")
    assert (result.details["exact_matches"], result.details["extras"]) == (2, 1)
    assert result.value == 0.875


# --- empty inputs ----------------------------------------------------------------------------------


@pytest.mark.parametrize("mode", ["exact", "flexible"])
def test_evalite_modes_empty_input_table(mode: str) -> None:
    both = score([], [], mode=mode)
    assert (both.value, both.details) == (1.0, {"note": "Both empty - perfect match"})
    no_ref = score([], [a(), b()], mode=mode)
    assert no_ref.value == 0.0
    assert no_ref.details == {"warning": "Reference tool calls are empty but predictions exist", "output_count": 2}
    no_out = score([a()], [], mode=mode)
    assert no_out.value == 0.0
    assert no_out.details == {"warning": "No tool calls found in output", "reference_count": 1}


@pytest.mark.parametrize(
    ("mode", "both_empty", "no_expected", "no_actual"),
    [
        ("strict", 1.0, 0.0, 0.0),
        ("unordered", 1.0, 0.0, 0.0),
        ("subset", 1.0, 0.0, 1.0),
        ("superset", 1.0, 1.0, 0.0),
    ],
)
def test_order_modes_empty_input_table(mode: str, both_empty: float, no_expected: float, no_actual: float) -> None:
    assert score([], [], mode=mode).value == both_empty
    assert score([], [a()], mode=mode).value == no_expected
    assert score([a()], [], mode=mode).value == no_actual


def test_default_expectation_is_no_calls() -> None:
    assert Trajectory().score(run()).value == 1.0  # type: ignore[union-attr]
    assert Trajectory().score(run(a())).value == 0.0  # type: ignore[union-attr]


# --- agentevals order modes --------------------------------------------------------------------------


def test_strict_mode_needs_the_same_calls_in_the_same_order() -> None:
    assert score([a(x=1), b()], [a(x=1.0), b()], mode="strict").value == 1.0
    swapped = score([a(x=1), b()], [b(), a(x=1)], mode="strict")
    assert swapped.value == 0.0
    assert swapped.details["first_mismatch"] == 0
    longer = score([a(x=1)], [a(x=1), a(x=1)], mode="strict")
    assert (longer.value, longer.details["first_mismatch"]) == (0.0, 1)
    assert score([a(x=1)], [a(x=2)], mode="strict").value == 0.0


def test_strict_mode_says_which_arguments_differ_when_the_names_are_the_same() -> None:
    wrong_args = score([a(x=1), b()], [a(x=2), b()], mode="strict")
    assert wrong_args.explanation == 'strict: call 0 a: arguments differ: expected {"x":1}, got {"x":2} -> 0'
    assert (wrong_args.details["expected_call"], wrong_args.details["actual_call"]) == (
        {"name": "a", "args": {"x": 1}},
        {"name": "a", "args": {"x": 2}},
    )
    long_args = score([a(text="y" * 500)], [a(text="z" * 500)], mode="strict")
    assert len(long_args.explanation) < 300, "an explanation is a line; details hold the arguments whole"
    assert long_args.details["actual_call"]["args"]["text"] == "z" * 500
    swapped = score([a(x=1), b()], [b(), a(x=1)], mode="strict")
    assert swapped.explanation == "strict: call 0 differs: expected a, got b -> 0"


def test_strict_mode_says_arguments_that_are_not_json_are_text() -> None:
    """Arguments kept as text, not being JSON (cut short by an agent's size limit), match no expected object; the
    explanation must not show them as it shows arguments that are a JSON string."""
    cut = score([a(x=1)], [{"name": "a", "args": '{"x": 1'}], mode="strict")
    assert cut.explanation == (
        'strict: call 0 a: arguments differ: expected {"x":1}, got text that is not JSON: "{\\"x\\": 1" -> 0'
    )
    assert cut.details["actual_call"] == {"name": "a", "args": '{"x": 1'}
    a_string = score([a(x=1)], [{"name": "a", "args": json.dumps('{"x": 1')}], mode="strict")
    assert a_string.explanation == 'strict: call 0 a: arguments differ: expected {"x":1}, got "{\\"x\\": 1" -> 0'


def test_strict_mode_explains_arguments_nested_deeper_than_the_json_encoder_goes() -> None:
    """The explanation's arguments are JSON text; `json.dumps` raised RecursionError and the score was an error."""
    deep: list[object] = []
    for _ in range(3_000):
        deep = [deep]
    result = score([a(x=1)], [a(x=deep)], mode="strict")
    assert result.value == 0.0
    assert result.explanation.startswith('strict: call 0 a: arguments differ: expected {"x":1}, got {"x":[[[[')
    assert len(result.explanation) < 300


def test_unordered_mode_compares_multisets() -> None:
    assert score([a(x=1), b(), a(x=1)], [a(x=1), a(x=1), b()], mode="unordered").value == 1.0
    assert score([a(x=1), a(x=1)], [a(x=1)], mode="unordered").value == 0.0
    assert score([a(x=1)], [a(x=1), a(x=1)], mode="unordered").value == 0.0


def test_subset_mode_means_the_agent_did_nothing_beyond_the_expected_calls() -> None:
    assert score([a(), b(), {"name": "c"}], [b(), a()], mode="subset").value == 1.0
    extra = score([a(), b()], [a(), {"name": "c"}], mode="subset")
    assert extra.value == 0.0
    assert extra.details["unmatched_actual"] == [{"name": "c"}]
    assert score([a()], [a(), a()], mode="subset").value == 0.0


def test_superset_mode_means_the_agent_made_every_expected_call() -> None:
    assert score([a(), b()], [{"name": "c"}, b(), a(), a()], mode="superset").value == 1.0
    missing = score([a(), b()], [a(), a()], mode="superset")
    assert missing.value == 0.0
    assert missing.details["unmatched_expected"] == [{"name": "b", "args": {}}]
    assert score([a(), a()], [a()], mode="superset").value == 0.0


@pytest.mark.parametrize("mode", ["unordered", "subset", "superset"])
def test_optimal_pairing_ignores_the_order_of_actual_calls(mode: str) -> None:
    rule = {"mode": "subset"}
    expected = [a(), a(x=1), b(y=2)]
    actual = [a(x=1, z=0), a(y=5), b(y=2)]
    orders = list(itertools.permutations(actual))
    optimal = {score(expected, list(order), mode=mode, args_match=rule, pairing="optimal").value for order in orders}
    assert optimal == {1.0}
    greedy = {score(expected, list(order), mode=mode, args_match=rule).value for order in orders}
    assert greedy == {0.0, 1.0}, "greedy pairing (the default) depends on the order, as agentevals' does"


def test_optimal_pairing_finds_a_match_that_greedy_pairing_misses() -> None:
    # greedy (agentevals): a{} takes a{x:1} first, leaving a{y:2} for a{x:1}: no superset
    result = score([a(), a(x=1)], [a(x=1), a(y=2)], mode="superset", args_match={"mode": "subset"}, pairing="optimal")
    assert result.value == 1.0
    assert result.details["matched"] == 2
    assert "(optimal pairing)" in result.explanation


def test_default_pairing_is_agentevals_greedy_pairing() -> None:
    """Each of these is 0 in agentevals 0.0.9 (checked against it), though a pairing that fits every call exists."""
    superset = score([a(), a(x=1)], [a(x=1), a(y=2)], mode="superset", args_match={"mode": "expected_subset"})
    assert (superset.value, superset.details["matched"]) == (0.0, 1)
    assert superset.details["unmatched_expected"] == [a(x=1)]
    assert "(greedy pairing)" in superset.explanation
    # subset: each actual call takes the first expected call it fits: a{x:1} takes a{}, a{} fits no a{x:1}
    subset = score([a(), a(x=1)], [a(x=1), a()], mode="subset", args_match={"mode": "expected_subset"})
    assert (subset.value, subset.details["unmatched_actual"]) == (0.0, [a()])
    assert (
        score(
            [a(), a(x=1)], [a(x=1), a()], mode="subset", args_match={"mode": "expected_subset"}, pairing="optimal"
        ).value
        == 1.0
    )
    unordered = score([a(), a(x=1)], [a(x=1), a()], mode="unordered", args_match={"mode": "expected_subset"})
    assert unordered.value == 0.0
    one_message = [{"name": "a", "args": {}, "message": 0}, {"name": "a", "args": {"x": 1}, "message": 0}]
    parallel = [{"name": "a", "args": {"x": 1}, "message": 0}, {"name": "a", "args": {"y": 2}, "message": 0}]
    rule = {"mode": "expected_subset"}
    assert score(one_message, parallel, mode="strict", args_match=rule).value == 0.0
    assert score(one_message, parallel, mode="strict", args_match=rule, pairing="optimal").value == 1.0


def test_greedy_and_optimal_pairing_agree_under_equality() -> None:
    """With exact arguments fitting is an equivalence, where greedy pairing is as good as any: the default
    changes no score of the common case."""
    rng = random.Random(7)
    pool = [a(), a(x=1), a(x=1.0), b(), b(y=[1, 2])]
    for _ in range(300):
        expected = [rng.choice(pool) for _ in range(rng.randint(0, 4))]
        actual = [rng.choice(pool) for _ in range(rng.randint(0, 4))]
        for mode in ("unordered", "subset", "superset"):
            greedy = score(expected, actual, mode=mode)
            optimal = score(expected, actual, mode=mode, pairing="optimal")
            assert greedy.value == optimal.value, (mode, expected, actual)


def test_order_modes_compare_args_exactly_by_default() -> None:
    assert score([a(x=1)], [a(x=1, y=2)], mode="unordered").value == 0.0
    assert score([{"name": "a"}], [a(x=1, y=2)], mode="unordered").value == 1.0
    assert score([a(x=1)], [a(x=1, y=2)], mode="unordered", args_match={"mode": "subset"}).value == 1.0


def test_order_modes_ignore_weights() -> None:
    assert score([a()], [a(x=1)], mode="superset", weights={"name_only": 1}).value == 0.0


# --- argument rules (extensions) ---------------------------------------------------------------------

PEER_CASES = [
    ([a(x=1), b(y=2)], [a(x=1), b(y=3), {"name": "c"}]),
    ([{"name": "a"}, b()], [a(q=1), {"name": "b"}]),
    ([a(x=1), a(x=2)], [a(x=2), a(x=1)]),
    ([a(id="r-1"), b()], [a(id="r-2"), b(), b()]),
]


@pytest.mark.parametrize("mode", ["exact", "flexible"])
@pytest.mark.parametrize(("expected", "actual"), PEER_CASES)
def test_rules_for_tools_not_expected_never_change_a_peer_score(
    mode: str, expected: list[dict[str, Any]], actual: list[dict[str, Any]]
) -> None:
    peer = score(expected, actual, mode=mode)
    extended = score(expected, actual, mode=mode, tool_args={"unused": {"mode": "ignore"}})
    assert (extended.value, extended.details, extended.explanation) == (peer.value, peer.details, peer.explanation)


def test_ignore_keys_turn_a_name_only_match_into_an_exact_one() -> None:
    expected, actual = [a(q="x", request_id="r-1")], [a(q="x", request_id="r-2")]
    assert score(expected, actual).value == 0.5
    assert score(expected, actual, args_match={"ignore_keys": ["request_id"]}).value == 1.0
    assert score(expected, actual, mode="flexible", args_match={"ignore_keys": ["request_id"]}).value == 1.0


def test_rule_changes_meaning_of_expected_call_without_args_only_where_given() -> None:
    # peer exact mode: absent expected args match anything; with a rule they still do
    assert score([{"name": "a"}], [a(q=1)], args_match={"mode": "exact"}).value == 1.0
    # peer flexible mode: absent only matches absent; with a rule, absent means "any arguments"
    assert score([{"name": "a"}], [a(q=1)], mode="flexible").value == 0.5
    assert score([{"name": "a"}], [a(q=1)], mode="flexible", args_match={}).value == 1.0


def test_per_call_rule_beats_per_tool_rule_beats_default() -> None:
    expected = [
        {"name": "a", "args": {"q": 1}, "match": {"mode": "ignore"}},
        {"name": "b", "args": {"q": 1}},
        {"name": "c", "args": {"q": 1}},
    ]
    actual = [a(q=9), b(q=1, extra=True), {"name": "c", "args": {"q": 1, "extra": True}}]
    result = score(expected, actual, tool_args={"b": {"mode": "subset"}}, args_match={"mode": "exact"})
    assert result.details["exact_matches"] == 2
    assert result.details["name_only_matches"] == 1


def test_flexible_mode_with_rules_pairs_calls_optimally() -> None:
    rule = {"matchers": {"x": {"type": "any"}}}
    expected = [{"name": "a", "args": {"x": 0}, "match": rule}, a(x=1)]
    result = score(expected, [a(x=1), a(x=2)], mode="flexible")
    assert result.details["exact_matches"] == 2
    assert result.value == 1.0


def test_flexible_mode_mixes_ruled_and_peer_calls() -> None:
    expected = [{"name": "a", "args": {"id": "r-1"}, "match": {"ignore_keys": ["id"]}}, {"name": "b"}]
    result = score(expected, [a(id="r-9"), b(q=1)], mode="flexible")
    assert (result.details["exact_matches"], result.details["name_only_matches"]) == (1, 1)


def test_number_tolerance_in_a_trajectory() -> None:
    rule = {"matchers": {"lat": {"type": "number", "value": 38.72, "tolerance": 0.01}}}
    expected = [{"name": "weather", "args": {"lat": 0}, "match": rule}]
    assert score(expected, [{"name": "weather", "args": {"lat": 38.7234}}]).value == 1.0
    assert score(expected, [{"name": "weather", "args": {"lat": 38.9}}]).value == 0.5


def test_bad_regex_in_a_tool_rule_names_its_path() -> None:
    spec = {"expected": [a()], "tool_args": {"a": {"matchers": {"id": {"type": "regex", "pattern": "("}}}}}
    with pytest.raises(ValidationError) as info:
        Trajectory.model_validate(spec)
    assert info.value.errors()[0]["loc"][:4] == ("tool_args", "a", "matchers", "id")


# --- scorer contract -----------------------------------------------------------------------------------


def test_unknown_mode_is_rejected_at_construction() -> None:
    with pytest.raises(ValidationError, match="mode"):
        Trajectory.model_validate({"expected": [], "mode": "bogus"})


def test_recorded_tool_calls_can_be_the_expectation() -> None:
    recorded = (ToolCall(name="a", args='{"x": 1}'), ToolCall(name="b", args_state="not_captured"))
    scorer = Trajectory(expected=list(recorded))  # type: ignore[arg-type]
    assert scorer.score(run(a(x=1), b(y=2))).value == 1.0  # type: ignore[union-attr]


def test_label_follows_the_threshold() -> None:
    half = Trajectory(expected=[a(x=1)], threshold=0.5).score(run(a(x=2)))
    full = Trajectory(expected=[a(x=1)]).score(run(a(x=2)))
    assert (half.label, full.label) == ("pass", "fail")  # type: ignore[union-attr]
    assert half.name == "trajectory"


def test_equal_parameters_make_equal_scorers() -> None:
    spec = {"expected": [a(x=1)], "mode": "flexible", "args_match": {"matchers": {"x": {"type": "any"}}}}
    assert Trajectory.model_validate(spec) == Trajectory.model_validate(spec)
    assert Trajectory.model_validate(spec) != Trajectory.model_validate({**spec, "mode": "exact"})


def test_scoring_the_same_run_twice_gives_the_same_result() -> None:
    scorer = Trajectory(expected=[a(x=1), b()], mode="flexible")
    the_run = run(b(), a(x=1), {"name": "c"})
    assert scorer.score(the_run) == scorer.score(the_run)


# --- recorded Evalite outputs, whole -------------------------------------------------------------------

CORPUS = Path(__file__).parent / "testdata" / "conformance" / "scorers-public.jsonl"
_EVALITE_WEIGHT_NAMES = {"nameOnly": "name_only", "extraPenalty": "extra_penalty", "wrongPenalty": "wrong_penalty"}
_EVALITE_KEYS = {
    "toolName": "name",
    "input": "args",
    "exactMatches": "exact_matches",
    "nameOnlyMatches": "name_only_matches",
    "wrongOrMissing": "wrong_or_missing",
    "missingToolCalls": "missing_tool_calls",
    "outputCount": "output_count",
    "referenceCount": "reference_count",
}


def _evalite_cases() -> list[dict[str, Any]]:
    cases = [json.loads(line) for line in CORPUS.read_text(encoding="utf-8").splitlines() if line.strip()]
    return [case for case in cases if case["peer"] == "evalite" and case["params"].get("mode") != "bogus"]


def _snake_metadata(value: Any, in_args: bool = False) -> Any:
    """Evalite's metadata in toolscore's spelling; argument values are left as they are."""
    if in_args:
        return value
    if isinstance(value, dict):
        return {_EVALITE_KEYS.get(k, k): _snake_metadata(v, in_args=k == "input") for k, v in value.items()}
    if isinstance(value, list):
        return [_snake_metadata(item) for item in value]
    return value


def test_evalite_recorded_cases_agree_bit_for_bit_with_whole_metadata() -> None:
    """Every recorded Evalite case: the same double and the same metadata, call lists included."""
    cases = _evalite_cases()
    assert len(cases) > 250
    differences = []
    for case in cases:
        params = dict(case["params"])
        weights = {_EVALITE_WEIGHT_NAMES.get(k, k): v for k, v in params.pop("weights", {}).items()}
        result = score(case["expected_calls"], case["actual_calls"], weights=weights, **params)
        wanted = case["output"]
        if result.value != wanted["score"] or result.details != _snake_metadata(wanted["metadata"]):
            differences.append((case["id"], result.value, wanted["score"]))
    assert differences == []


# --- strict mode, message by message (agentevals) ------------------------------------------------------


def test_strict_mode_takes_the_calls_of_one_message_in_any_order() -> None:
    expected = [{"name": "plan", "message": 0}, {"name": "w", "message": 1}, {"name": "t", "message": 1}]
    parallel = [{"name": "plan", "message": 0}, {"name": "t", "message": 1}, {"name": "w", "message": 1}]
    assert score(expected, parallel, mode="strict").value == 1.0
    across = [{"name": "w", "message": 0}, {"name": "plan", "message": 1}, {"name": "t", "message": 1}]
    result = score(expected, across, mode="strict")
    assert result.value == 0.0
    assert (result.details["first_mismatch_message"], result.details["messages"]) == (0, {"reference": 2, "output": 2})
    assert "message 0 differs: expected calls ['plan'], got ['w']" in result.explanation


def test_strict_mode_compares_call_by_call_unless_every_call_states_its_message() -> None:
    one_message = [{"name": "a", "message": 0}, {"name": "b", "message": 0}]
    assert score([a(), b()], [b(), a()], mode="strict").value == 0.0
    assert score(one_message, [b(), a()], mode="strict").value == 0.0  # the run states no messages
    assert score(one_message, [{"name": "b", "message": 0}, a()], mode="strict").value == 0.0
    assert score(one_message, [{"name": "b", "message": 0}, {"name": "a", "message": 0}], mode="strict").value == 1.0


def test_expected_calls_dumped_with_their_default_message_still_compare_call_by_call() -> None:
    recorded = [ToolCall(name="a"), ToolCall(name="b")]
    scorer = Trajectory(mode="strict", expected=[call.model_dump() for call in recorded])
    assert scorer.score(AgentRun(calls=tuple(recorded))).value == 1.0  # type: ignore[union-attr]


def test_a_recorded_run_as_the_expectation_keeps_its_calls_one_message_each() -> None:
    recorded = AgentRun(calls=(ToolCall(name="a"), ToolCall(name="b")))
    scorer = Trajectory(mode="strict", expected=list(recorded.calls))  # type: ignore[arg-type]
    assert scorer.score(recorded).value == 1.0  # type: ignore[union-attr]
    assert scorer.score(AgentRun(calls=(ToolCall(name="b"), ToolCall(name="a")))).value == 0.0  # type: ignore[union-attr]


def test_flexible_pairing_takes_as_evalite_does() -> None:
    """`pop_pairing` over groups made once (`key_groups`) takes the calls Evalite's per-evaluation grouping takes:
    each actual call its key's last remaining expected call; the untaken, in group order."""
    rng = random.Random(31)
    for _ in range(800):
        pool = [ToolCall.model_validate({"name": rng.choice("ab"), **rng.choice(_ARGS_SPELLINGS)}) for _ in range(4)]
        expected = [rng.choice(pool) for _ in range(rng.randint(0, 6))]
        actual = [rng.choice(pool) for _ in range(rng.randint(0, 6))]
        keys = [(call.name, args_key(call)) for call in expected]
        groups: dict[Any, list[int]] = {}
        for j, key in enumerate(keys):
            groups.setdefault(key, []).append(j)
        taken = []
        for call in actual:
            group = groups.get((call.name, args_key(call)))
            taken.append(group.pop() if group else -1)
        oracle = (taken, [j for group in groups.values() for j in group])
        assert pop_pairing(key_groups(keys), actual) == oracle


# --- greedy pairing, call for call as agentevals pairs -------------------------------------------------


def _agentevals_superset(outputs: list[Any], references: list[Any], fits: Any) -> bool:
    """agentevals 0.0.9's `_is_trajectory_superset` loop, with `fits(output, reference)` for its matcher."""
    used: set[int] = set()
    for ref in references:
        for k, out in enumerate(outputs):
            if out.name == ref.name and k not in used and fits(out, ref):
                used.add(k)
                break
        else:
            return False
    return True


def _agentevals_strict_message(outputs: list[Any], references: list[Any], fits: Any) -> bool:
    """agentevals 0.0.9's comparison of one message's tool calls in `trajectory/strict.py`."""
    if len(outputs) != len(references):
        return False
    seen = [False] * len(references)
    for out in outputs:
        k = next((k for k, ref in enumerate(references) if not seen[k] and out.name == ref.name and fits(out, ref)), -1)
        if k < 0:
            return False
        seen[k] = True
    return True


def test_greedy_pairing_walks_the_calls_as_agentevals_does() -> None:
    """Each mode's verdict equals agentevals' loops run with toolscore's argument test (expected call's rule
    applied to the actual call): superset walks the expected calls, subset the actual ones, unordered both,
    strict each message's actual calls."""
    rng = random.Random(11)
    pool = [a(), a(x=1), a(y=2), a(x=1, y=2), a(x=9), b(), b(x=1)]
    for _ in range(1500):
        args_match = {"mode": rng.choice(["exact", "expected_subset", "actual_subset", "ignore"])}
        expected = [rng.choice(pool) for _ in range(rng.randint(0, 5))]
        actual = [rng.choice(pool) for _ in range(rng.randint(0, 5))]
        want = _agentevals_verdicts(args_match, expected, actual)
        for mode in ("superset", "subset", "unordered"):
            assert score(expected, actual, mode=mode, args_match=args_match).value == want[mode], (mode, args_match)
        one_message = score(
            [call | {"message": 0} for call in expected],
            [call | {"message": 0} for call in actual],
            mode="strict",
            args_match=args_match,
        )
        assert one_message.value == want["strict"], (args_match, expected, actual)


def _agentevals_verdicts(
    args_match: dict[str, Any], expected: list[dict[str, Any]], actual: list[dict[str, Any]]
) -> dict[str, bool]:
    """agentevals' verdict per mode, with the expected call's rule applied to the actual call as its matcher."""
    rule = ArgsMatch.model_validate(args_match)
    exp = [ExpectedCall.model_validate(call) for call in expected]
    act = [ToolCall.model_validate(call) for call in actual]

    def fits_reference(out: ToolCall, ref: ToolCall) -> bool:  # an output call against a reference call
        return rule.matches(ref, out)

    verdicts = {
        "superset": _agentevals_superset(act, exp, fits_reference),
        "subset": _agentevals_superset(exp, act, rule.matches),  # the sides swapped, as agentevals' subset
        "strict": _agentevals_strict_message(act, exp, fits_reference),
    }
    verdicts["unordered"] = verdicts["superset"] and verdicts["subset"]
    return verdicts


def test_greedy_pairing_is_the_same_whichever_side_leads() -> None:
    """agentevals' superset pass (led by the reference calls) and subset pass (led by the output calls) pair
    alike under one argument test, so one greedy pairing serves every mode: checked on every bipartite graph
    up to 3 x 3."""
    for m, n in itertools.product(range(4), repeat=2):
        for bits in range(2 ** (m * n)):
            edges = {(j, i) for j in range(m) for i in range(n) if bits >> (j * n + i) & 1}
            led_by_left = greedy_matching([range(n)] * m, lambda j, i: (j, i) in edges, n)  # noqa: B023
            led_by_right = greedy_matching([range(m)] * n, lambda i, j: (j, i) in edges, m)  # noqa: B023
            assert led_by_left == led_by_right[::-1], sorted(edges)
