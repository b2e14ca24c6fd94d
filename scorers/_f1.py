"""Precision, recall and F1 of the calls made against the calls expected: tpmjs' tool-call accuracy.

Reproduces `toolCallAccuracyScoreTool` from `@tpmjs/tools-tool-call-accuracy-score` 0.2.0 (commit
3e0f487) as released, greedy pairing and rounding included, except for three plain bugs listed
under "Deviations from tpmjs" in `F1`. Optimal pairing and argument rules are opt-in extensions;
without them every score equals tpmjs'.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from decimal import ROUND_HALF_UP, Decimal
from typing import Any, ClassVar, Literal

from pydantic import Field, PrivateAttr

from toolscore.scorers._base import ScorerBase
from toolscore.scorers._json_equality import equality_test
from toolscore.scorers._matching import ArgsMatch, ExpectedCall, json_equal, resolve_args_match
from toolscore.scorers._model import AgentRun, Score, ToolCall
from toolscore.scorers._pairing import Pairing, max_matching

__all__ = ["F1", "js_round_3", "js_to_fixed_1", "peer_args_equal"]


def js_round_3(x: float) -> float:
    """`Math.round(x * 1000) / 1000`: halves round up (0.0625 -> 0.063), unlike Python's `round`."""
    y = x * 1000
    r = math.floor(y)
    if y - r >= 0.5:  # exact for doubles; avoids floor(y + 0.5) rounding 0.49999999999999994 up
        r += 1
    return r / 1000


def js_to_fixed_1(x: float) -> str:
    """`x.toFixed(1)`: rounds the exact binary value, halves up (matters for 6.25 -> `6.3`)."""
    return str(Decimal(x).quantize(Decimal("0.1"), rounding=ROUND_HALF_UP))


def peer_args_equal(expected: ToolCall, actual: ToolCall) -> bool:
    """tpmjs' `argsEqual` with its bugs fixed: JSON deep equality, absent only equals absent."""
    if not expected.has_args or not actual.has_args:
        return not expected.has_args and not actual.has_args
    return json_equal(expected.args, actual.args)


def _peer_test(expected: ToolCall) -> Callable[[ToolCall], bool]:
    """`peer_args_equal(expected, actual)` compiled for one expected call."""
    if not expected.has_args:
        return lambda actual: not actual.has_args
    same = equality_test(expected.args)
    return lambda actual: actual.has_args and same(actual.args)


def _call_json(call: ToolCall) -> dict[str, Any]:
    """A call in tpmjs' `{tool, args}` shape (args left out when the call had none)."""
    out: dict[str, Any] = {"tool": call.name}
    if call.has_args:
        out["args"] = call.args
    if call.call_id is not None:
        out["call_id"] = call.call_id
    return out


Equal = Callable[[int, int], bool]


def _by_name(actual: tuple[ToolCall, ...]) -> dict[str, list[int]]:
    """Indices of the actual calls per tool name, in call order."""
    out: dict[str, list[int]] = {}
    for j, act in enumerate(actual):
        out.setdefault(act.name, []).append(j)
    return out


def _greedy(expected: list[ExpectedCall], actual: tuple[ToolCall, ...], equal: Equal) -> dict[int, tuple[int, bool]]:
    """tpmjs' pairing: per expected call, the first unused equal call, else the first same-named."""
    used: set[int] = set()
    pairs: dict[int, tuple[int, bool]] = {}
    by_name = _by_name(actual)
    for i, exp in enumerate(expected):
        same_name = [j for j in by_name.get(exp.name, ()) if j not in used]
        hit = next(((j, True) for j in same_name if equal(i, j)), None)
        if hit is None and same_name:
            hit = (same_name[0], False)
        if hit is not None:
            used.add(hit[0])
            pairs[i] = hit
    return pairs


def _optimal(expected: list[ExpectedCall], actual: tuple[ToolCall, ...], equal: Equal) -> dict[int, tuple[int, bool]]:
    """Most correct pairs, then most name-only pairs among the rest.

    Doing it in two rounds loses nothing: name-only edges join every same-named pair, so whichever
    correct pairs are chosen, each tool name still ends with min(expected, actual) pairs in all.
    """
    by_name = _by_name(actual)
    names = [by_name.get(exp.name, []) for exp in expected]
    correct, taken = max_matching([[j for j in js if equal(i, j)] for i, js in enumerate(names)], len(actual))
    pairs = {i: (j, True) for i, j in enumerate(correct) if j >= 0}
    rest = [[] if i in pairs else [j for j in js if taken[j] < 0] for i, js in enumerate(names)]
    named, _ = max_matching(rest, len(actual))
    pairs.update({i: (j, False) for i, j in enumerate(named) if j >= 0})
    return pairs


class F1(ScorerBase):
    """F1 of precision (correct / calls made) and recall (correct / calls expected), as tpmjs 0.2.0.

    A *correct* call has the expected name and equal arguments; an *incorrect* one has the name but
    other arguments (it takes up the actual call yet earns nothing); a *missed* expected call got no
    call of its name; an *extra* call was paired with nothing. Edge cases: nothing expected and
    nothing called -> 1.0; nothing expected but calls made -> 0; calls expected, none made -> 0.
    The score is rounded to 3 decimals half up; the summary uses the unrounded score.

    Greedy pairing (the default, as tpmjs) walks the expected calls in order and takes the first
    unused actual call with equal arguments, else the first unused one with the same name, so it is
    not optimal: expected `[a{x:1}, a{x:2}]` vs actual `[a{x:2}, a{x:3}]` gives 0 correct where 1
    was possible. `pairing="optimal"` maximises correct pairs, then name-only pairs, so neither
    list order nor repeated calls change the score.

    Argument equality is tpmjs' except for the deviations below: key order is ignored, `1` equals
    `1.0`, `"1"` and `true` differ from `1`. `args_match` (every call), `tool_args` (per tool name)
    and an expected call's own `match` replace it (see `toolscore.scorers._matching`).

    Deviations from tpmjs
    ---------------------
    toolscore differs from tpmjs 0.2.0 only where tpmjs is plainly buggy; every other result,
    greedy pairing quirks included, is the same.

    1. Null or missing arguments. Whenever tpmjs compares two same-named calls and either has `null`
       or no arguments, it throws `TypeError: Cannot convert undefined or null to object`.
       toolscore compares them as values: `null` equals `null`, absent equals absent, and neither
       equals `{}` or the other.
       expected `[{"tool": "search", "args": null}]`, actual `[{"tool": "search", "args": null}]`:
       tpmjs throws; toolscore scores 1.0 (one correct call).
       expected `[{"tool": "search"}]`, actual `[{"tool": "search", "args": {}}]`: tpmjs throws;
       toolscore scores 0.0 (one incorrect call).
    2. Arrays against objects. tpmjs compares arrays by their index keys, so `[]` equals `{}` and
       `[1, 2]` equals `{"0": 1, "1": 2}`. In toolscore an array never equals an object.
       expected args `{"l": []}`, actual args `{"l": {}}`: tpmjs 1.0; toolscore 0.0 (incorrect).
    3. Arguments that are not objects. tpmjs lists their keys, so any two numbers, booleans or empty
       strings are equal to each other and to `{}` (`5` == `7` == `true` == `{}`), and a string
       equals the object of its characters. toolscore compares them by value.
       expected args `5`, actual args `{}`: tpmjs 1.0; toolscore 0.0 (incorrect).
       expected args `5`, actual args `5`: 1.0 in both.
    """

    type: Literal["f1"] = "f1"
    keys_only_note: ClassVar[bool] = True
    expected: list[ExpectedCall] = Field(description="The calls that should be made; any `ToolCall` spelling.")
    pairing: Pairing = Field(
        default="greedy", description="`greedy` (tpmjs, expected order) or `optimal` (most correct pairs)."
    )
    args_match: ArgsMatch | None = Field(
        default=None, description="Argument rule for every call. Default: none (tpmjs equality)."
    )
    tool_args: dict[str, ArgsMatch] = Field(
        default_factory=dict, description="Argument rule per tool name; wins over `args_match`."
    )

    _tests: tuple[Callable[[ToolCall], bool], ...] = PrivateAttr(default=())

    def model_post_init(self, context: Any, /) -> None:
        """One compiled argument test per expected call: scoring then does no rule resolution."""
        super().model_post_init(context)
        tests = []
        for exp in self.expected:
            rule = resolve_args_match(exp, self.tool_args, self.args_match)
            tests.append(_peer_test(exp) if rule is None else rule.compile(exp))
        self._tests = tuple(tests)

    def _equal(self, actual: tuple[ToolCall, ...]) -> Equal:
        tests = self._tests
        return lambda i, j: tests[i](actual[j])

    def pairs(self, actual: tuple[ToolCall, ...]) -> dict[int, tuple[int, bool]]:
        """Expected index -> (actual index, arguments equal), as this scorer pairs the calls; a missed
        expected call has no entry. Public so a diff shows the pairs the score counted."""
        pair = _optimal if self.pairing == "optimal" else _greedy
        return pair(self.expected, actual, self._equal(actual))

    def _breakdown(self, actual: tuple[ToolCall, ...]) -> dict[str, list[dict[str, Any]]]:
        """tpmjs' four lists: correct, incorrect, missed (expected order) and extra (actual order)."""
        pairs = self.pairs(actual)
        out: dict[str, list[dict[str, Any]]] = {key: [] for key in ("correct", "incorrect", "missed", "extra")}
        for i, exp in enumerate(self.expected):
            if i not in pairs:
                missed = {"expected": _call_json(exp), "status": "missed", "args_match": False}
                out["missed"].append(missed | {"details": "Expected call was not made"})
                continue
            j, ok = pairs[i]
            item = {"expected": _call_json(exp), "actual": _call_json(actual[j])}
            if ok:
                out["correct"].append(item | {"status": "correct", "args_match": True})
            else:
                wrong = item | {"status": "incorrect", "args_match": False}
                out["incorrect"].append(wrong | {"details": "Tool name matches but arguments differ"})
        taken = {j for j, _ in pairs.values()}
        out["extra"] = [_call_json(act) for j, act in enumerate(actual) if j not in taken]
        return out

    def _score(self, run: AgentRun) -> Score:
        lists = self._breakdown(run.calls)
        n = {key: len(items) for key, items in lists.items()}
        raw, why = self._f1(n["correct"], len(run.calls))
        summary = (
            f"Accuracy Score: {js_to_fixed_1(raw * 100)}% | Correct: {n['correct']}/{len(self.expected)}"
            f" | Incorrect: {n['incorrect']} | Missed: {n['missed']} | Extra: {n['extra']}"
        )
        details = {
            "total_expected": len(self.expected),
            "total_actual": len(run.calls),
            "correct_calls": lists["correct"],
            "incorrect_calls": lists["incorrect"],
            "missed_calls": lists["missed"],
            "extra_calls": lists["extra"],
            "summary": summary,
        }
        value = js_round_3(raw)
        counts = ", ".join(f"{key}={count}" for key, count in n.items())
        return self._result(value, f"{counts}; {why} -> {value:g} ({self.pairing} pairing)", details)

    def _f1(self, correct: int, n_actual: int) -> tuple[float, str]:
        """The unrounded score and how it was reached, in tpmjs' operation order."""
        n_expected = len(self.expected)
        if n_expected == 0:
            return (1.0, "nothing expected, nothing called") if n_actual == 0 else (0.0, "nothing expected")
        precision = correct / n_actual if n_actual > 0 else 0.0
        recall = correct / n_expected
        f1 = 2 * precision * recall / (precision + recall) if precision + recall > 0 else 0.0
        return f1, f"precision={correct}/{n_actual}, recall={correct}/{n_expected}, F1={f1:.6g}"
