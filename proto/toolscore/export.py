"""Write an application's spans to a file `toolscore eval` reads, as an OpenTelemetry Collector's file exporter would.

    from opentelemetry.sdk.trace.export import BatchSpanProcessor
    from toolscore.export import OTLPFileSpanExporter

    provider.add_span_processor(BatchSpanProcessor(OTLPFileSpanExporter("traces/agent.jsonl")))

then `toolscore eval -t traces/ -e expectations/` (see docs/ci.md).
"""

from __future__ import annotations

from toolscore.collector.export import FORMATS, OTLPFileSpanExporter

__all__ = ["FORMATS", "OTLPFileSpanExporter"]
