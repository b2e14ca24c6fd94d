"""The OTLP receivers of `toolscore serve`: gRPC and HTTP (protobuf or JSON), traces and logs, into `Ingest`.

Public: `ReceiverConfig` (where they listen, how much they accept, who may send). The receivers themselves are
started by the service; every module is private (`_`-prefixed).
"""

from __future__ import annotations

from toolscore.collector.serve.receivers._config import ReceiverConfig

__all__ = ["ReceiverConfig"]
