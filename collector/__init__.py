"""The pipeline: receive spans, rebuild agent runs, score them, emit the scores."""

from __future__ import annotations

import importlib
from typing import Any

__all__ = ["PipelineConfig", "ToolscoreSpanProcessor", "instrument"]


def __getattr__(name: str) -> Any:
    """Lazy: the span processor pulls in the OTel SDK, which `toolscore.collector.spans` users may not need."""
    if name == "instrument":
        return importlib.import_module("toolscore.collector.instrumentation").instrument
    if name in __all__:
        from toolscore.collector import pipeline

        return getattr(pipeline, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
