"""Forwarding every received span downstream over OTLP, from a bounded queue, retrying as the OTLP spec says.

Public: `ForwardConfig` (where and how, read from the standard `OTEL_EXPORTER_OTLP_*` variables). The
forwarder is started by the service; every module is private (`_`-prefixed).
"""

from __future__ import annotations

from toolscore.collector.serve.forward._config import ForwardConfig

__all__ = ["ForwardConfig"]
