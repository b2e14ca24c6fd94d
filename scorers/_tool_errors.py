"""`tool_errors`: did the run recover from its failed tool calls?

A failed call is normal in production (a timeout, a bad id); an agent that gives up after one, or
answers as if it had succeeded, is not. A failure counts as recovered when a later call of the same
tool (or of a tool named as its fallback) succeeded, so the score separates agents that retry or
fall back from agents that stop.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field, PrivateAttr

from toolscore.scorers._model import AgentRun, Score, ToolCall
from toolscore.scorers._tool_names import NamePatterns
from toolscore.scorers._violations import RuleScorer, Violation, calls_explanation, violation

__all__ = ["ToolErrors"]


class ToolErrors(RuleScorer):
    """(succeeded calls + recovered failed calls) / calls; a run with no calls scores 1.

    A call failed when extraction marked it (`ToolCall.error`: the span's error status, `error.type`, or
    the convention's own error marker). A failed call is recovered by a later successful call of the same
    tool, or of a tool `fallbacks[tool]` names (exact names or globs). Each failed call that nothing
    recovered is a violation (`unrecovered`, with its `error_type`); details list `failed` and `recovered`.
    """

    type: Literal["tool_errors"] = "tool_errors"
    fallbacks: dict[str, list[str]] = Field(
        default_factory=dict,
        description="Per tool name, the tools (names or globs) whose later success also recovers its failure. "
        "Default: {}.",
    )

    _fallbacks: dict[str, NamePatterns] = PrivateAttr(default_factory=dict)

    def model_post_init(self, context: Any, /) -> None:
        super().model_post_init(context)
        self._fallbacks = {tool: NamePatterns(names) for tool, names in self.fallbacks.items()}

    def _score(self, run: AgentRun) -> Score:
        calls = run.calls
        failed: list[int] = [i for i, call in enumerate(calls) if call.error]
        recovered: list[dict[str, Any]] = []
        found: list[Violation] = []
        for i in failed:
            call = calls[i]
            by = self._recovered_by(call, calls, i)
            if by is None:
                message = f"failed ({call.error_type or 'error'}) and no later call recovered it"
                found.append(violation(i, call.name, "unrecovered", message, error_type=call.error_type))
            else:
                recovered.append({"index": i, "tool": call.name, "error_type": call.error_type, "recovered_by": by})
        n = len(calls)
        good = n - len(found)
        value = good / n if n else 1.0
        details = {"calls": n, "failed": len(failed), "recovered": recovered, "unrecovered": found, "violations": found}
        return self._result(value, calls_explanation(good, n, "succeeded or were recovered", found, value), details)

    def _recovered_by(self, call: ToolCall, calls: tuple[ToolCall, ...], i: int) -> int | None:
        """Index of the first later successful call of the same tool or of one of its fallbacks."""
        fallback = self._fallbacks.get(call.name)
        for j in range(i + 1, len(calls)):
            later = calls[j]
            if not later.error and (later.name == call.name or (fallback is not None and fallback.matches(later.name))):
                return j
        return None
