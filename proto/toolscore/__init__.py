"""toolscore: score whether AI agents call the right tools, from their OpenTelemetry traces.

The package root holds no code of its own (it sits beside the generated `toolscore.registry`
stubs); it re-exports the one-call entry points, imported lazily so that `import toolscore.scorers`
never pulls in the OTel SDK:

    import toolscore
    toolscore.instrument(registry)          # score this process's agent runs in-process

The parts: `toolscore.scorers` (pure scorers and the run model), `toolscore.collector` (sources,
extraction, registry, pipeline, CLI) and `toolscore.registry.v1` (the gRPC API).
"""

from __future__ import annotations

import importlib
from typing import Any

__all__ = ["PipelineConfig", "ToolscoreSpanProcessor", "instrument"]


def __getattr__(name: str) -> Any:
    if name in __all__:
        return getattr(importlib.import_module("toolscore.collector"), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
