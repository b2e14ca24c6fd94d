"""`ExtractStats` whose losses also reach the telemetry: calls left out of scores, spans no convention could read.

Extraction counts what it leaves out in `ExtractStats`, which the batch tools print; live, those counts
must reach the metrics too. Both happen rarely, so forwarding them costs nothing per span. A pending
trace is rebuilt whenever one of its runs settles, and once more when it finishes, so each rebuild
sees the same losses again; each is told once:

- an unreadable span, by remembering, per pending trace, the spans already counted;
- a run's calls over `max_calls_per_run`, when that run is scored (the rebuild that scores it is told
  which runs those are, `count_dropped`), and a run is scored once;
- a call no run owns, when its trace finishes: until then its run span may still arrive.
"""

from __future__ import annotations

from collections.abc import Collection, Container, Iterable

from toolscore.collector.extract import ClassifiedSpan, ExtractConfig, ExtractStats, rebuild_classified
from toolscore.collector.spans import SpanRecord
from toolscore.collector.telemetry import PipelineTelemetry
from toolscore.scorers.model import AgentRun

__all__ = ["CountedStats"]

_MIN_PRUNE = 64
"""Traces remembered before the first look for finished ones to forget."""


class CountedStats(ExtractStats):
    """`ExtractStats` that also tells `telemetry` of dropped calls and, once per span, of unreadable spans.

    `pending` holds the ids of the traces still pending: the spans counted for a trace that has left it
    are forgotten (it is not rebuilt again), looked for only when the memory has doubled since the last
    look, so it stays within twice the pending traces at a constant cost per trace remembered.

    Dropped calls wait from `rebuild` to `count_dropped`, which tells the telemetry of those of the runs
    scored from that rebuild (see the module docstring); worker thread only.
    """

    def __init__(self, telemetry: PipelineTelemetry, pending: Container[str]) -> None:
        super().__init__()
        self._telemetry = telemetry
        self._pending = pending
        self._unreadable: dict[str, set[str]] = {}
        self._prune_at = _MIN_PRUNE
        self._dropped: list[tuple[str | None, str, int]] = []
        """(run span id or None, reason, calls) dropped by the last `rebuild`."""

    def rebuild(self, spans: Iterable[ClassifiedSpan], config: ExtractConfig) -> list[AgentRun]:
        """`rebuild_classified` into these stats; the calls it drops wait for `count_dropped`."""
        self._dropped.clear()  # a rebuild that raised before its runs were scored told nothing
        return rebuild_classified(spans, config, self)

    def calls_dropped(self, reason: str, count: int, run_span_id: str | None) -> None:
        super().calls_dropped(reason, count, run_span_id)
        self._dropped.append((run_span_id, reason, count))

    def count_dropped(self, scored: Collection[str], finished: bool) -> None:
        """Tell the telemetry of the calls the last `rebuild` left out of the runs in `scored` (run span ids:
        the runs scored from it) and, when its trace is `finished`, of the calls no run owns."""
        for run_span_id, reason, count in self._dropped:
            if finished if run_span_id is None else run_span_id in scored:
                self._telemetry.calls_dropped(count, reason)
        self._dropped.clear()

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
