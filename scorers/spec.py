"""Scorer specs: `{"type": ..., params}` objects, as the CLI, the registry and the API take them.

A spec *is* the scorer: parsing one validates its parameters and yields a ready scorer, so a bad
spec fails where it is written (a file, a request line), never later while scoring a run.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Annotated, Any

from pydantic import Field, TypeAdapter

from toolscore.scorers.f1 import F1
from toolscore.scorers.llm_judge import LLMJudge
from toolscore.scorers.tool_selection import ToolSelection
from toolscore.scorers.trajectory import Trajectory

__all__ = ["SCORER_TYPES", "ScorerSpec", "parse_scorer"]

ScorerSpec = Annotated[ToolSelection | Trajectory | F1 | LLMJudge, Field(discriminator="type")]

SCORER_TYPES = ("tool_selection", "trajectory", "f1", "llm_judge")

_ADAPTER: TypeAdapter[ToolSelection | Trajectory | F1 | LLMJudge] = TypeAdapter(ScorerSpec)


def parse_scorer(data: Mapping[str, Any]) -> ToolSelection | Trajectory | F1 | LLMJudge:
    """Validate a spec; raises `pydantic.ValidationError` naming the offending field."""
    return _ADAPTER.validate_python(data)
