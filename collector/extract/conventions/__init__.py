"""The span conventions toolscore reads, one module each, asked in the order of `EXTRACTORS`.

Framework-specific conventions come first because their spans often also carry generic names
(`gen_ai.operation.name`, `input.value`) that the generic readers would read less well; the OTel
GenAI reader comes last as the fallback. The first extractor whose predicate recognises a span
decides its role.
"""

from __future__ import annotations

from toolscore.collector.extract.conventions.base import (
    NOT_CAPTURED,
    Extractor,
    IssuedCall,
    IssuedCalls,
    Read,
    Role,
    RunInfo,
    ToolRead,
)
from toolscore.collector.extract.conventions.genai import GenAIExtractor
from toolscore.collector.extract.conventions.google_adk import GoogleADKExtractor
from toolscore.collector.extract.conventions.mastra import MastraExtractor
from toolscore.collector.extract.conventions.openinference import OpenInferenceExtractor
from toolscore.collector.extract.conventions.pydantic_ai import PydanticAIExtractor
from toolscore.collector.extract.conventions.strands import StrandsExtractor
from toolscore.collector.extract.conventions.traceloop import TraceloopExtractor
from toolscore.collector.extract.conventions.vercel_ai import VercelAIExtractor
from toolscore.collector.spans import SpanRecord

__all__ = [
    "EXTRACTORS",
    "NOT_CAPTURED",
    "Extractor",
    "IssuedCall",
    "IssuedCalls",
    "Read",
    "Role",
    "RunInfo",
    "ToolRead",
    "classify",
]

EXTRACTORS: tuple[Extractor, ...] = (
    PydanticAIExtractor(),
    GoogleADKExtractor(),
    StrandsExtractor(),
    MastraExtractor(),
    TraceloopExtractor(),
    VercelAIExtractor(),
    OpenInferenceExtractor(),
    GenAIExtractor(),
)


def classify(span: SpanRecord, extractors: tuple[Extractor, ...] = EXTRACTORS) -> tuple[Extractor, Role] | None:
    """The first extractor that recognises the span, with the role it gives it."""
    for extractor in extractors:
        role = extractor.classify(span)
        if role is not None:
            return extractor, role
    return None
