"""What `toolscore serve` makes of the demo runs (`deploy/expectations/demo.yaml`), and the checks of the run
spans it forwards: shared by the end-to-end tests, which all send the demo traces."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from google.protobuf import json_format
from opentelemetry.proto.trace.v1.trace_pb2 import Span
from opentelemetry.sdk.trace import ReadableSpan

__all__ = [
    "DEMO_EXPECTATIONS",
    "DEMO_VERDICTS",
    "EVENT",
    "SpanKey",
    "attrs",
    "check_run_span",
    "demo_verdicts",
    "key",
    "sdk_key",
]

DEMO_EXPECTATIONS = Path(__file__).parent.parent / "deploy" / "expectations" / "demo.yaml"
EVENT = "gen_ai.evaluation.result"

# What deploy/expectations/demo.yaml makes of each demo run (outer runs in DEMO_RUNS order, then the nested one).
DEMO_VERDICTS = [
    {"booking_trajectory": 1.0, "tool_selection": 1.0},
    {"booking_trajectory": 0.0, "tool_selection": 1.0},
    {"booking_trajectory": 0.0, "tool_selection": 0.0},
    {"trajectory": 1.0, "f1": 1.0},
    {"trajectory": 0.0, "f1": 0.667},
    {"tool_selection": 1.0},
]

SpanKey = tuple[str, str]


def key(span: Span) -> SpanKey:
    """(trace id, span id) of a protobuf span, in hex."""
    return span.trace_id.hex(), span.span_id.hex()


def sdk_key(span: ReadableSpan) -> SpanKey:
    """(trace id, span id) of an SDK span, in hex."""
    return f"{span.context.trace_id:032x}", f"{span.context.span_id:016x}"


def attrs(span: Span) -> dict[str, Any]:
    return {kv.key: json_format.MessageToDict(kv.value) for kv in span.attributes}


def demo_verdicts(trace_index: int, span: ReadableSpan) -> dict[str, float]:
    """The scores of the run `span` starts, in the demo trace at `trace_index` (nested runs are bookings)."""
    return DEMO_VERDICTS[trace_index % len(DEMO_VERDICTS)] if span.parent is None else DEMO_VERDICTS[0]


def check_run_span(got: Span, original: Span, verdicts: dict[str, float]) -> None:
    """The run span as sent, plus the score attributes and one `gen_ai.evaluation.result` event per score."""
    found = attrs(got)
    assert {kv.key for kv in original.attributes} <= set(found)
    (expectation,) = found["toolscore.expectations"]["arrayValue"]["values"]
    prefix = "toolscore.evaluation." + expectation["stringValue"].replace(".", "_").replace("-", "_")
    scores = {
        name.removeprefix(prefix + ".").removesuffix(".score"): value["doubleValue"]
        for name, value in found.items()
        if name.startswith(prefix) and name.endswith(".score")
    }
    assert scores == pytest.approx(verdicts, abs=1e-3)
    events = [e for e in got.events if e.name == EVENT]
    event_scores = {}
    for event in events:
        event_attrs = {kv.key: json_format.MessageToDict(kv.value) for kv in event.attributes}
        event_scores[event_attrs["gen_ai.evaluation.name"]["stringValue"]] = event_attrs[
            "gen_ai.evaluation.score.value"
        ]["doubleValue"]
        assert event_attrs["toolscore.expectation.name"] == expectation
    assert event_scores == pytest.approx(verdicts, abs=1e-3)
    stripped = Span()
    stripped.CopyFrom(got)
    del stripped.attributes[len(original.attributes) :]
    del stripped.events[len(original.events) :]
    assert stripped == original, "the run span keeps everything it was sent with"
