"""Say once, at WARNING, that toolscore's metrics or evaluation events are exported nowhere, and how to export them.

In process, telemetry falls back to the application's global meter and logger providers. Until the application
sets them, those are the OTel API's proxies, which drop everything; `toolscore.instrument()` builds providers
of its own only when the ``OTEL_*`` variables name an export. An application that sets neither lost every
metric and `gen_ai.evaluation.result` record without a word. The check runs when the first result is recorded,
not at start-up: an application may set its providers after `instrument()`, and the proxies then forward to
them. One warning per process, whatever the number of pipelines.
"""

from __future__ import annotations

import logging
import threading

from opentelemetry import _logs, metrics

__all__ = ["UnexportedCheck", "is_api_proxy"]

_log = logging.getLogger("toolscore.telemetry")
_warned = threading.Event()

HOW_TO_EXPORT = (
    "set OTEL_EXPORTER_OTLP_ENDPOINT (metrics and log records over OTLP) or OTEL_METRICS_EXPORTER=prometheus (a "
    "/metrics endpoint), which toolscore.instrument() and toolscore serve read; or set SDK providers before runs "
    "are scored (opentelemetry.metrics.set_meter_provider, opentelemetry._logs.set_logger_provider), or pass "
    "meter_provider= and logger_provider= to toolscore.instrument()"
)


def is_api_proxy(provider: object) -> bool:
    """The API's stand-in for a global provider no one has set (its meters and loggers drop everything)."""
    return type(provider).__name__ in ("_ProxyMeterProvider", "ProxyLoggerProvider")


class UnexportedCheck:
    """For a telemetry on the global providers (`metrics`, `events`: which of its signals use the global one)."""

    def __init__(self, *, metrics_global: bool, events_global: bool) -> None:
        self.metrics_global, self.events_global = metrics_global, events_global

    def unexported(self) -> list[str]:
        """What goes nowhere now: `metrics`, `evaluation events`."""
        lost = []
        if self.metrics_global and is_api_proxy(metrics.get_meter_provider()):
            lost.append("metrics (toolscore.*)")
        if self.events_global and is_api_proxy(_logs.get_logger_provider()):
            lost.append("gen_ai.evaluation.result log records")
        return lost

    def check(self) -> None:
        """Log the warning if something goes nowhere and no pipeline of this process has said so yet."""
        if _warned.is_set():
            return
        lost = self.unexported()
        if not lost or _warned.is_set():
            return
        _warned.set()
        _log.warning(
            "toolscore: %s are not exported: no provider is set for them and no OTEL_* variable names an export "
            "(scores still go on the run spans). To export them, %s.",
            " and ".join(lost),
            HOW_TO_EXPORT,
        )
