"""Emit: a scored run's results as run-span attributes, `gen_ai.evaluation.result` events and telemetry.

Attribute names are built from expectation and scorer names reduced to `[a-z0-9_]`, so that any
backend can query them (`toolscore.evaluation.checkout.tool_selection.score`). Each score becomes one
OTel GenAI `gen_ai.evaluation.result` event on the run span (when `emit_span_events`) and, through
the telemetry, one log record parented to the run span, with the same attributes. Their text is
valid UTF-8 without a check here: the lone surrogates that no exporter takes only come from decoded
JSON, and `decode_json` replaces them.
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass, field

from toolscore.collector.pipeline.sink import EventSpec, RunEnrichment
from toolscore.collector.registry import Expectation
from toolscore.scorers.model import AgentRun, Score, ScoreResult

__all__ = ["EVENT_NAME", "RunScores", "attribute_key", "build_enrichment", "event_attributes"]

EVENT_NAME = "gen_ai.evaluation.result"
"""The OTel GenAI semantic-convention event for one evaluation."""

_UNSAFE = re.compile(r"[^a-z0-9_]+")


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


def event_attributes(expectation: Expectation, result: ScoreResult) -> dict[str, object]:
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
    return attributes


def build_enrichment(scores: RunScores, event_time_ns: int, with_events: bool) -> RunEnrichment:
    """What the run span gains: the matched names, the call names, and per result its score and label."""
    attributes: dict[str, object] = {
        "toolscore.expectations": [exp.name for exp in scores.expectations],
        "toolscore.tool_calls": [call.name for call in scores.run.calls],
    }
    events: list[EventSpec] = []
    for expectation, result in scores.results:
        prefix = f"toolscore.evaluation.{attribute_key(expectation.name)}.{attribute_key(result.name)}"
        if isinstance(result, Score):
            attributes[f"{prefix}.score"] = float(result.value)
            attributes[f"{prefix}.label"] = result.label
        else:
            attributes[f"{prefix}.error_type"] = result.error_type
        if with_events:
            events.append(EventSpec(EVENT_NAME, event_time_ns, event_attributes(expectation, result)))
    if scores.run.incomplete:
        attributes["toolscore.run.incomplete"] = True
    return RunEnrichment(attributes, tuple(events))
