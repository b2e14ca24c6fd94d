"""A run's verdict per expectation: the run passes an expectation when every scorer of it that scored the run passed.

This is the pass rate `toolscore eval` reports (passing runs / runs) and the one the dashboard and the alert
rules read (`toolscore.expectation.runs`), as opposed to the scorer pass rate (`toolscore.evaluations`: every
scorer's verdict pooled), which says 70% where 60% of the runs passed when failures cluster in some runs.
A scorer that could not score (a judge timeout, a budget spent) fails the run, as in `toolscore eval`; a
scorer sampled out of the run is not waited for, and a run none of an expectation's scorers scored has no
verdict on it. The verdict is known when the expectation's last result is in: an LLM judge's may come after
the run span has gone on with the inline scorers' results.
"""

from __future__ import annotations

from toolscore.collector.pipeline.match import ScorePlan
from toolscore.scorers._model import Score, ScoreResult

__all__ = ["RunVerdicts", "is_pass"]


def is_pass(result: ScoreResult) -> bool:
    """A scorer's result counts for the run's pass only when it is a score labelled `pass`."""
    return isinstance(result, Score) and result.label == "pass"


class RunVerdicts:
    """The results each of one run's matched expectations still waits for, and which have failed so far.

    Owned by the engine's worker thread, like the rest of a run in flight; no lock.
    """

    __slots__ = ("_due", "_failed")

    def __init__(self, plan: ScorePlan) -> None:
        self._due: dict[str, int] = {}
        for expectation, _ in (*plan.inline, *plan.judged):
            self._due[expectation.name] = self._due.get(expectation.name, 0) + 1
        self._failed: set[str] = set()

    def add(self, expectation: str, result: ScoreResult) -> bool | None:
        """Take one result; the expectation's verdict (True: pass) when it was the last one due, else None."""
        left = self._due.get(expectation)
        if left is None:
            return None
        if not is_pass(result):
            self._failed.add(expectation)
        if left > 1:
            self._due[expectation] = left - 1
            return None
        del self._due[expectation]
        return expectation not in self._failed
