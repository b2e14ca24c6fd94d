"""`toolscore serve`: a standalone OTLP collector that scores agent runs in-stream and forwards every span.

receivers → `Ingest` → `CollectorPipeline` (the pipeline engine over protobuf spans) → `Forwarder`
(downstream OTLP) + score store. Modules are imported directly (`toolscore.collector.serve.ingest`, ...)
so that importing one part does not start or load the others.
"""

from __future__ import annotations

__all__: list[str] = []
