"""`HealthState`: what `/healthz` and `/readyz` report, set by the service, read by the HTTP receiver.

Liveness and readiness are kept apart as orchestrators expect: a collector that is starting, waiting
for its registry store (unreachable at start: it is retried, not a reason to exit), or draining on
shutdown is alive but not ready, so traffic is routed elsewhere without the process being restarted.
Plain attributes suffice: each is one value written by one owner and read atomically under the GIL.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

__all__ = ["HealthState"]


@dataclass
class HealthState:
    """Set `ready` once everything is started and clear it when draining; clear `live` only when wedged."""

    live: bool = True
    """`/healthz` answers 200 while true, else 503."""
    ready: bool = False
    """`/readyz` answers 200 while true (and nothing is `waiting_for`), else 503."""
    waiting_for: Callable[[], str | None] | None = None
    """What a started service still waits for before it is ready (None: nothing), `/readyz`'s `reason`."""

    def liveness(self) -> tuple[int, dict[str, str]]:
        """The HTTP status and JSON body of `/healthz`."""
        return (200, {"status": "live"}) if self.live else (503, {"status": "not live"})

    def readiness(self) -> tuple[int, dict[str, str]]:
        """The HTTP status and JSON body of `/readyz`."""
        if not self.live:
            return 503, {"status": "not live"}
        if not self.ready:
            return 503, {"status": "not ready"}
        reason = self.waiting_for() if self.waiting_for is not None else None
        return (503, {"status": "not ready", "reason": reason}) if reason else (200, {"status": "ready"})
