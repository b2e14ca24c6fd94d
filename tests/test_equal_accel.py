"""The scorers' compiled equality (`scorers/_equal.c`) answers exactly as the pure-Python functions do.

`python_json_equal`, `python_freeze`, `python_exact_counts`, `python_exact_score` and `python_unvalidated` are the
reference. The compiled module is asked
for with an empty environment, so these tests hold it to them under `make test-oldest` (`TOOLSCORE_PURE_PYTHON`)
too, where the scorers themselves run on the Python paths. Documents: the matching tests' look-alikes (a bool for
a 1, -0.0 for 0, ...), NaN, tuples, values of other types, and hostile ones (an `__eq__` that raises, or empties
the container being compared, and nesting past the recursion limit).
"""

from __future__ import annotations

import math
import random
from collections import OrderedDict
from enum import IntEnum
from functools import partial
from typing import Any

import pytest

from tests.accel_checks import bytes_kept, outcome
from tests.test_matching import _mutate, _random_json
from toolscore.scorers import AgentRun, Score, ToolCall, Trajectory
from toolscore.scorers._accel import PURE_PYTHON_ENV, load
from toolscore.scorers._json_equality import equality_plan, guarded_equality, python_json_equal
from toolscore.scorers._model import python_unvalidated
from toolscore.scorers._trajectory_evalite import (
    exact_plan,
    peer_exact_args_test,
    python_exact_counts,
    python_exact_score,
    python_freeze,
)

_compiled = load({})


def _module() -> Any:
    assert _compiled is not None, "the install did not build scorers/_equal.c (see setup.py)"
    return _compiled


def _agree(a: Any, b: Any) -> None:
    expected = outcome(python_json_equal, a, b)
    assert outcome(_module().json_equal, a, b) == expected, (a, b)
    assert outcome(_module().json_equal, b, a) == outcome(python_json_equal, b, a), (b, a)


def test_the_test_install_builds_the_compiled_equality() -> None:
    assert _compiled is not None


def test_the_environment_variable_turns_it_off() -> None:
    assert load({PURE_PYTHON_ENV: "1"}) is None
    assert load({PURE_PYTHON_ENV: "0"}) is not None


class _Small(IntEnum):
    ONE = 1


_NAN = float("nan")

_PAIRS: list[tuple[Any, Any]] = [
    (1, 1.0),
    (1, True),
    (0, False),
    (0, -0.0),
    (True, True),
    (True, 1.0),
    ("1", 1),
    ("é", "é"),
    ("é", "e"),
    ("\U0001f600", "\U0001f600"),
    ("ab", "abc"),
    (None, None),
    (None, 0),
    (None, "None"),
    ([], {}),
    ([1, 2], (1, 2)),
    ((1, True), [1, 1]),
    ([1, 2], [1, 2, 3]),
    ({"a": 1}, {"a": 1.0}),
    ({"a": 1}, {"a": True}),
    ({"a": 1}, {"b": 1}),
    ({"a": 1}, {"a": 1, "b": 2}),
    ({"a": [0, {"b": [1, False]}]}, {"a": [0.0, {"b": [1.0, False]}]}),
    ({"a": [0, {"b": [1, False]}]}, {"a": [0.0, {"b": [True, False]}]}),
    ({1: "x"}, {1.0: "x"}),
    ({(1, 2): [0]}, {(1, 2): [0]}),
    (_NAN, _NAN),
    (_NAN, float("nan")),
    ([float("nan")], (float("nan"),)),
    (_NAN, 1),
    (float("inf"), float("inf")),
    (2**80, float(2**80)),
    (_Small.ONE, 1),
    (_Small.ONE, _Small.ONE),
    (OrderedDict(a=1), {"a": 1}),
    (OrderedDict(a=1), OrderedDict(a=1)),
    (b"x", b"x"),
    (b"x", "x"),
    ({"a": b"x"}, {"a": bytearray(b"x")}),
]


@pytest.mark.parametrize(("a", "b"), _PAIRS)
def test_it_agrees_on_these_documents(a: Any, b: Any) -> None:
    _agree(a, b)


def test_it_agrees_on_look_alike_documents() -> None:
    rng = random.Random(41)
    checked = 0  # pairs where Python's `==` is wrong
    for _ in range(4000):
        want = _random_json(rng)
        got = _mutate(rng, want)
        _agree(want, got)
        _agree(want, _mutate(rng, got))
        checked += (want == got) != python_json_equal(want, got)
    assert checked > 500  # pairs where Python's `==` is wrong


def test_the_python_bool_checks_agree_with_the_walk() -> None:
    """The pure path's generated checks (`guarded_equality`), which the compiled walk replaces, stay tested here."""
    rng = random.Random(42)
    guarded = 0
    for _ in range(3000):
        want = _random_json(rng)
        full_walk, over = equality_plan(want)
        if full_walk or not over:
            continue
        guarded += 1
        got = _mutate(rng, want)
        assert guarded_equality(want, over)(got) == python_json_equal(want, got), (want, got)
    assert guarded > 300


class _Raises:
    def __eq__(self, other: object) -> bool:
        raise ValueError("no comparing")

    __hash__ = object.__hash__


def test_an_exception_from_a_values_eq_is_raised_by_both() -> None:
    _agree({"a": _Raises()}, {"a": _Raises()})
    with pytest.raises(ValueError, match="no comparing"):
        _module().json_equal([_Raises()], [_Raises()])


def test_a_value_whose_eq_empties_the_containers_gives_an_answer_not_a_crash() -> None:
    """A dict changed while walked raises RuntimeError, as Python's iteration of it does; a list gives an answer."""
    a: dict[str, Any] = {}
    b: dict[str, Any] = {}
    items: list[Any] = []

    class Clears:
        def __eq__(self, other: object) -> bool:
            a.clear()
            b.clear()
            items.clear()
            return True

        __hash__ = object.__hash__

    def fill() -> None:
        for key in "pqrs":
            a[key], b[key] = Clears(), Clears()

    fill()
    with pytest.raises(RuntimeError, match="changed size"):
        python_json_equal(a, b)
    fill()
    with pytest.raises(RuntimeError, match="changed size"):
        _module().json_equal(a, b)
    items[:] = [Clears(), Clears(), 1]
    assert _module().json_equal(items, [Clears(), Clears(), 1]) in (True, False)


def test_nesting_past_the_recursion_limit_raises_recursion_error() -> None:
    deep: Any = []
    other: Any = []
    for _ in range(100_000):
        deep, other = [deep], [other]
    with pytest.raises(RecursionError):
        _module().json_equal(deep, other)
    assert _module().json_equal(deep, deep)  # one object: equal without a walk, as `a is b` in Python


def test_json_equal_takes_two_arguments() -> None:
    with pytest.raises(TypeError, match="2 arguments"):
        _module().json_equal(1)


# --- exact mode's pair counts --------------------------------------------------------------------------------


def _calls(rng: random.Random, n: int) -> tuple[ToolCall, ...]:
    calls = []
    for _ in range(n):
        data: dict[str, Any] = {"name": rng.choice("abc")}
        if rng.random() < 0.8:
            data["args"] = _random_json(rng) if rng.random() < 0.3 else {"x": _random_json(rng)}
        calls.append(ToolCall.model_validate(data))
    return tuple(calls)


def test_exact_counts_agree_with_the_python_loop() -> None:
    rng = random.Random(43)
    compiled_tests = 0
    for _ in range(1500):
        expected = _calls(rng, rng.randint(0, 6))
        tests = tuple(peer_exact_args_test(call) for call in expected)
        if None in tests:
            continue
        # The tests the scorer builds, and the same with every test the compiled walk over its expected value.
        walked = tuple(
            t if call.args_state == "absent" else partial(_module().json_equal, call.args)
            for t, call in zip(tests, expected, strict=True)
        )
        compiled_tests += walked != tests
        names = tuple(call.name for call in expected)
        actual = tuple(
            ToolCall.model_validate({"name": c.name, "args": _mutate(rng, c.args)})
            if c.args_state != "absent" and rng.random() < 0.5
            else c
            for c in expected
        )
        actual = tuple(rng.sample(actual, len(actual))) + _calls(rng, rng.randint(0, 2))
        for cut in (actual, actual[: len(actual) // 2]):
            for chosen in (tests, walked):
                assert _module().exact_counts(names, chosen, cut) == python_exact_counts(names, chosen, cut)
    assert compiled_tests > 300


def test_exact_counts_raise_what_a_test_or_a_call_raises() -> None:
    call = ToolCall(name="a", args={"x": 1})

    def fails(args: object) -> bool:
        raise KeyError("test failed")

    with pytest.raises(KeyError, match="test failed"):
        _module().exact_counts(("a",), (fails,), (call,))

    class Nameless:
        args = None

    with pytest.raises(AttributeError):
        _module().exact_counts(("a",), (fails,), (Nameless(),))


def test_exact_counts_read_attributes_a_class_computes() -> None:
    class Computed:
        def __getattr__(self, name: str) -> object:
            return {"name": "a", "args": {"x": 1}}[name]

    tests = (partial(_module().json_equal, {"x": 1}), partial(_module().json_equal, {"x": 2}))
    assert _module().exact_counts(("a", "a"), tests, (Computed(), Computed())) == (1, 1, 0)
    assert python_exact_counts(("a", "a"), tests, (Computed(), Computed())) == (1, 1, 0)  # type: ignore[arg-type]


def _state(score: Any) -> tuple[Any, ...]:
    """Everything a model instance holds, its type and the order of its values' keys included."""
    return (
        type(score),
        list(score.__dict__.items()),
        score.__pydantic_fields_set__,
        score.__pydantic_extra__,
        score.__pydantic_private__,
    )


def test_exact_score_gives_the_python_score() -> None:
    """Value, label, explanation and details (their key order too), on the memo's first sight of the counts and
    after, for thresholds either side of the value, runs shorter and longer than the expectation."""
    rng = random.Random(47)
    plans = 0
    for _ in range(800):
        expected = _calls(rng, rng.randint(1, 6))
        tests = tuple(peer_exact_args_test(call) for call in expected)
        if None in tests:
            continue
        plans += 1
        names = tuple(call.name for call in expected)
        weights = (rng.choice((0.5, 0.0, 2.0, -1.5)), rng.choice((0.25, 0.0, 1.0)))
        threshold = rng.choice((0.0, 0.4, 0.5, 1.0))
        memos: tuple[dict[Any, Any], dict[Any, Any]] = ({}, {})
        plans_ = [
            exact_plan(names, tests, weights, memo, scorer_name="trajectory", threshold=threshold) for memo in memos
        ]
        actual = tuple(rng.sample(expected, len(expected))) + _calls(rng, rng.randint(0, 3))
        for cut in (actual, actual[: len(actual) // 2 or 1], actual[:1]):
            for _ in range(2):  # a miss, then a hit
                ours = _module().exact_score(plans_[0], cut)
                theirs = python_exact_score(plans_[1], cut)
                assert _state(ours) == _state(theirs), (expected, cut)
                assert ours.label == ("pass" if ours.value >= threshold else "fail")
        assert memos[0] == memos[1]
    assert plans > 300


def test_exact_score_is_what_the_scorer_returns_by_its_general_path() -> None:
    """The one-step path equals the scorer's own verdict and `_result` (the path of calls with rules)."""
    calls = [{"name": "a", "args": {"x": 1}}, {"name": "b", "args": {"y": [1, 2]}}, {"name": "a"}]
    scorer = Trajectory(expected=calls, threshold=0.5)
    plan = scorer.__pydantic_private__["_plan"]  # type: ignore[index]
    assert plan.exact is not None
    for actual in ([calls[1], calls[0]], calls, calls + calls, [{"name": "c"}]):
        run = AgentRun.model_validate({"calls": actual})
        fast = scorer.score(run)
        general = scorer._result(*plan.verdict(run.calls))
        assert _state(fast) == _state(general)
        assert fast == Score.model_validate(fast.model_dump())


def test_exact_score_raises_what_a_test_raises_and_refuses_other_plans() -> None:
    call = ToolCall(name="a", args={"x": 1})

    def fails(args: object) -> bool:
        raise KeyError("test failed")

    plan = exact_plan(("a",), (fails,), (0.5, 0.25), {}, scorer_name="t", threshold=1.0)  # type: ignore[arg-type]
    with pytest.raises(KeyError, match="test failed"):
        _module().exact_score(plan, (call,))
    with pytest.raises(TypeError, match="exact_plan's"):
        _module().exact_score(plan[:9], (call,))
    with pytest.raises(TypeError, match="exact_plan's"):
        _module().exact_score((*plan[:6], dict, *plan[7:]), (call,))  # not a pydantic model
    with pytest.raises(TypeError, match="2 arguments"):
        _module().exact_score(plan)

    def no_pair(*args: object) -> object:
        return "not a pair"

    passing = exact_plan(("a",), (bool,), (0.5, 0.25), {}, scorer_name="t", threshold=1.0)
    with pytest.raises(TypeError, match="no \\(value, explanation\\) pair"):
        _module().exact_score((*passing[:5], no_pair, *passing[6:]), (call,))


def test_unvalidated_builds_what_the_python_function_builds() -> None:
    values = {"name": "a", "args": {"x": 1}, "call_id": "c1"}
    ours = _module().unvalidated(ToolCall, dict(values), {"name", "args", "call_id"})
    theirs = python_unvalidated(ToolCall, dict(values), {"name", "args", "call_id"})
    assert _state(ours) == _state(theirs)
    with pytest.raises(TypeError, match="BaseModel subclass"):
        _module().unvalidated(dict, {}, set())
    with pytest.raises(TypeError, match="dict of values and a set"):
        _module().unvalidated(ToolCall, {}, frozenset())
    with pytest.raises(TypeError, match="3 arguments"):
        _module().unvalidated(ToolCall, {})


def test_exact_counts_take_three_tuples() -> None:
    call = ToolCall(name="a")
    with pytest.raises(TypeError, match="three tuples"):
        _module().exact_counts(["a"], (bool,), (call,))
    with pytest.raises(TypeError, match="3 arguments"):
        _module().exact_counts(("a",), (bool,))


def test_nan_compares_as_evalite_does_in_both() -> None:
    """Evalite's `deepEqual` treats NaN as equal to NaN; one NaN object or two, both walks say so."""
    assert python_json_equal({"x": math.nan}, {"x": float("nan")})
    assert _module().json_equal({"x": math.nan}, {"x": float("nan")})


# --- flexible mode's keys ------------------------------------------------------------------------------------


def _same_key(a: Any) -> None:
    """The compiled key equals the Python one, hash and all, or both raise the same exception."""
    expected = outcome(python_freeze, a)
    got = outcome(_module().freeze, a)
    assert got == expected, a
    if not isinstance(expected, type):
        assert outcome(hash, got) == outcome(hash, expected)


@pytest.mark.parametrize(("a", "b"), _PAIRS)
def test_freeze_gives_the_python_key_of_these_documents(a: Any, b: Any) -> None:
    _same_key(a)
    _same_key(b)
    _same_key({"k": a, "l": [a, b]})


def test_freeze_gives_the_python_key_of_look_alike_documents() -> None:
    rng = random.Random(44)
    for _ in range(3000):
        want = _random_json(rng)
        got = _mutate(rng, want)
        _same_key(want)
        _same_key(got)
        assert (_module().freeze(want) == _module().freeze(got)) == (python_freeze(want) == python_freeze(got))


def test_freeze_reads_numbers_as_javascript_writes_them() -> None:
    freeze = _module().freeze
    assert freeze({"x": 1}) == freeze({"x": 1.0})
    assert freeze(-0.0) == freeze(0)
    for unwritable in (math.nan, math.inf, -math.inf, 2**2000):  # JSON.stringify writes null (2**2000: no double)
        assert freeze(unwritable) is None
    assert freeze(True) != freeze(1)
    assert freeze(False) != freeze(0)
    assert freeze({"b": 1, "a": [2, (3,)]}) == freeze({"a": (2.0, [3]), "b": 1.0})


def test_freeze_raises_what_python_raises() -> None:
    with pytest.raises(TypeError):  # keys that do not order, as `sorted` raises
        _module().freeze({1: "x", "y": 2})
    with pytest.raises(TypeError):
        python_freeze({1: "x", "y": 2})  # type: ignore[dict-item]
    deep: Any = {}
    for _ in range(100_000):
        deep = {"k": deep}
    with pytest.raises(RecursionError):
        _module().freeze(deep)


def test_the_compiled_functions_keep_no_memory_on_any_path() -> None:
    """A reference kept on any path (an answer, an exception from a value or a test) would grow the heap per call:
    tracemalloc sees every object the module makes."""
    docs: list[Any] = [{"a": [1, 2.5, {"b": True, "c": None}], "d": "x" * 50, "e": math.nan}, [1, (2, 3)], 2**3000]
    docs.append({1: "x", "y": 2})  # keys that do not order: freeze raises
    calls = (ToolCall(name="a", args={"x": 1}), ToolCall(name="b", args={"x": [0, 1]}))
    tests = (partial(_module().json_equal, {"x": 1}), partial(_module().json_equal, {"x": [0, 1]}))

    def fails(args: object) -> bool:
        raise KeyError(args)

    plan = exact_plan(("a", "b"), tests, (0.5, 0.25), {}, scorer_name="t", threshold=1.0)
    failing = exact_plan(("a",), (fails,), (0.5, 0.25), {}, scorer_name="t", threshold=1.0)

    def work() -> None:
        for a in docs:
            for b in docs:
                outcome(_module().json_equal, a, b)
            outcome(_module().freeze, a)
        outcome(_module().json_equal, {"k": _Raises()}, {"k": _Raises()})
        assert _module().exact_counts(("a", "b"), tests, calls) == (2, 0, 0)
        outcome(_module().exact_counts, ("a",), (fails,), calls)
        assert _module().exact_score(plan, calls).value == 1.0
        outcome(_module().exact_score, failing, calls)
        outcome(_module().exact_score, plan[:3], calls)
        _module().unvalidated(ToolCall, {"name": "a"}, {"name"})

    grown = bytes_kept(work, 2000, warm_up=100)
    assert grown < 10_000, grown  # one object kept per call would be ~100 KB
