"""Pure, deterministic tool-call scorers and the run model they read."""

from __future__ import annotations

from toolscore.scorers.model import (
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

__all__ = [
    "AgentRun",
    "ArgsState",
    "JsonValue",
    "Label",
    "Score",
    "ScoreFailure",
    "ScoreResult",
    "ToolCall",
    "ToolSpec",
]
