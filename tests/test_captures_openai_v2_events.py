"""The openai-v2 events-form captures (tests/testdata/traces/openai-v2-events: `<scenario>.pb` and its log records
in `<scenario>.logs.pb`, and the same as OTLP/JSON): with the log records joined, each run's inference spans
issue exactly the calls its truth lists, in order, with their ids and arguments. The spans alone carry none.

(The runs' calls themselves come once extraction counts calls that exist only in the model's output: these
runs have no tool spans. Until then this checks what that extraction will read.)
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from toolscore.collector.extract.conventions.genai import read_genai_issued
from toolscore.collector.sources import LogBatch, join_log_events, read_trace_file
from toolscore.collector.spans import SpanRecord

TESTDATA = Path(__file__).parent / "testdata"
TRACES, TRUTH = TESTDATA / "traces" / "openai-v2-events", TESTDATA / "truth" / "openai-v2-events"
SCENARIOS = sorted(path.name.removesuffix(".truth.json") for path in TRUTH.glob("*.truth.json"))


def _spans(traces: Path, logs: Path | None) -> list[SpanRecord]:
    batch = LogBatch()
    spans = read_trace_file(traces, logs=batch)
    if logs is not None:
        spans += read_trace_file(logs, logs=batch)
    assert join_log_events(spans, batch.events) == []  # every event found its span
    assert batch.refusals.total == 0
    return spans


def _issued_by_run(spans: list[SpanRecord]) -> dict[str, list[tuple[str | None, str | None, Any]]]:
    """Each run span's id → the calls its own inference spans issued (not a nested run's), in start order."""
    by_id = {span.span_id: span for span in spans}

    def run_of(span: SpanRecord) -> str | None:
        parent = by_id.get(span.parent_id or "")
        while parent is not None and parent.attributes.get("gen_ai.operation.name") != "invoke_agent":
            parent = by_id.get(parent.parent_id or "")
        return parent.span_id if parent is not None else None

    issued: dict[str, list[tuple[str | None, str | None, Any]]] = {}
    for span in sorted(spans, key=lambda s: s.start_ns):
        if span.attributes.get("gen_ai.operation.name") == "chat" and (run := run_of(span)) is not None:
            calls = read_genai_issued(span).calls
            issued.setdefault(run, []).extend((c.call_id, c.name, json.loads(c.args)) for c in calls)
    return issued


@pytest.mark.parametrize("scenario", SCENARIOS)
@pytest.mark.parametrize("suffix", [".pb", ".json"])
def test_the_log_records_give_each_runs_inference_spans_the_truths_calls(scenario: str, suffix: str) -> None:
    truth = json.loads((TRUTH / f"{scenario}.truth.json").read_text())
    expected = {
        run["agent_span_id"]: [(call["call_id"], call["name"], call["args"]) for call in run["calls"]]
        for run in truth["runs"]
    }
    traces, logs = TRACES / f"{scenario}{suffix}", TRACES / f"{scenario}.logs{suffix}"
    issued = _issued_by_run(_spans(traces, logs))
    assert {run: calls for run, calls in issued.items() if calls} == {run: c for run, c in expected.items() if c}
    alone = _issued_by_run(_spans(traces, None))
    assert not any(alone.values()), "the spans alone carry no calls (the events form)"
