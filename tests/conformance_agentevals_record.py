"""Record `testdata/conformance/agentevals.jsonl` from the real agentevals (not a test; run it by hand).

    /work/main/.venv-bench/bin/python tests/conformance_agentevals_record.py [--out PATH]

The cases are generated from a fixed seed, so a re-run writes the same file (as long as agentevals
answers the same). Each case is a pair of small trajectories in the neutral call form and agentevals'
options; the script builds the OpenAI messages agentevals reads from the calls (see
`testdata/conformance/README.md`), runs `create_trajectory_match_evaluator(...)` and stores what it
returned. It also runs agentevals once more on the case read as toolscore's documented deviations
read it (`_documented`) and stores that score where it differs.

Argument overrides that list keys, and callables, are not recorded: toolscore's rules cannot express
them (see docs/scorers.md, "Deviations from the peers").
"""

from __future__ import annotations

import argparse
import json
import random
import sys
from collections.abc import Callable, Iterator
from importlib.metadata import version
from pathlib import Path
from typing import Any

from agentevals.trajectory.match import create_trajectory_match_evaluator

OUT = Path(__file__).parent / "testdata" / "conformance" / "agentevals.jsonl"
SEED = 20_250_611
TRAJECTORY_MODES = ("strict", "unordered", "subset", "superset")
ARGS_MODES = ("exact", "ignore", "subset", "superset")
TRUE, FALSE = "<bool:true>", "<bool:false>"  # what a boolean becomes in the documented reading

Call = dict[str, Any]


# --- agentevals' input -------------------------------------------------------------------------------


def messages(calls: list[Call]) -> list[dict[str, Any]]:
    """The OpenAI messages of one trajectory: a user message, then assistant message k = 0 .. max `message`
    holding the calls whose `message` is k (a text-only assistant message when none), each followed by
    one tool message per call."""
    out: list[dict[str, Any]] = [{"role": "user", "content": "Plan my trip."}]
    last = max((call["message"] for call in calls), default=-1)
    n = 0
    for k in range(last + 1):
        held = [call for call in calls if call["message"] == k]
        if not held:
            out.append({"role": "assistant", "content": "Let me think."})
            continue
        ids = [f"call_{n + i}" for i in range(len(held))]
        n += len(held)
        tool_calls = [
            {"id": id_, "type": "function", "function": {"name": call["name"], "arguments": json.dumps(call["args"])}}
            for id_, call in zip(ids, held, strict=True)
        ]
        out.append({"role": "assistant", "content": "", "tool_calls": tool_calls})
        out.extend({"role": "tool", "content": "ok", "tool_call_id": id_} for id_ in ids)
    return out


def run_agentevals(params: dict[str, Any], expected: list[Call], actual: list[Call]) -> dict[str, Any]:
    evaluator = create_trajectory_match_evaluator(**params)
    result = evaluator(outputs=messages(actual), reference_outputs=messages(expected))
    return dict(result)


# --- the documented reading --------------------------------------------------------------------------

_FLIP = {"subset": "superset", "superset": "subset", "exact": "exact", "ignore": "ignore"}


def _no_bools(value: Any) -> Any:
    """Booleans made unequal to numbers (JSON equality), as a string no generated argument holds."""
    if value is True:
        return TRUE
    if value is False:
        return FALSE
    if isinstance(value, dict):
        return {key: _no_bools(item) for key, item in value.items()}
    if isinstance(value, list):
        return [_no_bools(item) for item in value]
    return value


def _close_gaps(calls: list[Call]) -> list[Call]:
    """Message indices renumbered 0, 1, ... in order: the text-only assistant messages between them dropped."""
    order = {index: k for k, index in enumerate(sorted({call["message"] for call in calls}))}
    return [call | {"message": order[call["message"]]} for call in calls]


def _flipped(params: dict[str, Any]) -> dict[str, Any]:
    out = dict(params)
    out["tool_args_match_mode"] = _FLIP[params.get("tool_args_match_mode", "exact")]
    if "tool_args_match_overrides" in params:
        out["tool_args_match_overrides"] = {
            tool: _FLIP[mode] for tool, mode in params["tool_args_match_overrides"].items()
        }
    return out


def _documented(params: dict[str, Any], expected: list[Call], actual: list[Call]) -> bool:
    """agentevals' score on the case as toolscore's deviations read it: booleans are not numbers, messages
    without tool calls are not compared, and `unordered` is `superset` and `subset` both, with the argument
    mode keeping its direction (agentevals' `subset` pass swaps the sides of the argument comparison, so
    the `subset` run gets the flipped argument mode)."""
    exp = _close_gaps([call | {"args": _no_bools(call["args"])} for call in expected])
    act = _close_gaps([call | {"args": _no_bools(call["args"])} for call in actual])
    if params["trajectory_match_mode"] != "unordered":
        return bool(run_agentevals(params, exp, act)["score"])
    superset = run_agentevals(params | {"trajectory_match_mode": "superset"}, exp, act)["score"]
    subset = run_agentevals(_flipped(params) | {"trajectory_match_mode": "subset"}, exp, act)["score"]
    return bool(superset and subset)


# --- generated trajectories --------------------------------------------------------------------------


def _grouped(rng: random.Random, calls: list[dict[str, Any]], *, max_per_message: int, gaps: bool) -> list[Call]:
    """`message` indices for the calls: runs of 1..max_per_message calls, optionally skipping an index
    (a text-only assistant message) now and then."""
    out: list[Call] = []
    k, left = 0, 0
    for call in calls:
        if left == 0:
            if out:
                k += 1
            if gaps and rng.random() < 0.25:
                k += 1
            left = rng.randint(1, max_per_message)
        out.append({"name": call["name"], "args": call["args"], "message": k})
        left -= 1
    return out


_VALUES: dict[str, list[Any]] = {
    "q": ["paris", "lisbon", "Paris"],
    "n": [1, 2, 1.0, 0],
    "opts": [{"a": 1}, {"a": 1, "b": [1, 2]}, {"b": [1, 2], "a": 1}, [1, 2], [2, 1]],
    "city": ["NYC", None],
}


def _random_args(rng: random.Random) -> dict[str, Any]:
    keys = rng.sample(sorted(_VALUES), rng.randint(0, 3))
    return {key: rng.choice(_VALUES[key]) for key in keys}


def _random_calls(rng: random.Random, names: str, n: int) -> list[dict[str, Any]]:
    return [{"name": rng.choice(names), "args": _random_args(rng)} for _ in range(n)]


def _mutated(rng: random.Random, calls: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The calls shuffled, with a call dropped, added, renamed or given other arguments now and then: near
    misses make more interesting cases than two unrelated trajectories."""
    out = [dict(call) for call in calls]
    if rng.random() < 0.6:
        rng.shuffle(out)
    for _ in range(rng.randint(0, 2)):
        change = rng.choice(("drop", "add", "args", "key", "rename"))
        if change == "drop" and out:
            out.pop(rng.randrange(len(out)))
        elif change == "add" and len(out) < 5:
            out.insert(rng.randint(0, len(out)), {"name": rng.choice("ab"), "args": _random_args(rng)})
        elif change == "args" and out:
            out[rng.randrange(len(out))]["args"] = _random_args(rng)
        elif change == "key" and out:
            i = rng.randrange(len(out))
            key = rng.choice(sorted(_VALUES))
            out[i] = out[i] | {"args": out[i]["args"] | {key: rng.choice(_VALUES[key])}}
        elif change == "rename" and out:
            i = rng.randrange(len(out))
            out[i] = out[i] | {"name": rng.choice("abc")}
    return out


_BASE = {"x": 1, "y": 2, "z": 3}


def _chain_args(rng: random.Random) -> dict[str, Any]:
    """A sub-dict of `_BASE`, now and then with one value changed: containment between such arguments is a
    partial order full of chains, where greedy pairing takes a partner a later call needed."""
    args = {key: value for key, value in _BASE.items() if rng.random() < 0.5}
    if args and rng.random() < 0.15:
        key = rng.choice(sorted(args))
        args[key] = 9
    return args


Case = tuple[str, dict[str, Any], list[Call], list[Call]]


def _params(mode: str, args_mode: str, overrides: dict[str, str] | None = None) -> dict[str, Any]:
    params: dict[str, Any] = {"trajectory_match_mode": mode, "tool_args_match_mode": args_mode}
    if overrides:
        params["tool_args_match_overrides"] = overrides
    return params


def random_cases(rng: random.Random) -> Iterator[Case]:
    """Near-miss pairs of 0-5 calls over two tool names, every mode with every argument mode."""
    for i in range(160):
        mode, args_mode = TRAJECTORY_MODES[i % 4], ARGS_MODES[(i // 4) % 4]
        expected = _random_calls(rng, "ab", rng.randint(0, 5))
        actual = _mutated(rng, expected) if rng.random() < 0.8 else _random_calls(rng, "ab", rng.randint(0, 5))
        per = 1 if rng.random() < 0.5 else 3
        yield (
            "random",
            _params(mode, args_mode),
            _grouped(rng, expected, max_per_message=per, gaps=False),
            _grouped(rng, actual, max_per_message=per, gaps=False),
        )


def _widened(rng: random.Random, args: dict[str, Any]) -> dict[str, Any]:
    return args | {key: value for key, value in _BASE.items() if rng.random() < 0.5}


def _narrowed(rng: random.Random, args: dict[str, Any]) -> dict[str, Any]:
    return {key: value for key, value in args.items() if rng.random() < 0.5}


def _actual_wider(mode: str, args_mode: str) -> bool:
    """Whether agentevals' argument mode lets an actual call pass more keys than its expected call (else fewer):
    `superset` does, except in trajectory mode `subset`, whose pass swaps the sides."""
    return (args_mode == "superset") != (mode == "subset")


def greedy_cases(rng: random.Random) -> Iterator[Case]:
    """Repeated calls to one tool whose arguments contain one another, under containment modes: the cases
    where agentevals' greedy pairing and a maximum matching disagree. Mostly the expected calls reordered,
    each widened or narrowed the way the argument mode allows, so that a pairing exists for greedy to miss."""
    for i in range(160):
        mode = TRAJECTORY_MODES[i % 4]
        args_mode = ("subset", "superset")[(i // 4) % 2] if i % 16 < 12 else ARGS_MODES[(i // 4) % 4]
        m = rng.randint(2, 5)
        expected = [{"name": "a" if rng.random() < 0.85 else "b", "args": _chain_args(rng)} for _ in range(m)]
        if rng.random() < 0.75:
            change = _widened if _actual_wider(mode, args_mode) else _narrowed
            actual = [
                call | {"args": change(rng, call["args"])} if rng.random() < 0.6 else dict(call) for call in expected
            ]
            rng.shuffle(actual)
            if mode == "superset" and rng.random() < 0.4:
                actual.insert(rng.randint(0, len(actual)), {"name": "a", "args": _chain_args(rng)})
            if mode == "subset" and rng.random() < 0.4:
                actual.pop(rng.randrange(len(actual)))
        else:
            actual = [{"name": "a" if rng.random() < 0.85 else "b", "args": _chain_args(rng)} for _ in range(m)]
        if mode == "strict":  # the messages kept, the calls inside each reordered: greedy pairs within one
            grouped = _grouped(rng, expected, max_per_message=5, gaps=False)
            yield "greedy", _params(mode, args_mode), grouped, _shuffled_in_messages(rng, grouped, actual)
            continue
        yield (
            "greedy",
            _params(mode, args_mode),
            _grouped(rng, expected, max_per_message=1, gaps=False),
            _grouped(rng, actual[:5], max_per_message=1, gaps=False),
        )


def _shuffled_in_messages(rng: random.Random, grouped: list[Call], actual: list[dict[str, Any]]) -> list[Call]:
    """`actual` given the messages of `grouped` (as many calls each, in order), then each message's calls
    shuffled; `actual` is cut or padded with the expected calls to the same length."""
    calls = (actual + grouped[len(actual) :])[: len(grouped)]
    out = [
        {"name": call["name"], "args": call["args"], "message": slot["message"]}
        for call, slot in zip(calls, grouped, strict=True)
    ]
    by_message: dict[int, list[Call]] = {}
    for call in out:
        by_message.setdefault(call["message"], []).append(call)
    result: list[Call] = []
    for group in by_message.values():
        rng.shuffle(group)
        result.extend(group)
    return result


_EQUALITY_PAIRS: list[tuple[Any, Any]] = [
    ({"n": 1}, {"n": 1.0}),
    ({"n": True}, {"n": 1}),
    ({"n": False}, {"n": 0}),
    ({"n": True}, {"n": 1.0}),
    ({"n": True}, {"n": True}),
    ({"n": [1, {"b": True}]}, {"n": [1, {"b": 1}]}),
    ({"a": 1, "b": 2}, {"b": 2, "a": 1}),
    ({"l": [1, 2]}, {"l": [2, 1]}),
    ({"n": "1"}, {"n": 1}),
    ({"n": None}, {}),
    ({"n": None}, {"n": None}),
    ({"n": -0.0}, {"n": 0}),
    ({"n": 1e21}, {"n": 10**21}),
    ({"d": {"x": {"y": [1, 2]}}}, {"d": {"x": {"y": [1, 2]}}}),
    ({"d": {"x": 1}}, {"d": {"x": 1, "y": 2}}),
    ({"l": []}, {"l": {}}),
]


def equality_cases(rng: random.Random) -> Iterator[Case]:
    """One or two calls whose arguments differ only in how values compare (1 vs 1.0, true vs 1, key order,
    nested values), in both directions, under every argument mode."""
    for i, pair in enumerate(_EQUALITY_PAIRS * 6):
        mode, args_mode = TRAJECTORY_MODES[i % 4], ARGS_MODES[(i // 4) % 4]
        left, right = pair[::-1] if i % 2 else pair
        expected = [{"name": "a", "args": left}]
        actual = [{"name": "a", "args": right}]
        if i % 3 == 0:  # a second call, so a boolean may decide which call pairs with which
            expected.append({"name": "a", "args": right})
            actual.append({"name": "a", "args": left | {"k": 1}})
        yield (
            "equality",
            _params(mode, args_mode),
            _grouped(rng, expected, max_per_message=1, gaps=False),
            _grouped(rng, actual, max_per_message=1, gaps=False),
        )


def message_cases(rng: random.Random) -> Iterator[Case]:
    """Strict mode over several calls per assistant message, the calls of a message in another order, and
    text-only assistant messages between the calling ones (gaps in `message`)."""
    for i in range(80):
        args_mode = ARGS_MODES[i % 4]
        calls = _random_calls(rng, "aab", rng.randint(1, 5))
        gaps = i % 5 == 4
        expected = _grouped(rng, calls, max_per_message=3, gaps=gaps)
        actual = [dict(call) for call in expected]
        change = rng.random()
        if change < 0.4:  # the same messages, the calls inside each in another order
            by_message: dict[int, list[Call]] = {}
            for call in actual:
                by_message.setdefault(call["message"], []).append(call)
            actual = []
            for group in by_message.values():
                rng.shuffle(group)
                actual.extend(group)
        elif change < 0.6:  # regrouped
            actual = _grouped(rng, calls, max_per_message=3, gaps=rng.random() < 0.3)
        elif change < 0.8:  # one call's arguments changed
            j = rng.randrange(len(actual))
            actual[j] = actual[j] | {"args": _random_args(rng)}
        else:  # gaps moved
            actual = _grouped(
                rng, [{"name": c["name"], "args": c["args"]} for c in expected], max_per_message=3, gaps=True
            )
        if i % 7 == 0:
            yield "messages", _params(rng.choice(TRAJECTORY_MODES[1:]), args_mode), expected, actual
        else:
            yield "messages", _params("strict", args_mode), expected, actual


def empty_cases(rng: random.Random) -> Iterator[Case]:
    """No calls on one side or both, every mode and argument mode."""
    one = [{"name": "a", "args": {"x": 1}, "message": 0}]
    for mode in TRAJECTORY_MODES:
        for args_mode in ARGS_MODES:
            for expected, actual in (([], []), ([], one), (one, [])):
                yield "empty", _params(mode, args_mode), expected, actual


def override_cases(rng: random.Random) -> Iterator[Case]:
    """Per-tool argument modes (`tool_args_match_overrides`, mode strings) over a default mode."""
    for i in range(96):
        mode, args_mode = TRAJECTORY_MODES[i % 4], ARGS_MODES[(i // 4) % 4]
        tools = rng.sample(("a", "b", "c"), rng.randint(1, 2))
        overrides = {tool: rng.choice(ARGS_MODES) for tool in tools}
        if i % 2:
            expected = [{"name": rng.choice("ab"), "args": _chain_args(rng)} for _ in range(rng.randint(1, 4))]
            actual = _mutated(rng, expected)
            for call in actual:
                if rng.random() < 0.4:
                    call["args"] = _chain_args(rng)
        else:
            expected = _random_calls(rng, "ab", rng.randint(1, 4))
            actual = _mutated(rng, expected)
        yield (
            "override",
            _params(mode, args_mode, overrides),
            _grouped(rng, expected, max_per_message=2, gaps=False),
            _grouped(rng, actual[:5], max_per_message=2, gaps=False),
        )


KINDS: list[Callable[[random.Random], Iterator[Case]]] = [
    random_cases,
    greedy_cases,
    equality_cases,
    message_cases,
    empty_cases,
    override_cases,
]


def record() -> list[dict[str, Any]]:
    rng = random.Random(SEED)
    cases: list[dict[str, Any]] = []
    counts: dict[str, int] = {}
    for kind in KINDS:
        for name, params, expected, actual in kind(rng):
            counts[name] = counts.get(name, 0) + 1
            output = run_agentevals(params, expected, actual)
            case: dict[str, Any] = {
                "id": f"agentevals-{name}-{counts[name]:04d}",
                "peer": "agentevals",
                "params": params,
                "expected_calls": expected,
                "actual_calls": actual,
                "output": output,
            }
            documented = _documented(params, expected, actual)
            if documented != bool(output["score"]):
                case["documented_output"] = {"score": documented}
            case["provenance"] = "observed"
            cases.append(case)
    return cases


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", type=Path, default=OUT)
    args = parser.parse_args(argv)
    cases = record()
    with args.out.open("w", encoding="utf-8") as out:
        for case in cases:
            out.write(json.dumps(case, ensure_ascii=False) + "\n")
    differ = sum("documented_output" in case for case in cases)
    print(
        f"agentevals {version('agentevals')}: {len(cases)} cases -> {args.out} ({differ} read otherwise by a "
        "documented deviation)",
        file=sys.stderr,
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
