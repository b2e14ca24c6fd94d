"""Group by trace: the pending traces, what each span is in its trace, and the memory bounds.

Each span is classified once, on arrival, with the extractors' own predicate, and kept with its
classification, so that extraction reads it rather than asking the extractors again. Run spans are
held (their carrier waits for the scores). So are the spans that may yet stand for an *inferred* run
(frameworks that mark no run span, such as LangGraph, have their run inferred at the topmost span a
convention recognises, a graph or chain span): a span a convention claims without a run, tool or model
role, with no recognised ancestor so far, is a candidate until a recognised ancestor arrives (it is
released then) or its trace finishes (its run's scores go onto it, or it goes on unchanged). Tool and
model spans are never candidates, so the spans under a run still go on at once, but for one: a tool span
that arrives after a tool or model span right under it stands for a sub-agent's run (CrewAI's delegated
coworker, whose steps hang from the `Delegate work to coworker` tool span: `rebuild_runs` infers the run at
the tool span), and is held as well, until the run enclosing it settles (its inferred run's scores go onto
it; a tool span that stands for no run, one layer of a call, goes on unchanged) or `max_hold_ms`. Spans
mostly arrive as they end, children first; a tool span that arrives before every such child has gone on
and its run's scores stay in logs and metrics, as do those of other inferred runs under a tool (a held tool
span waits until its trace finishes when no run span encloses it). Every other carrier is released at once
and only its `SpanRecord` stays, slimmed: a span no convention recognises keeps its ids, name and
scope but not its attributes or events (extraction only walks through it). Three keep their attributes
(not their events), because a run may be inferred at them and `match.attributes` reads them as
`toolscore extract` does: the root, a child of a tool span (an uninstrumented sub-agent's root), and,
until its parent arrives, a span whose parent has not (it may be a tool's child; spans mostly arrive
as they end, children first, so that is mostly until the parent ends). The store also remembers, for traces it
has already finished, which span ids it saw, so a re-delivered span or a straggler is passed on and
counted rather than starting a second score (`finished`: bounded in traces and in bytes, `max_finished_bytes`;
a reopened trace's share of it counts against `max_pending_bytes` while the trace is pending).

Bounds: `max_pending_traces` traces, `max_spans_per_trace` spans each, and `max_pending_bytes` of span
data in all. Counts alone do not bound memory: model spans carry whole prompts, tens of kilobytes each,
and spans of many small attributes or events take several times their text in Python objects. A kept
span counts for an estimate of the memory its record takes: its text (`toolscore serve`: its bytes as
received, which hold that text) and a cost per attribute, per event and per span measured on decoded
records (`record_bytes`, `item_bytes`); a slimmed span costs the per-span amount, a span kept without
its events the estimate of what it keeps, and a span slimmed once its parent arrives gives the
difference back. A span waiting for its parent also counts for its entry in the list of such spans,
given back when the parent arrives (or with its trace), so that nothing pending is left uncounted. A
trace's last rebuild, kept for its next settle (`PendingTrace.rebuilt`), is bounded in time instead (see
`rebuilt`).

GenAI log events (`admit_event`) join their span here, whichever comes first: an event whose span is kept
is added to its record's events (`merge_events`, which leaves out one already there); one whose span has
not come waits in its trace (`PendingTrace.early`) and is merged as the span arrives. Either way it counts
for its text and `_EVENT_BYTES` against `max_pending_bytes` (a waiting one for its list slot too), at most
`max_spans_per_trace` wait per trace, and an event of a span already scored, or of a finished trace's
span, is late. Events of a span no convention recognises are not kept: it is slimmed of its own events too.
"""

from __future__ import annotations

import enum
import itertools
import time
from collections import OrderedDict
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from functools import partial
from typing import TYPE_CHECKING, Any, Generic, TypeVar

from toolscore.collector.extract import ClassifiedSpan, Role, classify, classify_span
from toolscore.collector.pipeline.finished import FinishedTraces, Seen, seen_bytes, seen_ids
from toolscore.collector.sources.log_events import LogEvent, merge_events
from toolscore.collector.spans import SpanEvent, SpanRecord
from toolscore.scorers._accel import compiled_module

if TYPE_CHECKING:
    from toolscore.collector.pipeline.rebuilt import Rebuilt

__all__ = [
    "Admission",
    "Admit",
    "HeldRun",
    "PendingTrace",
    "TraceStore",
    "cut_under",
    "event_bytes",
    "item_bytes",
    "python_attributes_bytes",
    "record_bytes",
]

C = TypeVar("C")

# Costs besides the text, measured with tracemalloc on records decoded from OTLP (tests/test_pipeline_bounds.py
# checks the estimate against such a measure): a record of nothing takes ~540 B, each small attribute 76 B
# (a one-letter string, which Python shares) to 103 B (an int), each empty event 128 B, each event attribute ~120 B.
_SPAN_BYTES = 700
"""What any kept span costs besides its attributes and events: ids, name, its record, its node in the trace."""
_ATTRIBUTE_BYTES = 90
"""What each attribute costs besides its text: its key and value objects and its slot in the dict."""
_EVENT_BYTES = 130
"""What each span event costs besides its attributes."""
_ITEM_BYTES = 16
"""What each item of a list value costs besides its text."""
_UNPLACED_BYTES = 100
"""What each span in `PendingTrace.unplaced` costs besides its record: its (span id, bytes) pair and list slot."""
_UNPLACED_PARENT_BYTES = 100
"""What each parent id in `PendingTrace.unplaced` costs: its list and its slot in the dict (~200 B for a span
alone under its parent, ~100 B for each sibling, measured with tracemalloc)."""


def item_bytes(record: SpanRecord) -> int:
    """The memory a kept span takes besides its text: the per-span, per-attribute and per-event costs.

    Cheap (no walk of the attributes): `toolscore serve` adds it to the span's received size, which
    holds the text, rather than count the text again.
    """
    size = _SPAN_BYTES + _ATTRIBUTE_BYTES * len(record.attributes)
    for event in record.events:
        size += _EVENT_BYTES + _ATTRIBUTE_BYTES * len(event.attributes)
    return size


def record_bytes(record: SpanRecord) -> int:
    """An estimate of the memory a kept span takes: its text and `item_bytes` (within ~25% of a measure).

    One walk of the events, each counted with its attributes' text (not `item_bytes` then the text: that
    walked them twice, and this runs for every span the in-process pipeline keeps).
    """
    size = _SPAN_BYTES + _attributes_bytes(record.attributes)
    for event in record.events:
        size += _EVENT_BYTES + _attributes_bytes(event.attributes)
    return size


def event_bytes(event: SpanEvent) -> int:
    """The memory one event takes: its attributes' text and the per-event and per-attribute costs."""
    return _EVENT_BYTES + _attributes_bytes(event.attributes)


def python_attributes_bytes(attributes: Mapping[str, Any]) -> int:
    """The attributes' text and their per-attribute cost (`_ATTRIBUTE_BYTES` each, as `item_bytes` counts)."""
    total = _ATTRIBUTE_BYTES * len(attributes)
    for key, value in attributes.items():
        total += len(key)
        if value.__class__ is str:
            total += len(value)
        elif value.__class__ is list:
            total += sum(
                len(item)
                if item.__class__ is str
                else python_attributes_bytes(item)
                if item.__class__ is dict
                else _ITEM_BYTES
                for item in value
            )  # a map: a tool call in a log event's body
        elif value.__class__ is dict:  # a log event's body
            total += python_attributes_bytes(value)
    return total


_gate = compiled_module("toolscore.collector.pipeline._gate")
_attributes_bytes: Callable[[Mapping[str, Any]], int] = (
    python_attributes_bytes
    if _gate is None
    else partial(_gate.attributes_bytes, _ATTRIBUTE_BYTES, _ITEM_BYTES, python_attributes_bytes)
)
"""`python_attributes_bytes`, the walk compiled where the install built `_gate.c` (`tests/test_span_decoder.py`)."""


class Admit(enum.Enum):
    """What became of one arriving span."""

    STORED = "stored"
    """Kept for extraction; its carrier goes on at once."""
    HELD = "held"
    """A run span: kept, and its carrier waits for the run's scores."""
    LATE = "late"
    """Under a run that was already scored (or in a finished trace): passed on, counted."""
    DUPLICATE = "duplicate"
    """Seen before (an at-least-once sender re-sent it): changes nothing, and is not passed on again."""
    OVER_CAP = "over_cap"
    """Its trace already holds `max_spans_per_trace` spans: passed on unscored."""
    CANDIDATE = "candidate"
    """May stand for an inferred run: kept, and its carrier waits until its trace finishes."""


@dataclass(slots=True)
class HeldRun(Generic[C]):
    """A run span whose carrier waits for its scores, or a candidate for an inferred run's span."""

    carrier: C
    arrived_ns: int
    end_ns: int
    run: bool = True
    """A run span (settles on its own); False: a candidate, waiting for its trace to finish."""


@dataclass(slots=True)
class PendingTrace(Generic[C]):
    trace_id: str
    records: dict[str, ClassifiedSpan] = field(default_factory=dict)
    """Every span kept for extraction, classified, by span id; whatever changes it drops `rebuilt`."""
    held: dict[str, HeldRun[C]] = field(default_factory=dict)
    """Run spans not yet scored, by span id."""
    scored: set[str] = field(default_factory=set)
    """Runs (run span ids, inferred ones too) whose scores went out."""
    opened_ns: int = field(default_factory=time.monotonic_ns)
    """When this trace's first span (or event) arrived here: its arrival time on the engine's clock (monotonic ns),
    the one its settle, idle and hold deadlines count on."""
    late: set[str] = field(default_factory=set)
    """Spans passed on late (under a run already scored), so that a copy sent again is a duplicate, not passed
    on twice (an at-least-once sender's retry: the Collector's loadbalancing exporter sends a batch again
    whole); at most `max_spans_per_trace` of them."""
    root_id: str | None = None
    """The local root (a span without parent), once it has arrived."""
    root_ends_early: bool = False
    """Its root's convention says the root ends before the work under it (`Extractor.ends_before_its_work`):
    the root's arrival does not start the trace's settle, and the trace finishes when it goes idle."""
    truncated: bool = False
    waiting: dict[str | None, list[str]] = field(default_factory=dict)
    """Held candidates by the id of the nearest ancestor not arrived yet (None: they reach the root)."""
    earlier: dict[str, str | None] | None = None
    """Reopened trace: the spans an earlier finish of this trace id already passed on, with their parents."""
    size: int = 0
    """The bytes its kept spans count for against `max_pending_bytes`."""
    unplaced: dict[str, list[tuple[str, int]]] = field(default_factory=dict)
    """Unrecognised spans keeping their attributes until their parent arrives, by the parent's id, with
    the bytes each counts for: slimmed then unless the parent is a tool span. The entries count too
    (`_UNPLACED_BYTES`, `_UNPLACED_PARENT_BYTES`), given back when the parent comes or with the trace."""
    rebuilt: Rebuilt | None = None
    """The last rebuild of `records`, while it is still theirs and to be kept (see `rebuilt`)."""
    early: dict[str, list[tuple[SpanEvent, int]]] | None = None
    """GenAI log events whose span has not come, by span id, with the bytes each counts for (None until one
    waits: most traces never have one, and an empty dict per trace would cost each its memory)."""
    early_count: int = 0
    """The events in `early`, bounded by `max_spans_per_trace`."""
    above_steps: set[str] | None = None
    """The parents of the tool and model spans kept (None until one has a parent): a tool span among them stands
    for an inferred run and is held (see the module docstring)."""

    @property
    def holds_runs(self) -> bool:
        """Whether a run span is still held (candidates alone do not keep a trace from finishing)."""
        return any(held.run for held in self.held.values())

    @property
    def root_seen(self) -> bool:
        return self.root_id is not None

    @property
    def root_settles(self) -> bool:
        """Whether the trace finishes once its root has come and settled (else: when it goes idle)."""
        return self.root_id is not None and not self.root_ends_early


@dataclass(slots=True)
class Admission(Generic[C]):
    kind: Admit
    trace: PendingTrace[C] | None = None
    touched: list[str] = field(default_factory=list)
    """Held runs this span arrived under: their settle time starts again."""
    evicted: list[PendingTrace[C]] = field(default_factory=list)
    """Traces pushed out by `max_pending_traces`, oldest first: the caller releases and counts them."""
    evicted_for_bytes: list[PendingTrace[C]] = field(default_factory=list)
    """Traces pushed out by `max_pending_bytes`, oldest first: likewise."""
    released: list[C] = field(default_factory=list)
    """Candidates this span showed are no inferred run's span: the caller passes them on."""


# Role and Admit members as module constants: in Python 3.11 every `Role.X` goes through
# `EnumType.__getattr__`'s lookup hook (about 60 ns, ten times a global), and these are read per span.
_RUN, _TOOL, _LLM, _OTHER = Role.RUN, Role.TOOL, Role.LLM, Role.OTHER
_STORED, _HELD, _LATE, _DUPLICATE = Admit.STORED, Admit.HELD, Admit.LATE, Admit.DUPLICATE
_OVER_CAP, _CANDIDATE = Admit.OVER_CAP, Admit.CANDIDATE


def _unchanged(carrier: C) -> C:
    return carrier


def _record_size(carrier: object, record: SpanRecord) -> int:
    return record_bytes(record)


def _reduced(node: ClassifiedSpan, attributes: bool) -> ClassifiedSpan:
    """A span no convention recognises without its events, and its attributes unless `attributes`, when that
    does not change that: extraction only walks through it, or reads the attributes of a run inferred at it."""
    record = node.span
    if not record.events and (attributes or not record.attributes):
        return node
    reduced = SpanRecord(
        record.trace_id, record.span_id, record.parent_id, record.name, record.kind, record.start_ns,
        record.end_ns, record.status_code, "", record.attributes if attributes else {}, (), record.resource,
        record.scope,
    )  # fmt: skip
    return ClassifiedSpan(reduced, None, None) if classify(reduced) is None else node


def cut_under(trace: PendingTrace[Any], run_span_id: str) -> bool:
    """Whether spans under this run went out with an earlier finish of its trace (see `TraceStore._remember`)."""
    if not trace.earlier:
        return False
    for parent_id in trace.earlier.values():
        current = parent_id
        for _ in range(len(trace.records) + 1):
            if current is None or current in trace.earlier:
                break  # the top of what went out is reached from another entry
            if current == run_span_id:
                return True
            node = trace.records.get(current)
            current = node.span.parent_id if node is not None else None
    return False


def _not_told(n: int, reason: str) -> None:
    pass


class TraceStore(Generic[C]):
    """Pending traces in arrival order (oldest first), bounded; worker thread only.

    `hold` is what a carrier becomes while it waits (as a run span or a candidate): a source can drop
    from it what only a span passed on unchanged needs, so that a waiting span holds no more.
    `on_forget(n, reason)` is told of the `n` span ids the memory of finished traces lets go of, and why
    (`max_pending_traces`, `max_spans_per_trace`: see `_remember`), so that the lost dedupe is counted.
    `size` is what a kept span counts for against `max_bytes` (default `record_bytes`). `max_finished_bytes`
    bounds the memory of finished traces (`finished`) besides `max_traces`.
    """

    def __init__(
        self,
        max_traces: int,
        max_spans_per_trace: int,
        hold: Callable[[C], C] | None = None,
        on_forget: Callable[[int, str], None] | None = None,
        *,
        max_bytes: int | None = None,
        size: Callable[[C, SpanRecord], int] | None = None,
        max_finished_bytes: int | None = None,
    ) -> None:
        self.max_traces = max_traces
        self.max_spans = max_spans_per_trace
        self.max_bytes = max_bytes
        self._hold: Callable[[C], C] = hold or _unchanged
        self._on_forget = on_forget or _not_told
        self._size: Callable[[C, SpanRecord], int] = size or _record_size
        self.size = 0
        """The bytes the pending traces' spans count for."""
        self.traces: OrderedDict[str, PendingTrace[C]] = OrderedDict()
        self.finished = FinishedTraces(max_traces, max_finished_bytes, self._on_forget)

    def __len__(self) -> int:
        return len(self.traces)

    def admit(self, record: SpanRecord, carrier: C, arrived_ns: int) -> Admission[C]:
        node = classify_span(record)  # first, before anything changes: the span's own content is read here
        trace = self.traces.get(record.trace_id)
        if trace is None:
            seen = self.finished.take(record.trace_id)
            if seen is not None and (record.span_id in seen or record.parent_id in seen):
                duplicate = record.span_id in seen
                seen.setdefault(record.span_id, record.parent_id)  # passed on now: a copy of it is a duplicate
                self.finished.put(record.trace_id, seen)
                return Admission(_DUPLICATE if duplicate else _LATE)
            trace, evicted = self._open(record.trace_id, seen, arrived_ns)
        else:
            evicted = []
            seen = trace.earlier
            if seen is not None and (record.span_id in seen or record.parent_id in seen):
                duplicate = record.span_id in seen
                seen.setdefault(record.span_id, record.parent_id)  # passed on now: a copy of it is a duplicate
                return Admission(_DUPLICATE if duplicate else _LATE, trace)
        if record.span_id in trace.records or record.span_id in trace.scored or record.span_id in trace.late:
            return Admission(_DUPLICATE, trace)
        touched, late = self._under(trace, record.parent_id)
        if late:
            if len(trace.late) < self.max_spans:
                trace.late.add(record.span_id)
            return Admission(_LATE, trace)
        role = node.role
        if len(trace.held if role is _RUN else trace.records) >= self.max_spans:
            trace.truncated = True  # run spans have their own cap: the spans of a long run must not crowd it out
            return Admission(_OVER_CAP, trace)
        self._keep(trace, node, carrier)
        if trace.early and (early := trace.early.pop(record.span_id, None)):
            self._join_early(trace, trace.records[record.span_id], early)
        if trace.unplaced and (children := trace.unplaced.pop(record.span_id, None)):
            self._place(trace, children, slim=role is not _TOOL)
        if record.parent_id is None:
            trace.root_id = record.span_id
            trace.root_ends_early = bool(node.ask("ends_before_its_work"))
        admission = Admission(_STORED, trace, touched, evicted)
        if self.max_bytes is not None and self.size > self.max_bytes:
            admission.evicted_for_bytes = self._shed(trace)
        if role is _RUN:
            trace.held[record.span_id] = HeldRun(self._hold(carrier), arrived_ns, record.end_ns)
            admission.kind = _HELD
        elif role is _TOOL or role is _LLM:
            self._step_kept(trace, record, role, carrier, arrived_ns=arrived_ns, admission=admission)
        self._candidates(trace, record, role, carrier=carrier, arrived_ns=arrived_ns, admission=admission)
        return admission

    def _step_kept(
        self,
        trace: PendingTrace[C],
        record: SpanRecord,
        role: Role,
        carrier: C,
        *,
        arrived_ns: int,
        admission: Admission[C],
    ) -> None:
        """Note a tool or model span's parent, and hold a tool span a tool or model span came under (a run is
        inferred at it: see the module docstring)."""
        above = trace.above_steps
        if record.parent_id is not None:
            if above is None:
                above = trace.above_steps = set()
            above.add(record.parent_id)
        if role is _TOOL and above is not None and record.span_id in above:
            trace.held[record.span_id] = HeldRun(self._hold(carrier), arrived_ns, record.end_ns, run=False)
            admission.kind = _CANDIDATE

    @staticmethod
    def held_steps_under(trace: PendingTrace[C], run_span_id: str) -> list[str]:
        """The held tool spans (see `_step_kept`) whose nearest run span above is `run_span_id`."""
        found: list[str] = []
        records = trace.records
        for span_id, held in trace.held.items():
            node = records.get(span_id)
            if held.run or node is None or node.role is not _TOOL:
                continue
            current = node.span.parent_id
            for _ in range(len(records) + 1):
                parent = records.get(current) if current is not None else None
                if parent is None:
                    break
                if parent.role is _RUN:
                    if current == run_span_id:
                        found.append(span_id)
                    break
                current = parent.span.parent_id if parent.span.parent_id != current else None
        return found

    def _open(
        self, trace_id: str, earlier: Seen | None, opened_ns: int
    ) -> tuple[PendingTrace[C], list[PendingTrace[C]]]:
        """A new pending trace (a finished one opening again with its `earlier` memory, which then counts against
        `max_bytes` as the trace's), opened at `opened_ns`, and the traces pushed out to make room for it."""
        trace: PendingTrace[C] = PendingTrace(trace_id, earlier=earlier, opened_ns=opened_ns)
        evicted = self._make_room()
        self.traces[trace_id] = trace
        if earlier is not None:
            trace.size = seen_bytes(earlier)
            self.size += trace.size
        return trace, evicted

    def _keep(self, trace: PendingTrace[C], node: ClassifiedSpan, carrier: C) -> None:
        """Keep a span for extraction, reduced as the module docstring says, and count its bytes."""
        record = node.span
        kept, parent_id, waits = node, record.parent_id, False
        if node.role is None and parent_id is not None:
            parent = trace.records.get(parent_id)
            waits = parent is None
            kept = _reduced(node, attributes=parent is None or parent.role is _TOOL)
        size = cost = self._size(carrier, record) if kept is node else record_bytes(kept.span)
        trace.records[record.span_id] = kept
        trace.rebuilt = None
        if waits and kept.span.attributes:
            assert parent_id is not None
            siblings = trace.unplaced.get(parent_id)
            if siblings is None:
                siblings = trace.unplaced[parent_id] = []
                cost += _UNPLACED_PARENT_BYTES
            siblings.append((record.span_id, size))
            cost += _UNPLACED_BYTES
        trace.size += cost
        self.size += cost

    def admit_event(self, item: LogEvent, arrived_ns: int) -> Admission[C]:
        """Join a GenAI log event to its span now, or keep it until the span comes (see the module docstring).

        STORED: joined or waiting (the settle times of `touched` start again, as for a span); LATE: its span
        was scored, or went out with a finished trace; DUPLICATE: already there; OVER_CAP: its trace has
        `max_spans_per_trace` events waiting. The caller releases and counts `evicted` traces as for a span.
        """
        trace = self.traces.get(item.trace_id)
        evicted: list[PendingTrace[C]] = []
        if trace is None:
            seen = self.finished.take(item.trace_id)
            if seen is not None and item.span_id in seen:
                self.finished.put(item.trace_id, seen)
                return Admission(_LATE)
            trace, evicted = self._open(item.trace_id, seen, arrived_ns)
        elif trace.earlier is not None and item.span_id in trace.earlier:
            return Admission(_LATE, trace)
        node = trace.records.get(item.span_id)
        if node is not None:
            touched, late = self._under(trace, item.span_id)
            if late:
                return Admission(_LATE, trace)
            cost = 0  # a span no convention recognises keeps no events: nothing reads them
            if node.role is not None:
                if not merge_events(node.span, (item.event,)):
                    return Admission(_DUPLICATE, trace)
                cost = event_bytes(item.event)
                trace.rebuilt = None
        else:
            early = trace.early if trace.early is not None else {}
            waiting = early.get(item.span_id)
            if waiting is not None and any(event == item.event for event, _ in waiting):
                return Admission(_DUPLICATE, trace)
            if trace.early_count >= self.max_spans:
                return Admission(_OVER_CAP, trace)
            cost = event_bytes(item.event) + _UNPLACED_BYTES
            early.setdefault(item.span_id, []).append((item.event, cost))
            trace.early = early
            trace.early_count += 1
            touched = [span_id for span_id, held in trace.held.items() if held.run]  # its span may be under any
        trace.size += cost
        self.size += cost
        admission = Admission(_STORED, trace, touched, evicted)
        if self.max_bytes is not None and self.size > self.max_bytes:
            admission.evicted_for_bytes = self._shed(trace)
        return admission

    def _join_early(self, trace: PendingTrace[C], node: ClassifiedSpan, early: list[tuple[SpanEvent, int]]) -> None:
        """The span the `early` events waited for came: they join it (when it keeps events), and the bytes of
        their places in the waiting list, and of any not kept, are given back."""
        trace.early_count -= len(early)
        freed = sum(size for _, size in early)
        if node.role is not None:
            freed -= sum(map(event_bytes, merge_events(node.span, [event for event, _ in early])))
        trace.size -= freed
        self.size -= freed

    def _place(self, trace: PendingTrace[C], children: list[tuple[str, int]], *, slim: bool) -> None:
        """The parent the `children` waited for came: give their entries' bytes back and, if `slim` (it is no
        tool span), their attributes' too."""
        freed = _UNPLACED_PARENT_BYTES + _UNPLACED_BYTES * len(children)
        for span_id, size in children if slim else ():
            node = trace.records[span_id]
            reduced = _reduced(node, attributes=False)
            if reduced is not node:
                trace.records[span_id] = reduced
                trace.rebuilt = None
                freed += size - _SPAN_BYTES
        trace.size -= freed
        self.size -= freed

    def _candidates(
        self,
        trace: PendingTrace[C],
        record: SpanRecord,
        role: Role | None,
        *,
        carrier: C,
        arrived_ns: int,
        admission: Admission[C],
    ) -> None:
        """Update the inferred-run candidates for a new span (see the module docstring)."""
        span_id = record.span_id
        below = trace.waiting.pop(span_id, None) if trace.waiting else None
        if below is None and role is not _OTHER:
            return  # the common case: nothing waits on this span and it cannot stand for a run
        recognised_above, wait_on = self._above(trace, record.parent_id)
        if below and (role is not None or recognised_above):
            for candidate in below:  # the new span (or one above it) is recognised: they are not topmost
                held = trace.held.pop(candidate, None)
                if held is not None:
                    admission.released.append(held.carrier)
            below = None
        if below:
            trace.waiting.setdefault(wait_on, []).extend(below)
        if role is _OTHER and not recognised_above:
            trace.held[span_id] = HeldRun(self._hold(carrier), arrived_ns, record.end_ns, run=False)
            trace.waiting.setdefault(wait_on, []).append(span_id)
            admission.kind = _CANDIDATE

    def _above(self, trace: PendingTrace[C], parent_id: str | None) -> tuple[bool, str | None]:
        """Whether an ancestor that has arrived is recognised, and the nearest ancestor not arrived yet."""
        current = parent_id
        for _ in range(len(trace.records) + 1):
            if current is None:
                return False, None
            node = trace.records.get(current)
            if node is None:
                return False, current
            if node.role is not None:
                return True, None
            parent = node.span.parent_id
            current = parent if parent != current else None
        return False, None

    @staticmethod
    def drop_candidate(trace: PendingTrace[C], span_id: str) -> HeldRun[C] | None:
        """Stop holding a candidate (its hold time is up); it stays in `waiting` harmlessly."""
        held = trace.held.get(span_id)
        if held is None or held.run:
            return None
        return trace.held.pop(span_id)

    def _under(self, trace: PendingTrace[C], parent_id: str | None) -> tuple[list[str], bool]:
        """The held runs above a new span, and whether it is under a run already scored."""
        touched: list[str] = []
        current = parent_id
        for _ in range(len(trace.records) + 1):
            if current is None:
                break
            if current in trace.scored:
                return touched, True
            held = trace.held.get(current)
            if held is not None and held.run:
                touched.append(current)
            parent = trace.records.get(current)
            if parent is None:  # an ancestor not arrived yet: it may be under any held run, all wait again
                if trace.held:  # mostly empty: children end, and arrive, before their run span
                    touched.extend(i for i, held in trace.held.items() if held.run and i not in touched)
                break
            parent_id = parent.span.parent_id
            current = parent_id if parent_id != current else None
        return touched, False

    def _make_room(self) -> list[PendingTrace[C]]:
        evicted: list[PendingTrace[C]] = []
        while len(self.traces) >= self.max_traces:
            _, oldest = self.traces.popitem(last=False)
            self._forget(oldest)
            evicted.append(oldest)
        return evicted

    def _shed(self, keep: PendingTrace[C]) -> list[PendingTrace[C]]:
        """The oldest traces but `keep` (the arriving span's), pushed out until the rest fit in `max_bytes`.

        One trace alone over the budget stays: `max_spans_per_trace` bounds it.
        """
        assert self.max_bytes is not None
        over = self.size - self.max_bytes
        evicted: list[PendingTrace[C]] = []
        for trace in self.traces.values():  # oldest first; mostly one is enough
            if over <= 0:
                break
            if trace is not keep:
                evicted.append(trace)
                over -= trace.size
        for trace in evicted:
            del self.traces[trace.trace_id]
            self._forget(trace)
        return evicted

    def finish(self, trace: PendingTrace[C]) -> None:
        """Forget a trace's spans, keeping only their ids and parents (bounded): see `_remember`."""
        if self.traces.pop(trace.trace_id, None) is not None:
            self._forget(trace)
        else:
            self._remember(trace)

    def _forget(self, trace: PendingTrace[C]) -> None:
        self.size -= trace.size
        trace.size = 0
        self._remember(trace)

    def _remember(self, trace: PendingTrace[C]) -> None:
        """Keep what a finished trace passed on, to recognise re-deliveries and stragglers, and runs it cut.

        A span of the trace arriving later (a run that went quiet past `trace_idle_timeout_s`, a flush
        in the middle of a run, an evicted trace) opens it again with this memory, so that a re-sent span
        is still a duplicate and a run whose earlier spans went out without it is flagged incomplete.

        The memory is bounded three times, and what it lets go of is counted (`on_forget`): it keeps the
        latest `max_traces` finished traces (`max_pending_traces`: a span of an older one is taken as new)
        within `max_finished_bytes` (`FinishedTraces`), and a trace that opens again and again (a long session
        with quiet spells) keeps its latest `max_spans` ids (`max_spans_per_trace`: the earliest are forgotten
        first, and a re-sent span that old is taken as new).
        """
        seen = seen_ids(trace.records, trace.earlier, trace.scored | trace.late if trace.late else trace.scored)
        if len(seen) > self.max_spans:
            over = len(seen) - self.max_spans
            for span_id in list(itertools.islice(seen, over)):
                del seen[span_id]
            self._on_forget(over, "max_spans_per_trace")
        self.finished.put(trace.trace_id, seen)

    def stats(self) -> dict[str, Any]:
        return {"traces": len(self.traces), "spans": sum(len(t.records) for t in self.traces.values())}
