"""What an offline evaluation found, as typed values every report reads (and `--json` writes whole).

Per run and matched expectation a `RunResult` (each scorer's verdict, and the call diff when it
failed); per expectation an `ExpectationResult` aggregating them against its threshold; and the
runs no expectation matched. A skipped scorer (an LLM judge without `--judge`) counts nowhere: a run
whose scorers were all skipped is neither passed nor failed.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from toolscore.collector.evaluate.diff import CallDiff

__all__ = [
    "EXIT_BAD_INPUT",
    "EXIT_FAILED",
    "EXIT_OK",
    "EvalResult",
    "ExpectationResult",
    "InputSummary",
    "RunRef",
    "RunResult",
    "ScorerResult",
]

EXIT_OK = 0
"""Every expectation met its threshold."""
EXIT_FAILED = 1
"""At least one expectation did not."""
EXIT_BAD_INPUT = 2
"""A file could not be read, or the expectations are invalid (as click's usage errors)."""

RunStatus = Literal["pass", "fail", "skipped"]


class ScorerResult(BaseModel):
    """One scorer's verdict on one run: a score, a failure to score (`error`), or `skipped`."""

    model_config = ConfigDict(frozen=True)

    name: str
    type: str
    status: Literal["pass", "fail", "error", "skipped"]
    value: float | None = None
    explanation: str = ""
    error_type: str | None = Field(default=None, description="Why the scorer could not score (`error`).")
    details: dict[str, Any] = Field(default_factory=dict)
    diff: CallDiff | None = Field(default=None, description="Expected against actual calls, when not a pass.")


class RunRef(BaseModel):
    """Which run, where it was read from, and the calls it made (`{name, args?, error?}`)."""

    model_config = ConfigDict(frozen=True)

    trace_id: str
    span_id: str
    agent_name: str | None = None
    convention: str | None = None
    source: str | None = Field(default=None, description="The first trace file holding the trace.")
    calls: list[dict[str, Any]] = Field(default_factory=list)
    agent_version: str | None = Field(
        default=None,
        description="The run's agent version (`toolscore.agent.version`, read as `pipeline.agent_version` says); "
        "None when it has none.",
    )

    @property
    def label(self) -> str:
        """`weather_agent (trace 6b9bb2f6…, span 1a2b3c4d…)`: short, and enough to find the trace."""
        return f"{self.agent_name or '<unnamed run>'} (trace {self.trace_id[:8]}…, span {self.span_id[:8]}…)"


class RunResult(BaseModel):
    """One run scored against one expectation; `score` is the mean of its scorers' values."""

    model_config = ConfigDict(frozen=True)

    expectation: str
    run: RunRef
    status: RunStatus
    score: float | None = None
    scorers: list[ScorerResult] = Field(default_factory=list)


class ExpectationResult(BaseModel):
    """An expectation over every run it matched: pass rate against `min_pass_rate`."""

    model_config = ConfigDict(frozen=True)

    name: str
    labels: dict[str, str] = Field(default_factory=dict)
    matched: int = Field(description="Runs the expectation matched (skipped ones included).")
    passed: int
    failed: int
    skipped: int = Field(default=0, description="Matched runs whose every scorer was skipped.")
    pass_rate: float | None = Field(
        description="The pass rate: runs that passed / runs scored, passed / (passed + failed), a run passing when "
        "every one of its scorers passed (the live `toolscore.expectation.runs` counts the same); None when no run "
        "was scored."
    )
    mean_score: float | None = Field(description="Mean of the scored runs' scores; None when none was scored.")
    min_pass_rate: float
    ok: bool = Field(description="The pass rate meets `min_pass_rate` (or no run was scored, unless required).")


class InputSummary(BaseModel):
    """What was read: files, spans (and those skipped as unusable), runs rebuilt."""

    model_config = ConfigDict(frozen=True)

    trace_files: list[str]
    expectation_files: list[str]
    spans: int
    skipped_spans: int = 0
    skipped_examples: list[str] = Field(
        default_factory=list, description="Why the first skipped spans were unusable, each with its file."
    )
    runs: int
    base64_id_spans: int = Field(
        default=0, description="Spans of OTLP/JSON whose ids were base64 (protobuf's JSON mapping), not hex."
    )


class EvalResult(BaseModel):
    """The whole evaluation; `exit_code` is what `toolscore eval` exits with."""

    model_config = ConfigDict(frozen=True)

    ok: bool
    inputs: InputSummary
    judge: bool = Field(description="Whether LLM-judge scorers were run (`--judge`).")
    expectations: list[ExpectationResult]
    results: list[RunResult] = Field(description="Per run and matched expectation, in run order.")
    unmatched: list[RunRef] = Field(description="Runs no expectation matched.")
    nothing_scored: list[str] = Field(
        default_factory=list,
        description="Per expectation file none of whose expectations scored a run, why: a failure unless "
        "`allow_empty` (CI must not pass having checked nothing).",
    )

    @property
    def exit_code(self) -> int:
        return EXIT_OK if self.ok else EXIT_FAILED

    @property
    def failures(self) -> list[RunResult]:
        return [result for result in self.results if result.status == "fail"]
