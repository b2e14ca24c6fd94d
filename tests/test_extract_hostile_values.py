"""Every convention reader, on every capture folder, with its attribute values replaced by hostile ones.

A reader meets each attribute in the shape its instrumentation writes; an attacker (or a new release) can send any
other. Whatever the values, extraction must end in bounded time, raise nothing, and count what it could not read:
a malformed span costs its own data, never its trace's or the batch's. The captures give every reader its own
keys, span names, scopes and tree; only the values change: deeply nested JSON text, JSON of the wrong shapes (the
keys the readers look for, holding the wrong types), the wrong scalar types, JSON `null` and JSON cut in half, in
place of every value that carries content: all at once, and one key at a time among the captured values (so that
what reads on past a value, the model's calls, their outcomes, the tool catalog, reads the hostile one too).
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from toolscore.collector.extract import ExtractStats, rebuild_runs
from toolscore.collector.sources import LogBatch, join_log_events, read_trace_file
from toolscore.collector.spans import SpanEvent, SpanRecord

TRACES = Path(__file__).parent / "testdata" / "traces"
FOLDERS = sorted(p.name for p in TRACES.iterdir() if p.is_dir())

DEEP = "[" * 20_000 + "]" * 20_000
WRONG_SHAPES = (
    '{"tool_calls": 5, "choices": {"message": 1}, "output": [1, "x", {"type": "function_call", "arguments": 7}],'
    ' "messages": {"role": "tool"}, "content": [1, {"type": "tool_call", "args": []}], "generations": [[3]],'
    ' "parts": "x", "role": ["assistant"], "type": 9, "data": [], "kwargs": 2, "id": {"a": 1}, "name": [],'
    ' "input": {"args": 1, "kwargs": [2]}, "tool_call_id": 4, "function": "f", "args": "x"}'
)
"""The keys the readers look for, each holding a type no instrumentation writes there."""
WRONG_ITEMS = (
    '{"messages": [1, "x", null, {"role": "tool", "tool_call_id": 3}], "input": [1, null], "output": [null, 2],'
    ' "tool_calls": [1, "x", {"function": 2}], "choices": [1, {"message": []}], "content": [null, 5], "parts": [1],'
    ' "generations": [1, [null]], "tools": [1, "x", {"function": 1}], "type": "function_call", "role": "assistant"}'
)
"""The same keys holding lists whose items are of the wrong types."""
SECONDS = 20.0
"""A bound far above what a folder takes (milliseconds): a reader that is quadratic in a value, or recurses on it,
goes past it."""


def _content(value: Any) -> bool:
    """A value that carries content (JSON text, or text longer than a name), not one that says what the span is
    (an operation or kind name, a scope's short value): those are kept, so that every reader still recognises its
    spans and reads the hostile content."""
    return isinstance(value, str) and (value[:1] in ("{", "[") or len(value) > 40)


def _replace(value: Any, with_: Callable[[Any], Any]) -> Any:
    if isinstance(value, (list, tuple)):
        return [with_(item) if _content(item) else item for item in value]
    return with_(value) if _content(value) else value


VARIANTS: dict[str, Callable[[Any], Any]] = {
    "deep_json": lambda v: DEEP,
    "wrong_shapes": lambda v: WRONG_SHAPES,
    "wrong_items": lambda v: WRONG_ITEMS,
    "wrong_list": lambda v: '[1, "x", null, {"role": 5, "type": []}]',
    "wrong_types": lambda v: 7,
    "json_null": lambda v: "null",
    "cut_json": lambda v: v[: len(v) // 2],
}


def _spans(folder: str) -> list[SpanRecord]:
    """Every capture of the folder, with the GenAI log events of the logs export beside each joined."""
    spans: list[SpanRecord] = []
    for path in sorted((TRACES / folder).glob("*.pb")):
        if path.name.endswith(".logs.pb"):
            continue
        logs = LogBatch()
        found = read_trace_file(path, logs=logs)
        beside = path.with_name(path.name.replace(".pb", ".logs.pb"))
        if beside.exists():
            read_trace_file(beside, logs=logs)
            join_log_events(found, logs.events)
        spans += found
    return spans


def _hostile(span: SpanRecord, with_: Callable[[Any], Any]) -> SpanRecord:
    """The span with every attribute value and event attribute value replaced (names, ids and tree kept)."""
    attributes = {key: _replace(value, with_) for key, value in span.attributes.items()}
    events = tuple(
        SpanEvent(e.name, e.time_ns, {key: _replace(value, with_) for key, value in e.attributes.items()})
        for e in span.events
    )
    return dataclasses.replace(span, attributes=attributes, events=events)


@pytest.mark.parametrize("variant", VARIANTS)
@pytest.mark.parametrize("folder", FOLDERS)
def test_hostile_values_in_every_captured_shape_are_read_without_raising(folder: str, variant: str) -> None:
    spans = _spans(folder)
    assert spans, f"{folder} holds no capture"
    hostile = [_hostile(span, VARIANTS[variant]) for span in spans]
    stats = ExtractStats()

    started = time.monotonic()
    runs = rebuild_runs(hostile, stats=stats)
    elapsed = time.monotonic() - started

    assert elapsed < SECONDS, f"{folder} ({variant}): extraction took {elapsed:.1f} s"
    for run in runs:  # each run is a valid, serialisable run, whatever it could read
        assert run.trace_id
        assert run.span_id
        run.model_dump_json()
    assert stats.runs == len(runs)


def _content_keys(spans: list[SpanRecord]) -> list[str]:
    keys = {key for span in spans for key, value in span.attributes.items() if _content(value)}
    keys |= {key for span in spans for e in span.events for key, value in e.attributes.items() if _content(value)}
    return sorted(keys)


def _one_key(span: SpanRecord, key: str, with_: Callable[[Any], Any]) -> SpanRecord:
    """The span with one attribute (and that attribute of its events) made hostile, the others as captured."""
    if key not in span.attributes and not any(key in e.attributes for e in span.events):
        return span
    attributes = {**span.attributes, key: _replace(span.attributes[key], with_)} if key in span.attributes else None
    events = tuple(
        SpanEvent(e.name, e.time_ns, {**e.attributes, key: _replace(e.attributes[key], with_)})
        if key in e.attributes
        else e
        for e in span.events
    )
    return dataclasses.replace(span, attributes=attributes or span.attributes, events=events)


@pytest.mark.parametrize("folder", FOLDERS)
def test_one_hostile_value_among_captured_ones_is_read_without_raising(folder: str) -> None:
    # One key at a time, the rest as captured: the readers of what comes after the hostile value (the model's calls,
    # their outcomes from the next request, the tool catalog) run on it too.
    spans = _spans(folder)
    started = time.monotonic()
    for key in _content_keys(spans):
        for variant in VARIANTS.values():
            for run in rebuild_runs([_one_key(span, key, variant) for span in spans]):
                run.model_dump_json()
    elapsed = time.monotonic() - started
    assert elapsed < SECONDS, f"{folder}: extraction took {elapsed:.1f} s"


def test_the_hostile_values_reach_the_readers() -> None:
    # The variants keep what makes a span a run, a tool or a model response: most folders still give runs.
    with_runs = sum(bool(rebuild_runs([_hostile(s, VARIANTS["wrong_shapes"]) for s in _spans(f)])) for f in FOLDERS)
    assert with_runs >= len(FOLDERS) * 3 // 4
