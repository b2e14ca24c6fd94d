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
        default=False,
        description="Forward the spans of a trace that has shown no agent marker yet (an attribute key or "
        "instrumentation scope a span convention recognises spans by) as received, unread (a request of such "
        "spans whole). It assumes a trace's spans arrive as they end, children first: behind a Collector's "
        "batches, retries and several services' exporters a plain ancestor can come before the first marked "
        "span and be missed, misreading the run (an agent called as a tool lost its caller). Turn it on "
        "where one process exports each trace straight here. Default: false.",
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
