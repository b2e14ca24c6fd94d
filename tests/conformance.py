"""The recorded peer cases as `toolscore score` requests, and what each must get back.

A case (see testdata/conformance/README.md) holds a peer's options in the peer's spelling, the
calls in a neutral form and the object the real JavaScript scorer returned. Here a case becomes one
request line for the CLI, and both the peer's output and toolscore's result are reduced to the same
*view* (score and count fields, snake_case) so they can be compared whole.

Where toolscore deliberately differs, the case's expected view is derived from the documented rule
rather than read from the peer: tpmjs' three argument bugs, Mastra's empty-output precondition and
Evalite's unvalidated mode (see `Outcome`).

agentevals' cases (`agentevals.jsonl`, recorded from the Python package) map onto a `trajectory` request
with the default (greedy) pairing (`agentevals_spec`). Where a case falls under one of agentevals'
documented deviations (`agentevals_deviations`), toolscore must give the score agentevals gave on the case
as the deviation reads it (`documented_output`, recorded too) instead.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from enum import Enum
from pathlib import Path
from typing import Any

__all__ = [
    "AGENTEVALS_CORPUS",
    "AGENTEVALS_DEVIATIONS",
    "CORPUS",
    "TPMJS_DEVIATIONS",
    "Outcome",
    "agentevals_args_mode",
    "agentevals_deviations",
    "agentevals_spec",
    "deviation_kinds",
    "load_cases",
    "outcome",
    "peer_view",
    "request_line",
    "score_all",
    "score_lines",
    "toolscore_view",
    "tpmjs_args_equal",
]

CORPUS = Path(__file__).parent / "testdata" / "conformance" / "scorers-public.jsonl"
AGENTEVALS_CORPUS = Path(__file__).parent / "testdata" / "conformance" / "agentevals.jsonl"

_MASTRA_PARAMS = {"expectedTool": "expected_tool", "strictMode": "strict", "expectedToolOrder": "expected_order"}
_EVALITE_WEIGHTS = {
    "exact": "exact",
    "nameOnly": "name_only",
    "extraPenalty": "extra_penalty",
    "wrongPenalty": "wrong_penalty",
}
_EVALITE_COUNTS = ("exactMatches", "nameOnlyMatches", "wrongOrMissing", "extras", "missing", "totals")
_EVALITE_MODES = ("exact", "flexible")


def _snake(name: str) -> str:
    return re.sub(r"(?<!^)(?=[A-Z])", "_", name).lower()


def load_cases(path: Path = CORPUS) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def _scorer_spec(case: dict[str, Any]) -> dict[str, Any]:
    params = case["params"]
    if case["peer"] == "mastra":
        return {"type": "tool_selection"} | {_MASTRA_PARAMS[key]: value for key, value in params.items()}
    if case["peer"] == "evalite":
        spec: dict[str, Any] = {"type": "trajectory", "expected": case["expected_calls"]}
        if "mode" in params:
            spec["mode"] = params["mode"]
        if "weights" in params:
            spec["weights"] = {_EVALITE_WEIGHTS[key]: value for key, value in params["weights"].items()}
        return spec
    if case["peer"] == "agentevals":
        return agentevals_spec(case)
    return {"type": "f1", "expected": case["expected_calls"]}


# agentevals' `tool_args_match_mode` names the side its matcher reads first: `subset` = that side's
# arguments are contained in the other's. Trajectory mode `subset` runs the matcher with the sides
# swapped (`_is_trajectory_superset(reference_outputs, outputs)`), so there its modes mean the reverse.
# `unordered` runs it both ways; toolscore keeps the direction of the first pass (a documented deviation).
_ACTUAL_FIRST = {"exact": "exact", "ignore": "ignore", "subset": "actual_subset", "superset": "expected_subset"}
_EXPECTED_FIRST = {"exact": "exact", "ignore": "ignore", "subset": "expected_subset", "superset": "actual_subset"}


def agentevals_args_mode(trajectory_mode: str, args_mode: str) -> str:
    """The toolscore `ArgsMatch.mode` that means what agentevals' `tool_args_match_mode` means in this mode."""
    return (_EXPECTED_FIRST if trajectory_mode == "subset" else _ACTUAL_FIRST)[args_mode]


def agentevals_spec(case: dict[str, Any]) -> dict[str, Any]:
    """A `trajectory` scorer spec for an agentevals case; pairing is left to its default (greedy)."""
    params = case["params"]
    mode = params["trajectory_match_mode"]
    spec: dict[str, Any] = {
        "type": "trajectory",
        "mode": mode,
        "expected": case["expected_calls"],
        "args_match": {"mode": agentevals_args_mode(mode, params.get("tool_args_match_mode", "exact"))},
    }
    overrides = params.get("tool_args_match_overrides", {})
    if overrides:
        spec["tool_args"] = {tool: {"mode": agentevals_args_mode(mode, rule)} for tool, rule in overrides.items()}
    return spec


def request_line(case: dict[str, Any]) -> dict[str, Any]:
    """One `toolscore score` input line; calls keep their neutral form (absent args stay absent)."""
    line = {"id": case["id"], "scorer": _scorer_spec(case), "calls": case["actual_calls"]}
    if "output_messages" in case:
        line["output_messages"] = case["output_messages"]
    return line


def score_all(cases: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """Every case through the real CLI in one subprocess; results by case id."""
    return score_lines([request_line(case) for case in cases])


def score_lines(lines: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """`toolscore score` request lines through the real CLI in one subprocess; results by id."""
    stdin = "".join(json.dumps(line, ensure_ascii=False) + "\n" for line in lines)
    proc = subprocess.run(
        [sys.executable, "-m", "toolscore.collector.cli", "score"],
        input=stdin,
        capture_output=True,
        text=True,
        encoding="utf-8",
        timeout=300,
        check=False,
    )
    results = [json.loads(line) for line in proc.stdout.splitlines() if line.strip()]
    if len(results) != len(lines):
        raise AssertionError(f"CLI returned {len(results)} lines for {len(lines)} requests:\n{proc.stderr[-4000:]}")
    return {result["id"]: result for result in results}


# --- deviations -------------------------------------------------------------------------------


def _js_keys(value: Any) -> list[str]:
    """`Object.keys`: indices for arrays and strings (UTF-16 units), nothing for other primitives."""
    if value is None:
        raise TypeError("Cannot convert undefined or null to object")
    if isinstance(value, dict):
        return list(value)
    if isinstance(value, str):
        return [str(i) for i in range(len(value.encode("utf-16-le")) // 2)]
    if isinstance(value, list):
        return [str(i) for i in range(len(value))]
    return []


def _js_get(value: Any, key: str) -> Any:
    if isinstance(value, dict):
        return value[key]
    if isinstance(value, str):
        unit = value.encode("utf-16-le")[2 * int(key) : 2 * int(key) + 2]
        return unit.decode("utf-16-le", errors="surrogatepass")
    return value[int(key)]


def _js_strict_equal(a: Any, b: Any) -> bool:
    """`===` on two values that are not both objects."""
    if isinstance(a, bool) or isinstance(b, bool):
        return a is b
    if isinstance(a, int | float) and isinstance(b, int | float):
        return a == b
    return type(a) is type(b) and a == b and not isinstance(a, dict | list)


def tpmjs_args_equal(a: Any, b: Any) -> bool:
    """tpmjs 0.2.0's `argsEqual` as shipped, bugs included: a model of the peer, used only to find
    the cases where it is wrong. Raises `TypeError` on null or absent (None) args, as tpmjs does."""
    keys_a, keys_b = sorted(_js_keys(a)), sorted(_js_keys(b))
    if keys_a != keys_b:
        return False
    for key in keys_a:
        x, y = _js_get(a, key), _js_get(b, key)
        both_objects = isinstance(x, dict | list) and isinstance(y, dict | list)
        if not (tpmjs_args_equal(x, y) if both_objects else _js_strict_equal(x, y)):
            return False
    return True


def _json_equal(a: Any, b: Any) -> bool:
    """Plain JSON equality, kept independent of the scorers under test."""
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(_json_equal(a[key], b[key]) for key in a)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(_json_equal(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, dict | list) or isinstance(b, dict | list):
        return False
    return _js_strict_equal(a, b)


def deviation_kinds(case: dict[str, Any]) -> set[str]:
    """Which documented tpmjs bugs a case reaches, judged on every same-named call pair.

    `null_or_absent`: tpmjs throws. `non_object` / `array_vs_object`: tpmjs calls two arguments
    equal (or not) where JSON equality disagrees, with a non-object top level / an array compared
    with an object inside.
    """
    kinds: set[str] = set()
    if case["peer"] != "tpmjs":
        return kinds
    for exp in case["expected_calls"]:
        for act in case["actual_calls"]:
            if exp["name"] != act["name"]:
                continue
            a, b = exp.get("args"), act.get("args")
            if a is None or b is None:
                kinds.add("null_or_absent")
            elif tpmjs_args_equal(a, b) != _json_equal(a, b):
                kinds.add("non_object" if not (isinstance(a, dict) and isinstance(b, dict)) else "array_vs_object")
    return kinds


TPMJS_DEVIATIONS: dict[str, tuple[set[str], dict[str, Any]]] = {
    # case id: (deviation kinds, toolscore's view). Worked out by hand from the case's calls.
    "tpmjs-args-0040": ({"array_vs_object"}, {"score": 0.0, "correct": 0, "incorrect": 1, "missed": 0, "extra": 0}),
    "tpmjs-args-edge-0019": (
        {"array_vs_object"},
        {"score": 0.0, "correct": 0, "incorrect": 1, "missed": 0, "extra": 0},
    ),
    "tpmjs-args-edge-0047": ({"non_object"}, {"score": 0.0, "correct": 0, "incorrect": 1, "missed": 0, "extra": 0}),
    "tpmjs-args-edge-0052": ({"non_object"}, {"score": 0.0, "correct": 0, "incorrect": 1, "missed": 0, "extra": 0}),
    # null == null and absent == absent: a correct call where tpmjs threw
    "tpmjs-args-edge-0057": (
        {"null_or_absent"},
        {"score": 1.0, "correct": 1, "incorrect": 0, "missed": 0, "extra": 0},
    ),
    "tpmjs-args-edge-0058": (
        {"null_or_absent"},
        {"score": 1.0, "correct": 1, "incorrect": 0, "missed": 0, "extra": 0},
    ),
    "tpmjs-args-edge-0064": (
        {"null_or_absent"},
        {"score": 1.0, "correct": 1, "incorrect": 0, "missed": 0, "extra": 0},
    ),
    # absent != {}: an incorrect call where tpmjs threw
    "tpmjs-args-edge-0062": (
        {"null_or_absent"},
        {"score": 0.0, "correct": 0, "incorrect": 1, "missed": 0, "extra": 0},
    ),
}


def _has_bool(value: Any) -> bool:
    if isinstance(value, bool):
        return True
    if isinstance(value, dict):
        return any(_has_bool(item) for item in value.values())
    return isinstance(value, list) and any(_has_bool(item) for item in value)


def _message_gaps(calls: list[dict[str, Any]]) -> bool:
    """Whether the calls skip a message index: a message without tool calls sits there (see the README)."""
    return sorted({call["message"] for call in calls}) != list(range(len({call["message"] for call in calls})))


AGENTEVALS_DEVIATIONS = {
    "bool_equality": "agentevals compares arguments with Python `==`, so `true == 1`; toolscore with JSON equality",
    "text_messages": "agentevals' strict mode also compares the messages without tool calls; toolscore only calls",
    "unordered_containment": "agentevals' unordered mode checks a containment rule once in each direction; "
    "toolscore keeps its direction (unordered = superset and subset)",
}
"""The documented deviations from agentevals (docs/scorers.md, "Deviations from the peers"), by kind."""


def agentevals_deviations(case: dict[str, Any]) -> set[str]:
    """Which documented deviations from agentevals could change this case's score (`AGENTEVALS_DEVIATIONS`).

    `bool_equality`: some argument holds a boolean. `text_messages`: strict mode, and a side's `message`
    indices skip one (an assistant message without tool calls). `unordered_containment`: unordered mode,
    and a tool the calls name has a `subset` or `superset` argument mode (default or override).
    """
    if case["peer"] != "agentevals":
        return set()
    kinds: set[str] = set()
    params, calls = case["params"], case["expected_calls"] + case["actual_calls"]
    if any(_has_bool(call["args"]) for call in calls):
        kinds.add("bool_equality")
    mode = params["trajectory_match_mode"]
    if mode == "strict" and (_message_gaps(case["expected_calls"]) or _message_gaps(case["actual_calls"])):
        kinds.add("text_messages")
    if mode == "unordered":
        overrides = params.get("tool_args_match_overrides", {})
        rules = {overrides.get(call["name"]) or params.get("tool_args_match_mode", "exact") for call in calls}
        if rules & {"subset", "superset"}:
            kinds.add("unordered_containment")
    return kinds


class Outcome(Enum):
    """What toolscore must return for a case."""

    SAME = "same as the peer"
    ERROR = "an error, as the peer threw"
    TPMJS_DEVIATION = "a score where tpmjs is buggy (TPMJS_DEVIATIONS)"
    NO_OUTPUT_SCORES_ZERO = "Mastra refused a run with no output messages; toolscore scores it 0"
    INVALID_MODE = "an error: toolscore validates the mode when the scorer is built, Evalite only on use"
    AGENTEVALS_DEVIATION = "agentevals' score on the case read as a documented deviation reads it"


def outcome(case: dict[str, Any]) -> Outcome:
    if case["peer"] == "agentevals":
        return Outcome.AGENTEVALS_DEVIATION if agentevals_deviations(case) else Outcome.SAME
    if case["peer"] == "tpmjs" and deviation_kinds(case):
        return Outcome.TPMJS_DEVIATION
    if case["peer"] == "evalite" and case["params"].get("mode", "exact") not in _EVALITE_MODES:
        return Outcome.INVALID_MODE
    error = case["output"].get("error")
    if error is None:
        return Outcome.SAME
    if case["peer"] == "mastra" and "cannot be null or empty" in error["message"]:
        return Outcome.NO_OUTPUT_SCORES_ZERO
    return Outcome.ERROR


# --- views ------------------------------------------------------------------------------------


def _mastra_view(score: float, meta: dict[str, Any]) -> dict[str, Any]:
    return {
        "score": score,
        "has_tool_calls": meta["has_tool_calls"],
        "correct_tool_called": meta["correct_tool_called"],
        "correct_order_called": meta["correct_order_called"],
        "actual_tools": meta["actual_tools"],
        "tool_call_infos": meta["tool_call_infos"],
        "options": sorted(key for key in ("expected_tool", "strict_mode", "expected_tool_order") if key in meta),
    }


def _snake_keys(value: Any) -> Any:
    if isinstance(value, dict):
        return {_snake(key): _snake_keys(item) for key, item in value.items()}
    if isinstance(value, list):
        return [_snake_keys(item) for item in value]
    return value


def peer_view(case: dict[str, Any]) -> dict[str, Any]:
    """The peer's output reduced to the fields toolscore must reproduce. agentevals: under a documented
    deviation, its score on the case read as the deviation reads it (`documented_output`, when that differs)."""
    out = case["output"]
    if case["peer"] == "agentevals":
        if outcome(case) is Outcome.AGENTEVALS_DEVIATION:
            out = case.get("documented_output", out)
        return {"score": 1.0 if out["score"] else 0.0}
    if case["peer"] == "mastra":
        return _mastra_view(out["score"], _snake_keys(out["preprocessStepResult"]))
    if case["peer"] == "evalite":
        meta = out["metadata"]
        return {"score": out["score"]} | {_snake(key): _snake_keys(meta[key]) for key in _EVALITE_COUNTS if key in meta}
    return {
        "score": out["score"],
        "total_expected": out["totalExpected"],
        "total_actual": out["totalActual"],
        "correct": len(out["correctCalls"]),
        "incorrect": len(out["incorrectCalls"]),
        "missed": len(out["missedCalls"]),
        "extra": len(out["extraCalls"]),
        "summary": out["summary"],
    }


def toolscore_view(case: dict[str, Any], result: dict[str, Any]) -> dict[str, Any]:
    """toolscore's result line reduced like `peer_view` (only the keys the peer's view has)."""
    if case["peer"] == "agentevals":
        return {"score": result["score"]}
    details = result["details"]
    if case["peer"] == "mastra":
        return _mastra_view(result["score"], details)
    if case["peer"] == "evalite":
        wanted = [_snake(key) for key in _EVALITE_COUNTS if key in case["output"].get("metadata", {})]
        return {"score": result["score"]} | {key: details.get(key, "<absent>") for key in wanted}
    return {
        "score": result["score"],
        "total_expected": details["total_expected"],
        "total_actual": details["total_actual"],
        "correct": len(details["correct_calls"]),
        "incorrect": len(details["incorrect_calls"]),
        "missed": len(details["missed_calls"]),
        "extra": len(details["extra_calls"]),
        "summary": details["summary"],
    }
