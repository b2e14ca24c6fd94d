"""A run span enriched by appending bytes parses as the same message as one enriched through protobuf."""

from __future__ import annotations

import random
from typing import Any

import pytest
from opentelemetry.proto.trace.v1.trace_pb2 import Span

from toolscore.collector.pipeline.sink import EventSpec, RunEnrichment
from toolscore.collector.serve._encode import encode_span, span_message
from toolscore.collector.serve._enrich_bytes import appended_entry
from toolscore.collector.serve._regroup import enrich_span


def run_span() -> Span:
    span = Span(trace_id=bytes(range(16)), span_id=bytes(range(8)), name="invoke_agent travel", kind=1)
    span.start_time_unix_nano, span.end_time_unix_nano = 1_700_000_000_000_000_000, 1_700_000_001_000_000_000
    for key, text in (("gen_ai.operation.name", "invoke_agent"), ("gen_ai.agent.name", "travel")):
        kv = span.attributes.add(key=key)
        kv.value.string_value = text
    span.events.add(name="exception", time_unix_nano=5).attributes.add(key="exception.type").value.string_value = "E"
    span.status.code = 2
    return span


def through_the_message(span: Span, enrichment: RunEnrichment) -> Span:
    copy = Span()
    copy.CopyFrom(span)
    enrich_span(copy, enrichment)
    return copy


def through_the_bytes(span: Span, enrichment: RunEnrichment) -> Span:
    entry = appended_entry(encode_span(span), enrichment)
    assert entry is not None
    return span_message(entry)


def score_event(value: Any, time_ns: int = 1_700_000_001_500_000_000) -> EventSpec:
    return EventSpec(
        "gen_ai.evaluation.result",
        time_ns,
        {
            "gen_ai.evaluation.name": "tool_selection",
            "gen_ai.evaluation.score.value": value,
            "gen_ai.evaluation.score.label": "pass",
            "gen_ai.evaluation.explanation": "expected `search_flights` was called " + "é" * 200,
            "toolscore.expectation.name": "travel",
            "toolscore.expectation.version": 3,
        },
    )


CASES = {
    "scores and events": RunEnrichment(
        {
            "toolscore.expectations": ["travel", "travel-strict"],
            "toolscore.tool_calls": ["search_flights", "get_weather"],
            "toolscore.evaluation.travel.tool_selection.score": 1.0,
            "toolscore.evaluation.travel.tool_selection.label": "pass",
            "toolscore.evaluation.travel.judge.error_type": "timeout",
            "toolscore.run.incomplete": True,
        },
        (score_event(1.0), score_event(0.25)),
    ),
    "no calls, no events": RunEnrichment({"toolscore.expectations": ["travel"], "toolscore.tool_calls": []}),
    "every kind of value": RunEnrichment(
        {
            "empty": "",
            "false": False,
            "zero": 0,
            "negative": -7,
            "int64 min": -(1 << 63),
            "int64 max": (1 << 63) - 1,
            "zero float": 0.0,
            "negative float": -2.5,
            "none": None,
            "tuple": ("a", 1, 2.0, True),
            "nones": [None, None],
            "nested": [["a"], []],
            "other": object.__new__(type("Named", (), {"__str__": lambda self: "named"})),
            "unicode ✓ key": "日本語 " * 40,
        },
        (EventSpec("empty", 0, {}),),
    ),
}


@pytest.mark.parametrize("enrichment", CASES.values(), ids=CASES.keys())
def test_appended_bytes_parse_as_the_enriched_message(enrichment: RunEnrichment) -> None:
    span = run_span()
    assert through_the_bytes(span, enrichment) == through_the_message(span, enrichment)


def test_recurring_entries_come_from_the_cache_unchanged() -> None:
    """1, 1.0 and True under one key are cached apart (equal as dict keys, written differently)."""
    span = run_span()
    rng = random.Random(5)
    for _ in range(200):
        value = rng.choice([1, 1.0, True, "pass", "fail", 0, 0.0, False, -1])
        enrichment = RunEnrichment({"toolscore.evaluation.travel.f1.score": value}, (score_event(value),))
        assert through_the_bytes(span, enrichment) == through_the_message(span, enrichment)


def test_a_span_holding_a_key_of_ours_is_left_to_the_message_path() -> None:
    span = run_span()
    span.attributes.add(key="toolscore.evaluation.travel.f1.label").value.string_value = "stale"
    assert appended_entry(encode_span(span), RunEnrichment({"toolscore.evaluation.travel.f1.label": "pass"})) is None


@pytest.mark.parametrize("value", [1 << 63, "\ud800"])
def test_a_value_protobuf_refuses_is_refused_by_both_paths(value: object) -> None:
    enrichment = RunEnrichment({"toolscore.x": value})
    with pytest.raises(ValueError, match=r"int64|surrogate"):
        appended_entry(encode_span(run_span()), enrichment)
    with pytest.raises(ValueError, match=r"out of range|surrogate|encod"):
        through_the_message(run_span(), enrichment)


def test_an_entry_that_is_not_one_spans_field_is_left_to_the_message_path() -> None:
    entry = encode_span(run_span())
    enrichment = RunEnrichment({"toolscore.expectations": ["travel"]})
    assert appended_entry(b"\x0a" + entry[1:], enrichment) is None  # another field
    assert appended_entry(entry + b"\x00", enrichment) is None  # bytes past its length
    assert appended_entry(b"", enrichment) is None
