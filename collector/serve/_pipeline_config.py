"""`ServePipelineConfig`: the engine's settings under `toolscore serve`, with a queue sized for a collector.

The in-process processor's queue (2,048 spans) follows the SDK's `BatchSpanProcessor`, whose spans
arrive one by one. A collector's arrive by the request, and it queues or refuses whole requests (see
`CollectorPipeline`): a queue that holds only a few of them leaves the worker idle between a refusal
and the sender's retry. The OpenTelemetry Collector's batch processor sends 8,192 spans at a time by
default; serve's queue holds two such batches, one scored while the next waits. Measured: ~2.2 KB
per queued span (the request's bytes and its parsed messages), ~37 MB when full.

A request that finds the queue full waits for room (`overload_wait_ms`) before it is refused: the
sender is held for a moment instead of sending the same request again a few milliseconds later, which
the collector would receive, and refuse, again and again: on the collector benchmark's load run to
saturation, waiting removes the refusals and costs less CPU per span than refusing at once.
"""

from __future__ import annotations

from pydantic import Field

from toolscore.collector.pipeline.config import PipelineConfig

__all__ = ["ServePipelineConfig"]


class ServePipelineConfig(PipelineConfig):
    """`PipelineConfig` with serve's queue: the same keys, bounded per request rather than per span."""

    queue_size: int = Field(
        default=16_384,
        ge=1,
        description="Spans waiting for the worker thread. A request that does not fit beside those already "
        "queued is refused whole with RESOURCE_EXHAUSTED / 429 for the sender to retry; an empty queue takes "
        "any one request (`receiver.max_message_bytes` bounds it), so an accepted request is always scored "
        "whole. About 2.2 KB per queued span. Default: 16384.",
    )
    overload_wait_ms: float = Field(
        default=1000.0,
        ge=0,
        description="How long an export request that does not fit (the queue, or the forward queue, is "
        "full) waits for room before it is refused with RESOURCE_EXHAUSTED / 429; the sender waits for the "
        "answer instead of sending the request again. Keep it well under the senders' export timeout (10 s "
        "for OTLP exporters). 0 refuses at once. Default: 1000.",
    )
    prefilter: bool = Field(
        default=True,
        description="Forward the spans of traces that show no agent marker (an attribute key or instrumentation "
        "scope a span convention recognises spans by) as received, unread (a request of such spans whole). "
        "Behind a Collector a trace's spans come in any order, so a plain span of a trace that has shown no "
        "marker yet is held (as its bytes) until its trace decides: a later marked span sends it to the "
        "pipeline; its root and `settle_ms` without a span of it, or `prefilter_hold_ms`, forward it untouched. "
        "Off: every span is read. Default: true.",
    )
    prefilter_hold_ms: float = Field(
        default=5_000.0,
        ge=0,
        description="Longest the pre-filter holds a plain span of a trace whose root has not come (its root is "
        "in a service not sent here, or comes later) before forwarding it untouched; an agent span of its "
        "trace after that misses it. Covers the SDK's batch delay (5 s) between two services' exports. "
        "Default: 5000.",
    )
    prefilter_hold_bytes: int = Field(
        default=64 * 1024 * 1024,
        ge=1,
        description="The memory the held plain spans may take, in bytes (their received bytes and ~200 per "
        "trace); beyond it the oldest held request is forwarded untouched at once and its spans counted as "
        "dropped (`prefilter_hold_bytes`). Default: 67108864 (64 MiB).",
    )
    flag_runs_begun_before_start: bool = Field(
        default=False,
        description="Behind a gateway that balances by trace id (several replicas): flag incomplete a run "
        "whose run span began in the hour before this replica started, in a trace that reached it within "
        "`trace_idle_timeout_s` of its start. Such a run was in flight when the replica joined, so spans of "
        "it that ended before went to another replica. Off for one process alone, where runs sent just "
        "after a (re)start, such as `toolscore demo`'s, are whole. Default: false.",
    )
    max_waiting_requests: int = Field(
        default=8,
        ge=0,
        description="Export requests waiting for room at once (each holds its received bytes, at most "
        "`receiver.max_message_bytes`); one more is refused at once, unread when possible. Default: 8.",
    )
