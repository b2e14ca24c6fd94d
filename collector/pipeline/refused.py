"""Spans a full queue refused: the runs they belonged to are scored flagged incomplete.

In-process, `on_end` hands a span straight on when the queue is full (`queue_full`), so its run is
scored without it. The span-ending thread then notes the refused span's ids (`Intake.note_refused`,
on that path only: a queued span costs nothing more), and the worker keeps them here, by trace, until
the trace finishes. When runs of the trace are scored, a run is flagged when a refused span belonged
to it: the span's nearest run ancestor, walking up through the spans that arrived and the other
refused spans. A refused span whose ancestry breaks off first (an ancestor that has not arrived)
cannot be placed, and every run of its trace scored from then on is flagged. A run inferred under a
refused span is flagged by `runs` already (its parent is missing).

Bounded: at most `max_traces` traces (the oldest let go first) and `SPANS_PER_TRACE` spans each, beyond
which a trace's further refused spans count as not placed. Refused spans let go before their trace
finished are counted (`toolscore.spans.forgotten`): a run missing one may be scored without its flag.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Collection, Iterable, Mapping
from dataclasses import dataclass, field

from toolscore.collector.extract import ClassifiedSpan
from toolscore.collector.pipeline.receive import RefusedNote

__all__ = ["SPANS_PER_TRACE", "Refusals", "RefusedSpans", "runs_missing_spans"]

SPANS_PER_TRACE = 8
"""Refused spans kept with their parents per trace; a burst beyond that flags all the trace's runs."""


@dataclass(slots=True)
class RefusedSpans:
    """The refused spans of one trace."""

    parents: dict[str, str | None] = field(default_factory=dict)
    """Refused span id → its parent's id, at most `SPANS_PER_TRACE`."""
    unplaced: int = 0
    """Refused spans beyond those: they may belong to any run of the trace."""

    def __len__(self) -> int:
        return len(self.parents) + self.unplaced


class Refusals:
    """The refused spans of traces not finished yet, by trace id, oldest first (worker thread only)."""

    def __init__(self, max_traces: int) -> None:
        self.max_traces = max_traces
        self._traces: OrderedDict[str, RefusedSpans] = OrderedDict()

    def __len__(self) -> int:
        return len(self._traces)

    def add(self, notes: Iterable[RefusedNote]) -> int:
        """Keep these refused spans; returns how many refused spans were let go to stay within `max_traces`."""
        forgotten = 0
        traces = self._traces
        for trace_id, span_id, parent_id in notes:
            spans = traces.get(trace_id)
            if spans is None:
                spans = traces[trace_id] = RefusedSpans()
                while len(traces) > self.max_traces:
                    forgotten += len(traces.popitem(last=False)[1])
            if len(spans.parents) < SPANS_PER_TRACE:
                spans.parents[span_id] = parent_id
            else:
                spans.unplaced += 1
        return forgotten

    def get(self, trace_id: str) -> RefusedSpans | None:
        return self._traces.get(trace_id)

    def forget(self, trace_id: str) -> None:
        """The trace finished: its runs were scored with what was known."""
        self._traces.pop(trace_id, None)


def runs_missing_spans(
    refused: RefusedSpans, records: Mapping[str, ClassifiedSpan], run_ids: Collection[str]
) -> set[str] | None:
    """The runs (among `run_ids`: every run of the trace) refused spans belonged to; None: any may have."""
    if refused.unplaced:
        return None
    hit: set[str] = set()
    for parent_id in refused.parents.values():
        placed, owner = _owner(parent_id, records, refused.parents, run_ids)
        if not placed:
            return None
        if owner is not None:
            hit.add(owner)
    return hit


def _owner(
    parent_id: str | None,
    records: Mapping[str, ClassifiedSpan],
    refused: Mapping[str, str | None],
    run_ids: Collection[str],
) -> tuple[bool, str | None]:
    """(placed, the nearest run at or above `parent_id`); not placed when an ancestor neither came nor was refused."""
    current = parent_id
    for _ in range(len(records) + len(refused) + 1):
        if current is None:
            return True, None  # the root is reached: the span was under no run
        if current in run_ids:
            return True, current
        node = records.get(current)
        if node is not None:
            parent = node.span.parent_id
        elif current in refused:
            parent = refused[current]
        else:
            return False, None
        current = parent if parent != current else None
    return True, None  # a cycle of parents: no run above
