"""`ExtractStats` whose losses also reach the telemetry: calls left out of scores, spans no convention could read.

Extraction counts what it leaves out in `ExtractStats`, which the batch tools print; live, those counts
must reach the metrics too. Both happen rarely, so forwarding them costs nothing per span. A pending
trace is rebuilt when one of its runs settles and when it finishes, unless no span has changed it since
its last rebuild (`rebuilt`), or only under the run span that settles (`runs`): a rebuild after a span
came sees the losses of the spans before it again. Each is told once:

- an unreadable span, by remembering, per pending trace, the spans already counted;
- a run's calls over `max_calls_per_run`, when that run is scored (the rebuild's dropped calls are
  handed to `count_dropped` with the runs scored from it), and a run is scored once;
- a call no run owns, when its trace finishes: until then its run span may still arrive (those a rebuild
  under a run span drops are dropped again by the finish's rebuild of the whole trace).
"""

from __future__ import annotations

from collections.abc import Collection, Container, Iterable, Mapping

from toolscore.collector.extract import (
    ClassifiedSpan,
    ExtractConfig,
    ExtractStats,
    rebuild_classified,
    rebuild_under,
)
from toolscore.collector.spans import SpanRecord
from toolscore.collector.telemetry import PipelineTelemetry
from toolscore.scorers._model import AgentRun

__all__ = ["CountedStats", "Dropped"]

Dropped = tuple[str | None, str, int]
"""Calls a rebuild left out: (the run's span id, None for calls no run owns; reason; how many)."""

_MIN_PRUNE = 64
"""Traces remembered before the first look for finished ones to forget."""


class CountedStats(ExtractStats):
    """`ExtractStats` that also tells `telemetry` of dropped calls and, once per span, of unreadable spans.

    `pending` holds the ids of the traces still pending: the spans counted for a trace that has left it
    are forgotten (it is not rebuilt again), looked for only when the memory has doubled since the last
    look, so it stays within twice the pending traces at a constant cost per trace remembered.

    `rebuild` returns the calls it dropped beside the runs, for `count_dropped` to tell the telemetry of
    those of the runs scored from it (see the module docstring); worker thread only.
    """

    def __init__(self, telemetry: PipelineTelemetry, pending: Container[str]) -> None:
        super().__init__()
        self._telemetry = telemetry
        self._pending = pending
        self._unreadable: dict[str, set[str]] = {}
        self._prune_at = _MIN_PRUNE
        self._dropped: list[Dropped] = []
        """Where the `rebuild` under way puts the calls it drops."""

    def rebuild(self, spans: Iterable[ClassifiedSpan], config: ExtractConfig) -> tuple[list[AgentRun], list[Dropped]]:
        """`rebuild_classified` into these stats, and the calls it dropped (not told yet: `count_dropped`)."""
        dropped: list[Dropped] = []
        self._dropped = dropped
        return rebuild_classified(spans, config, self), dropped

    def rebuild_under(
        self, nodes: Mapping[str, ClassifiedSpan], top: str, config: ExtractConfig
    ) -> tuple[list[AgentRun], list[Dropped]]:
        """`rebuild_under` into these stats, and the calls it dropped (not told yet: `count_dropped`)."""
        dropped: list[Dropped] = []
        self._dropped = dropped
        return rebuild_under(nodes, top, config, self), dropped

    def calls_dropped(self, reason: str, count: int, run_span_id: str | None) -> None:
        super().calls_dropped(reason, count, run_span_id)
        self._dropped.append((run_span_id, reason, count))

    def count_dropped(self, dropped: list[Dropped], scored: Collection[str], finished: bool) -> list[Dropped]:
        """Tell the telemetry of the `dropped` calls (a rebuild's) of the runs in `scored` (run span ids: the
        runs scored from it) and, when its trace is `finished`, of the calls no run owns; the rest, not told."""
        untold: list[Dropped] = []
        for entry in dropped:
            run_span_id, reason, count = entry
            if finished if run_span_id is None else run_span_id in scored:
                self._telemetry.calls_dropped(count, reason)
            else:
                untold.append(entry)
        return untold

    def read_failed(self, span: SpanRecord, convention: str) -> None:
        super().read_failed(span, convention)
        counted = self._unreadable.get(span.trace_id)
        if counted is None:
            if len(self._unreadable) >= self._prune_at:
                self._forget_finished()
            counted = self._unreadable[span.trace_id] = set()
        if span.span_id not in counted:
            counted.add(span.span_id)
            self._telemetry.spans_unreadable(1, convention)

    def _forget_finished(self) -> None:
        for trace_id in [trace_id for trace_id in self._unreadable if trace_id not in self._pending]:
            del self._unreadable[trace_id]
        self._prune_at = max(_MIN_PRUNE, 2 * len(self._unreadable))
