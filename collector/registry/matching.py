"""Which expectations apply to a run, found by dict lookups rather than a scan of all of them.

Each enabled expectation is filed under one *exact* selector (an `equals` or `in` condition) — the
agent name when it has one, else an attribute, else a resource attribute — keyed by the condition's
text values. Matching a run looks up the run's value for each indexed field, then checks every
selector of the few candidates found (plus the expectations with no exact selector, which are always
candidates). The index is immutable: the registry builds a new one and swaps it, so a match in
flight never sees a half-applied change.
"""

from __future__ import annotations

import hashlib
from collections import defaultdict
from collections.abc import Iterable
from typing import Any

from toolscore.collector.registry.conditions import as_text
from toolscore.collector.registry.model import Expectation, ExpectationScorer, MatchSpec
from toolscore.scorers.model import AgentRun

__all__ = ["ExpectationIndex", "matches", "run_value", "sampled_scorers", "should_sample"]

FieldId = tuple[str, ...]

_BAGGAGE_PREFIX = "baggage."
_RATE_SCALE = 1 << 64  # W3C/OTel TraceIdRatioBased: the low 64 bits of the trace id against rate * 2**64
_PREFERENCE = {"agent": 0, "attributes": 1, "resource": 2, "input": 3}


def run_value(run: AgentRun, field: FieldId) -> Any:
    """The run's value for a selector field, None when absent (attributes fall back to `baggage.<key>`)."""
    kind = field[0]
    if kind == "agent":
        return run.agent_name
    if kind == "input":
        return run.input
    if kind == "resource":
        return run.resource.get(field[1])
    value = run.attributes.get(field[1])
    return run.attributes.get(_BAGGAGE_PREFIX + field[1]) if value is None else value


def matches(spec: MatchSpec, run: AgentRun) -> bool:
    """Every selector holds; a spec with no selector matches nothing."""
    found = False
    for field, cond in spec.selectors():
        if not cond.holds(run_value(run, field)):
            return False
        found = True
    return found


def should_sample(trace_id: str, sample_rate: float) -> bool:
    """Deterministic by trace id, so every replica (and every scorer at the same rate) agrees.

    A hex trace id is sampled as OTel's `TraceIdRatioBased` does: its low 64 bits below
    `rate * 2**64`. Any other id (empty for runs not from a trace) is hashed first.
    """
    if sample_rate >= 1.0:
        return True
    if sample_rate <= 0.0:
        return False
    try:
        low = int(trace_id[-16:], 16) if trace_id else None
    except ValueError:
        low = None
    if low is None:
        low = int.from_bytes(hashlib.blake2b(trace_id.encode(), digest_size=8).digest(), "big")
    return low < round(sample_rate * _RATE_SCALE)


def sampled_scorers(expectation: Expectation, trace_id: str) -> list[ExpectationScorer]:
    """The expectation's scorers that score this trace, after each one's `sample_rate`."""
    return [s for s in expectation.scorers if should_sample(trace_id, s.sample_rate)]


def _index_field(spec: MatchSpec) -> FieldId | None:
    exact = [field for field, cond in spec.selectors() if cond.exact_texts]
    return min(exact, key=lambda f: _PREFERENCE[f[0]]) if exact else None


class ExpectationIndex:
    """An immutable lookup structure over a set of expectations; `match` is safe from any thread."""

    __slots__ = ("_by_field", "_expectations", "_scan")

    def __init__(self, expectations: Iterable[Expectation] = ()) -> None:
        self._expectations = tuple(sorted(expectations, key=lambda e: e.name))
        by_field: dict[FieldId, dict[str, list[Expectation]]] = defaultdict(lambda: defaultdict(list))
        scan: list[Expectation] = []
        for exp in self._expectations:
            if not exp.enabled or exp.match.empty:
                continue
            field = _index_field(exp.match)
            if field is None:
                scan.append(exp)
                continue
            cond = dict(exp.match.selectors())[field]
            for text in cond.exact_texts:
                by_field[field][text].append(exp)
        self._by_field = {field: dict(buckets) for field, buckets in by_field.items()}
        self._scan = tuple(scan)

    @property
    def expectations(self) -> tuple[Expectation, ...]:
        """Every expectation the index was built from (disabled ones too), in name order."""
        return self._expectations

    def __len__(self) -> int:
        return len(self._expectations)

    def match(self, run: AgentRun) -> list[Expectation]:
        """Enabled expectations whose selectors all hold for the run, in name order."""
        found: dict[str, Expectation] = {}
        for field, buckets in self._by_field.items():
            value = run_value(run, field)
            if value is None:
                continue
            for text in {as_text(v) for v in value} if isinstance(value, list | tuple) else (as_text(value),):
                for exp in buckets.get(text, ()):
                    if exp.name not in found and matches(exp.match, run):
                        found[exp.name] = exp
        for exp in self._scan:
            if matches(exp.match, run):
                found[exp.name] = exp
        return [found[name] for name in sorted(found)]
