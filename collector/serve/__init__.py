"""`toolscore serve`: a standalone OTLP collector that scores agent runs in-stream and forwards every span.

receivers → `Ingest` → `CollectorPipeline` (the pipeline engine over protobuf spans) → `Forwarder`
(downstream OTLP) + score store + Phoenix annotations (`PhoenixAnnotations`). The public API is what
`__all__` lists: the configuration (`ServeConfig`,
`load_config`, `PhoenixConfig`) and the running service (`run_service`, `start_service`); the parts live in `receivers`,
`forward` and `scores`, whose `__init__`s export their configuration and, for `scores`, the score store's
reader. Every module is private (`_`-prefixed). The names here are loaded on first use, so that importing one
part (the score store's reader for `toolscore runs`) does not load the receivers, the engine and grpc.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from toolscore.collector.serve._config import ConfigError, ServeConfig, load_config
    from toolscore.collector.serve._phoenix import PhoenixAnnotations, PhoenixConfig
    from toolscore.collector.serve._service import Service, ServiceStartError, run_service, start_service

__all__ = [
    "ConfigError",
    "PhoenixAnnotations",
    "PhoenixConfig",
    "ServeConfig",
    "Service",
    "ServiceStartError",
    "load_config",
    "run_service",
    "start_service",
]

_HOMES = {
    "ConfigError": "_config",
    "ServeConfig": "_config",
    "load_config": "_config",
    "PhoenixAnnotations": "_phoenix",
    "PhoenixConfig": "_phoenix",
    "Service": "_service",
    "ServiceStartError": "_service",
    "run_service": "_service",
    "start_service": "_service",
}


def __getattr__(name: str) -> Any:
    if name in _HOMES:
        return getattr(importlib.import_module(f"{__name__}.{_HOMES[name]}"), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
