"""Argument matching: JSON equality, per-key matchers, `ArgsMatch` modes and argument states."""

from __future__ import annotations

import random
from typing import Any

import pytest
from pydantic import ValidationError

from toolscore.scorers import ToolCall
from toolscore.scorers._matching import (
    ArgsMatch,
    ExpectedCall,
    equality_test,
    json_equal,
    resolve_args_match,
)

EQUAL_PAIRS = [
    ({"a": 1, "b": 2}, {"b": 2, "a": 1}),
    (1, 1.0),
    (-0.0, 0),
    ({"x": [1, [2, 3.0]]}, {"x": [1.0, [2, 3]]}),
    ([], []),
    ({}, {}),
    (None, None),
    ("é", "é"),
    (1e21, 10**21),
    (float("nan"), float("nan")),
]
UNEQUAL_PAIRS = [
    (True, 1),
    (False, 0),
    ({"a": True}, {"a": 1}),
    ([0, 1], [False, True]),
    ("1", 1),
    ([], {}),
    ([1, 2], {"0": 1, "1": 2}),
    (None, {}),
    ({"n": None}, {}),
    ([1, 2], [2, 1]),
    ([[1, 2]], [[1, 2, 3]]),
    ("é", "e\u0301"),
    ({"a": 1}, {"a": 1, "b": 2}),
]


def call(args: Any = ..., state: str | None = None, name: str = "t") -> ToolCall:
    """A call with `args` (omitted: no arguments at all), optionally forcing its `args_state`."""
    data: dict[str, Any] = {"name": name}
    if args is not ...:
        data["args"] = args
    if state is not None:
        data["args_state"] = state
    return ToolCall(**data)


@pytest.mark.parametrize(("a", "b"), EQUAL_PAIRS)
def test_json_equal_treats_these_documents_as_the_same(a: Any, b: Any) -> None:
    assert json_equal(a, b)
    assert json_equal(b, a)
    assert equality_test(a)(b)


def test_tuples_are_arrays_to_json_equal() -> None:
    assert json_equal([1, 2], (1, 2))
    assert equality_test((1, 2))([1, 2])


@pytest.mark.parametrize(("a", "b"), UNEQUAL_PAIRS)
def test_json_equal_tells_these_documents_apart(a: Any, b: Any) -> None:
    assert not json_equal(a, b)
    assert not json_equal(b, a)
    assert not equality_test(a)(b)
    assert not equality_test(b)(a)


def _random_json(rng: random.Random, depth: int = 0) -> Any:
    leaves = [0, 1, -0.0, 1.0, 2, True, False, None, "1", "", "x"]
    if depth > 2 or rng.random() < 0.4:
        return rng.choice(leaves)
    if rng.random() < 0.5:
        return [_random_json(rng, depth + 1) for _ in range(rng.randint(0, 3))]
    return {rng.choice("abc"): _random_json(rng, depth + 1) for _ in range(rng.randint(0, 3))}


def _mutate(rng: random.Random, value: Any) -> Any:
    """The same document with one leaf swapped for a look-alike (`1` -> `True`, `0` -> `-0.0`, ...)."""
    swaps = {0: [False, -0.0, 0.0], 1: [True, 1.0], 2: [2.0]}
    if isinstance(value, dict) and value:
        key = rng.choice(sorted(value))
        return {**value, key: _mutate(rng, value[key])}
    if isinstance(value, list) and value:
        i = rng.randrange(len(value))
        return [*value[:i], _mutate(rng, value[i]), *value[i + 1 :]]
    if type(value) in (int, float) and value in swaps:
        return rng.choice(swaps[value])
    if type(value) is bool:
        return rng.choice([int(value), float(value)])
    return value


def test_compiled_equality_agrees_with_json_equal_on_look_alike_documents() -> None:
    rng = random.Random(20)
    disagreements = []
    for _ in range(3000):
        want = _random_json(rng)
        got = _mutate(rng, want)
        if equality_test(want)(got) != json_equal(want, got):
            disagreements.append((want, got))
    assert disagreements == []


def test_compiled_equality_checks_bools_under_keys_of_any_spelling() -> None:
    quoted = 'it\'s "q"\\ ]['
    want = {quoted: [0, 1, 2], 3: {"\n": True, "k": [1]}, "p": 1}
    assert equality_test(want)({quoted: [0.0, 1, 2.0], 3: {"\n": True, "k": [1.0]}, "p": 1})
    for got in (
        {quoted: [False, 1, 2], 3: {"\n": True, "k": [1]}, "p": 1},
        {quoted: [0, True, 2], 3: {"\n": True, "k": [1]}, "p": 1},
        {quoted: [0, 1, 2], 3: {"\n": 1, "k": [1]}, "p": 1},
        {quoted: [0, 1, 2], 3: {"\n": True, "k": [True]}, "p": 1},
        {quoted: [0, 1, 2], 3: {"\n": True, "k": [1]}, "p": True},
    ):
        assert not equality_test(want)(got), got
    odd_key = {(1, 2): [0, 1]}  # not JSON; a step that is neither str nor int walks the path instead
    assert equality_test(odd_key)({(1, 2): [0, 1]})
    assert not equality_test(odd_key)({(1, 2): [0, True]})


# --- per-key matchers ----------------------------------------------------------------------------


def _keyed(matcher: dict[str, Any], value: Any, mode: str = "subset") -> bool:
    rule = ArgsMatch(mode=mode, matchers={"k": matcher})  # type: ignore[arg-type]
    return rule.matches(call({}), call({"k": value}))


def test_regex_matcher_needs_a_full_match_on_a_string() -> None:
    regex = {"type": "regex", "pattern": "call_[0-9]+"}
    assert _keyed(regex, "call_42")
    assert not _keyed(regex, "call_42x")
    assert not _keyed(regex, "xcall_42")
    assert not _keyed(regex, 42)
    assert not _keyed({"type": "regex", "pattern": "[0-9]+"}, 42)


def test_bad_regex_is_a_validation_error_naming_the_field() -> None:
    with pytest.raises(ValidationError) as info:
        ArgsMatch(matchers={"id": {"type": "regex", "pattern": "[a-z"}})  # type: ignore[dict-item]
    (error,) = info.value.errors()
    assert error["loc"][:2] == ("matchers", "id")
    assert error["loc"][-1] == "pattern"
    assert "invalid regular expression" in error["msg"]


def test_number_matcher_uses_an_absolute_tolerance_and_refuses_booleans() -> None:
    near = {"type": "number", "value": 10, "tolerance": 0.5}
    assert _keyed(near, 10.5)
    assert _keyed(near, 9.5)
    assert not _keyed(near, 10.51)
    assert not _keyed(near, "10")
    assert not _keyed({"type": "number", "value": 1}, True)
    assert _keyed({"type": "number", "value": 1}, 1.0)
    assert not _keyed({"type": "number", "value": 1}, float("nan"))


def test_negative_tolerance_is_rejected() -> None:
    with pytest.raises(ValidationError, match="tolerance"):
        ArgsMatch(matchers={"k": {"type": "number", "value": 1, "tolerance": -1}})  # type: ignore[dict-item]


def test_one_of_matcher_compares_with_json_equality() -> None:
    one_of = {"type": "one_of", "values": [1, "EUR", {"a": [1]}]}
    assert _keyed(one_of, 1.0)
    assert _keyed(one_of, "EUR")
    assert _keyed(one_of, {"a": [1.0]})
    assert not _keyed(one_of, True)
    assert not _keyed(one_of, "eur")


@pytest.mark.parametrize(
    ("of", "accepted", "refused"),
    [
        ("string", ["", "x"], [1, None, ["x"]]),
        ("number", [1, 1.5, -0.0], [True, "1", None]),
        ("integer", [3, 3.0, -2], [3.5, True, "3"]),
        ("boolean", [True, False], [0, 1, "true"]),
        ("object", [{}, {"a": 1}], [[], None]),
        ("array", [[], [1]], [{}, "[]"]),
        ("null", [None], [{}, 0, ""]),
    ],
)
def test_type_matcher_accepts_only_its_json_type(of: str, accepted: list[Any], refused: list[Any]) -> None:
    assert all(_keyed({"type": "type", "of": of}, value) for value in accepted)
    assert not any(_keyed({"type": "type", "of": of}, value) for value in refused)


def test_any_matcher_accepts_null_but_needs_the_key() -> None:
    rule = ArgsMatch(matchers={"k": {"type": "any"}})  # type: ignore[dict-item]
    assert rule.matches(call({"k": 1}), call({"k": None}))
    assert not rule.matches(call({"k": 1}), call({}))


# --- modes -----------------------------------------------------------------------------------------


def test_exact_mode_needs_the_same_key_set() -> None:
    rule = ArgsMatch()
    assert rule.matches(call({"a": 1, "b": [1, 2]}), call({"b": [1.0, 2], "a": 1}))
    assert not rule.matches(call({"a": 1}), call({"a": 1, "b": 2}))
    assert not rule.matches(call({"a": 1, "b": 2}), call({"a": 1}))
    assert not rule.matches(call({"a": 1}), call({"a": True}))


def test_subset_mode_allows_extra_actual_keys_only() -> None:
    rule = ArgsMatch(mode="subset")
    assert rule.matches(call({"a": 1}), call({"a": 1, "extra": 2}))
    assert not rule.matches(call({"a": 1, "b": 2}), call({"a": 1}))
    assert not rule.matches(call({"a": 1}), call({"a": 2, "extra": 2}))


def test_subset_mode_requires_every_matcher_key() -> None:
    rule = ArgsMatch(mode="subset", matchers={"id": {"type": "any"}})  # type: ignore[dict-item]
    assert rule.matches(call({"a": 1}), call({"a": 1, "id": "x", "more": 0}))
    assert not rule.matches(call({"a": 1}), call({"a": 1}))


def test_exact_mode_matcher_replaces_equality_for_its_key() -> None:
    rule = ArgsMatch(matchers={"id": {"type": "regex", "pattern": "u-[0-9]+"}})  # type: ignore[dict-item]
    assert rule.matches(call({"q": "x", "id": "u-1"}), call({"q": "x", "id": "u-999"}))
    assert rule.matches(call({"q": "x"}), call({"q": "x", "id": "u-7"}))
    assert not rule.matches(call({"q": "x"}), call({"q": "x", "id": "v-7"}))
    assert not rule.matches(call({"q": "x"}), call({"q": "x"}))


def test_ignore_mode_never_compares_arguments() -> None:
    rule = ArgsMatch(mode="ignore")
    assert rule.matches(call({"a": 1}), call({"b": 2}))
    assert rule.matches(call({"a": 1}), call(state="not_captured"))
    assert rule.matches(call({"a": 1}), call("not json {", state=None))


def test_ignore_keys_drop_volatile_keys_from_both_sides() -> None:
    rule = ArgsMatch(ignore_keys=["request_id", "ts"])
    assert rule.matches(call({"q": 1, "request_id": "a"}), call({"q": 1, "request_id": "b", "ts": 5}))
    assert rule.matches(call({"q": 1, "ts": 1}), call({"q": 1}))
    assert not rule.matches(call({"q": 1, "request_id": "a"}), call({"q": 2, "request_id": "a"}))


def test_ignored_key_wins_over_its_matcher() -> None:
    rule = ArgsMatch(ignore_keys=["id"], matchers={"id": {"type": "number", "value": 1}})  # type: ignore[dict-item]
    assert rule.matches(call({"q": 1}), call({"q": 1, "id": "anything"}))


# --- argument states --------------------------------------------------------------------------------


@pytest.mark.parametrize("mode", ["exact", "subset"])
def test_expected_call_without_args_accepts_any_arguments(mode: str) -> None:
    rule = ArgsMatch(mode=mode)  # type: ignore[arg-type]
    expected = call()
    for actual in (call({"q": 1}), call(), call(None), call("text {", None), call(state="not_captured")):
        assert rule.matches(expected, actual)


def test_expected_call_without_args_still_applies_matchers() -> None:
    rule = ArgsMatch(matchers={"n": {"type": "number", "value": 3}})  # type: ignore[dict-item]
    assert rule.matches(call(), call({"n": 3, "other": 1}))
    assert not rule.matches(call(), call({"n": 4}))
    assert not rule.matches(call(), call(state="not_captured"))


def test_no_arguments_null_and_empty_object_are_the_same_request() -> None:
    rule = ArgsMatch()
    for expected in (call({}), call(None)):
        for actual in (call({}), call(None), call()):
            assert rule.matches(expected, actual)
    assert not rule.matches(call({"q": 1}), call())
    assert not rule.matches(call({"q": 1}), call(None))
    assert not rule.matches(call({}), call({"q": 1}))


def test_raw_arguments_equal_only_the_identical_text() -> None:
    rule = ArgsMatch()
    raw = call('{"q": "trunc')
    assert raw.args_state == "raw"
    assert rule.matches(call('{"q": "trunc'), raw)
    assert not rule.matches(call('{"q": "other'), raw)
    assert not rule.matches(call({"q": "trunc"}), raw)
    assert not ArgsMatch(mode="subset").matches(call({}), raw)


def test_not_captured_arguments_never_satisfy_a_stated_expectation() -> None:
    unknown = call(state="not_captured")
    assert not ArgsMatch().matches(call({}), unknown)
    assert not ArgsMatch(mode="subset").matches(call({"q": 1}), unknown)
    assert ArgsMatch().matches(call(state="not_captured"), call({"q": 1}))


def test_non_object_expected_args_compare_by_json_equality() -> None:
    assert ArgsMatch().matches(call([1, 2]), call([1.0, 2]))
    assert ArgsMatch(mode="subset").matches(call([1, 2]), call([1, 2]))
    assert not ArgsMatch(mode="subset").matches(call([1, 2]), call([1, 2, 3]))


def test_compiled_rule_agrees_with_matches() -> None:
    rules = [
        ArgsMatch(),
        ArgsMatch(mode="subset"),
        ArgsMatch(ignore_keys=["id"]),
        ArgsMatch(matchers={"a": {"type": "type", "of": "integer"}}),  # type: ignore[dict-item]
    ]
    sides = [call(), call(None), call({}), call({"a": 1}), call({"a": True}), call({"a": 1, "id": 2}), call("x{")]
    sides += [call(state="not_captured"), call([1]), call({"a": 1.0})]
    for rule in rules:
        for expected in sides:
            test = rule.compile(expected)
            for actual in sides:
                assert test(actual) == rule.matches(expected, actual), (rule, expected, actual)


# --- expected calls and rule resolution ------------------------------------------------------------


def test_expected_call_accepts_every_tool_call_spelling() -> None:
    evalite = ExpectedCall.model_validate({"toolName": "search", "input": {"q": 1}})
    openai = ExpectedCall.model_validate({"tool_name": "search", "arguments": '{"q": 1}'})
    recorded = ExpectedCall.model_validate(ToolCall(name="search", args={"q": 1}, args_state="value"))
    assert evalite.args == openai.args == recorded.args == {"q": 1}
    assert evalite.name == openai.name == recorded.name == "search"
    assert ExpectedCall.model_validate({"name": "search"}).args_state == "absent"


def test_rule_resolution_prefers_the_call_then_the_tool_then_the_default() -> None:
    own = ArgsMatch(mode="ignore")
    per_tool = ArgsMatch(mode="subset")
    default = ArgsMatch(ignore_keys=["x"])
    with_own = ExpectedCall(name="search", match=own)
    plain = ExpectedCall(name="search")
    other = ExpectedCall(name="fetch")
    tools = {"search": per_tool}
    assert resolve_args_match(with_own, tools, default) is own
    assert resolve_args_match(plain, tools, default) is per_tool
    assert resolve_args_match(other, tools, default) is default
    assert resolve_args_match(other, tools, None) is None
    assert resolve_args_match(ToolCall(name="search"), {}, None) is None


def test_equal_rules_compare_equal() -> None:
    spec = {"mode": "subset", "matchers": {"id": {"type": "regex", "pattern": "a+"}}, "ignore_keys": ["t"]}
    assert ArgsMatch.model_validate(spec) == ArgsMatch.model_validate(spec)
    assert ArgsMatch.model_validate(spec) != ArgsMatch.model_validate({**spec, "ignore_keys": []})


# --- the two containment directions, and dotted key paths --------------------------------------------


def test_the_two_subset_directions_are_named_by_the_side_that_is_contained() -> None:
    fewer, more = call({"q": "otel"}), call({"q": "otel", "limit": 5})
    expected_subset, actual_subset = ArgsMatch(mode="expected_subset"), ArgsMatch(mode="actual_subset")
    assert expected_subset.matches(fewer, more)  # the call passed more than expected
    assert not expected_subset.matches(more, fewer)
    assert actual_subset.matches(more, fewer)  # the call passed fewer: agentevals' tool_args_match_mode="subset"
    assert not actual_subset.matches(fewer, more)
    assert not actual_subset.matches(more, call({"q": "other"}))
    assert ArgsMatch(mode="subset").matches(fewer, more) == expected_subset.matches(fewer, more)


def test_actual_subset_applies_matchers_only_to_keys_the_call_passed() -> None:
    rule = ArgsMatch(mode="actual_subset", matchers={"id": {"type": "regex", "pattern": "u-[0-9]+"}})  # type: ignore[dict-item]
    assert rule.matches(call({"q": 1, "id": "x"}), call({"q": 1}))
    assert rule.matches(call({"q": 1}), call({"id": "u-7"}))
    assert not rule.matches(call({"q": 1}), call({"id": "nope"}))


def test_dotted_paths_reach_into_nested_arguments() -> None:
    ignore = ArgsMatch(ignore_keys=["time.start"])
    want = call({"q": "x", "time": {"start": 1, "end": 9}})
    assert ignore.matches(want, call({"q": "x", "time": {"start": 5, "end": 9}}))
    assert not ignore.matches(want, call({"q": "x", "time": {"start": 5, "end": 8}}))
    near = ArgsMatch(matchers={"time.start": {"type": "number", "value": 1, "tolerance": 0.5}})  # type: ignore[dict-item]
    assert near.matches(want, call({"q": "x", "time": {"start": 1.2, "end": 9}}))
    assert not near.matches(want, call({"q": "x", "time": {"start": 3, "end": 9}}))
    assert not near.matches(want, call({"q": "x", "time": {"end": 9}}))


def test_a_key_holding_a_dot_is_read_as_that_key_first() -> None:
    rule = ArgsMatch(ignore_keys=["a.b"])
    assert rule.matches(call({"a.b": 1, "c": 2}), call({"a.b": 9, "c": 2}))
    assert rule.matches(call({"a": {"b": 1}}), call({"a": {"b": 2}}))
