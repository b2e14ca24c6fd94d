"""The readable diff between the calls a scorer expected and the calls a run made.

A score says *that* a run failed; the diff says *why*, call by call: which expected call is missing,
which call was not asked for, which came out of order, which had the right name but other
arguments (naming the keys that differ), and which stood where another was expected. The expected
calls are read from the scorer's own parameters (`expected` of trajectory and f1, `expected_order` /
`expected_tool` of tool_selection), and arguments are compared by the rule the scorer resolves for
each call (`toolscore.scorers._matching`). The rows are the pairs the score counted (`Trajectory.pairs`,
`F1.pairs`, `ToolSelection.pairs`: by position in trajectory's exact and strict modes and under a strict
`expected_order`), so a row is `ok` exactly when the score counted that call as a match: the diff explains
the score rather than judging anew. Calls the score left unpaired are then paired by name alone, as wrong
arguments, to show what differs; calls the score does not read at all (tool_selection's skipped states)
are listed as `not_counted`.

The reference-free scorers (`tool_policy`, `args_valid`, `efficiency`, `tool_errors`) name no expected calls:
their diff lists the run's calls, each `ok` or `broken` with the rules it broke (`RuleScorer.violations`,
the very list the score counted), and a `required` tool the run never called as `missing`.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass
from operator import attrgetter
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from toolscore.scorers._base import ScorerBase
from toolscore.scorers._f1 import F1
from toolscore.scorers._key_paths import MISSING, drop_path, lookup_path
from toolscore.scorers._matching import ArgsMatch, json_equal, resolve_args_match
from toolscore.scorers._model import AgentRun, ToolCall
from toolscore.scorers._tool_selection import ToolSelection
from toolscore.scorers._trajectory import Trajectory
from toolscore.scorers._violations import RuleScorer

__all__ = ["CallDiff", "DiffRow", "KeyDiff", "diff_calls", "diff_for_scorer"]

_ANY_ARGS = ArgsMatch()
_UNSTATED = ("absent", "not_captured")
_NOT_CAPTURED = "<not captured>"
_NO_ARGS = "<no arguments>"


class KeyDiff(BaseModel):
    """One argument key that differs; `key` is empty when the arguments differ as a whole (not objects)."""

    model_config = ConfigDict(frozen=True)

    key: str
    kind: Literal["missing", "extra", "changed"] = Field(description="Missing from the call, not expected, or other.")
    expected: Any = None
    actual: Any = None


KeysOf = Callable[[int, ToolCall], list[KeyDiff]]
"""The differing keys of expected call `i` and the actual call paired with it under other arguments."""


class DiffRow(BaseModel):
    """One expected call and the call paired with it, or an unpaired call on either side (1-based indices)."""

    model_config = ConfigDict(frozen=True)

    status: Literal["ok", "wrong_args", "wrong_call", "missing", "extra", "not_counted", "broken"] = Field(
        description="`wrong_call`: another call made where this one was expected (pairing by position); "
        "`not_counted`: a call the score does not read (tool_selection: a state it skips, or no name); "
        "`broken`: a call that broke a rule of a reference-free scorer (`rules` says which)."
    )
    expected: dict[str, Any] | None = Field(default=None, description="`{name, args?}` of the expected call.")
    expected_index: int | None = None
    actual: dict[str, Any] | None = Field(
        default=None,
        description="`{name, args?}` of the call made; `state` too when it is `not_counted`; `model_only: true` "
        "when only the model's output recorded it.",
    )
    actual_index: int | None = None
    out_of_order: bool = Field(default=False, description="Paired, but called out of the expected order.")
    keys: list[KeyDiff] = Field(default_factory=list, description="The differing argument keys (`wrong_args`).")
    allowed: bool = Field(default=False, description="A difference the scorer's mode tolerates (subset, superset).")
    rules: list[str] = Field(
        default_factory=list, description="The rules this call broke, `rule: why` (reference-free scorers)."
    )

    @property
    def ok(self) -> bool:
        return self.allowed or (self.status in ("ok", "not_counted") and not self.out_of_order)


class CallDiff(BaseModel):
    """Expected against actual calls for one scorer; `rows` in expected order, extras where they were made."""

    model_config = ConfigDict(frozen=True)

    scorer: str
    rule: str = Field(description="How calls were compared, for the reader: `trajectory mode=exact`.")
    ordered: bool
    positional: bool = Field(default=False, description="Call i was compared with expected call i (no reordering).")
    rows: list[DiffRow]

    @property
    def ok(self) -> bool:
        return all(row.ok for row in self.rows)

    @property
    def problems(self) -> list[DiffRow]:
        return [row for row in self.rows if not row.ok]


def _view(call: ToolCall, state: bool = False) -> dict[str, Any]:
    """`{name, args?}`; with `state`, the call's state too (`state: null` when none was recorded); `model_only:
    true` for a call seen only in the model's output (no tool span recorded it)."""
    out: dict[str, Any] = {"name": call.name}
    if call.has_args:
        out["args"] = call.args
    elif call.args_state == "not_captured":
        out["args"] = _NOT_CAPTURED
    if state:
        out["state"] = call.state
    if call.model_only:
        out["model_only"] = True
    return out


def _args_dict(call: ToolCall) -> Any:
    return call.args if call.has_args and call.args is not None else {}


def key_diffs(expected: ToolCall, actual: ToolCall, rule: ArgsMatch) -> list[KeyDiff]:
    """The keys (or dotted paths) on which `actual`'s arguments fail `expected`'s under `rule`."""
    if rule.mode == "ignore":
        return []
    if actual.args_state == "not_captured":
        return [KeyDiff(key="", kind="changed", expected=expected.args, actual=_NOT_CAPTURED)]
    got: Any = _args_dict(actual)
    want: Any = {} if expected.args_state in _UNSTATED else _args_dict(expected)
    if not isinstance(want, dict) or not isinstance(got, dict):
        return [KeyDiff(key="", kind="changed", expected=want, actual=got)]
    ignored = set(rule.ignore_keys)
    want, got = rule.comparable(want, got)
    actual_subset = rule.mode == "actual_subset"
    out: list[KeyDiff] = []
    for key, matcher in rule.matchers.items():
        if key in ignored:
            continue
        value = lookup_path(got, key)
        if value is MISSING and not actual_subset:
            out.append(KeyDiff(key=key, kind="missing", expected=matcher.model_dump()))
        elif value is not MISSING and not matcher.test(value):
            out.append(KeyDiff(key=key, kind="changed", expected=matcher.model_dump(), actual=value))
        want, got = drop_path(want, key), drop_path(got, key)
    for key, value in want.items():
        if key in rule.matchers:
            continue
        if key not in got:
            if not actual_subset:
                out.append(KeyDiff(key=key, kind="missing", expected=value))
        elif not json_equal(value, got[key]):
            out.append(KeyDiff(key=key, kind="changed", expected=value, actual=got[key]))
    if expected.args_state not in _UNSTATED and (rule.mode == "exact" or actual_subset):
        extra = [k for k in got if k not in want and k not in rule.matchers]
        out.extend(KeyDiff(key=key, kind="extra", actual=got[key]) for key in extra)
    return out


@dataclass(slots=True)
class _Pairs:
    exact: dict[int, int]
    named: dict[int, int]


def _pair(expected: Sequence[ToolCall], actual: Sequence[ToolCall], args_ok: Callable[[int, ToolCall], bool]) -> _Pairs:
    """Each expected call takes the first unused call of its name with matching arguments; the
    expected calls still alone then take the first unused call of their name (wrong arguments)."""
    used: set[int] = set()
    exact: dict[int, int] = {}
    for i, exp in enumerate(expected):
        same = (j for j, act in enumerate(actual) if j not in used and act.name == exp.name and args_ok(i, act))
        j = next(same, None)
        if j is not None:
            used.add(j)
            exact[i] = j
    return _Pairs(exact, _by_name(expected, actual, exact))


def _by_name(
    expected: Sequence[ToolCall], actual: Sequence[ToolCall], paired: Mapping[int, int], skip: Collection[int] = ()
) -> dict[int, int]:
    """The expected calls not in `paired` take the first call of their name not in it (nor in `skip`)."""
    used = {*paired.values(), *skip}
    named: dict[int, int] = {}
    for i, exp in enumerate(expected):
        if i in paired:
            continue
        j = next((j for j, act in enumerate(actual) if j not in used and act.name == exp.name), None)
        if j is not None:
            used.add(j)
            named[i] = j
    return named


def _in_order(pairs: dict[int, int]) -> set[int]:
    """Expected indices whose pairs form a longest run in order (a longest increasing subsequence)."""
    items = sorted(pairs.items())
    best: list[list[int]] = []
    for k, (_, j) in enumerate(items):
        chain = max((c for c in best if items[c[-1]][1] < j), key=len, default=[])
        best.append([*chain, k])
    longest = max(best, key=len, default=[])
    return {items[k][0] for k in longest}


def diff_calls(
    expected: Sequence[ToolCall],
    actual: Sequence[ToolCall],
    *,
    rules: Sequence[ArgsMatch] | None = None,
    ordered: bool = True,
    allow_missing: bool = False,
    allow_extra: bool = False,
    scorer: str = "",
    rule: str = "",
    pairs: Mapping[int, tuple[int, bool]] | None = None,
    keys_of: KeysOf | None = None,
    positional: bool = False,
    not_counted: Collection[int] = (),
) -> CallDiff:
    """Pair expected and actual calls and classify every call; `rules[i]` compares expected call i's args.

    `pairs`: the scorer's own pairing (expected index -> (actual index, counted as a match)) instead of
    each expected call taking the first fitting one; the calls it leaves alone are then paired by name.
    A pair of different names is a `wrong_call`. `keys_of`: the differing keys of a wrong-args pair
    instead of `key_diffs` under `rules[i]`. `positional`: `pairs` compare call i with expected call i.
    `not_counted`: indices of actual calls the score does not read; they are listed where they were made
    (with their state) and never paired, so they cannot stand for an expected call the score missed.
    """
    rules = list(rules) if rules is not None else [_ANY_ARGS] * len(expected)
    if pairs is None:
        found = _pair(expected, actual, lambda i, act: rules[i].matches(expected[i], act))
    else:
        found = _Pairs({i: j for i, (j, ok) in pairs.items() if ok}, {i: j for i, (j, ok) in pairs.items() if not ok})
        found.named.update(_by_name(expected, actual, found.exact | found.named, not_counted))
    keys_of = keys_of or (lambda i, act: key_diffs(expected[i], act, rules[i]))
    paired = found.exact | found.named
    in_order = _in_order(paired) if ordered and not positional else set(paired)
    keyed: list[tuple[tuple[int, int, int], DiffRow]] = []
    for i, exp in enumerate(expected):
        j = paired.get(i)
        if j is None:
            row = DiffRow(status="missing", expected=_view(exp), expected_index=i + 1, allowed=allow_missing)
        else:
            act = actual[j]
            status: Literal["ok", "wrong_args", "wrong_call"] = (
                "ok" if i in found.exact else "wrong_args" if act.name == exp.name else "wrong_call"
            )
            row = DiffRow(
                status=status,
                expected=_view(exp),
                expected_index=i + 1,
                actual=_view(act),
                actual_index=j + 1,
                out_of_order=i not in in_order,
                keys=keys_of(i, act) if status == "wrong_args" else [],
            )
        keyed.append(((i, 0, 0), row))
    after = {j: i for i, j in paired.items()}
    last = -1
    for j, act in enumerate(actual):
        if j in after:
            last = max(last, after[j])
            continue
        if j in not_counted:
            row = DiffRow(status="not_counted", actual=_view(act, state=True), actual_index=j + 1)
        else:
            row = DiffRow(status="extra", actual=_view(act), actual_index=j + 1, allowed=allow_extra)
        keyed.append(((last, 1, j), row))
    rows = [row for _, row in sorted(keyed, key=lambda item: item[0])]
    return CallDiff(scorer=scorer, rule=rule, ordered=ordered, positional=positional, rows=rows)


def _whole(exp: ToolCall, act: ToolCall) -> KeyDiff:
    """The arguments as a whole, for a pair the scorer told apart where no key differs under a rule
    (a scorer's own comparison: "no arguments" only equals none)."""
    return KeyDiff(
        key="", kind="changed", expected=_view(exp).get("args", _NO_ARGS), actual=_view(act).get("args", _NO_ARGS)
    )


def _f1_diff(scorer: F1, actual: Sequence[ToolCall]) -> CallDiff:
    """The pairs f1 counted, greedy or optimal; without a rule arguments compare as f1 compares them:
    JSON-equal, and no arguments only equal to none (an expected call without `args` wants none)."""
    calls = tuple(actual)
    rules = [resolve_args_match(call, scorer.tool_args, scorer.args_match) for call in scorer.expected]

    def keys_of(i: int, act: ToolCall) -> list[KeyDiff]:
        exp, rule = scorer.expected[i], rules[i]
        found = key_diffs(exp, act, rule or _ANY_ARGS) if rule is not None or (exp.has_args and act.has_args) else []
        return found or [_whole(exp, act)]

    return diff_calls(
        scorer.expected,
        calls,
        rules=[rule or _ANY_ARGS for rule in rules],
        ordered=False,
        scorer=scorer.scorer_name,
        rule=f"f1 pairing={scorer.pairing}",
        pairs=scorer.pairs(calls),
        keys_of=keys_of,
    )


def _trajectory_diff(scorer: Trajectory, actual: Sequence[ToolCall]) -> CallDiff:
    """The pairs the mode counted: by position in exact and strict, by name and arguments otherwise.
    Differing keys are read under each call's rule (`ArgsMatch()` without one); where that finds none,
    the mode's own comparison told the arguments apart (Evalite's flexible mode: no arguments only equal
    none), and they are shown whole."""
    calls = tuple(actual)
    rules = [resolve_args_match(call, scorer.tool_args, scorer.args_match) or _ANY_ARGS for call in scorer.expected]
    positional = scorer.mode in ("exact", "strict")
    return diff_calls(
        scorer.expected,
        calls,
        rules=rules,
        ordered=positional,
        allow_missing=scorer.mode == "subset",
        allow_extra=scorer.mode == "superset",
        scorer=scorer.scorer_name,
        rule=f"trajectory mode={scorer.mode}",
        pairs=scorer.pairs(calls),
        keys_of=lambda i, act: key_diffs(scorer.expected[i], act, rules[i]) or [_whole(scorer.expected[i], act)],
        positional=positional,
    )


def _tool_selection_diff(scorer: ToolSelection, actual: Sequence[ToolCall]) -> CallDiff | None:
    """The pairs the score read (`ToolSelection.pairs`): by position under a strict `expected_order`,
    else each expected name with the first counted call of that name, so a name expected twice shows
    that call again, out of order, as Mastra's order check fails it. Calls in a state the score skips
    are `not_counted`. None without an expected name (the score is 0 whatever the calls)."""
    if not scorer.expected_names:
        return None
    calls = tuple(sorted(actual, key=attrgetter("message_index")))  # the score's reading order (stable)
    counted = set(scorer.counted(calls))
    ordered = bool(scorer.expected_order)
    positional = ordered and scorer.strict
    option = "expected_order" if ordered else "expected_tool"
    return diff_calls(
        [ToolCall(name=name) for name in scorer.expected_names],
        calls,
        ordered=ordered,
        allow_extra=not scorer.strict,
        scorer=scorer.scorer_name,
        rule=f"tool_selection {option} ({'strict' if scorer.strict else 'flexible'})",
        pairs=scorer.pairs(calls),
        positional=positional,
        not_counted={j for j in range(len(calls)) if j not in counted},
    )


def _rules_diff(scorer: RuleScorer, run: AgentRun) -> CallDiff:
    """Every call the score read, `broken` with its rules or `ok`; a rule of the whole run (a required tool
    never called) as a `missing` row naming the tool."""
    calls = scorer.scored_calls(run.calls)
    broken: dict[int | None, list[dict[str, Any]]] = {}
    for found in scorer.violations(run):
        broken.setdefault(found["index"], []).append(found)
    rows = [
        DiffRow(status="missing", expected={"name": found["tool"]}, rules=[f"{found['rule']}: {found['message']}"])
        for found in broken.get(None, [])
    ]
    for i, call in enumerate(calls):
        rules = [f"{found['rule']}: {found['message']}" for found in broken.get(i, [])]
        rows.append(DiffRow(status="broken" if rules else "ok", actual=_view(call), actual_index=i + 1, rules=rules))
    return CallDiff(
        scorer=scorer.scorer_name, rule=f"{getattr(scorer, 'type', 'rules')} rules", ordered=True, rows=rows
    )


def diff_for_scorer(scorer: ScorerBase, actual: Sequence[ToolCall], *, run: AgentRun | None = None) -> CallDiff | None:
    """The diff for a built-in scorer that names expected calls or checks rules; None for others (the LLM judge).

    `actual` are the run's calls; those the scorer ignores (`ignore_tools`) are left out, as the score
    left them out. `run`, the run they belong to, gives rule scorers what else they read (the tool
    catalog `args_valid` checks against); without it they see the calls alone."""
    if isinstance(scorer, RuleScorer):
        return _rules_diff(scorer, run if run is not None else AgentRun(calls=tuple(actual)))
    actual = scorer.scored_calls(tuple(actual))
    if isinstance(scorer, Trajectory):
        return _trajectory_diff(scorer, actual)
    if isinstance(scorer, F1):
        return _f1_diff(scorer, actual)
    if isinstance(scorer, ToolSelection):
        return _tool_selection_diff(scorer, actual)
    return None
