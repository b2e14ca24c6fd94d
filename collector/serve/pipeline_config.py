"""`ServePipelineConfig`: the engine's settings under `toolscore serve`, with a queue sized for a collector.

The in-process processor's queue (2,048 spans) follows the SDK's `BatchSpanProcessor`, whose spans
arrive one by one. A collector's arrive by the request, and it queues or refuses whole requests (see
`CollectorPipeline`): a queue that holds only a few of them leaves the worker idle between a refusal
and the sender's retry. The OpenTelemetry Collector's batch processor sends 8,192 spans at a time by
default; serve's queue holds two such batches, one scored while the next waits. Measured: ~2.2 KB
per queued span (the request's bytes and its parsed messages), ~37 MB when full.
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
