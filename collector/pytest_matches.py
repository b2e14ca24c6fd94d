"""What the pytest plugin's processor matched, and which matched scorers did not score (and why).

`assert_expectations` judges the scores the processor gives; a run that matched an expectation but got
no score from one of its scorers would otherwise look like a run that matched nothing. Two things stop
a matched scorer: its `sample_rate` (chosen by trace id, as in production) and, unless the session asks
for them, LLM judges, which the plugin skips by default as `toolscore eval` does without `--judge`: a
test suite should not reach a paid model, or fail on a network outage, unless told to.

`MatchRecorder` sits between the processor and the expectations, so it sees each match as it happens
(on the pipeline's worker thread); imported only when the fixture is first used, like the pipeline.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass

from toolscore.collector.pipeline.match import is_judge
from toolscore.collector.registry import Expectation, ExpectationScorer
from toolscore.collector.registry._matching import ExpectationIndex
from toolscore.collector.registry._sampling import should_sample
from toolscore.scorers._model import AgentRun

__all__ = ["JUDGE_OPT_IN", "MatchRecorder", "NotScored"]

JUDGE_OPT_IN = "`--toolscore-judge`, or `toolscore_judge = true` in the pytest ini"
"""How a session turns LLM judges on: named like `toolscore eval --judge`."""


@dataclass(frozen=True, slots=True)
class NotScored:
    """A scorer of an expectation the run matched that gave it no score."""

    run: AgentRun
    expectation: Expectation
    scorer: ExpectationScorer
    judge_skipped: bool
    """True: an LLM judge the session did not enable; False: sampled out by its `sample_rate`."""

    @property
    def reason(self) -> str:
        if self.judge_skipped:
            return f"skipped: LLM judges are not run unless enabled ({JUDGE_OPT_IN})"
        return f"sampled out (sample_rate {self.scorer.sample_rate:g}: the trace id decides which runs are scored)"

    def text(self) -> str:
        return f"{self.expectation.name} / {self.scorer.name} matched but not scored, {self.reason}"


class MatchRecorder:
    """The processor's matcher: `index`'s matches, each with only the scorers that will score the run.

    A matched expectation is handed on with its sampled-out scorers, and its LLM judges when `judge` is
    off, left out (the processor then scores exactly what is left); what was left out is kept in
    `not_scored`, and every match in `matched`.
    """

    def __init__(self, index: ExpectationIndex, *, judge: bool) -> None:
        self.index = index
        self.judge = judge
        self._lock = threading.Lock()
        self._matched: list[tuple[AgentRun, Expectation]] = []
        self._not_scored: list[NotScored] = []

    def match(self, run: AgentRun) -> list[Expectation]:
        out, left_out = [], []
        for exp in self.index.match(run):
            kept = []
            for scorer in exp.scorers:
                if not should_sample(run.trace_id, scorer.sample_rate):
                    left_out.append(NotScored(run, exp, scorer, judge_skipped=False))
                elif not self.judge and is_judge(scorer):
                    left_out.append(NotScored(run, exp, scorer, judge_skipped=True))
                else:
                    kept.append(scorer)
            out.append(exp if len(kept) == len(exp.scorers) else _with_scorers(exp, kept))
        with self._lock:
            self._matched.extend((run, exp) for exp in out)
            self._not_scored.extend(left_out)
        return out

    def matched(self) -> list[tuple[AgentRun, Expectation]]:
        with self._lock:
            return list(self._matched)

    def not_scored(self) -> list[NotScored]:
        with self._lock:
            return list(self._not_scored)


def _with_scorers(exp: Expectation, scorers: list[ExpectationScorer]) -> Expectation:
    """A copy holding only `scorers`; built anew, since `model_copy` would keep the original's cached
    `scorer_names`, which the processor reads when it writes the scores onto the run span."""
    fields = {name: getattr(exp, name) for name in Expectation.model_fields}
    return Expectation.model_construct(**{**fields, "scorers": scorers})
