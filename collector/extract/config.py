"""Extraction settings and counters.

`ExtractConfig` bounds what one run may hold, so that a span with a multi-megabyte tool result
cannot grow memory without limit. `ExtractStats` counts what extraction saw, kept, capped and left
out, with a reason for everything left out; it is filled in place and never raises.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from pydantic import BaseModel, ConfigDict, Field

from toolscore.collector.extract.privacy import PrivacyConfig

if TYPE_CHECKING:
    from toolscore.collector.spans import SpanRecord

__all__ = ["ExtractConfig", "ExtractStats"]


class ExtractConfig(BaseModel):
    """How runs and calls are rebuilt from spans."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    max_args_bytes: int = Field(
        default=64 * 1024,
        ge=0,
        description="Largest tool-call arguments kept, in UTF-8 bytes. Longer arguments keep their first "
        "`max_args_bytes` bytes as raw text (`args_state='raw'`) and are not parsed. Default: 65536.",
    )
    max_result_bytes: int = Field(
        default=16 * 1024,
        ge=0,
        description="Largest tool result kept, in UTF-8 bytes; longer results are cut to this size. Default: 16384.",
    )
    max_text_bytes: int = Field(
        default=16 * 1024,
        ge=0,
        description="Largest run input or output text kept, in UTF-8 bytes; longer text is cut. Default: 16384.",
    )
    max_attribute_bytes: int = Field(
        default=4 * 1024,
        ge=0,
        description="Largest string value kept among a run span's attributes (`AgentRun.attributes`), in "
        "UTF-8 bytes; longer values are cut. Also bounds the run's tool catalog (`AgentRun.available_tools`): "
        "each tool's definition and all of them together. Default: 4096.",
    )
    max_calls_per_run: int = Field(
        default=1000,
        ge=0,
        description="Most tool calls kept per run, the first ones in issue order; the rest are counted "
        "as `calls_over_limit`. Default: 1000.",
    )
    infer_runs: bool = Field(
        default=True,
        description="When a tool call has no recognised run span above it, let the topmost available "
        "ancestor (or the root of a sub-invocation under a tool span) stand in as an inferred run. "
        "When false, such calls are dropped and counted as `call_without_run`. Default: true.",
    )
    include_output_tools: bool = Field(
        default=False,
        description="Keep the spans frameworks record for structured output (pydantic-ai `running output "
        "function`), which are not tools the agent chose to call. Default: false.",
    )
    privacy: PrivacyConfig = Field(
        default_factory=PrivacyConfig,
        description="What content runs keep: masked keys and patterns, or names only (docs/security.md).",
    )


@dataclass
class ExtractStats:
    """Counters filled by `rebuild_runs`; pass one instance to accumulate over several calls."""

    spans: int = 0
    """Spans received, duplicates included."""
    duplicate_spans: int = 0
    """Spans received again with a trace and span id already seen; the first delivery is kept."""
    traces: int = 0
    runs: int = 0
    inferred_runs: int = 0
    calls: int = 0
    model_only_calls: int = 0
    """Calls seen only in a model response, no tool span recorded them (see `model_calls`); among `calls`
    unless `max_calls_per_run` left them out."""
    args_truncated: int = 0
    """Calls left without their whole arguments by `max_args_bytes`: kept cut, or not kept when the model
    response's copy was the only one. Once per call, though a call may read two copies (the tool span's
    and the response's); not when a whole copy replaced a cut one."""
    results_truncated: int = 0
    tool_specs_cut: int = 0
    """Tool definitions of a run's catalog cut or left out by `max_attribute_bytes` (see `catalog`), or whose
    text was too long to decode."""
    by_convention: Counter[str] = field(default_factory=Counter)
    """Spans recognised per convention."""
    skipped: Counter[str] = field(default_factory=Counter)
    """What was left out, by reason: `unknown_convention` (a trace no extractor recognised),
    `read_error:<convention>`, `output_tool`, `tool_layer` (a tool span folded into the call it is a
    lower layer of, such as an MCP client or server span), `run_layer` (a run span folded into the run of the
    same agent right under it, the same run traced by another instrumentation), `call_without_run`, `calls_over_limit`,
    `model_call_without_name` (a call a model response lists without a tool name, see `model_calls`),
    `tool_definition_malformed` (a tool definition in none of the shapes `catalog` reads)."""

    def skip(self, reason: str, count: int = 1) -> None:
        self.skipped[reason] += count

    def read_failed(self, span: SpanRecord, convention: str) -> None:
        """`convention` recognised `span` but could not read it: counted `read_error:<convention>`.

        A hook apart from `skip` because it names the span: a caller that rebuilds the same spans again
        (the pipeline, at each run of a trace that settles) can count each span once.
        """
        self.skip(f"read_error:{convention}")

    def calls_dropped(self, reason: str, count: int, run_span_id: str | None) -> None:
        """`count` tool calls were left out of the runs: `calls_over_limit` (the run at `run_span_id` had
        more than `max_calls_per_run`) or `call_without_run` (no run owns it, `run_span_id` is None).

        A hook apart from `skip` because it names the run: a caller that rebuilds the same spans again
        (the pipeline, at each run of a trace that settles) can count a run's calls when it scores that run.
        """
        self.skip(reason, count)
