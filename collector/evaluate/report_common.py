"""Wording every report shares, so the console, JUnit and Markdown say the same thing the same way."""

from __future__ import annotations

from toolscore.collector.evaluate.model import EvalResult, ExpectationResult, RunResult, ScorerResult

__all__ = ["failing_scorers", "headline", "percent", "score_text", "scorer_line", "verdict"]


def percent(rate: float | None) -> str:
    return "-" if rate is None else f"{rate * 100:.1f}%"


def score_text(value: float | None) -> str:
    return "-" if value is None else f"{value:.3f}"


def verdict(exp: ExpectationResult) -> str:
    if exp.matched == 0:
        return "FAIL (no runs)" if not exp.ok else "no runs"
    if exp.passed + exp.failed == 0:
        return "skipped"
    return "ok" if exp.ok else "FAIL"


def headline(result: EvalResult) -> str:
    """`2 of 5 expectations below threshold` or `all 5 expectations met`."""
    total = len(result.expectations)
    below = sum(not exp.ok for exp in result.expectations)
    return f"{below} of {total} expectations below threshold" if below else f"all {total} expectations met"


def failing_scorers(run: RunResult) -> list[ScorerResult]:
    return [s for s in run.scorers if s.status in ("fail", "error")]


def scorer_line(scorer: ScorerResult) -> str:
    """`trajectory = 0.300 (fail): exact mode: ...`, or `f1: error ValueError: ...`."""
    if scorer.status == "error":
        return f"{scorer.name}: error {scorer.error_type}: {scorer.explanation}"
    if scorer.status == "skipped":
        return f"{scorer.name}: skipped ({scorer.explanation})"
    return f"{scorer.name} = {score_text(scorer.value)} ({scorer.status}): {scorer.explanation}"
