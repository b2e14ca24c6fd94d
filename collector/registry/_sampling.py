"""Which matching runs a scorer scores: a share chosen by trace id, the same on every replica."""

from __future__ import annotations

import hashlib

from toolscore.collector.registry._model import Expectation, ExpectationScorer

__all__ = ["sampled_scorers", "should_sample"]

_RATE_SCALE = 1 << 64  # W3C/OTel TraceIdRatioBased: the low 64 bits of the trace id against rate * 2**64


def should_sample(trace_id: str, sample_rate: float) -> bool:
    """Deterministic by trace id, so every replica (and every scorer at the same rate) agrees.

    A hex trace id is sampled as OTel's `TraceIdRatioBased` does: its low 64 bits below
    `rate * 2**64`. Any other id (empty for runs not from a trace) is hashed first. A lower rate
    samples a subset of a higher rate's traces, so the judged runs are also the checked ones.
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
