"""The scoring pipeline: receive → group by trace → split into runs → extract calls → match → score → emit.

`Engine` is the source-agnostic core (the OTLP collector feeds it protobuf spans); the in-process
`ToolscoreSpanProcessor` feeds it SDK spans, and its `ToolscoreLogProcessor` the GenAI events the SDK's
logger provider emits. The span processor and `serve` start the engine's worker thread; an `Engine`
built and never `start`ed is stepped by hand (`step(now_ns)`, at times of the caller's choosing), which
is how the tests of settle, idle and hold run exactly, without waiting on the wall clock
(docs/testing.md). `PipelineConfig` holds every setting.
"""

from __future__ import annotations

from toolscore.collector.pipeline.config import JudgeBudgetConfig, PipelineConfig
from toolscore.collector.pipeline.config_env import pipeline_config_from_env
from toolscore.collector.pipeline.emit import EVENT_NAME, attribute_key, evaluation_prefixes
from toolscore.collector.pipeline.engine import Engine
from toolscore.collector.pipeline.log_processor import ToolscoreLogProcessor
from toolscore.collector.pipeline.match import Matcher
from toolscore.collector.pipeline.processor import ToolscoreSpanProcessor, enriched_span
from toolscore.collector.pipeline.sink import EventSpec, ListSink, RunEnrichment, Sink

__all__ = [
    "EVENT_NAME",
    "Engine",
    "EventSpec",
    "JudgeBudgetConfig",
    "ListSink",
    "Matcher",
    "PipelineConfig",
    "RunEnrichment",
    "Sink",
    "ToolscoreLogProcessor",
    "ToolscoreSpanProcessor",
    "attribute_key",
    "enriched_span",
    "evaluation_prefixes",
    "pipeline_config_from_env",
]
