"""Evalite's `toolCallAccuracy` arithmetic (1.0.0-beta.16), exact and flexible modes.

Kept apart from the `Trajectory` scorer so the peer's rules read in one place, in the peer's
order of operations: the float arithmetic below is written exactly as Evalite writes it, so
scores agree to the last bit, not merely to a tolerance.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Any

from toolscore.scorers._accel import compiled
from toolscore.scorers._json_equality import ArgsTest, equality_plan, equality_test
from toolscore.scorers._matching import ArgsMatch
from toolscore.scorers._model import JsonValue, Score, ToolCall, _unvalidated

__all__ = [
    "ExactPlan",
    "KeyGroups",
    "PairTest",
    "Taken",
    "Verdict",
    "args_key",
    "exact_counts",
    "exact_plan",
    "exact_score",
    "freeze",
    "key_groups",
    "name_only_pairs",
    "neutral",
    "peer_exact_args_test",
    "peer_exact_test",
    "peer_flexible_test",
    "pop_pairing",
    "python_exact_counts",
    "python_exact_score",
    "python_freeze",
    "rule_test",
    "score_exact",
    "score_flexible",
]

PairTest = Callable[[ToolCall], bool]
"""Do an actual call's arguments satisfy one expected call's? (Names are compared separately.)"""

Verdict = tuple[float, str, dict[str, Any]]
"""A score value, its explanation and its details."""

_ABSENT = object()
_TRUE = ("true",)
_FALSE = ("false",)
_HAS_ARGS = ("value", "raw")


def _always(actual: ToolCall) -> bool:
    return True


def _always_args(args: JsonValue) -> bool:
    return True


def python_freeze(value: JsonValue) -> Any:
    """A hashable form equal exactly when `JSON.stringify(stableSerialize(value))` is (`freeze`).

    Numbers become doubles (`1 == 1.0`, `-0.0 == 0`); NaN and infinities read as `null`, as
    `JSON.stringify` writes them; booleans are tagged so `true` never meets `1`.
    """
    kind = type(value)
    if kind is dict:
        return ("{", tuple(sorted((key, python_freeze(item)) for key, item in value.items())))
    if kind is list or kind is tuple:
        return ("[", tuple(python_freeze(item) for item in value))
    if kind is bool:
        return _TRUE if value else _FALSE
    if kind is int or kind is float:
        try:
            number = float(value)
        except OverflowError:
            return None
        return number if math.isfinite(number) else None
    return value


freeze: Callable[[JsonValue], Any] = python_freeze if compiled is None else compiled.freeze
"""`python_freeze`, compiled where the install built it (`tests/test_equal_accel.py`)."""


def args_key(call: ToolCall) -> Any:
    """Evalite's flexible-mode view of a call's arguments; no arguments is its own value."""
    return freeze(call.args) if call.args_state in _HAS_ARGS else _ABSENT


def neutral(call: ToolCall) -> dict[str, Any]:
    """A call as `{name, args?}`, the JSON form details use (`args` absent when the call had none)."""
    if call.args_state in _HAS_ARGS:
        return {"name": call.name, "args": call.args}
    return {"name": call.name}


def peer_exact_args_test(expected: ToolCall) -> ArgsTest | None:
    """Evalite's `getArgumentScore` as a test of the actual call's `args` alone, when it needs no more.

    No expected args match anything. Otherwise an actual call without args (`args` is None then) must
    not match: a test that could accept None (an expected `null`, or NaN and tuples, which take the
    full JSON walk) also needs the call's `args_state`, and is left to `peer_exact_test` (None here).
    """
    if expected.args_state not in _HAS_ARGS:
        return _always_args
    want = expected.args
    if want is None or equality_plan(want)[0]:
        return None
    return equality_test(want)


def peer_exact_test(expected: ToolCall) -> PairTest:
    """Evalite's `getArgumentScore`: no expected args match anything; no actual args match nothing else."""
    args_test = peer_exact_args_test(expected)
    if args_test is _always_args:
        return _always
    if args_test is not None:
        return lambda actual: bool(args_test(actual.args))  # absent args are None, never equal to `want`
    same = equality_test(expected.args)
    return lambda actual: actual.args_state in _HAS_ARGS and same(actual.args)


def peer_flexible_test(expected: ToolCall) -> PairTest:
    """Evalite's serialized-key comparison, for calls without a rule when other calls have one."""
    want = args_key(expected)
    return lambda actual: args_key(actual) == want


def rule_test(expected: ToolCall, rule: ArgsMatch) -> PairTest:
    return rule.compile(expected)


def _clamp01(value: float) -> float:
    return max(0.0, min(1.0, value))


_MEMO_LIMIT = 1024
"""Most (value, explanation) pairs a scorer keeps; they depend only on the counts."""


def _exact_text(
    counts: tuple[int, int, int], m: int, name_only_w: float, wrong_w: float, memo: dict[Any, tuple[float, str]]
) -> tuple[float, str]:
    """Score and explanation for the counts, in Evalite's operation order, kept in `memo` (the float
    formatting costs more than the counting; the caller looks there first)."""
    exact, name_only, wrong = counts
    denom = max(m, 1)
    raw = (exact + name_only_w * name_only) / denom - wrong_w * (wrong / denom)
    value = _clamp01(raw)
    explanation = (
        f"exact mode: exact={exact}, name_only={name_only}, wrong_or_missing={wrong}, d=max(expected={m}, 1): "
        f"({exact} + {name_only_w:g}*{name_only})/{denom} - {wrong_w:g}*({wrong}/{denom}) = {raw:.6g}, "
        f"clamped to [0, 1]: {value:.3f}"
    )
    if len(memo) < _MEMO_LIMIT:
        memo[counts] = (value, explanation)
    return value, explanation


def score_exact(
    names: Sequence[str],
    tests: Sequence[PairTest],
    actual: Sequence[ToolCall],
    weights: tuple[float, float],
    memo: dict[Any, tuple[float, str]],
) -> Verdict:
    """`zip(output, reference)`: one pair per actual call; every extra call is wrong twice.

    `weights` is `(name_only, wrong_penalty)`; `memo` is the scorer's own cache of explanations.
    """
    m, n = len(names), len(actual)
    exact = name_only = wrong = 0
    for call, name, test in zip(actual, names, tests, strict=False):  # stops at the shorter list
        if call.name != name:
            wrong += 1
        elif test(call):
            exact += 1
        else:
            name_only += 1
    if n > m:
        wrong += 2 * (n - m)  # unpaired, then again as extras
    return _exact_verdict((exact, name_only, wrong), m, n, weights, memo)


ExactPlan = tuple[
    tuple[str, ...],  # the expected calls' names
    tuple[ArgsTest, ...],  # each expected call's test of an actual call's `args` (`peer_exact_args_test`)
    float,  # weights.name_only
    float,  # weights.wrong_penalty
    dict[Any, tuple[float, str]],  # the scorer's memo of (value, explanation) by counts
    Callable[..., tuple[float, str]],  # `_exact_text` on a memo miss (the Python twin calls it via `_exact_verdict`)
    type[Score],
    frozenset[str],  # `Score`'s fields
    str,  # the scorer's name
    float,  # its threshold
]
"""What `exact_score` needs, built once per scorer (`exact_plan`): a tuple, which the compiled twin reads by index."""


def exact_plan(
    names: tuple[str, ...],
    args_tests: tuple[ArgsTest, ...],
    weights: tuple[float, float],
    memo: dict[Any, tuple[float, str]],
    *,
    scorer_name: str,
    threshold: float,
) -> ExactPlan:
    """The plan of a scorer in exact mode whose every expected call's test reads the actual `args` alone."""
    name_only_w, wrong_w = weights
    fields = frozenset(Score.model_fields)
    return (
        names,
        args_tests,
        float(name_only_w),
        float(wrong_w),
        memo,
        _exact_text,
        Score,
        fields,
        scorer_name,
        float(threshold),
    )


def python_exact_score(plan: ExactPlan, actual: tuple[ToolCall, ...]) -> Score:
    """`score_exact` and the scorer's `_result` in one step, when every expected call's test reads the actual
    `args` alone (`peer_exact_args_test`): the same counts, value, explanation, details and label.

    Exact mode's common case, scored at rates where each Python call on the way is a tenth of the work; the
    install compiles it (`exact_score`), and `tests/test_equal_accel.py` holds the two to the same scores.
    """
    names, tests, name_only_w, wrong_w, memo, _text, score_type, fields, scorer_name, threshold = plan
    m, n = len(names), len(actual)
    exact, name_only, wrong = python_exact_counts(names, tests, actual)
    if n > m:
        wrong += 2 * (n - m)  # unpaired, then again as extras
    value, explanation, details = _exact_verdict((exact, name_only, wrong), m, n, (name_only_w, wrong_w), memo)
    value = float(value)
    label = "pass" if value >= threshold else "fail"  # as ScorerBase._result labels
    values = {"name": scorer_name, "value": value, "label": label, "explanation": explanation, "details": details}
    return _unvalidated(score_type, values, set(fields))


def python_exact_counts(
    names: tuple[str, ...], args_tests: tuple[ArgsTest, ...], actual: tuple[ToolCall, ...]
) -> tuple[int, int, int]:
    """(exact, name only, wrong) of the pairs `zip` makes: a call of another name is wrong, else its test decides."""
    exact = name_only = wrong = 0
    for call, name, test in zip(actual, names, args_tests, strict=False):  # stops at the shorter list
        if call.name != name:
            wrong += 1
        elif test(call.args):
            exact += 1
        else:
            name_only += 1
    return exact, name_only, wrong


exact_counts: Callable[[tuple[str, ...], tuple[ArgsTest, ...], tuple[ToolCall, ...]], tuple[int, int, int]] = (
    python_exact_counts if compiled is None else compiled.exact_counts
)
"""`python_exact_counts`, compiled where the install built it (`tests/test_equal_accel.py`)."""

exact_score: Callable[[ExactPlan, tuple[ToolCall, ...]], Score] = (
    python_exact_score if compiled is None else compiled.exact_score
)
"""`python_exact_score`, compiled where the install built it (`tests/test_equal_accel.py`)."""


def _exact_verdict(
    counts: tuple[int, int, int], m: int, n: int, weights: tuple[float, float], memo: dict[Any, Any]
) -> Verdict:
    value, explanation = memo.get(counts) or _exact_text(counts, m, weights[0], weights[1], memo)
    exact, name_only, wrong = counts
    details = {
        "mode": "exact",
        "exact_matches": exact,
        "name_only_matches": name_only,
        "wrong_or_missing": wrong,
        "totals": {"reference": m, "output": n},
    }
    return value, explanation, details


Taken = tuple[list[int], list[int]]
"""Exact matches: for each actual call the expected call (index) it took, -1 for none; then the
expected calls no actual call took."""


KeyGroups = tuple[dict[Any, int], tuple[tuple[int, ...], ...]]
"""Expected calls grouped by key (`key_groups`): each key's group number, and each group's calls in order."""


def key_groups(keys: Sequence[Any]) -> KeyGroups:
    """The groups `pop_pairing` takes from, made once per scorer: a key is hashed here, not per evaluation."""
    number: dict[Any, int] = {}
    groups: list[list[int]] = []
    for j, key in enumerate(keys):
        g = number.setdefault(key, len(groups))
        if g == len(groups):
            groups.append([])
        groups[g].append(j)
    return number, tuple(tuple(group) for group in groups)


def pop_pairing(groups: KeyGroups, actual: Sequence[ToolCall]) -> Taken:
    """Evalite's exact matches: expected calls grouped by key, each actual call takes its group's
    *last* remaining call."""
    number, members = groups
    left = [len(group) for group in members]
    taken: list[int] = []
    for call in actual:
        g = number.get((call.name, args_key(call)))
        if g is None or not left[g]:
            taken.append(-1)
        else:
            left[g] -= 1
            taken.append(members[g][left[g]])
    return taken, [j for g, group in enumerate(members) for j in group[: left[g]]]


def name_only_pairs(expected: Sequence[ToolCall], actual: Sequence[ToolCall], taken: Taken) -> dict[int, int]:
    """Evalite's name-only matches, actual index -> expected index: a call no expected call took counts
    name-only while an expected call of its name is still missing. Evalite only counts them; each is
    paired here with the earliest such expected call, so a diff can show the pair."""
    took, missing_idx = taken
    waiting: dict[str, list[int]] = {}
    for i in sorted(missing_idx, reverse=True):  # pop() then gives the earliest
        waiting.setdefault(expected[i].name, []).append(i)
    out: dict[int, int] = {}
    for j, call in enumerate(actual):
        if took[j] < 0:
            queue = waiting.get(call.name)
            if queue:
                out[j] = queue.pop()
    return out


def score_flexible(
    expected: Sequence[ToolCall], actual: Sequence[ToolCall], name_only_w: float, extra_w: float, taken: Taken
) -> Verdict:
    """Exact matches first (`taken`: by Evalite's serialized key, `pop_pairing`, or by a matching under
    argument rules), then leftovers are name-only while expected calls of their name are still missing,
    else extras."""
    took, missing_idx = taken
    named = name_only_pairs(expected, actual, taken)
    matches = [call for call, i in zip(actual, took, strict=True) if i >= 0]
    name_only = [actual[j] for j in named]
    extras = [call for j, (call, i) in enumerate(zip(actual, took, strict=True)) if i < 0 and j not in named]
    missing_calls = [expected[j] for j in missing_idx]
    missing = len(missing_idx) - len(named)
    m, n, exact = len(expected), len(actual), len(matches)
    denom = max(m, 1)
    raw = (exact + name_only_w * len(name_only)) / denom - extra_w * (len(extras) / denom)
    value = _clamp01(raw)
    explanation = (
        f"flexible mode: exact={exact}, name_only={len(name_only)}, extras={len(extras)}, missing={missing}, "
        f"d=max(expected={m}, 1): ({exact} + {name_only_w:g}*{len(name_only)})/{denom} - "
        f"{extra_w:g}*({len(extras)}/{denom}) = {raw:.6g}, clamped to [0, 1]: {value:.3f}"
    )
    details = {
        "mode": "flexible",
        "exact_matches": exact,
        "name_only_matches": len(name_only),
        "extras": len(extras),
        "missing": missing,
        "totals": {"reference": m, "output": n},
        "details": {
            "matches": [neutral(call) for call in matches],
            "name_only_matches": [neutral(call) for call in name_only],
            "extras": [neutral(call) for call in extras],
            "missing_tool_calls": [neutral(call) for call in missing_calls],
        },
    }
    return value, explanation, details
