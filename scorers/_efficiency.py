"""`efficiency`: calls the run did not need: repeats, loops of one tool, and calls over a cap.

An agent that calls the same tool with the same arguments again, or hammers one tool many times in a
row, spends tokens and latency and often signals a loop it cannot leave. Each wasted call is found at
its index, so the score is 1 minus the share of wasted calls and the details say which ones.
"""

from __future__ import annotations

import json
from collections import Counter
from typing import Literal

from pydantic import Field

from toolscore.scorers._masked import NAMES_ONLY_NOTE, names_only
from toolscore.scorers._model import AgentRun, Score, ToolCall
from toolscore.scorers._violations import RuleScorer, Violation, calls_explanation, violation

__all__ = ["Efficiency", "call_key"]


_canonical = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"), sort_keys=True, default=repr).encode


def call_key(call: ToolCall) -> tuple[str, str] | None:
    """Name and canonical arguments (JSON with sorted keys); None when the arguments were not captured.

    No arguments and `null` read as `{}`, as `ArgsMatch` reads them; text that is not JSON is itself.
    """
    state = call.args_state
    if state == "not_captured":
        return None
    if state == "raw":
        return call.name, "raw:" + str(call.args)
    args = call.args if state == "value" and call.args is not None else {}
    if type(args) is dict and not args:
        return call.name, "{}"
    try:
        return call.name, _canonical(args)
    except (RecursionError, ValueError):  # nested past the encoder's depth: identical only to itself
        return call.name, f"id:{id(call)}"


class Efficiency(RuleScorer):
    """1 minus the share of wasted calls. A call is wasted (and listed once per reason) when it is:
    - `repeat`: an identical call (same name, same canonical arguments) made more than `max_repeats` times
      before: with the default 1, the third identical call is the first wasted one. Arguments that were
      not captured are never identical to anything.
    - `loop`: the (`max_consecutive`+1)-th or later call in an unbroken row of calls to one tool, whatever
      its arguments.
    - `max_calls`: the (`max_calls`+1)-th or later call of the run.

    A run with no calls scores 1. A retry after a failed call counts as a repeat (`max_repeats` 1 allows one).
    A run that kept names only (`AgentRun.content`) cannot tell identical calls from others: repeats are not
    checked then, and the explanation says so.
    """

    type: Literal["efficiency"] = "efficiency"
    max_repeats: int = Field(
        default=1, ge=0, description="How many times a call may repeat an identical earlier one. Default: 1."
    )
    max_consecutive: int | None = Field(
        default=5, ge=1, description="Most calls to one tool in an unbroken row; null turns the check off. Default: 5."
    )
    max_calls: int | None = Field(default=None, ge=0, description="Most calls in the run. Default: none (no cap).")

    def _score(self, run: AgentRun) -> Score:
        calls = run.calls
        keys_only = names_only(run)
        found = self._wasted(calls, check_repeats=not keys_only)
        wasted = len({v["index"] for v in found})
        n = len(calls)
        value = (n - wasted) / n if n else 1.0
        details = {"calls": n, "wasted_calls": wasted, "violations": found}
        explanation = calls_explanation(n - wasted, n, "were needed", found, value)
        if keys_only:
            details["privacy"] = "names_only"
            explanation = f"repeats not checked ({NAMES_ONLY_NOTE}); {explanation}"
        return self._result(value, explanation, details)

    def _wasted(self, calls: tuple[ToolCall, ...], check_repeats: bool = True) -> list[Violation]:
        found: list[Violation] = []
        seen: dict[tuple[str, str], list[int]] = {}
        max_repeats = self.max_repeats
        # Only a tool called more than max_repeats times can repeat a call too often: the others' arguments are
        # never serialized (most runs call each tool once or twice).
        often = {name for name, count in Counter(call.name for call in calls).items() if count > max_repeats}
        if not check_repeats:
            often = set()
        run_name, run_length = None, 0
        for i, call in enumerate(calls):
            key = call_key(call) if call.name in often else None
            if key is not None:
                earlier = seen.setdefault(key, [])
                if len(earlier) > max_repeats:
                    repeats = len(earlier)
                    message = f"identical to call {earlier[0]}, repeat {repeats} (max {max_repeats})"
                    found.append(violation(i, call.name, "repeat", message, first=earlier[0]))
                earlier.append(i)
            run_length = run_length + 1 if call.name == run_name else 1
            run_name = call.name
            if self.max_consecutive is not None and run_length > self.max_consecutive:
                message = f"call {run_length} in a row of {call.name} (max {self.max_consecutive})"
                found.append(violation(i, call.name, "loop", message))
            if self.max_calls is not None and i >= self.max_calls:
                found.append(violation(i, call.name, "max_calls", f"call {i + 1} of the run, max {self.max_calls}"))
        return found
