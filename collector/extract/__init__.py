"""Extraction: spans in any supported convention → agent runs with their ordered tool calls.

`rebuild_runs` is the entry point; `Extractor` is the plug-in protocol for a span convention (see
`conventions`), `ExtractConfig` its size caps and switches, `ExtractStats` its counters.
"""

from __future__ import annotations

from toolscore.collector.extract.config import ExtractConfig, ExtractStats
from toolscore.collector.extract.conventions import (
    EXTRACTORS,
    NOT_CAPTURED,
    Extractor,
    IssuedCall,
    IssuedCalls,
    Role,
    RunInfo,
    ToolRead,
    classify,
)
from toolscore.collector.extract.runs import (
    ClassifiedSpan,
    classify_span,
    rebuild_classified,
    rebuild_runs,
    rebuild_under,
)

__all__ = [
    "EXTRACTORS",
    "NOT_CAPTURED",
    "ClassifiedSpan",
    "ExtractConfig",
    "ExtractStats",
    "Extractor",
    "IssuedCall",
    "IssuedCalls",
    "Role",
    "RunInfo",
    "ToolRead",
    "classify",
    "classify_span",
    "rebuild_classified",
    "rebuild_runs",
    "rebuild_under",
]
