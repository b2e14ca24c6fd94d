"""`HealthState`: what `/healthz` and `/readyz` report, set by the service, read by the HTTP receiver.

Liveness and readiness are kept apart as orchestrators expect: a collector that is starting (registry
not loaded yet) or draining on shutdown is alive but not ready, so traffic is routed elsewhere without
the process being restarted. Plain attributes suffice: each is one bool written by one owner and read
atomically under the GIL.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["HealthState"]


@dataclass
class HealthState:
    """Set `ready` once everything is started and clear it when draining; clear `live` only when wedged."""

    live: bool = True
    """`/healthz` answers 200 while true, else 503."""
    ready: bool = False
    """`/readyz` answers 200 while true, else 503."""

    def liveness(self) -> tuple[int, dict[str, str]]:
        """The HTTP status and JSON body of `/healthz`."""
        return (200, {"status": "live"}) if self.live else (503, {"status": "not live"})

    def readiness(self) -> tuple[int, dict[str, str]]:
        """The HTTP status and JSON body of `/readyz`."""
        if not self.live:
            return 503, {"status": "not live"}
        return (200, {"status": "ready"}) if self.ready else (503, {"status": "not ready"})
