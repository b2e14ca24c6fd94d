"""A stored run turned into an expectation: the page's "make this run an expectation" and
`toolscore expectations from-run` both build it here, so the two write the same document.

The expectation selects runs like this one (`match`: its agent, and the attributes and the request chosen) and scores
them with one `trajectory` scorer whose `expected` calls are the run's calls, in the mode and under the
argument rule the user picks. A chosen attribute becomes the selector the registry's matcher reads it by
(`MatchSpec`): a run span attribute under `attributes` (the matcher also finds it copied from baggage),
else a resource attribute under `resource` (`service.name` under `service`), each `equals` the run's value.
Arguments the store cut (`score_store.max_args_chars`) are left out of the
expected call (and said so in the preview): a cut value would never match the whole one a run passes.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, Literal, get_args

import yaml

from toolscore.collector.registry import Expectation, parse_expectation
from toolscore.collector.serve.scores import StoredRun

__all__ = ["ARGS_MODES", "MODES", "FromRun", "default_name", "expectation_from_run", "match_attribute", "selectable"]

Mode = Literal["strict", "exact", "unordered", "subset", "superset", "flexible"]
ArgsRule = Literal["exact", "subset", "ignore"]
MODES: tuple[str, ...] = get_args(Mode)
"""The trajectory modes offered, the first the default (same calls, same order, nothing in between)."""
ARGS_MODES: tuple[str, ...] = get_args(ArgsRule)

_CUT_REQUEST_CHARS = 2_000
"""What the store keeps of a request (`_store._MAX_REQUEST_CHARS`): one that long and ending in `…` was cut."""
_NOT_NAME = re.compile(r"[^A-Za-z0-9_.-]+")


def default_name(run: StoredRun) -> str:
    """`from-run.<agent>.<first 8 of the trace id>`, in the characters an expectation name allows."""
    agent = _NOT_NAME.sub("-", run.agent or "run").strip("-.") or "run"
    return f"from-run.{agent[:60]}.{run.trace_id[:8]}"


@dataclass(frozen=True)
class FromRun:
    """The built expectation, its YAML (as `expectations apply` reads it), and what was left out."""

    expectation: Expectation
    yaml: str
    notes: tuple[str, ...]


def _expected(run: StoredRun) -> tuple[list[dict[str, Any]], list[str]]:
    expected: list[dict[str, Any]] = []
    notes: list[str] = []
    for index, call in enumerate(run.calls, 1):
        entry: dict[str, Any] = {"name": call.get("name") or ""}
        if call.get("args_truncated") or call.get("args_text"):
            notes.append(f"call {index} ({entry['name']}): its arguments were cut in the store and are not expected")
        elif "args" in call and call.get("args_captured") is not False:
            entry["args"] = call["args"]
        expected.append(entry)
    if run.calls_total > len(run.calls):
        notes.append(f"the store kept {len(run.calls)} of the run's {run.calls_total} calls (score_store.max_calls)")
    return expected, notes


def selectable(run: StoredRun) -> list[tuple[str, str, Any]]:
    """(where, key, value) of each attribute the run offers as a selector: its span's, then its resource's
    (a key on both is offered once, as the span's: the matcher reads the span's)."""
    out = [("attributes", key, value) for key, value in sorted(run.attributes.items())]
    out += [("resource", key, value) for key, value in sorted(run.resource.items()) if key not in run.attributes]
    return out


def match_attribute(run: StoredRun, key: str, match: dict[str, Any]) -> None:
    """Add to `match` the selector on the run's attribute `key` (see the module docstring); `ValueError`
    naming the keys it has when the run has no such attribute kept."""
    if key in run.attributes:
        match.setdefault("attributes", {})[key] = {"equals": run.attributes[key]}
    elif key == "service.name" and key in run.resource:
        match["service"] = {"equals": run.resource[key]}
    elif key in run.resource:
        match.setdefault("resource", {})[key] = {"equals": run.resource[key]}
    else:
        have = ", ".join(key for _, key, _ in selectable(run)) or "none kept"
        raise ValueError(f"the run has no attribute {key!r} to match on (it has: {have})")


def expectation_from_run(
    run: StoredRun,
    *,
    name: str | None = None,
    mode: str = "strict",
    args_mode: str = "subset",
    match_input: bool = True,
    match_attributes: tuple[str, ...] = (),
) -> FromRun:
    """The expectation for `run`; raises `InvalidExpectation` (via `parse_expectation`) or `ValueError`."""
    if mode not in MODES:
        raise ValueError(f"mode {mode!r}: expected one of {', '.join(MODES)}")
    if args_mode not in ARGS_MODES:
        raise ValueError(f"argument rule {args_mode!r}: expected one of {', '.join(ARGS_MODES)}")
    match: dict[str, Any] = {}
    if run.agent:
        match["agent"] = run.agent
    for key in match_attributes:
        match_attribute(run, key, match)
    expected, notes = _expected(run)
    if match_input and run.request:
        if len(run.request) >= _CUT_REQUEST_CHARS and run.request.endswith("…"):
            notes.append("the request was cut in the store: runs are not selected by it")
        else:
            match["input"] = {"equals": run.request}
    if not match:
        raise ValueError("the run has no agent name and no request to select runs like it by")
    document: dict[str, Any] = {
        "name": name or default_name(run),
        "labels": {"source": "from-run", "trace_id": run.trace_id, "span_id": run.span_id},
        "match": match,
        "scorers": [{"type": "trajectory", "mode": mode, "expected": expected, "args_match": {"mode": args_mode}}],
    }
    expectation = parse_expectation(document)
    header = "".join(f"# note: {note}\n" for note in notes)
    text = header + yaml.safe_dump({"expectations": [document]}, sort_keys=False, allow_unicode=True)
    return FromRun(expectation, text, tuple(notes))
