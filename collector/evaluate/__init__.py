"""Offline evaluation: score recorded traces against expectations, as CI does (`toolscore eval`).

`run_eval` is the entry point and returns an `EvalResult`; the `report_*` modules render it (console,
JUnit XML, Markdown, JSON) and `diff` explains each failure call by call.
"""

from __future__ import annotations

from toolscore.collector.evaluate.core import Progress, run_eval
from toolscore.collector.evaluate.diff import CallDiff, DiffRow, KeyDiff, diff_calls, diff_for_scorer
from toolscore.collector.evaluate.diff_text import render_diff
from toolscore.collector.evaluate.inputs import EvalInputError
from toolscore.collector.evaluate.model import (
    EXIT_BAD_INPUT,
    EXIT_FAILED,
    EXIT_OK,
    EvalResult,
    ExpectationResult,
    InputSummary,
    RunRef,
    RunResult,
    ScorerResult,
)

__all__ = [
    "EXIT_BAD_INPUT",
    "EXIT_FAILED",
    "EXIT_OK",
    "CallDiff",
    "DiffRow",
    "EvalInputError",
    "EvalResult",
    "ExpectationResult",
    "InputSummary",
    "KeyDiff",
    "Progress",
    "RunRef",
    "RunResult",
    "ScorerResult",
    "diff_calls",
    "diff_for_scorer",
    "render_diff",
    "run_eval",
]
