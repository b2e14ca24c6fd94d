"""Which scorers of the expectations the pytest plugin's processor matched it left out: LLM judges.

The plugin skips LLM judges unless the session asks for them, as `toolscore eval` does without
`--judge`: a test suite should not reach a paid model, or fail on a network outage, unless told to.
`assert_expectations` judges the scores the processor gives, so what was left out is kept apart to be
reported as skipped rather than disappear.

`MatchRecorder` sits between the processor and the expectations, so it sees each match as it happens
(on the pipeline's worker thread); imported only when the fixture is first used, like the pipeline.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass

from toolscore.collector.pipeline.match import is_judge
from toolscore.collector.registry import Expectation, ExpectationIndex, ExpectationScorer
from toolscore.scorers.model import AgentRun

__all__ = ["JUDGE_OPT_IN", "MatchRecorder", "NotScored"]

JUDGE_OPT_IN = "`--toolscore-judge`, or `toolscore_judge = true` in the pytest ini"
"""How a session turns LLM judges on: named like `toolscore eval --judge`."""


@dataclass(frozen=True, slots=True)
class NotScored:
    """A scorer of an expectation the run matched that gave it no score: an LLM judge not enabled."""

    run: AgentRun
    expectation: Expectation
    scorer: ExpectationScorer

    @property
    def reason(self) -> str:
        return f"skipped: LLM judges are not run unless enabled ({JUDGE_OPT_IN})"

    def text(self) -> str:
        return f"{self.expectation.name} / {self.scorer.name} matched but not scored, {self.reason}"


class MatchRecorder:
    """The processor's matcher: `index`'s matches, without their LLM judges when `judge` is off.

    What was left out is kept in `not_scored`; the processor scores the rest as usual (sampling included).
    """

    def __init__(self, index: ExpectationIndex, *, judge: bool) -> None:
        self.index = index
        self.judge = judge
        self._lock = threading.Lock()
        self._not_scored: list[NotScored] = []

    def match(self, run: AgentRun) -> list[Expectation]:
        out, left_out = [], []
        for exp in self.index.match(run):
            kept = []
            for scorer in exp.scorers:
                if not self.judge and is_judge(scorer):
                    left_out.append(NotScored(run, exp, scorer))
                else:
                    kept.append(scorer)
            out.append(exp if len(kept) == len(exp.scorers) else _with_scorers(exp, kept))
        if left_out:
            with self._lock:
                self._not_scored.extend(left_out)
        return out

    def not_scored(self) -> list[NotScored]:
        with self._lock:
            return list(self._not_scored)


def _with_scorers(exp: Expectation, scorers: list[ExpectationScorer]) -> Expectation:
    """A copy holding only `scorers`; built anew, since `model_copy` would keep the original's cached
    `scorer_names`, which the processor reads when it writes the scores onto the run span."""
    fields = {name: getattr(exp, name) for name in Expectation.model_fields}
    return Expectation.model_construct(**{**fields, "scorers": scorers})
