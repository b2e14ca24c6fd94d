"""What every scorer shares: its parameters are its identity, and it never raises into the caller."""

from __future__ import annotations

from typing import Any, ClassVar

from pydantic import BaseModel, ConfigDict, Field, PrivateAttr

from toolscore.scorers._masked import NAMES_ONLY_NOTE, MaskedValueError, names_only
from toolscore.scorers._model import AgentRun, Label, Score, ScoreFailure, ScoreResult, ToolCall

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

    ignore_tools: tuple[str, ...] = Field(
        default=(),
        description="Tool names whose calls the scorer leaves out before scoring, as if the run had not made them "
        "(a framework's built-in finishing tool: smolagents `final_answer`, DSPy `finish`). Default: [] (none).",
    )

    default_threshold: ClassVar[float] = 1.0
    values_needed: ClassVar[str] = ""
    """Why the scorer cannot score a run that kept names only (`AgentRun.content`), empty when it can: such a
    run then gets a `values_not_kept` failure rather than a score computed on values that are not there."""
    keys_only_note: ClassVar[bool] = False
    """The scorer compares argument values: on a run that kept names only it compares keys, and says so."""

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
            kept_names_only = names_only(run)
            if kept_names_only and self.values_needed:
                return self.values_not_kept()
            if self.ignore_tools:
                run = run.model_copy(update={"calls": self.scored_calls(run.calls)})
            result = self._score(run)
            if kept_names_only and self.keys_only_note and isinstance(result, Score):
                note = f"arguments compared by keys only ({NAMES_ONLY_NOTE}); "
                details = {**result.details, "privacy": "names_only"}
                return result.model_copy(update={"explanation": note + result.explanation, "details": details})
            return result
        except MaskedValueError as exc:
            return ScoreFailure(name=self.scorer_name, error_type="masked_value", message=str(exc))
        except Exception as exc:
            return ScoreFailure(name=self.scorer_name, error_type=type(exc).__name__, message=str(exc))

    def values_not_kept(self) -> ScoreFailure:
        """The failure a run that kept names only gets from a scorer that needs values (`values_needed`)."""
        message = f"{self.values_needed}, and {NAMES_ONLY_NOTE}"
        return ScoreFailure(name=self.scorer_name, error_type="values_not_kept", message=message)

    def scored_calls(self, calls: tuple[ToolCall, ...]) -> tuple[ToolCall, ...]:
        """The calls the score reads: `calls` without those of `ignore_tools` (the same tuple when none is).

        Public so that a diff of a score shows the calls the score saw, at the positions it saw them.
        """
        ignored = self.ignore_tools
        return tuple(call for call in calls if call.name not in ignored) if ignored else calls

    def _score(self, run: AgentRun) -> ScoreResult:
        raise NotImplementedError

    def _result(self, value: float, explanation: str, details: dict[str, Any]) -> Score:
        # Private values are read from their dict directly, skipping pydantic's __getattr__.
        private = self.__pydantic_private__
        assert private is not None
        value = float(value)
        label: Label = "pass" if value >= private["_threshold"] else "fail"
        return Score.trusted(private["_scorer_name"], value, label, explanation, details)
