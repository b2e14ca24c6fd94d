"""The pydantic-ai captures (tests/testdata/traces/pydantic-ai*: releases 0.8, 1.x and 2.x, data formats 1, 2, 5 and 6,
events as attributes or log records, content included or not, OpenInference's span processor over them) read from
the model's output alone.

`test_extract_captures` holds every capture to its truth, where pydantic-ai's tool spans carry each call. A call
pydantic-ai does not run has no tool span (calls it skips once an output tool ends the run, say); it is read from
the model span, whose form differs by data format. Here every tool span without a child is left out, so each call
must come from the model's output, as the truth lists it: same id, name and arguments, or with
`include_content=False` its arguments not captured, never `{}`.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from toolscore.collector.extract import rebuild_runs
from toolscore.collector.sources import LogBatch, join_log_events, read_trace_file
from toolscore.collector.spans import SpanRecord

TESTDATA = Path(__file__).parent / "testdata"
TRUTHS = sorted((TESTDATA / "truth").glob("pydantic-ai*/*.truth.json"))
TOOL_SPANS = ("execute_tool ", "running tool")


def _spans(truth_path: Path, with_logs: bool = True) -> list[SpanRecord]:
    traces = TESTDATA / "traces" / truth_path.parent.name
    scenario = truth_path.name.removesuffix(".truth.json")
    batch = LogBatch()
    spans = read_trace_file(traces / f"{scenario}.pb", logs=batch)
    if with_logs and (traces / f"{scenario}.logs.pb").exists():
        read_trace_file(traces / f"{scenario}.logs.pb", logs=batch)
        assert join_log_events(spans, batch.events) == []
    return spans


def _without_leaf_tool_spans(spans: list[SpanRecord]) -> tuple[list[SpanRecord], set[str]]:
    """The spans less the tool spans no span is under (an agent-as-tool's span holds its sub-agent's run: kept),
    and the call ids those spans carried."""
    parents = {span.parent_id for span in spans}
    dropped = [s for s in spans if s.name.startswith(TOOL_SPANS) and s.span_id not in parents]
    ids = {str(s.attributes.get("gen_ai.tool.call.id")) for s in dropped}
    return [s for s in spans if s not in dropped], ids


def _case_id(path: Path) -> str:
    return f"{path.parent.name}/{path.name.removesuffix('.truth.json')}"


def test_every_pydantic_ai_form_is_here() -> None:
    assert {p.parent.name for p in TRUTHS} >= {
        "pydantic-ai",
        "pydantic-ai-0x",
        "pydantic-ai-v2",
        "pydantic-ai-v6",
        "pydantic-ai-logs",
        "pydantic-ai-nocontent",
        "pydantic-ai-v2-nocontent",
        "pydantic-ai-openinference",
    }


@pytest.mark.parametrize("truth_path", TRUTHS, ids=_case_id)
def test_calls_without_tool_spans_come_from_the_model_output_as_the_truth_lists_them(truth_path: Path) -> None:
    truth = json.loads(truth_path.read_text())
    spans, dropped = _without_leaf_tool_spans(_spans(truth_path))

    runs = {run.span_id: run for run in rebuild_runs(spans)}

    for expected in truth["runs"]:
        calls = runs[expected["agent_span_id"]].calls
        want: list[tuple[Any, ...]] = [
            (
                c["call_id"],
                c["name"],
                c["args"],
                c.get("args_captured", True),
                c["call_id"] in dropped or "model_only" in c,
            )
            for c in expected["calls"]
        ]
        got = [(c.call_id, c.name, c.args, c.args_state != "not_captured", c.model_only) for c in calls]
        assert got == want
    assert dropped or all(not run["calls"] for run in truth["runs"])


@pytest.mark.parametrize("folder", ["pydantic-ai-v2", "pydantic-ai-v2-nocontent", "pydantic-ai-logs", "pydantic-ai-0x"])
def test_a_call_pydantic_ai_skipped_is_a_model_only_call_flagged_without_content(folder: str) -> None:
    # k_output_ends_run: the model calls the output tool and get_weather at once; 0.x and 1.x end the run on the
    # output tool and skip get_weather (no tool span). It counts, from the model's output, not captured without
    # content; the output tool is no call.
    (run,) = rebuild_runs(_spans(TESTDATA / "truth" / folder / "k_output_ends_run.truth.json"))

    calls = [(c.call_id, c.args, c.args_state, c.model_only) for c in run.calls]

    if folder.endswith("nocontent"):
        assert calls == [("call_k1", None, "not_captured", False), ("call_k2", None, "not_captured", True)]
    else:
        assert calls == [("call_k1", {"city": "Paris"}, "value", False), ("call_k2", {"city": "Rome"}, "value", True)]


@pytest.mark.parametrize("truth_path", [p for p in TRUTHS if p.parent.name == "pydantic-ai-logs"], ids=_case_id)
def test_logs_mode_model_output_is_only_in_the_log_records(truth_path: Path) -> None:
    # event_mode='logs': the chat spans carry no events attribute; without the log records no call is found.
    spans, dropped = _without_leaf_tool_spans(_spans(truth_path, with_logs=False))

    found = {c.call_id for run in rebuild_runs(spans) for c in run.calls}

    assert not found & dropped
