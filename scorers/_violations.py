"""What the reference-free scorers report: one violation per broken rule, at the call that broke it.

`tool_policy`, `args_valid`, `efficiency` and `tool_errors` need no reference run; each checks rules
over the run's own calls. They share one shape so that a score's details, the `toolscore eval` diff and
an alert all say the same thing: which rule broke, at which call (its 0-based index among the calls the
scorer read, after `ignore_tools`), and why, in a sentence.
"""

from __future__ import annotations

from typing import Any

from toolscore.scorers._base import ScorerBase
from toolscore.scorers._model import AgentRun

__all__ = ["RuleScorer", "Violation", "calls_explanation", "violation"]

Violation = dict[str, Any]
"""`{"index": int | None, "tool": str | None, "rule": str, "message": str, ...}`; `index` None: the run as
a whole (a required tool never called). Scorer-specific keys may follow (`pointer` for `args_valid`)."""

_SHOWN = 5
"""Violations an explanation spells out; the details list them all."""


def violation(index: int | None, tool: str | None, rule: str, message: str, **extra: Any) -> Violation:
    return {"index": index, "tool": tool, "rule": rule, "message": message, **extra}


def calls_explanation(good: int, total: int, good_words: str, found: list[Violation], value: float) -> str:
    """`4 of 5 calls break no rule; call 2 delete_file: denied by 'delete_*' -> 0.8`, the first few spelled out."""
    head = f"{good} of {total} calls {good_words}" if total else f"no calls ({good_words})"
    shown = "; ".join(_line(v) for v in found[:_SHOWN])
    more = f"; and {len(found) - _SHOWN} more" if len(found) > _SHOWN else ""
    return f"{head}{'; ' + shown if shown else ''}{more} -> {value:g}"


def _line(v: Violation) -> str:
    where = "run" if v["index"] is None else f"call {v['index']} {v['tool']}"
    return f"{where}: {v['message']}"


class RuleScorer(ScorerBase):
    """A scorer that checks rules over the run's own calls, with no reference run.

    `violations(run)` is the verdict's evidence, public so that a diff shows exactly what the score
    counted; the score's details carry the same list under `violations`.
    """

    def violations(self, run: AgentRun) -> list[Violation]:
        """Every broken rule of `run` (its calls as the score reads them: without `ignore_tools`)."""
        run = run.model_copy(update={"calls": self.scored_calls(run.calls)}) if self.ignore_tools else run
        result = self._score(run)
        details = getattr(result, "details", None) or {}
        return list(details.get("violations", []))
