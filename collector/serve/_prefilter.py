"""`WirePrefilter`: which spans of a received request the pipeline must read, decided from its bytes.

The markers are the conventions' gates (`pipeline.markers`): a span carrying one of their attribute keys,
or sent under one of their instrumentation scopes, makes its trace an agent trace, and every span of an
agent trace goes to the pipeline. On the wire an attribute key is a `KeyValue.key` (field 1) and a scope
name an `InstrumentationScope.name` (field 1): both are `0x0a, length, text`. A binary request is first
walked by compiled code that validates it as the protobuf runtime would and tests each span's attribute keys
and each scope's name against the markers exactly, and reads each span's place, trace and root
(`request_plan`): a request with none is never parsed, and of one with an agent's span only its agent traces'
spans are (`_walked.bytes_carriers`). A request the receiver has parsed (OTLP/JSON, or bytes the walk cannot
say about) gets the same table from a walk of its framing (`_accel.span_table`):

    binary request ─compiled walk (`_accel.request_index`)─→ no span shows a marker, none is of a known
    │                                                        agent trace: the request whole, unread
    ├ else: the spans that show a marker, and their traces
    │        └→ per span: of an agent trace (pipeline) or not (held: the rest of the request as one,
    │           `without_spans`); none of an agent trace: the request whole
    └ the walk cannot say: parsed ─compiled walk (`_accel.span_table`)─→ the same

Without the compiled module, a search of the bytes finds where the markers may be instead. A match of it is
a superset test: the same bytes inside a value, an event's attribute or a resource attribute
also match (a span then goes to the pipeline for nothing, which costs time, never a score). A span whose
trace has shown no marker is not read: `CollectorPipeline` holds it as received until its trace decides
(`_hold`), since behind a Collector it may be an ancestor whose marked descendants come later (a request
holding a trace id that is not 16 bytes, or zeros, goes the pipeline's way, which rejects and reports those
spans). The traces that
showed a marker are remembered (`AgentTraces`, twice `max_pending_traces`) so that their later spans (a
root that ends last) go to the pipeline too, as do those of a trace a logs export's GenAI events named
(`note_events`).
"""

from __future__ import annotations

import bisect
import itertools
import operator
import re
from collections import Counter
from collections.abc import Iterable
from typing import Any, NamedTuple

from toolscore.collector.pipeline.markers import AgentTraces, Markers
from toolscore.collector.serve._encode import entries, varint
from toolscore.collector.sources._accel import checked_table, plain_index, request_index, span_table

__all__ = [
    "SPAN_IDS_OK",
    "SPAN_ROOT",
    "PlainRequest",
    "SpanPlan",
    "WirePrefilter",
    "all_ids_ok",
    "parsed_traces",
    "plain_traces",
    "request_traces",
]

_ZERO_TRACE = bytes(16)


def _wire_pattern(texts: Iterable[str]) -> re.Pattern[bytes]:
    """One search for every text framed as a length-delimited field 1 (`0x0a`, varint length, UTF-8).

    Grouped by length after the common `0x0a`, so that the engine tries a text only where its length byte is:
    a fifth faster than a flat alternation over requests of HTTP and database spans."""
    by_length: dict[int, list[bytes]] = {}
    for raw in sorted({text.encode() for text in texts}, key=len, reverse=True):
        by_length.setdefault(len(raw), []).append(raw)
    groups = [
        re.escape(varint(length)) + b"(?:" + b"|".join(re.escape(raw) for raw in raws) + b")"
        for length, raws in by_length.items()
    ]
    return re.compile(b"\x0a(?:" + b"|".join(groups) + b")")


def span_offsets(data: bytes) -> list[tuple[int, int]] | None:
    """(start, end) of every framed `ScopeSpans.spans` entry of a serialized request, in request order; None
    when the bytes do not walk."""
    try:
        out: list[tuple[int, int]] = []
        for _, start, end in entries(data, 0, len(data), 0x0A):  # resource_spans = 1
            for _, scope_start, scope_end in entries(data, start, end, 0x12):  # scope_spans = 2
                out += [(at, stop) for at, _, stop in entries(data, scope_start, scope_end, 0x12)]  # spans = 2
    except (IndexError, ValueError):
        return None
    return out


class SpanPlan(NamedTuple):
    """A request with spans of agent traces: which of its spans are (per span, in request order)."""

    agent: list[bool]
    offsets: list[tuple[int, int]] | None
    """Each span's framed entry in the request's bytes, (start, end), when walked."""
    ids: list[bytes] | None = None
    """Each span's trace id, from the compiled walk."""
    flags: bytes | None = None
    """Each span's `SPAN_ROOT` and `SPAN_IDS_OK` bits, from the compiled walk."""


SPAN_ROOT, SPAN_IDS_OK = 1, 2
"""`SpanPlan.flags` bits: the span has no parent; its ids are as `otlp_proto.ids_ok` wants them."""
_IDS_NOT_OK = re.compile(b"[\x00\x01]")


def all_ids_ok(plan: SpanPlan) -> bool:
    """Whether every span of a walked plan has usable ids (`otlp_proto.ids_ok`)."""
    return plan.flags is not None and _IDS_NOT_OK.search(plan.flags) is None


_ROOT_MASK = bytes(1 if flag & SPAN_ROOT else 0 for flag in range(256))
"""`bytes.translate` table: a span's flags byte to 1 when it has no parent, else 0."""


def plain_traces(plan: SpanPlan) -> tuple[dict[bytes, int], set[bytes]]:
    """The spans per trace, and the traces of the roots, of a walked plan's spans of no agent trace (what the hold
    keeps of them). Iterated in C (`compress`, `map`): this runs for every request whose spans part ways."""
    assert plan.ids is not None
    assert plan.flags is not None
    plain = list(map(operator.not_, plan.agent))
    counts = Counter(itertools.compress(plan.ids, plain))
    root_traces = set(itertools.compress(plan.ids, map(operator.and_, plan.flags.translate(_ROOT_MASK), plain)))
    return counts, root_traces


class PlainRequest(NamedTuple):
    """A request with no span of an agent trace, as the hold keeps it: its spans per trace, its roots' traces."""

    counts: dict[bytes, int]
    """Spans per trace id."""
    roots: set[bytes]
    """The trace ids of its spans with no parent."""
    spans: int
    blocks: int
    """Resource and scope blocks (`receiver.max_spans_per_request` bounds them too)."""


def request_traces(request: Any, data: bytes) -> PlainRequest:
    """`PlainRequest` of `request`, serialized as `data`: from the bytes by the compiled walk where built
    (`_accel.plain_index`), else from the parsed request (`parsed_traces`); the same either way
    (tests/test_wire_accel.py)."""
    index = plain_index(data) if plain_index is not None else None
    return parsed_traces(request) if index is None else PlainRequest(*index)


def parsed_traces(request: Any) -> PlainRequest:
    """`request_traces` read from the parsed request."""
    counts: dict[bytes, int] = {}
    roots: set[bytes] = set()
    spans = blocks = 0
    for resource_spans in request.resource_spans:
        blocks += 1 + len(resource_spans.scope_spans)
        for scope_spans in resource_spans.scope_spans:
            for span in scope_spans.spans:
                trace_id = span.trace_id
                counts[trace_id] = counts.get(trace_id, 0) + 1
                if not span.parent_span_id:
                    roots.add(trace_id)
                spans += 1
    return PlainRequest(counts, roots, spans, blocks)


class WirePrefilter:
    """Decides, per request and per trace, which spans can matter to extraction (see the module docstring)."""

    def __init__(self, markers: Markers, capacity: int) -> None:
        self._pattern = _wire_pattern(markers.keys | markers.scopes)
        self._scopes = markers.scopes
        self._markers = (tuple(key.encode() for key in markers.keys), tuple(scope.encode() for scope in markers.scopes))
        """The markers as the compiled walks take them."""
        self.traces: AgentTraces[bytes] = AgentTraces(capacity)

    def agent_spans(self, request: Any, data: bytes) -> SpanPlan | PlainRequest:
        """Per span of `request` (serialized as `data`), in request order, whether it is of an agent trace, with
        the spans' offsets in `data` when walked (`SpanPlan`); a `PlainRequest` when none is (the request may be
        held whole). The compiled walk (`_accel.span_table`) reads the markers exactly where it is built; else
        a search of the bytes finds where they may be, and the parsed request says which spans hold them."""
        table = span_table(data, *self._markers) if span_table is not None else None
        if table is not None:
            return self._walked(request, *table)
        hits = [match.start() for match in self._pattern.finditer(data)]
        if not hits:
            plain = request_traces(request, data)
            if self._holdable(plain):
                return plain
            if not self._ids_ok(plain):
                return SpanPlan([True] * plain.spans, None)  # bad trace ids: the pipeline's checks reject and report
            known = self.traces.ids  # the mapping: `in` without a Python call per span
            ids = [span.trace_id for rs in request.resource_spans for ss in rs.scope_spans for span in ss.spans]
            return SpanPlan([trace_id in known for trace_id in ids], None)
        offsets = span_offsets(data)
        ids = [span.trace_id for rs in request.resource_spans for ss in rs.scope_spans for span in ss.spans]
        marked: list[bool] = []
        scopes = self._scopes
        for rs in request.resource_spans:
            for ss in rs.scope_spans:
                marked += [ss.scope.name in scopes] * len(ss.spans)
        if offsets is None or len(offsets) != len(ids) or len(marked) != len(ids):
            return SpanPlan([True] * len(marked), None)  # unwalkable: the pipeline reads every span
        starts = [start for start, _ in offsets]
        for hit in hits:
            i = bisect.bisect_right(starts, hit) - 1
            if i >= 0 and hit < offsets[i][1]:
                marked[i] = True
        self.traces.add_all({trace_id for trace_id, mark in zip(ids, marked, strict=True) if mark})
        known = self.traces.ids
        return SpanPlan([trace_id in known for trace_id in ids], offsets)

    def _walked(
        self, request: Any, offsets: list[tuple[int, int]], ids: list[bytes], marked: list[int], flags: bytes
    ) -> SpanPlan | PlainRequest:
        """`agent_spans` from the compiled walk's table: the spans that show a marker, and each span's trace,
        ids and root flags."""
        plan = self._plan(offsets, ids, marked, flags)
        if True in plan.agent or not all_ids_ok(plan):
            return plan
        # no span of a known agent trace and every id usable: what `_holdable` asks, answered by the walk
        blocks = sum(1 + len(resource_spans.scope_spans) for resource_spans in request.resource_spans)
        counts, root_traces = plain_traces(plan)
        return PlainRequest(counts, root_traces, len(ids), blocks)

    def _plan(self, offsets: list[tuple[int, int]], ids: list[bytes], marked: list[int], flags: bytes) -> SpanPlan:
        """The plan of a walked table: its marked spans' traces become agent traces, then each span is of one or not."""
        if marked:
            self.traces.add_all({ids[i] for i in marked})
        known = self.traces.ids
        return SpanPlan([trace_id in known for trace_id in ids], offsets, ids, flags)

    def request_plan(self, data: bytes, max_spans: int) -> PlainRequest | SpanPlan | None:
        """A binary request not parsed yet, read from its bytes alone by one compiled walk that validates it as the
        runtime would (`_accel.request_index`): a `PlainRequest` when no span shows a marker and none is of a known
        agent trace, else the plan of its agent traces' spans. None when the walk cannot say, when the request
        holds no span or more than `max_spans` spans or blocks, or when a span's ids are unusable: parse it and
        `agent_spans` it, so that the parse decides and reports."""
        index = request_index(data, *self._markers, max_spans) if request_index is not None else None
        if index is None:
            return None
        marked, answer = index  # within `max_spans`: the walk gives up past it
        if not marked:
            plain = PlainRequest(*answer)
            if not plain.spans:
                return None
            if self._holdable(plain):
                return plain
            table = checked_table(data, *self._markers) if checked_table is not None else None
            if table is None:
                return None
            answer = table
        offsets, ids, marked_spans, flags, _ = answer
        plan = self._plan(offsets, ids, marked_spans, flags)
        return plan if True in plan.agent and all_ids_ok(plan) else None

    def _holdable(self, plain: PlainRequest) -> bool:
        """Whether a request without a marker can be held whole: usable trace ids, none of a known agent trace."""
        known = self.traces.ids
        return self._ids_ok(plain) and not any(trace_id in known for trace_id in plain.counts)

    @staticmethod
    def _ids_ok(plain: PlainRequest) -> bool:
        return not any(len(trace_id) != 16 or trace_id == _ZERO_TRACE for trace_id in plain.counts)

    def note_events(self, trace_ids: Iterable[str]) -> None:
        """GenAI log events (lowercase hex trace ids) mark their traces: their spans must meet them."""
        traces = set()
        for trace_id in trace_ids:
            try:
                traces.add(bytes.fromhex(trace_id))
            except ValueError:
                continue
        self.traces.add_all(traces)
