"""What every scorer shares: its parameters are its identity, and it never raises into the caller."""

from __future__ import annotations

from typing import Any, ClassVar

from pydantic import BaseModel, ConfigDict, Field

from toolscore.scorers.model import AgentRun, Score, ScoreFailure, ScoreResult

__all__ = ["ScorerBase"]


class ScorerBase(BaseModel):
    """A scorer is a frozen data class of its parameters with one method, `score`.

    Subclasses set a `type` literal (the discriminator in scorer specs) and implement `_score`.
    `score` turns any exception into a `ScoreFailure`, so one broken scorer never stops the others.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    name: str | None = Field(default=None, description="Name reported with the score. Default: the scorer's type.")
    threshold: float | None = Field(
        default=None, description="`pass` when the score is >= threshold. Default: the scorer's `default_threshold`."
    )

    default_threshold: ClassVar[float] = 1.0

    @property
    def scorer_name(self) -> str:
        return self.name or str(getattr(self, "type", type(self).__name__))

    def score(self, run: AgentRun) -> ScoreResult:
        try:
            return self._score(run)
        except Exception as exc:
            return ScoreFailure(name=self.scorer_name, error_type=type(exc).__name__, message=str(exc))

    def _score(self, run: AgentRun) -> ScoreResult:
        raise NotImplementedError

    def _result(self, value: float, explanation: str, details: dict[str, Any]) -> Score:
        threshold = self.default_threshold if self.threshold is None else self.threshold
        return Score(
            name=self.scorer_name,
            value=value,
            label="pass" if value >= threshold else "fail",
            explanation=explanation,
            details=details,
        )
