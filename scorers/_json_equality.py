"""JSON equality, as the JavaScript peers see two decoded documents, and a fast compiled form of it.

Python's `==` is almost JSON equality, and runs in C; it is wrong only where a bool meets 0 or 1
(`True == 1`), for NaN and for tuples. Scoring compares the same expected value with many actual
ones, so `equality_test` finds those hazards in the expected value once and checks only them. Where
the install built `_equal.c` (`_accel.compiled`), `json_equal` is its C walk, and a value with hazards
is compared by it instead: no Python frame per comparison.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from functools import partial
from operator import eq

from toolscore.scorers._accel import compiled
from toolscore.scorers._model import JsonValue

__all__ = [
    "ArgsTest",
    "equality_plan",
    "equality_test",
    "guarded_equality",
    "json_equal",
    "python_json_equal",
    "same_bools",
]

ArgsTest = Callable[[JsonValue], bool]
"""A compiled comparison of one expected value with an actual one."""

_NUMBER = (int, float)


def python_json_equal(a: JsonValue, b: JsonValue) -> bool:
    """JSON deep equality, the way a JavaScript peer sees two decoded documents (`json_equal`).

    Object key order is ignored; numbers compare by value (`1 == 1.0`, `-0.0 == 0`); booleans are
    not numbers (`True != 1`); strings never equal numbers (`"1" != 1`); arrays and objects never
    equal each other (`[] != {}`, `[1, 2] != {"0": 1, "1": 2}`). Lists and tuples are both arrays.
    NaN (not JSON, but Python's reader accepts it) equals NaN, as in Evalite's `deepEqual`.
    """
    if a is b:
        return True
    ta, tb = type(a), type(b)
    if ta is dict:
        if tb is not dict or len(a) != len(b):
            return False
        return all(key in b and python_json_equal(value, b[key]) for key, value in a.items())
    if ta is list or ta is tuple:
        if (tb is not list and tb is not tuple) or len(a) != len(b):
            return False
        return all(python_json_equal(x, y) for x, y in zip(a, b, strict=True))
    if ta is bool or tb is bool:
        return False  # `a is b` above already caught equal booleans
    if ta in _NUMBER and tb in _NUMBER:
        return bool(a == b) or (ta is float and tb is float and math.isnan(a) and math.isnan(b))
    return ta is tb and bool(a == b)


json_equal: Callable[[JsonValue, JsonValue], bool] = python_json_equal if compiled is None else compiled.json_equal
"""`python_json_equal`, compiled where the install built it (`tests/test_equal_accel.py` holds the two to the
same answers)."""


_Path = tuple[str | int, ...]


def _eq_hazards(value: JsonValue, path: _Path, over: list[tuple[_Path, bool]]) -> bool:
    """Where Python's `==` disagrees with `json_equal` for this expected value.

    Collects into `over` the places where `==` may say "equal" wrongly (a bool, or a number equal
    to 0 or 1, since `True == 1`), with whether the expected value there is a bool. Returns True
    when `==` may say "unequal" wrongly (NaN, or a tuple where the actual holds a list).
    """
    kind = type(value)
    if kind is dict or kind is list or kind is tuple:
        miss = kind is tuple
        for step, item in value.items() if kind is dict else enumerate(value):
            miss = _eq_hazards(item, (*path, step), over) or miss  # visit every item: no short-circuit
        return miss
    if kind is bool or ((kind is int or kind is float) and value in (0, 1)):
        over.append((path, kind is bool))
    return kind is float and math.isnan(value)


def _same_bools(got: JsonValue, over: list[tuple[_Path, bool]]) -> bool:
    """After `want == got`: True unless a bool sits where `want` has a number, or the reverse."""
    for path, want_bool in over:
        value = got
        for step in path:
            value = value[step]
        if (type(value) is bool) is not want_bool:
            return False
    return True


def equality_plan(want: JsonValue) -> tuple[bool, list[tuple[_Path, bool]]]:
    """What `equality_test` found in `want`: (needs the full walk, places where bools must be checked).

    For callers that inline the test into their own closure (one call less per comparison)."""
    over: list[tuple[_Path, bool]] = []
    return _eq_hazards(want, (), over), over


def same_bools(got: JsonValue, over: list[tuple[_Path, bool]]) -> bool:
    """After `want == got` held: False when a bool sits where `want` has a number, or the reverse."""
    return _same_bools(got, over)


def guarded_equality(want: JsonValue, over: list[tuple[_Path, bool]]) -> ArgsTest:
    """`want == got and same_bools(got, over)` as one function with the bool checks written out.

    Once `want == got` holds, `got` has `want`'s shape and, at each place in `over`, a value equal to
    `want`'s there: the bool singleton it must be (`want` holds a bool), or the one it must not be
    (`want` holds 0 or 1). So each check is one chain of subscripts and an identity test, written out
    as Python source (`(p0 := got['filters']['stops'])[0] is not False and p0[1] is not True`, a
    container shared by several checks looked up once) so that scoring a call walks no path list.
    Steps are `str` or `int` (written with `repr`, always a literal); any other step keeps the walk.
    """
    if not all(type(step) is str or type(step) is int for path, _ in over for step in path):
        return lambda got: want == got and _same_bools(got, over)
    by_parent: dict[_Path, list[tuple[str | int, str]]] = {}
    for path, want_bool in over:
        value = want
        for step in path:
            value = value[step]
        check = f"is {bool(value)!r}" if want_bool else f"is not {bool(value)!r}"
        if not path:  # `want` itself is a bool, 0 or 1: the only place in `over`
            return _scalar_guard(want, want_bool)
        by_parent.setdefault(path[:-1], []).append((path[-1], check))
    checks = []
    for i, (parent, items) in enumerate(by_parent.items()):
        ref = "got" + "".join(f"[{step!r}]" for step in parent)
        (first, check), *rest = items
        if rest and parent:
            checks.append(f"(p{i} := {ref})[{first!r}] {check}")
            ref = f"p{i}"
        else:
            checks.append(f"{ref}[{first!r}] {check}")
        checks += [f"{ref}[{step!r}] {check}" for step, check in rest]
    source = f"lambda want: lambda got: want == got and {' and '.join(checks)}"
    test: ArgsTest = eval(source, {"__builtins__": {}})(want)  # literals and names of our own only
    return test


def _scalar_guard(want: JsonValue, want_bool: bool) -> ArgsTest:
    singleton = bool(want)
    if want_bool:
        return lambda got: want == got and got is singleton
    return lambda got: want == got and got is not singleton


def equality_test(want: JsonValue) -> ArgsTest:
    """`json_equal(want, x)` compiled for one expected value: Python's C-level `==`, then a check of
    the few places where `==` is wrong (booleans against 0/1). Actual values are decoded JSON
    (arrays are lists); NaN or tuples in `want` fall back to the full `json_equal` walk, and so do
    the bool checks where that walk is compiled (`_equal.c`)."""
    over: list[tuple[_Path, bool]] = []
    if _eq_hazards(want, (), over) or (over and compiled is not None):
        return partial(json_equal, want)
    if over:
        return guarded_equality(want, over)
    return partial(eq, want)
