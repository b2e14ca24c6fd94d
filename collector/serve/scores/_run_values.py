"""What the score store keeps of a run beyond its calls and scores: the values an expectation can select
it by, and the scorers its matched expectations sampled out of it.

The values are the run span's and its resource's scalar attributes (bounded: `_MAX_KEYS` each, texts up to
`_MAX_VALUE_CHARS`), so "make this run an expectation" can offer `match` selectors on them (`attributes`,
`resource`, `service`) as the registry's matcher reads them (`registry._matching.run_value`). They are the
run's attributes as extraction masked them (`privacy.mask_run`): the store keeps no value the masks hid.

A sampled-out scorer (`sample_rate` below 1, the trace id outside its share) gives no result, so without
a row of its own a run would look checked by fewer scorers than its expectation names, with nothing to say why.
"""

from __future__ import annotations

import math
from typing import Any

from toolscore.collector.registry import Expectation
from toolscore.collector.registry._sampling import should_sample
from toolscore.collector.serve.scores._calls_json import dumps
from toolscore.collector.utf8 import valid_utf8
from toolscore.scorers._model import AgentRun

__all__ = ["run_values_json", "sampled_out_rows"]

_MAX_KEYS = 32
"""Attributes kept per kind (span, resource); the rest are not offered as selectors."""
_MAX_KEY_CHARS = 128
_MAX_VALUE_CHARS = 256
"""A longer text is not kept: a selector on it would be unwieldy, and it is more likely content than a key."""


def _scalars(values: dict[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in values.items():
        if len(out) >= _MAX_KEYS:
            break
        if not isinstance(key, str) or len(key) > _MAX_KEY_CHARS:
            continue
        if isinstance(value, str):
            if len(value) <= _MAX_VALUE_CHARS:
                out[valid_utf8(key)] = valid_utf8(value)
        elif isinstance(value, bool | int) or (isinstance(value, float) and math.isfinite(value)):
            out[valid_utf8(key)] = value
    return out


def run_values_json(run: AgentRun) -> str | None:
    """`{"attributes": {...}, "resource": {...}}` of the run's scalar attributes; None when it has none."""
    kept = {"attributes": _scalars(run.attributes), "resource": _scalars(run.resource)}
    if not kept["attributes"] and not kept["resource"]:
        return None
    return dumps(kept)


def sampled_out_rows(expectation: Expectation, trace_id: str) -> tuple[tuple[Any, ...], ...]:
    """(expectation, version, scorer, sample_rate) of each of the expectation's scorers this trace is not scored by."""
    return tuple(
        (valid_utf8(expectation.name), expectation.version, valid_utf8(scorer.name), scorer.sample_rate)
        for scorer in expectation.scorers
        if not should_sample(trace_id, scorer.sample_rate)
    )
