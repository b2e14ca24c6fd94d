"""`toolscore eval --baseline`: two sets of traces against the same expectations, per-expectation difference.

A release is judged against the traces of the version before it (main's run against a pull request's): an
expectation whose pass rate in the new set is lower than in the baseline by more than `margin` fails the
comparison. An expectation with no scored run on either side has no difference and never fails it.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

from toolscore.collector.evaluate.model import EvalResult

__all__ = ["BaselineRow", "compare", "regressions"]


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
