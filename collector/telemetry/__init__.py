"""The pipeline's self-telemetry: metrics and `gen_ai.evaluation.result` events about what it scored."""

from __future__ import annotations

from toolscore.collector.telemetry.base import NoopTelemetry, PipelineTelemetry, RunSpanRef, create_telemetry

__all__ = ["NoopTelemetry", "PipelineTelemetry", "RunSpanRef", "create_telemetry"]
