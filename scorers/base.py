"""What every scorer shares: its parameters are its identity, and it never raises into the caller."""

from __future__ import annotations

from typing import Any, ClassVar

from pydantic import BaseModel, ConfigDict, Field, PrivateAttr

from toolscore.scorers.model import AgentRun, Label, Score, ScoreFailure, ScoreResult

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

    # Resolved once: `_result` runs on every evaluation, and pydantic attribute access is not free.
    _scorer_name: str = PrivateAttr(default="")
    _threshold: float = PrivateAttr(default=1.0)

    def model_post_init(self, context: Any, /) -> None:
        self._scorer_name = self.name or str(getattr(self, "type", type(self).__name__))
        self._threshold = self.default_threshold if self.threshold is None else self.threshold

    @property
    def scorer_name(self) -> str:
        return self._scorer_name

    def score(self, run: AgentRun) -> ScoreResult:
        try:
            return self._score(run)
        except Exception as exc:
            return ScoreFailure(name=self.scorer_name, error_type=type(exc).__name__, message=str(exc))

    def _score(self, run: AgentRun) -> ScoreResult:
        raise NotImplementedError

    def _result(self, value: float, explanation: str, details: dict[str, Any]) -> Score:
        # Private values are read from their dict directly, skipping pydantic's __getattr__.
        private = self.__pydantic_private__
        assert private is not None
        value = float(value)
        label: Label = "pass" if value >= private["_threshold"] else "fail"
        return Score.trusted(private["_scorer_name"], value, label, explanation, details)
