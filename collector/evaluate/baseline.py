"""`toolscore eval --baseline`: two sets of traces against the same expectations, per-expectation difference.

A release is judged against the traces of the version before it (main's run against a pull request's): an
expectation whose pass rate in the new set is lower than in the baseline by more than `margin` fails the
comparison. An expectation with no scored run on either side has no difference and never fails it.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

from toolscore.collector.evaluate.model import EXIT_FAILED, EvalResult

__all__ = [
    "BaselineComparison",
    "BaselineRow",
    "agent_versions",
    "compare",
    "comparison",
    "exit_code",
    "regressions",
]


class BaselineRow(BaseModel):
    """One expectation's pass rate in the baseline set and in the new set."""

    model_config = ConfigDict(frozen=True)

    name: str
    baseline_pass_rate: float | None
    baseline_runs: int
    pass_rate: float | None
    runs: int
    delta: float | None = Field(description="New pass rate minus the baseline's; None when either has no rate.")


def compare(new: EvalResult, baseline: EvalResult) -> list[BaselineRow]:
    """One row per expectation of either set, in the new set's order, then the baseline's others."""
    before = {e.name: e for e in baseline.expectations}
    after = {e.name: e for e in new.expectations}
    rows = []
    for name in [*after, *(n for n in before if n not in after)]:
        b, a = before.get(name), after.get(name)
        old_rate = b.pass_rate if b is not None else None
        new_rate = a.pass_rate if a is not None else None
        delta = None if old_rate is None or new_rate is None else new_rate - old_rate
        rows.append(
            BaselineRow(
                name=name,
                baseline_pass_rate=old_rate,
                baseline_runs=b.matched if b is not None else 0,
                pass_rate=new_rate,
                runs=a.matched if a is not None else 0,
                delta=delta,
            )
        )
    return rows


def regressions(rows: list[BaselineRow], margin: float) -> list[BaselineRow]:
    """The rows whose new pass rate is below the baseline's by more than `margin`."""
    return [row for row in rows if row.delta is not None and -row.delta > margin + 1e-12]


class BaselineComparison(BaseModel):
    """The whole comparison, as the reports write it (`--json`'s `baseline`, Markdown, JUnit)."""

    model_config = ConfigDict(frozen=True)

    margin: float
    expectations: list[BaselineRow]
    worse: list[str] = Field(description="The expectations below the baseline by more than `margin`.")
    agent_versions: dict[str, int] = Field(description="Runs scored in the new set per agent version.")
    baseline_agent_versions: dict[str, int] = Field(description="Runs scored in the baseline per agent version.")


def agent_versions(result: EvalResult) -> dict[str, int]:
    """Runs that matched an expectation, per agent version (runs without one left out), in first-seen order."""
    runs: dict[tuple[str, str], str] = {}
    for run in result.results:
        if run.run.agent_version:
            runs.setdefault((run.run.trace_id, run.run.span_id), run.run.agent_version)
    counts: dict[str, int] = {}
    for version in runs.values():
        counts[version] = counts.get(version, 0) + 1
    return counts


def comparison(new: EvalResult, baseline: EvalResult, margin: float) -> BaselineComparison:
    rows = compare(new, baseline)
    return BaselineComparison(
        margin=margin,
        expectations=rows,
        worse=[row.name for row in regressions(rows, margin)],
        agent_versions=agent_versions(new),
        baseline_agent_versions=agent_versions(baseline),
    )


def exit_code(result: EvalResult, baseline: BaselineComparison | None) -> int:
    """What `toolscore eval` exits with: 1 when an expectation is below the baseline, else the result's."""
    return EXIT_FAILED if baseline is not None and baseline.worse else result.exit_code
