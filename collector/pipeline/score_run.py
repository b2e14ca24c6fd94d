"""Score runs against their plans and wait for every result: the batch counterpart of the engine's scoring.

The engine scores a run inline on its worker thread and lets judge verdicts arrive later. A batch caller
(`toolscore eval`) wants all results before it reports, so here the inline scorers run at once, in plan
order, and judge evaluations go to a `JudgePool` (the same budget: concurrency, calls per minute,
timeout) while the caller carries on planning; `results()` then waits for the judges to finish.
Judged scorers are skipped, not run, when no judge budget is given.
"""

from __future__ import annotations

import threading
from collections.abc import Hashable
from dataclasses import dataclass, field
from typing import cast

from toolscore.collector.pipeline.config import JudgeBudgetConfig
from toolscore.collector.pipeline.judge import AsyncScorer, JudgePool
from toolscore.collector.pipeline.match import ScorePlan
from toolscore.collector.registry import Expectation, ExpectationScorer
from toolscore.scorers._model import AgentRun, ScoreResult

__all__ = ["PlannedScore", "RunScorer"]


@dataclass(slots=True)
class PlannedScore:
    """One scorer of one matched expectation for one run; `result` is None while a judge is out, or when
    the scorer was skipped (`skipped` says why)."""

    expectation: Expectation
    scorer: ExpectationScorer
    result: ScoreResult | None = None
    skipped: str | None = None


@dataclass(slots=True)
class _Waiting:
    pending: int = 0
    done: threading.Condition = field(default_factory=threading.Condition)


class RunScorer:
    """`score(run, plan)` returns the run's planned scores at once; judge results fill in by `results()`.

    Use as a context manager (or call `close`) so the judge loop's thread ends.
    """

    def __init__(self, judge: JudgeBudgetConfig | None = None) -> None:
        self.judge = judge
        self._pool = JudgePool(judge, self._deliver) if judge is not None else None
        self._slots: dict[Hashable, PlannedScore] = {}
        self._waiting = _Waiting()

    def score(self, run: AgentRun, plan: ScorePlan) -> list[PlannedScore]:
        """Inline scorers scored now; judged ones submitted under the budget (or skipped without one)."""
        out = [PlannedScore(exp, scorer, scorer.scorer.score(run)) for exp, scorer in plan.inline]
        for exp, scorer in plan.judged:
            slot = PlannedScore(exp, scorer)
            out.append(slot)
            if self._pool is None:
                slot.skipped = "judge not enabled"
                continue
            key = (run.run_id, exp.name, len(self._slots))
            with self._waiting.done:
                self._slots[key] = slot
                self._waiting.pending += 1
            failure = self._pool.submit(key, cast(AsyncScorer, scorer.scorer), run)
            if failure is not None:
                self._deliver(key, failure)
        return out

    def _deliver(self, key: Hashable, result: ScoreResult) -> None:
        with self._waiting.done:
            slot = self._slots.pop(key, None)
            if slot is None:
                return
            slot.result = result
            self._waiting.pending -= 1
            self._waiting.done.notify_all()

    def results(self, timeout_s: float | None = None) -> bool:
        """Wait for every judge submitted so far; True when none is left (each has its own timeout)."""
        with self._waiting.done:
            return self._waiting.done.wait_for(lambda: self._waiting.pending == 0, timeout_s)

    def close(self) -> None:
        if self._pool is not None:
            self._pool.close(timeout_s=1.0)

    def __enter__(self) -> RunScorer:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
