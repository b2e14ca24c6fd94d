"""Wording every report shares, so the console, JUnit and Markdown say the same thing the same way."""

from __future__ import annotations

from toolscore.collector.evaluate.model import EvalResult, ExpectationResult, RunResult, ScorerResult

__all__ = [
    "NO_RUNS_HINT",
    "failing_scorers",
    "headline",
    "percent",
    "score_text",
    "scorer_line",
    "unscored",
    "verdict",
]


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


NO_RUNS_HINT = "use --require-runs to fail on missing runs"
"""What to do when an expectation without a scored run should fail, said wherever one passes."""


def unscored(result: EvalResult) -> int:
    """Expectations that pass only because no run of theirs was scored (none matched, or all were skipped)."""
    return sum(exp.ok and exp.passed + exp.failed == 0 for exp in result.expectations)


def headline(result: EvalResult) -> str:
    """`2 of 5 expectations below threshold`, `all 5 expectations met`, or, when some passed without a
    scored run, how many had one: `0 of 7 expectations had scored runs; none failed (use --require-runs ...)`."""
    total = len(result.expectations)
    below = sum(not exp.ok for exp in result.expectations)
    empty = unscored(result)
    if below:
        more = f"; {empty} had no scored runs ({NO_RUNS_HINT})" if empty else ""
        return f"{below} of {total} expectations below threshold{more}"
    if result.nothing_scored:
        files = len(result.nothing_scored)
        return f"nothing checked: no run matched the expectations of {files} file(s) (--allow-empty accepts it)"
    if empty:
        return f"{total - empty} of {total} expectations had scored runs; none failed ({NO_RUNS_HINT})"
    return f"all {total} expectations met"


def failing_scorers(run: RunResult) -> list[ScorerResult]:
    return [s for s in run.scorers if s.status in ("fail", "error")]


def scorer_line(scorer: ScorerResult) -> str:
    """`trajectory = 0.300 (fail): exact mode: ...`, or `f1: error ValueError: ...`."""
    if scorer.status == "error":
        return f"{scorer.name}: error {scorer.error_type}: {scorer.explanation}"
    if scorer.status == "skipped":
        return f"{scorer.name}: skipped ({scorer.explanation})"
    return f"{scorer.name} = {score_text(scorer.value)} ({scorer.status}): {scorer.explanation}"
