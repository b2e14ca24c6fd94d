"""Match expectations: which expectations a run selects, and which of their scorers score it.

Sampling is by trace id (`should_sample`), so every replica of the collector, and the in-process
processor, pick the same runs. Scorers with an async `ascore` (the LLM judge) are set apart: they
wait on the network and are run off the worker thread, under the judge budget.
"""

from __future__ import annotations

import functools
import threading
from collections import OrderedDict
from dataclasses import dataclass, field
from typing import Protocol

from toolscore.collector.extract.privacy import PrivacyConfig, masker_for
from toolscore.collector.extract.privacy_rules import masked_scorer
from toolscore.collector.registry import Expectation, ExpectationScorer, Registry
from toolscore.collector.registry._matching import ExpectationIndex
from toolscore.collector.registry._sampling import sampled_scorers
from toolscore.scorers._model import AgentRun

__all__ = ["Matcher", "ScorePlan", "expectation_infos", "plan_scores", "registry_state"]


class Matcher(Protocol):
    """What the pipeline needs of a registry (`toolscore.collector.registry.Registry` is one)."""

    def match(self, run: AgentRun) -> list[Expectation]: ...


@dataclass(slots=True)
class ScorePlan:
    """The expectations a run matched, and its sampled scorers split by how they run."""

    expectations: list[Expectation] = field(default_factory=list)
    inline: list[tuple[Expectation, ExpectationScorer]] = field(default_factory=list)
    judged: list[tuple[Expectation, ExpectationScorer]] = field(default_factory=list)


def is_judge(scorer: ExpectationScorer) -> bool:
    return _has_ascore(type(scorer.scorer))


@functools.lru_cache(maxsize=256)
def _has_ascore(kind: type) -> bool:
    """Asked per scorer of every matched run: a miss on a pydantic model (or its class) goes through
    pydantic's `__getattr__` and costs 0.7-1.7 µs, a cache hit 0.1."""
    return callable(getattr(kind, "ascore", None))


def plan_scores(run: AgentRun, registry: Matcher, privacy: PrivacyConfig | None = None) -> ScorePlan:
    """Never raises: a registry that fails to match counts as no match (the error is the caller's to log).

    With `privacy` (the settings the run was masked with), each scorer's expected values are masked the same
    way (`privacy_rules.masked_scorer`), so equality rules compare markers with markers."""
    plan = ScorePlan(expectations=registry.match(run))
    masking = privacy is not None and privacy.active
    for expectation in plan.expectations:
        for sampled in sampled_scorers(expectation, run.trace_id):
            scorer = _MASKED.get(sampled, privacy) if masking else sampled  # type: ignore[arg-type]
            (plan.judged if is_judge(scorer) else plan.inline).append((expectation, scorer))
    return plan


class _MaskedScorers:
    """Each expectation scorer masked once per privacy setting; bounded, oldest first out, safe across threads.

    Keyed by the scorer object (an expectation's scorers live as long as its version is current), which the
    entry holds, so its id is not reused while the entry is there."""

    def __init__(self, size: int = 4096) -> None:
        self._size = size
        self._lock = threading.Lock()
        self._cache: OrderedDict[tuple[int, PrivacyConfig], tuple[ExpectationScorer, ExpectationScorer]] = OrderedDict()

    def get(self, scorer: ExpectationScorer, privacy: PrivacyConfig) -> ExpectationScorer:
        key = (id(scorer), privacy)
        with self._lock:
            found = self._cache.get(key)
        if found is not None and found[0] is scorer:
            return found[1]
        masked = scorer.model_copy(update={"scorer": masked_scorer(scorer.scorer, masker_for(privacy))})
        with self._lock:
            self._cache[key] = (scorer, masked)
            while len(self._cache) > self._size:
                self._cache.popitem(last=False)
        return masked


_MASKED = _MaskedScorers()


def expectation_infos(registry: Matcher) -> list[tuple[str, str | None]]:
    """(name, `severity` label) of each expectation the registry holds now, for the expectation info gauge.

    A `Registry` (through its lock-free `index` snapshot) or an `ExpectationIndex` can list what it holds;
    any other matcher only answers `match`, so it lists nothing and alert rules fall back to a default.
    """
    index = getattr(registry, "index", registry)
    if not isinstance(index, ExpectationIndex):
        return []
    return [(exp.name, exp.labels.get("severity")) for exp in index.expectations]


def registry_state(registry: Matcher) -> tuple[float, int] | None:
    """(seconds since the registry last read its store, stored expectations it cannot read); None for a
    matcher that is not a `Registry` (an index, a test double), which has no store to report on."""
    if not isinstance(registry, Registry):
        return None
    return registry.sync_age_s, len(registry.unreadable)
