"""`ExtractStats` whose losses also reach the telemetry: calls left out of scores, spans no convention could read.

Extraction counts what it leaves out in `ExtractStats`, which the batch tools print; live, those counts
must reach the metrics too. Both happen rarely, so forwarding them costs nothing per span. A pending
trace is rebuilt whenever one of its runs settles, so the same unreadable span is read again at each
rebuild: it is counted once, by remembering, per pending trace, the spans already counted.
"""

from __future__ import annotations

from collections.abc import Container

from toolscore.collector.extract import ExtractStats
from toolscore.collector.spans import SpanRecord
from toolscore.collector.telemetry import PipelineTelemetry

__all__ = ["CountedStats"]

DROPPED_CALLS = frozenset({"calls_over_limit", "call_without_run"})
"""`ExtractStats.skipped` reasons that leave tool calls out of scoring: `toolscore.calls.dropped`."""

_MIN_PRUNE = 64
"""Traces remembered before the first look for finished ones to forget."""


class CountedStats(ExtractStats):
    """`ExtractStats` that also tells `telemetry` of dropped calls and, once per span, of unreadable spans.

    `pending` holds the ids of the traces still pending: the spans counted for a trace that has left it
    are forgotten (it is not rebuilt again), looked for only when the memory has doubled since the last
    look, so it stays within twice the pending traces at a constant cost per trace remembered.
    """

    def __init__(self, telemetry: PipelineTelemetry, pending: Container[str]) -> None:
        super().__init__()
        self._telemetry = telemetry
        self._pending = pending
        self._unreadable: dict[str, set[str]] = {}
        self._prune_at = _MIN_PRUNE

    def skip(self, reason: str, count: int = 1) -> None:
        super().skip(reason, count)
        if reason in DROPPED_CALLS:
            self._telemetry.calls_dropped(count, reason)

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
