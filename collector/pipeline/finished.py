"""The memory of finished traces: which span ids each passed on, with their parents, bounded in traces and bytes.

`TraceStore` keeps it to recognise a span that comes again after its trace finished (an at-least-once sender's
re-send: a duplicate, not scored twice; a straggler under a run already scored: late) and, when a trace opens
again, which of its runs went out without some of their spans. It is the one structure of the pipeline that
outlives the traces it describes, so it is the one that grows under steady traffic until its bounds are reached:
the latest `max_traces` finished traces (`max_pending_traces`), and `max_bytes` (`max_finished_bytes`) of them
as estimated here. Past either, the oldest trace is forgotten, and its ids are counted by the caller
(`toolscore.dedupe.forgotten`, by bound); a span of a forgotten trace is taken as new.

The estimate, measured with tracemalloc on records decoded from OTLP (tests/test_pipeline_steady_memory.py
checks it within 30%): a span id costs its string (65 bytes for 16 hex digits) and its slot in the trace's dict,
~105 bytes; its parent's id costs nothing more, since the dict holds the parent's own key when the parent is in
the trace, and one string for all the children of a parent outside it (`seen_ids` shares them); a trace costs
its id's string, its dict and its slot here, ~350 bytes. A trace of 3 spans: ~665 bytes; of 50: ~5.6 KB. The
worst case of the trace bound alone, `max_pending_traces` traces of `max_spans_per_trace` ids (10,000 x 2,000
at the defaults), would be 2.1 GB: `max_bytes` is what keeps it in hand.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable, Collection, Mapping

from toolscore.collector.extract import ClassifiedSpan

__all__ = ["FinishedTraces", "Seen", "seen_bytes", "seen_ids"]

Seen = dict[str, str | None]
"""Span id → its parent's id (None at a root), of the spans a finished trace passed on."""

_TRACE_BYTES = 350
"""What a remembered trace costs besides its span ids: its id's string, its dict, its entry here, one parent id."""
_ID_BYTES = 105
"""What each remembered span id costs: its string and its slot in the trace's dict (its parent's id is shared)."""


def seen_bytes(seen: Mapping[str, object]) -> int:
    """The estimated memory one remembered trace takes (see the module docstring)."""
    return _TRACE_BYTES + _ID_BYTES * len(seen)


def seen_ids(records: Mapping[str, ClassifiedSpan], earlier: Seen | None, scored: Collection[str]) -> Seen:
    """What a finished trace passed on: its spans' ids with their parents', after those of an `earlier` finish,
    and its scored runs'. A parent in the trace is held as that span's own id string (the records' keys), and
    one outside it as one string for all its children, not the equal string each child carries: ~65 bytes less
    per span once the records are gone."""
    seen: Seen = {}
    outside: dict[str, str] = {}
    for span_id, node in records.items():
        parent_id = node.span.parent_id
        if parent_id is not None:
            parent = records.get(parent_id)
            parent_id = parent.span.span_id if parent is not None else outside.setdefault(parent_id, parent_id)
        seen[span_id] = parent_id
    if earlier:
        seen = {**earlier, **seen}
    for span_id in scored:
        if span_id not in seen:
            seen[span_id] = None
    return seen


class FinishedTraces:
    """The latest finished traces' `Seen`, oldest first, within `max_traces` and `max_bytes`; worker thread only.

    `on_forget(n, reason)` is told of the `n` span ids let go of, and which bound let them go
    (`max_pending_traces` or `max_finished_bytes`).
    """

    def __init__(self, max_traces: int, max_bytes: int | None, on_forget: Callable[[int, str], None]) -> None:
        self.max_traces, self.max_bytes = max_traces, max_bytes
        self._on_forget = on_forget
        self._traces: OrderedDict[str, Seen] = OrderedDict()
        self.size = 0
        """The estimated bytes of the traces remembered (`seen_bytes`)."""

    def __len__(self) -> int:
        return len(self._traces)

    def ids(self) -> int:
        """The span ids remembered, over every trace (a walk: for tests and benchmarks, not the span path)."""
        return sum(map(len, self._traces.values()))

    def take(self, trace_id: str) -> Seen | None:
        """The trace's memory, taken out (`put` it back to keep it); None when it is not remembered."""
        seen = self._traces.pop(trace_id, None)
        if seen is not None:
            self.size -= seen_bytes(seen)
        return seen

    def put(self, trace_id: str, seen: Seen) -> None:
        """Remember a finished trace as the latest, forgetting the oldest past the bounds (this one too, alone
        over `max_bytes`)."""
        self._traces[trace_id] = seen
        self.size += seen_bytes(seen)
        traces = self._traces
        while len(traces) > self.max_traces:
            self._forget_oldest("max_pending_traces")
        while self.max_bytes is not None and self.size > self.max_bytes and traces:
            self._forget_oldest("max_finished_bytes")

    def _forget_oldest(self, reason: str) -> None:
        _, oldest = self._traces.popitem(last=False)
        self.size -= seen_bytes(oldest)
        self._on_forget(len(oldest), reason)
