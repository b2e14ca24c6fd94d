"""The pre-filter's markers: what a span must show before any convention can read it, and the traces that showed it.

Production traffic is mostly HTTP, database and queue spans; an agent's spans are a fraction of it.
Extraction reads a span only when a convention recognises it, and every convention declares, as its
`Gate`, a necessary condition for that: the span's instrumentation scope is one of its `scopes`, or it
carries one of its attribute `keys` (span names, events and everything else are read only after that).
The markers are the union of the gates of `EXTRACTORS`, gathered here and nowhere else, so a convention
added or changed is covered by the pre-filter the moment its gate is. An extractor without a gate may
recognise any span: then there are no markers (`convention_markers` gives None) and nothing is skipped.

Per trace: a span with a marker makes its trace an *agent trace* (`AgentTraces`), and every later span of
that trace goes to the pipeline, marked or not, since extraction walks through unrecognised spans (the
path from a tool call up to its run, a root or an uninstrumented sub-agent's span a run is inferred at).
A span of a trace that showed no marker yet is passed on untouched, unread. That includes a plain span
that arrives before its trace's first marked span: spans arrive as they end, children first, so a span
that ended before every agent span of its trace is none of their ancestors (a parent ends after its
children), and extraction, which only walks up from recognised spans, would not have read it. The
exception is a parent that ended before its children (work handed to a background task): such a span is
passed on unscored, and a run that would have been inferred at it (no convention marks a run span in that
trace) is inferred at the topmost ancestor that was read, as when a trace's root never arrives. `toolscore
serve`, whose spans come through Collectors in any order, holds such spans until their trace decides instead
(`serve._hold`).
"""

from __future__ import annotations

import threading
from collections.abc import Hashable, Iterable, Mapping
from dataclasses import dataclass
from typing import Generic, TypeVar

from toolscore.collector.extract.conventions import EXTRACTORS, Extractor, Gate

__all__ = ["AgentTraces", "Markers", "convention_markers"]

K = TypeVar("K", bound=Hashable)


@dataclass(frozen=True, slots=True)
class Markers:
    """Instrumentation scopes and attribute keys at least one of which every span a convention reads shows."""

    scopes: frozenset[str]
    keys: frozenset[str]

    def marks(self, scope: str | None, keys: Iterable[str]) -> bool:
        """Whether a span of `scope` carrying attributes `keys` may be read by a convention."""
        return (scope is not None and scope in self.scopes) or not self.keys.isdisjoint(keys)


def convention_markers(extractors: tuple[Extractor, ...] = EXTRACTORS) -> Markers | None:
    """The union of the extractors' gates; None when one has none (it may read any span: skip nothing)."""
    scopes: set[str] = set()
    keys: set[str] = set()
    for extractor in extractors:
        gate = getattr(extractor, "gate", None)
        if not isinstance(gate, Gate) or not (gate.scopes or gate.keys):
            return None
        scopes |= gate.scopes
        keys |= gate.keys
    return Markers(frozenset(scopes), frozenset(keys))


class AgentTraces(Generic[K]):
    """The ids of the latest `capacity` traces that showed a marker; safe for concurrent use.

    Membership is one dict lookup, without a lock, so that the thread ending a span pays next to nothing.
    Adding takes a lock; past `capacity` the trace marked longest ago is forgotten (a later span of it is
    then passed on unread, as a straggler of a finished trace would be).
    """

    def __init__(self, capacity: int) -> None:
        self._capacity = max(1, capacity)
        self._ids: dict[K, None] = {}
        self._lock = threading.Lock()

    @property
    def ids(self) -> Mapping[K, None]:
        """The ids themselves, for a reader that tests membership without a call (`in`); never mutate it."""
        return self._ids

    def __contains__(self, trace_id: object) -> bool:
        return trace_id in self._ids

    def __len__(self) -> int:
        return len(self._ids)

    def add(self, trace_id: K) -> None:
        if trace_id in self._ids:
            return
        with self._lock:
            ids = self._ids
            ids[trace_id] = None
            while len(ids) > self._capacity:
                del ids[next(iter(ids))]

    def add_all(self, trace_ids: Iterable[K]) -> None:
        with self._lock:
            ids = self._ids
            for trace_id in trace_ids:
                ids[trace_id] = None
            while len(ids) > self._capacity:
                del ids[next(iter(ids))]
