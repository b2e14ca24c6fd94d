"""The pipeline's settings: one pydantic model, every field with its default, units in the names.

The timing defaults follow the OTel collector's trace processors: a trace with no run span waits as
long as tail sampling's `decision_wait` (30 s); a run span waits `settle_ms` after it ends for
stragglers (children that end after their parent, spans that travel in a later export batch).
`max_hold_ms` bounds how long any run span is kept from the next processor, whatever the judge does.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field, model_validator

from toolscore.collector.extract import ExtractConfig
from toolscore.collector.pipeline.agent_version import AgentVersionConfig

__all__ = ["JudgeBudgetConfig", "PipelineConfig"]


class JudgeBudgetConfig(BaseModel):
    """How much LLM-judge work the pipeline may do; judges never run on the span path."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    max_concurrency: int = Field(
        default=4, ge=1, description="Judge evaluations in flight at once, over all expectations. Default: 4."
    )
    calls_per_minute: float = Field(
        default=60.0,
        ge=0,
        description="Judge evaluations started per minute (a token bucket holding one minute's worth); "
        "runs over budget get a `judge_over_budget` failure instead of a judge score. Default: 60.",
    )
    timeout_s: float = Field(
        default=20.0,
        gt=0,
        description="Longest one judge evaluation may take, retries included, before it fails with "
        "`judge_timeout`. Default: 20.",
    )


class PipelineConfig(BaseModel):
    """Settings of the scoring pipeline shared by the in-process span processor and the collector."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    settle_ms: float = Field(
        default=250.0,
        ge=0,
        description="A run is scored once its run span has ended and no new span (or GenAI log event) has "
        "arrived under it for this long; a trace whose root has ended finishes the same way. Log events sent "
        "later than this after their run span are late. Default: 250.",
    )
    trace_idle_timeout_s: float = Field(
        default=30.0,
        gt=0,
        description="A trace that has received no span for this long is finished: runs without a run "
        "span are scored (flagged incomplete if its root never came), and its state is freed. Default: 30.",
    )
    max_hold_ms: float = Field(
        default=10_000.0,
        ge=0,
        description="Longest a run span is held back from the next processor, from its arrival; it then "
        "goes on with the scores that are ready (later judge scores go out only as logs and metrics). "
        "Default: 10000.",
    )
    max_pending_traces: int = Field(
        default=10_000,
        ge=1,
        description="Traces kept in memory; when a new trace would exceed it, the oldest is released "
        "unscored and its spans counted as dropped (`max_pending_traces`). Default: 10000.",
    )
    max_spans_per_trace: int = Field(
        default=2_000,
        ge=1,
        description="Spans kept per trace (run spans are counted apart, against the same limit, so a run "
        "whose other spans reach it is still scored); later spans of the trace pass straight on, counted as "
        "dropped (`max_spans_per_trace`), and its runs are flagged incomplete. Default: 2000.",
    )
    max_pending_bytes: int = Field(
        default=128 * 1024 * 1024,
        ge=1,
        description="The memory the spans kept for pending traces may take, in bytes, as estimated per span: "
        "its text (`toolscore serve`: its bytes as received) and a measured cost per attribute, event and "
        "span, so that spans of many small entries count for what they take in Python (docs/serve.md, Memory per "
        "span); beyond it the oldest traces are released unscored and their spans counted as dropped "
        "(`max_pending_bytes`). Model spans carry whole prompts, so this, not `max_pending_traces`, is what "
        "bounds memory under long or many runs. Default: 134217728 (128 MiB).",
    )
    max_finished_bytes: int = Field(
        default=64 * 1024 * 1024,
        ge=1,
        description="The memory the span ids of finished traces may take, in bytes, as estimated: ~105 per span "
        "id and ~350 per trace (docs/security.md, Steady-state memory). They are kept to recognise a span sent "
        "again, or late, after its trace finished (passed on, not scored twice), for the latest "
        "`max_pending_traces` finished traces and within this; past it the oldest are forgotten (counted in "
        "`toolscore.dedupe.forgotten`, `max_finished_bytes`), and a span of one is taken as new. 10,000 traces "
        "of 60 spans fit. Default: 67108864 (64 MiB).",
    )
    queue_size: int = Field(
        default=2_048,
        ge=1,
        description="Spans waiting for the worker thread; when full, a span passes straight on unscored "
        "and is counted as dropped (`queue_full`), and the run it belonged to is flagged incomplete. "
        "Default: 2048.",
    )
    emit_span_events: bool = Field(
        default=True,
        description="Add one `gen_ai.evaluation.result` event per score to the run span (the scores are "
        "always emitted as attributes and as log records). Default: true.",
    )
    prefilter: bool = Field(
        default=True,
        description="Pass the spans of a trace that has shown no agent marker yet (an attribute key or "
        "instrumentation scope a span convention recognises spans by) straight on, unread: in process from "
        "the thread that ends them, in `toolscore serve` forwarded as received (a request of such spans "
        "whole). HTTP, database and other spans no convention reads then cost next to nothing "
        "(docs/performance.md). Off: every span goes through the pipeline. Default: true.",
    )
    judge: JudgeBudgetConfig = Field(default_factory=JudgeBudgetConfig, description="LLM-judge budget.")
    extract: ExtractConfig = Field(default_factory=ExtractConfig, description="How runs and calls are rebuilt.")
    agent_version: AgentVersionConfig = Field(
        default_factory=AgentVersionConfig,
        description="Where a run's agent version is read from (the `toolscore.agent.version` of its verdicts).",
    )

    @model_validator(mode="after")
    def _hold_covers_settle(self) -> PipelineConfig:
        if self.max_hold_ms < self.settle_ms:
            raise ValueError(
                f"max_hold_ms ({self.max_hold_ms}) must be >= settle_ms ({self.settle_ms}): "
                "a run span cannot settle after it has been released"
            )
        return self
