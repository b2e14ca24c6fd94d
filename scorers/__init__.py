"""Pure, deterministic tool-call scorers and the run model they read.

The public API is what `__all__` lists: the run model (`AgentRun`, `ToolCall`, `ToolSpec`) users build runs
with, the score values scorers return, the eight scorers, their base class and `parse_scorer`, which builds a
scorer from its spec (`{"type": "trajectory", ...}`). Every module of this package is private (`_`-prefixed):
import from `toolscore.scorers`, never from a module. This package imports no OTel, gRPC or
`toolscore.collector` code.
"""

from __future__ import annotations

from toolscore.scorers._args_valid import ArgsValid
from toolscore.scorers._base import ScorerBase
from toolscore.scorers._efficiency import Efficiency
from toolscore.scorers._f1 import F1
from toolscore.scorers._llm_judge import LLMJudge
from toolscore.scorers._model import (
    AgentRun,
    ArgsState,
    JsonValue,
    Label,
    Score,
    ScoreFailure,
    ScoreResult,
    ToolCall,
    ToolSpec,
)
from toolscore.scorers._spec import SCORER_TYPES, ScorerSpec, parse_scorer
from toolscore.scorers._tool_errors import ToolErrors
from toolscore.scorers._tool_policy import ToolPolicy
from toolscore.scorers._tool_selection import ToolSelection
from toolscore.scorers._trajectory import Trajectory

__all__ = [
    "F1",
    "SCORER_TYPES",
    "AgentRun",
    "ArgsState",
    "ArgsValid",
    "Efficiency",
    "JsonValue",
    "LLMJudge",
    "Label",
    "Score",
    "ScoreFailure",
    "ScoreResult",
    "ScorerBase",
    "ScorerSpec",
    "ToolCall",
    "ToolErrors",
    "ToolPolicy",
    "ToolSelection",
    "ToolSpec",
    "Trajectory",
    "parse_scorer",
]
