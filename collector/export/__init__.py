"""Writing spans where `toolscore eval` reads them: `OTLPFileSpanExporter` (public as `toolscore.export`)."""

from __future__ import annotations

from toolscore.collector.export.otlp_file import FORMATS, OTLPFileSpanExporter

__all__ = ["FORMATS", "OTLPFileSpanExporter"]
