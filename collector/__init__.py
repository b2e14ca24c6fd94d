"""The pipeline: receive spans, rebuild agent runs, score them, emit the scores."""

from __future__ import annotations

__all__: list[str] = []
