"""Run verdicts per agent version, with the N most recent versions of each agent kept as series.

A version label is the one metric attribute that grows with every release, so it cannot be capped like
the names (`limits.py` admits the *first* values and folds later ones: after a few releases every new
version would be `_other`, the very one a canary comparison needs). Here each agent keeps its
`max_versions` most recently first-seen versions; a newer one retires the oldest, whose series leaves the
export (the SDK's synchronous counters can never drop a series, so these counts are kept here and read
by an observable counter) and whose later runs, like any version retired before, count under `_other`.
The fold is counted (`toolscore.attribute.overflow`, `toolscore.agent.version`). Prometheus keeps a
retired version's last samples, which is what the version alert compares a canary against once the
old version is gone (deploy/prometheus, docs/deploy.md).

Memory: at most `max_versions` kept and `_RETIRED_MAX` retired versions per agent, and agents are bounded
by the agent-name limiter upstream.
"""

from __future__ import annotations

import threading
import time
from collections import OrderedDict
from collections.abc import Callable

from toolscore.collector.forks import on_fork
from toolscore.collector.telemetry.metrics_table import OTHER_VALUE

__all__ = ["DEFAULT_MAX_AGENT_VERSIONS", "VersionKey", "VersionRuns"]

DEFAULT_MAX_AGENT_VERSIONS = 5
"""Versions per agent with series of their own before the oldest is folded into `_other`."""

_RETIRED_MAX = 1_000
"""Retired versions remembered per agent, so a straggler of one does not come back as the newest."""

VersionKey = tuple[str, str, str, str]
"""(expectation, agent, version, verdict): one series of `toolscore.expectation.version.runs`."""


class _Agent:
    __slots__ = ("kept", "retired")

    def __init__(self) -> None:
        self.kept: OrderedDict[str, float] = OrderedDict()
        """Version -> when its first run was counted (Unix seconds), oldest first."""
        self.retired: OrderedDict[str, None] = OrderedDict()


class VersionRuns:
    """Cumulative run counts per (expectation, agent, version, verdict); safe for concurrent use.

    `on_fold()` is called once per run counted under `_other`, outside the lock.
    """

    def __init__(self, max_versions: int = DEFAULT_MAX_AGENT_VERSIONS, on_fold: Callable[[], None] | None = None):
        if max_versions < 1:
            raise ValueError(f"max_agent_versions must be >= 1, got {max_versions}")
        self._max = max_versions
        self._on_fold = on_fold
        self._agents: dict[str, _Agent] = {}
        self._counts: dict[VersionKey, int] = {}
        self._lock = threading.Lock()
        on_fork(after_in_child=self._after_fork)

    def _after_fork(self) -> None:
        self._lock = threading.Lock()

    def add(self, expectation: str, agent: str, version: str, passed: bool) -> str:
        """Count one run's verdict; returns the version label it was counted under."""
        with self._lock:
            label = self._label(agent, version)
            key = (expectation, agent, label, "pass" if passed else "fail")
            self._counts[key] = self._counts.get(key, 0) + 1
        if label == OTHER_VALUE and self._on_fold is not None:
            self._on_fold()
        return label

    def _label(self, agent: str, version: str) -> str:
        state = self._agents.get(agent)
        if state is None:
            state = self._agents[agent] = _Agent()
        if version in state.kept:
            return version
        if version in state.retired or version == OTHER_VALUE:
            return OTHER_VALUE
        state.kept[version] = time.time()
        if len(state.kept) > self._max:
            old, _ = state.kept.popitem(last=False)
            state.retired[old] = None
            if len(state.retired) > _RETIRED_MAX:
                state.retired.popitem(last=False)
            for key in [k for k in self._counts if k[1] == agent and k[2] == old]:
                del self._counts[key]  # its series leaves the export; Prometheus keeps its last samples
        return version

    def snapshot(self) -> dict[VersionKey, int]:
        """The cumulative counts of the kept versions and `_other`, as the observable counter reports them."""
        with self._lock:
            return dict(self._counts)

    def first_seen(self) -> dict[tuple[str, str], float]:
        """(agent, version) -> Unix seconds of its first run here, for the kept versions: the order the canary
        alert reads to tell a version from the one before it (docs/deploy.md)."""
        with self._lock:
            return {(agent, v): t for agent, state in self._agents.items() for v, t in state.kept.items()}

    def kept(self, agent: str) -> tuple[str, ...]:
        """The versions of `agent` that have series of their own, oldest first."""
        with self._lock:
            state = self._agents.get(agent)
            return tuple(state.kept) if state is not None else ()
