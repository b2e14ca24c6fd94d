"""The span conventions toolscore reads, one module each, asked in the order of `EXTRACTORS`.

Framework-specific conventions come first because their spans often also carry generic names
(`gen_ai.operation.name`, `input.value`) that the generic readers would read less well; the OTel
GenAI reader comes last as the fallback. The first extractor whose predicate recognises a span
decides its role; `Dispatch` finds it without asking the extractors whose gate the span fails.
"""

from __future__ import annotations

from typing import Final

from toolscore.collector.extract.conventions.base import (
    NOT_CAPTURED,
    Extractor,
    Gate,
    IssuedCall,
    IssuedCalls,
    Read,
    Role,
    RunInfo,
    ToolRead,
)
from toolscore.collector.extract.conventions.dispatch import Dispatch
from toolscore.collector.extract.conventions.genai import GenAIExtractor
from toolscore.collector.extract.conventions.google_adk import GoogleADKExtractor
from toolscore.collector.extract.conventions.langfuse import LangfuseExtractor
from toolscore.collector.extract.conventions.litellm import LiteLLMExtractor
from toolscore.collector.extract.conventions.logfire_openai_agents import LogfireOpenAIAgentsExtractor
from toolscore.collector.extract.conventions.mastra import MastraExtractor
from toolscore.collector.extract.conventions.mlflow import MLflowExtractor
from toolscore.collector.extract.conventions.openinference import OpenInferenceExtractor
from toolscore.collector.extract.conventions.openlit import OpenLITExtractor
from toolscore.collector.extract.conventions.pydantic_ai import PydanticAIExtractor
from toolscore.collector.extract.conventions.strands import StrandsExtractor
from toolscore.collector.extract.conventions.traceloop import TraceloopExtractor
from toolscore.collector.extract.conventions.vercel_ai import VercelAIExtractor
from toolscore.collector.spans import SpanRecord

__all__ = [
    "EXTRACTORS",
    "NOT_CAPTURED",
    "Dispatch",
    "Extractor",
    "Gate",
    "IssuedCall",
    "IssuedCalls",
    "Read",
    "Role",
    "RunInfo",
    "ToolRead",
    "classify",
    "dispatch_for",
]

EXTRACTORS: tuple[Extractor, ...] = (
    PydanticAIExtractor(),
    LogfireOpenAIAgentsExtractor(),
    GoogleADKExtractor(),
    StrandsExtractor(),
    MastraExtractor(),
    LangfuseExtractor(),
    MLflowExtractor(),
    OpenLITExtractor(),
    LiteLLMExtractor(),
    TraceloopExtractor(),
    VercelAIExtractor(),
    OpenInferenceExtractor(),
    GenAIExtractor(),
)


DEFAULT_DISPATCH: Final = Dispatch(EXTRACTORS)


def dispatch_for(extractors: tuple[Extractor, ...]) -> Dispatch:
    """The shared dispatch (and its cache) for `EXTRACTORS`, a new one for any other extractors."""
    return DEFAULT_DISPATCH if extractors is EXTRACTORS else Dispatch(extractors)


def classify(span: SpanRecord, extractors: tuple[Extractor, ...] = EXTRACTORS) -> tuple[Extractor, Role] | None:
    """The first extractor that recognises the span, with the role it gives it."""
    return dispatch_for(extractors).classify(span)
