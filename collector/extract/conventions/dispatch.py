"""Which extractor recognises a span, asking only the extractors whose `Gate` the span passes.

Asking every extractor in turn costs one predicate call each, and most spans are recognised by the
last one (the OTel GenAI fallback). The gates turn that into a lookup: the span's scope and which
gate keys it carries select the candidate extractors, in `EXTRACTORS` order, and only those are
asked. Gates are necessary conditions, so the first candidate that recognises the span is the first
extractor that would have recognised it when all were asked.
"""

from __future__ import annotations

import logging

from toolscore.collector.extract.conventions.base import Extractor, Gate, Role
from toolscore.collector.spans import SpanRecord

__all__ = ["Dispatch"]

_log = logging.getLogger("toolscore.extract")

_MAX_CACHED = 4096
"""Candidate lists kept; scope names come from the wire, so the cache is cleared when it grows past this."""


class Dispatch:
    """The first extractor of `extractors` that recognises a span; safe for concurrent use.

    Candidate lists are cached per (scope, gate keys present); a race between threads only computes
    the same list twice.
    """

    def __init__(self, extractors: tuple[Extractor, ...]) -> None:
        self.extractors = extractors
        self._gates: tuple[tuple[Extractor, Gate | None], ...] = tuple(
            (extractor, gate if isinstance(gate := getattr(extractor, "gate", None), Gate) else None)
            for extractor in extractors
        )
        self._keys = frozenset().union(*(gate.keys for _, gate in self._gates if gate is not None))
        self._cache: dict[tuple[str, frozenset[str]], tuple[Extractor, ...]] = {}

    def candidates(self, span: SpanRecord) -> tuple[Extractor, ...]:
        """The extractors that may recognise `span`, in order."""
        present = self._keys.intersection(span.attributes)
        found = self._cache.get((span.scope, present))
        if found is None:
            found = tuple(
                extractor
                for extractor, gate in self._gates
                if gate is None or span.scope in gate.scopes or not gate.keys.isdisjoint(present)
            )
            if len(self._cache) >= _MAX_CACHED:
                self._cache.clear()
            self._cache[(span.scope, present)] = found
        return found

    def classify(self, span: SpanRecord) -> tuple[Extractor, Role] | None:
        """The first extractor that recognises the span, with the role it gives it; never raises.

        An extractor whose predicate raises on the span (an array where its convention has a string:
        `gen_ai.operation.name = ["chat"]` is unhashable) does not recognise it. Raising here would
        lose the span: classification runs on the worker thread for every span it takes.
        """
        found = self._cache.get((span.scope, self._keys.intersection(span.attributes)))  # `candidates`, inlined
        for extractor in self.candidates(span) if found is None else found:
            try:
                role = extractor.classify(span)
            except Exception:
                _log.debug("%s could not classify span %r; taken as not of its convention", extractor.name, span.name)
                continue
            if role is not None:
                return extractor, role
        return None
