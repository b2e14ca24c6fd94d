"""`toolscore runs` under the privacy options: a stored run shown as the privacy settings would have kept it.

The store holds what `toolscore serve` kept, masked by its own settings; a store written without them holds the
values, and the privacy options mask what is shown: the calls' arguments with the masker, and each masked
value's text in the explanations (which quote arguments) replaced by its marker.
"""

from __future__ import annotations

import dataclasses
import json
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from toolscore.collector.extract.privacy import Masker
    from toolscore.collector.serve.scores._query import StoredRun

__all__ = ["masked_run"]


def masked_run(run: StoredRun, masker: Masker) -> StoredRun:
    """A stored run as the privacy settings would have kept it: arguments masked, and each masked value's text
    replaced by its marker in the explanations (which quote arguments); under `names_only`, no explanation."""
    replaced: dict[str, str] = {}
    calls = []
    for call in run.calls:
        if "args" not in call:
            calls.append(call)
            continue
        args = call["args"]
        masked = masker.arguments(args) if not isinstance(args, str) else masker.text(args)
        _collect(args, masked, replaced)
        calls.append({**call, "args": masked})
    scores = tuple(
        dataclasses.replace(score, explanation=_replaced(score.explanation, replaced, masker)) for score in run.scores
    )
    return dataclasses.replace(run, calls=calls, scores=scores)


def _collect(raw: Any, masked: Any, out: dict[str, str]) -> None:
    """The text of each value `masked` masked in `raw`, with its marker."""
    if isinstance(raw, dict) and isinstance(masked, dict):
        for key, value in raw.items():
            _collect(value, masked.get(key), out)
    elif isinstance(raw, list) and isinstance(masked, list):
        for item, masked_item in zip(raw, masked, strict=False):
            _collect(item, masked_item, out)
    elif raw is not None and masked != raw and isinstance(masked, str):
        text = raw if isinstance(raw, str) else json.dumps(raw, sort_keys=True, separators=(",", ":"))
        if text:
            out[text] = masked


def _replaced(text: str, replaced: dict[str, str], masker: Masker) -> str:
    if masker.names_only:
        return "(not shown: privacy.content is names_only)" if text else text
    for raw in sorted(replaced, key=len, reverse=True):
        text = text.replace(raw, replaced[raw]).replace(json.dumps(raw)[1:-1], replaced[raw])
    return masker.text(text) or ""
