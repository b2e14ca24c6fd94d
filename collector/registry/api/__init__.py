"""The registry over gRPC (`toolscore.registry.v1.ExpectationRegistry`): the server and a blocking client.

`RegistryServer` (with `start_registry_server`, or `serve_registry` in grpc's asyncio shape) serves a
`Registry` as configured by `RegistryServerConfig`; `RegistryClient` speaks to it in the registry's own types
and raises `RegistryCallError` for what the registry's errors do not cover. Importing this package loads
grpc; `toolscore.collector.registry` does not.
"""

from __future__ import annotations

from toolscore.collector.registry.api._client import RegistryCallError, RegistryClient, Watch
from toolscore.collector.registry.api._server_config import RegistryServerConfig
from toolscore.collector.registry.api._service import RegistryServer, serve_registry, start_registry_server

__all__ = [
    "RegistryCallError",
    "RegistryClient",
    "RegistryServer",
    "RegistryServerConfig",
    "Watch",
    "serve_registry",
    "start_registry_server",
]
