"""Scorer specs: `{"type": ..., params}` objects, as the CLI, the registry and the API take them.

A spec *is* the scorer: parsing one validates its parameters and yields a ready scorer, so a bad
spec fails where it is written (a file, a request line), never later while scoring a run.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Annotated, Any

from pydantic import Field, TypeAdapter, ValidationError
from pydantic_core import InitErrorDetails, PydanticCustomError

from toolscore.scorers._args_valid import ArgsValid
from toolscore.scorers._efficiency import Efficiency
from toolscore.scorers._f1 import F1
from toolscore.scorers._llm_judge import LLMJudge
from toolscore.scorers._tool_errors import ToolErrors
from toolscore.scorers._tool_policy import ToolPolicy
from toolscore.scorers._tool_selection import ToolSelection
from toolscore.scorers._trajectory import Trajectory

__all__ = ["SCORER_TYPES", "AnyScorer", "ScorerSpec", "check_threshold", "parse_scorer"]

AnyScorer = ToolSelection | Trajectory | F1 | LLMJudge | ToolPolicy | ArgsValid | Efficiency | ToolErrors
"""Every built-in scorer: the four that compare a run with a reference, the judge, and the four reference-free
ones (`tool_policy`, `args_valid`, `efficiency`, `tool_errors`) that production runs are scored with."""

ScorerSpec = Annotated[AnyScorer, Field(discriminator="type")]

SCORER_TYPES = (
    "tool_selection",
    "trajectory",
    "f1",
    "llm_judge",
    "tool_policy",
    "args_valid",
    "efficiency",
    "tool_errors",
)

_ADAPTER: TypeAdapter[AnyScorer] = TypeAdapter(ScorerSpec)


def parse_scorer(data: Mapping[str, Any]) -> AnyScorer:
    """Validate a spec; raises `pydantic.ValidationError` naming the offending field."""
    return _ADAPTER.validate_python(data)


def check_threshold(threshold: float | None) -> None:
    """Refuse a threshold outside 0-1: every scorer scores from 0 to 1, so one above 1 fails every run and
    one below 0 passes every run (a percentage such as 80 was meant as 0.8).

    Called by whoever takes a spec from an author (an expectation being written, a `toolscore score`
    request line), not a constraint on the scorer itself, so that an expectation stored before this check
    still reads. Raised as the scorer's own error at `threshold`, so a file's error names that line."""
    if threshold is not None and not 0.0 <= threshold <= 1.0:
        verdict = "fail" if threshold > 1.0 else "pass"
        message = f"must be between 0 and 1, the range every score is in, got {threshold:g}: every run would {verdict}"
        error = InitErrorDetails(
            type=PydanticCustomError("threshold_range", message), loc=("threshold",), input=threshold
        )
        raise ValidationError.from_exception_data("threshold", [error])
