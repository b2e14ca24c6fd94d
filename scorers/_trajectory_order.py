"""agentevals' trajectory match modes over a flat call list, and the call pairing they rest on.

agentevals (`trajectory/utils.py` `_is_trajectory_superset`, `trajectory/strict.py`) pairs calls
greedily, and so does `pairing="greedy"` (the default) here: each call takes the first unused call of
the other side that fits. agentevals' `superset` walks the expected calls, `subset` the actual ones,
`unordered` does both and `strict` walks each message's actual calls; under one argument test the
pairing is the same whichever side leads (`toolscore.scorers._pairing`), so one greedy pairing serves
every mode. With argument rules that are not plain equality (a per-key matcher, a containment mode, an
expected call without arguments) greedy pairing can miss a pairing that exists, so a reordering of the
same calls can change the verdict. `pairing="optimal"` pairs by a maximum bipartite matching instead,
so repeats and order never change the result.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from toolscore.scorers._json_text import compact_json
from toolscore.scorers._model import ToolCall
from toolscore.scorers._pairing import Pairing, paired
from toolscore.scorers._trajectory_evalite import PairTest, Taken, Verdict, neutral

__all__ = ["message_groups", "order_mode", "rule_pairing", "strict_message_pairs"]


def rule_pairing(
    by_name: Mapping[str, Sequence[int]],
    tests: Sequence[PairTest],
    actual: Sequence[ToolCall],
    m: int,
    pairing: Pairing = "optimal",
) -> Taken:
    """The calls that match under the argument rules, paired greedily (agentevals) or by a maximum matching:
    for each actual call the expected call it took (-1: none), then the expected calls left alone (in order).

    Greedy pairing is the same whichever side leads (`toolscore.scorers._pairing`): this one pairing is
    agentevals' superset pass and its subset pass alike.
    """
    options = [by_name.get(call.name, ()) for call in actual]
    match_left, match_right = paired(pairing, options, lambda i, j: tests[j](actual[i]), m)
    return match_left, [j for j in range(m) if match_right[j] < 0]


def _given_message(call: ToolCall) -> int | None:
    """The call's message index when its source stated one (a spec's or Mastra's `message`); None when it is
    only the default (a run read from a trace without model spans), so such calls compare one by one."""
    return call.message_index if "message_index" in call.__pydantic_fields_set__ else None


def message_groups(calls: Sequence[ToolCall]) -> list[list[int]] | None:
    """Indices of the calls of each model message, in order: neighbours with the same message index form one
    message. None unless every call states its index (a default index says nothing about messages)."""
    indices = [_given_message(call) for call in calls]
    if any(index is None for index in indices):
        return None
    groups: list[list[int]] = []
    previous: int | None = None
    for i, index in enumerate(indices):
        if groups and index == previous:
            groups[-1].append(i)
        else:
            groups.append([i])
        previous = index
    return groups


def _message_pairs(
    eg: Sequence[int],
    ag: Sequence[int],
    expected: Sequence[ToolCall],
    tests: Sequence[PairTest],
    actual: Sequence[ToolCall],
    *,
    pairing: Pairing,
) -> dict[int, tuple[int, bool]]:
    """One message's calls paired as a multiset: matches first (greedy: each actual call, in order, takes the
    first unused expected call that fits, as agentevals' strict mode; optimal: a maximum matching), then the
    rest in order, unmatched."""
    options = [[k for k, j in enumerate(eg) if expected[j].name == actual[i].name] for i in ag]
    match_left, match_right = paired(pairing, options, lambda a, k: tests[eg[k]](actual[ag[a]]), len(eg))
    pairs = {eg[k]: (ag[i], True) for i, k in enumerate(match_left) if k >= 0}
    left_expected = [eg[k] for k in range(len(eg)) if match_right[k] < 0]
    left_actual = [ag[i] for i in range(len(ag)) if match_left[i] < 0]
    pairs.update({j: (i, False) for j, i in zip(left_expected, left_actual, strict=False)})
    return pairs


def _same_message(
    eg: Sequence[int],
    ag: Sequence[int],
    expected: Sequence[ToolCall],
    tests: Sequence[PairTest],
    actual: Sequence[ToolCall],
    *,
    pairing: Pairing,
) -> bool:
    if len(eg) != len(ag):
        return False
    pairs = _message_pairs(eg, ag, expected, tests, actual, pairing=pairing)
    return len(pairs) == len(eg) and all(ok for _, ok in pairs.values())


def strict_message_pairs(
    expected: Sequence[ToolCall], tests: Sequence[PairTest], actual: Sequence[ToolCall], pairing: Pairing
) -> dict[int, tuple[int, bool]] | None:
    """Strict mode's pairs when every call on both sides states its message: message by message, each as a
    multiset. None otherwise (the calls compare one by one)."""
    exp_groups, act_groups = message_groups(expected), message_groups(actual)
    if exp_groups is None or act_groups is None:
        return None
    pairs: dict[int, tuple[int, bool]] = {}
    for eg, ag in zip(exp_groups, act_groups, strict=False):
        pairs.update(_message_pairs(eg, ag, expected, tests, actual, pairing=pairing))
    return pairs


def _strict_messages(
    expected: Sequence[ToolCall],
    tests: Sequence[PairTest],
    actual: Sequence[ToolCall],
    exp_groups: list[list[int]],
    act_groups: list[list[int]],
    *,
    pairing: Pairing,
) -> Verdict:
    """agentevals' strict: the same messages in the same order, the calls inside one message in any order."""
    m, n = len(expected), len(actual)
    mismatch = next(
        (
            k
            for k, (eg, ag) in enumerate(zip(exp_groups, act_groups, strict=False))
            if not _same_message(eg, ag, expected, tests, actual, pairing=pairing)
        ),
        None,
    )
    if mismatch is None and len(exp_groups) != len(act_groups):
        mismatch = min(len(exp_groups), len(act_groups))
    value = 1.0 if mismatch is None else 0.0
    counts = {"reference": len(exp_groups), "output": len(act_groups)}
    if mismatch is None:
        why = f"all {m} calls match message by message (in any order within a message)"
    elif mismatch >= min(len(exp_groups), len(act_groups)):
        why = f"{len(exp_groups)} expected messages, {len(act_groups)} actual messages"
    else:
        want = [expected[j].name for j in exp_groups[mismatch]]
        got = [actual[i].name for i in act_groups[mismatch]]
        why = f"message {mismatch} differs: expected calls {want}, got {got} (any order)"
    first = None if mismatch is None else exp_groups[mismatch][0] if mismatch < len(exp_groups) else m
    details: dict[str, Any] = {
        "mode": "strict",
        "first_mismatch": first,
        "first_mismatch_message": mismatch,
        "messages": counts,
        "totals": {"reference": m, "output": n},
    }
    return value, f"strict: {why} -> {value:g}", details


def _strict(
    expected: Sequence[ToolCall], tests: Sequence[PairTest], actual: Sequence[ToolCall], pairing: Pairing
) -> Verdict:
    exp_groups, act_groups = message_groups(expected), message_groups(actual)
    if exp_groups is not None and act_groups is not None:
        return _strict_messages(expected, tests, actual, exp_groups, act_groups, pairing=pairing)
    m, n = len(expected), len(actual)
    mismatch = next(
        (
            i
            for i, (exp, call) in enumerate(zip(expected, actual, strict=False))
            if exp.name != call.name or not tests[i](call)
        ),
        None,
    )
    if mismatch is None and m != n:
        mismatch = min(m, n)
    value = 1.0 if mismatch is None else 0.0
    if mismatch is None:
        why = f"all {m} calls match in order"
    elif mismatch >= min(m, n):
        why = f"{m} expected calls, {n} actual calls"
    elif expected[mismatch].name == actual[mismatch].name:  # only the arguments can tell them apart: show them
        want, got = _brief(expected[mismatch]), _brief(actual[mismatch])
        why = f"call {mismatch} {actual[mismatch].name}: arguments differ: expected {want}, got {got}"
    else:
        why = f"call {mismatch} differs: expected {expected[mismatch].name}, got {actual[mismatch].name}"
    details: dict[str, Any] = {"mode": "strict", "first_mismatch": mismatch, "totals": {"reference": m, "output": n}}
    if mismatch is not None and mismatch < min(m, n):
        details["expected_call"], details["actual_call"] = neutral(expected[mismatch]), neutral(actual[mismatch])
    return value, f"strict: {why} -> {value:g}", details


_BRIEF_CHARS = 120


def _brief(call: ToolCall) -> str:
    """A call's arguments as compact JSON, cut to `_BRIEF_CHARS`: an explanation is a line, details have them whole.

    Arguments kept as text because they are not JSON (cut short by a size limit, say) are named as such:
    written as a JSON string alone, they would read as arguments that are a JSON string, which they are not.
    """
    view = neutral(call)
    text = compact_json(view["args"], _BRIEF_CHARS + 1) if "args" in view else "none"
    text = text if len(text) <= _BRIEF_CHARS else text[: _BRIEF_CHARS - 1] + "…"
    return f"text that is not JSON: {text}" if call.args_state == "raw" else text


_RULES = {
    "unordered": "every expected call matched once and no call left over",
    "subset": "every actual call is one of the expected calls",
    "superset": "every expected call is among the actual calls",
}


def order_mode(
    mode: str,
    expected: Sequence[ToolCall],
    by_name: Mapping[str, Sequence[int]],
    tests: Sequence[PairTest],
    actual: Sequence[ToolCall],
    *,
    pairing: Pairing,
) -> Verdict:
    """1.0 or 0.0 by agentevals' rule for `mode` (`strict`, `unordered`, `subset`, `superset`)."""
    if mode == "strict":
        return _strict(expected, tests, actual, pairing)
    m, n = len(expected), len(actual)
    match_left, missing = rule_pairing(by_name, tests, actual, m, pairing)
    matched = m - len(missing)
    ok = {"unordered": matched == m == n, "subset": matched == n, "superset": matched == m}[mode]
    value = 1.0 if ok else 0.0
    unmatched_expected = [expected[j] for j in missing]
    unmatched_actual = [call for call, j in zip(actual, match_left, strict=True) if j < 0]
    details: dict[str, Any] = {
        "mode": mode,
        "matched": matched,
        "totals": {"reference": m, "output": n},
        "unmatched_expected": [neutral(call) for call in unmatched_expected],
        "unmatched_actual": [neutral(call) for call in unmatched_actual],
    }
    explanation = (
        f"{mode}: {matched} of {m} expected and {n} actual calls paired ({pairing} pairing); {_RULES[mode]}: "
        f"{'yes' if ok else 'no'} -> {value:g}"
    )
    return value, explanation, details
