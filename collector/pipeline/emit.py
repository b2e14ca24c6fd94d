"""Emit: a scored run's results as run-span attributes, `gen_ai.evaluation.result` events and telemetry.

Attribute names are built from expectation and scorer names reduced to `[a-z0-9_]`, so that any
backend can query them (`toolscore.evaluation.checkout.tool_selection.score`). Different names can reduce
to one key (`travel.book-flight` and `travel.book_flight`); those pairs' keys get a suffix hashed from the
names as written (`evaluation_prefixes`), so that one result never overwrites another's, and so that runs
matching the same expectations get the same keys in every process, whatever order their results arrive in.
Each score becomes one OTel GenAI `gen_ai.evaluation.result` event on the run span (when `emit_span_events`)
and, through the telemetry, one log record parented to the run span, with the same attributes. A run whose
agent version is known (`agent_version`) carries it as `toolscore.agent.version` on its span and on each of
those events and records, so a score read anywhere names the release that earned it. Their text is
valid UTF-8 without a check here: the lone surrogates that no exporter takes only come from decoded
JSON, and `decode_json` replaces them.
"""

from __future__ import annotations

import functools
import hashlib
import re
from collections.abc import Iterable
from dataclasses import dataclass, field

from toolscore.collector.pipeline.sink import EventSpec, RunEnrichment
from toolscore.collector.registry import Expectation
from toolscore.scorers._model import AgentRun, Score, ScoreResult

__all__ = [
    "AGENT_VERSION",
    "EVENT_NAME",
    "RunScores",
    "attribute_key",
    "build_enrichment",
    "evaluation_prefixes",
    "event_attributes",
]

EVENT_NAME = "gen_ai.evaluation.result"
"""The OTel GenAI semantic-convention event for one evaluation."""

AGENT_VERSION = "toolscore.agent.version"
"""The run's agent version, on its span and score events as on the per-version metrics."""

_UNSAFE = re.compile(r"[^a-z0-9_]+")
_PREFIX = "toolscore.evaluation."
_SUFFIX_BYTES = 3
"""Six hex characters: a suffix tells apart the few pairs that share one key, not every pair there is."""


@functools.lru_cache(maxsize=1024)  # called per result of every scored run, with a handful of distinct names
def attribute_key(name: str) -> str:
    """`Checkout-Canary.v2` → `checkout_canary_v2`: lower case, every other run of characters one `_`."""
    return _UNSAFE.sub("_", name.lower()).strip("_") or "_"


@dataclass(slots=True)
class RunScores:
    """One run's results so far; the judge's arrive later than the inline scorers'."""

    run: AgentRun
    expectations: list[Expectation]
    results: list[tuple[Expectation, ScoreResult]] = field(default_factory=list)
    agent_version: str | None = None
    """The run's agent version (`agent_version`), read once when it is scored; None when it has none."""


def event_attributes(
    expectation: Expectation, result: ScoreResult, agent_version: str | None = None
) -> dict[str, object]:
    """The `gen_ai.evaluation.result` attributes for one result (a failure has `error.type`, no value)."""
    attributes: dict[str, object] = {"gen_ai.evaluation.name": result.name}
    if isinstance(result, Score):
        attributes["gen_ai.evaluation.score.value"] = result.value
        attributes["gen_ai.evaluation.score.label"] = result.label
        attributes["gen_ai.evaluation.explanation"] = result.explanation
    else:
        attributes["error.type"] = result.error_type
        attributes["gen_ai.evaluation.explanation"] = result.message
    attributes["toolscore.expectation.name"] = expectation.name
    attributes["toolscore.expectation.version"] = expectation.version
    if agent_version:
        attributes[AGENT_VERSION] = agent_version
    return attributes


def evaluation_prefixes(pairs: Iterable[tuple[str, str]]) -> dict[tuple[str, str], str]:
    """Each (expectation, scorer) name pair's attribute prefix, `toolscore.evaluation.<expectation>.<scorer>`.

    Pairs whose reduced names are one key each get `_<hex>` after the scorer part, six hex characters of
    the BLAKE2b hash of the names as written (not `hash()`, which differs per process); the others keep the
    plain key, so that adding a colliding name later changes only the keys of the names it collides with.
    """
    by_key: dict[str, list[tuple[str, str]]] = {}
    for pair in dict.fromkeys(pairs):
        by_key.setdefault(f"{attribute_key(pair[0])}.{attribute_key(pair[1])}", []).append(pair)
    prefixes: dict[tuple[str, str], str] = {}
    for key, group in by_key.items():
        for pair in group:
            prefixes[pair] = f"{_PREFIX}{key}_{_suffix(pair)}" if len(group) > 1 else f"{_PREFIX}{key}"
    return prefixes


@functools.lru_cache(maxsize=1024)  # per scored run; the matched expectations' names repeat from run to run
def _prefixes(pairs: tuple[tuple[str, str], ...]) -> dict[tuple[str, str], str]:
    return evaluation_prefixes(pairs)


def _suffix(pair: tuple[str, str]) -> str:
    # An expectation name has no NUL (`NAME_PATTERN`), so the joined text tells every pair apart.
    text = f"{pair[0]}\0{pair[1]}".encode("utf-8", "surrogatepass")
    return hashlib.blake2b(text, digest_size=_SUFFIX_BYTES).hexdigest()


def build_enrichment(scores: RunScores, event_time_ns: int, with_events: bool) -> RunEnrichment:
    """What the run span gains: the matched names, the call names, and per result its score and label.

    Keys collide or not by every scorer of the matched expectations, not by the results present: a scorer
    sampled out of this run, or a judge whose result comes after the span has gone on, still claims its key.
    """
    attributes: dict[str, object] = {
        "toolscore.expectations": [exp.name for exp in scores.expectations],
        "toolscore.tool_calls": [call.name for call in scores.run.calls],
    }
    pairs = [(exp.name, name) for exp in scores.expectations for name in exp.scorer_names]
    prefixes = _prefixes((*pairs, *((exp.name, result.name) for exp, result in scores.results)))
    events: list[EventSpec] = []
    version = scores.agent_version
    for expectation, result in scores.results:
        prefix = prefixes[(expectation.name, result.name)]
        if isinstance(result, Score):
            attributes[f"{prefix}.score"] = float(result.value)
            attributes[f"{prefix}.label"] = result.label
        else:
            attributes[f"{prefix}.error_type"] = result.error_type
        if with_events:
            events.append(EventSpec(EVENT_NAME, event_time_ns, event_attributes(expectation, result, version)))
    if version:
        attributes[AGENT_VERSION] = version
    if scores.run.incomplete:
        attributes["toolscore.run.incomplete"] = True
    return RunEnrichment(attributes, tuple(events))
