"""Runs without a run span (LangGraph-style graphs): the span they are inferred at carries their scores.

The engine is driven directly with `SpanRecord` carriers. `invoke_workflow` is an OTel GenAI operation
that is neither a run nor a tool, so a run is inferred at the topmost such span above the calls.
"""

from __future__ import annotations

import dataclasses
import json
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from tests.pipeline_builders import (
    Recording,
    hand_driven,
    record,
    recording_engine,
    registry_with,
    run_attrs,
    tool_attrs,
    wait_until,
)
from toolscore.collector.extract import rebuild_runs
from toolscore.collector.pipeline import Engine, ListSink, PipelineConfig
from toolscore.collector.sources import read_trace_file
from toolscore.collector.spans import SpanRecord
from toolscore.scorers import AgentRun

ROOT = "9000000000000000"
GRAPH = "1000000000000000"
NODE = "1100000000000000"
WORKFLOW = {"gen_ai.operation.name": "invoke_workflow"}


def graph_trace(root: bool = True) -> list[SpanRecord]:
    """App root > graph "travel" > node > two tool calls, in the order spans end (children first)."""
    tools = [
        record(f"11000000000000{i + 1:02x}", NODE, f"execute_tool {name}", tool_attrs(name, f"c{i}"))
        for i, name in enumerate(["search_flights", "book_flight"])
    ]
    spans = [*tools, record(NODE, GRAPH, "agent", WORKFLOW), record(GRAPH, ROOT, "travel", WORKFLOW)]
    return [*spans, record(ROOT, None, "POST /chat", {"http.request.method": "POST"})] if root else spans


def offer(pipeline: Engine[SpanRecord], records: list[SpanRecord]) -> None:
    for item in records:
        assert pipeline.offer(item)


def every_span_once(sink: ListSink[SpanRecord], sent: list[SpanRecord]) -> None:
    out = Counter([r.span_id for r in sink.released] + [r.span_id for r, _ in sink.enriched])
    assert out == Counter(r.span_id for r in sent)


def test_the_topmost_recognised_span_carries_the_inferred_run_and_the_rest_goes_on_at_once() -> None:
    spans = graph_trace()
    with hand_driven(PipelineConfig(settle_ms=60_000, max_hold_ms=60_000)) as driven:
        sink, telemetry = driven.sink, driven.telemetry
        driven.offer(spans[:4])  # tools, node, graph: the node stops being a candidate when the graph arrives
        assert {r.span_id for r in sink.released} == {spans[0].span_id, spans[1].span_id, NODE}  # at 0 ms
        assert sink.enriched == []
        driven.at(1)
        driven.offer(spans[4:])
        assert driven.engine.flush(5.0)
        ((run_span, enrichment),) = sink.enriched
        assert run_span.span_id == GRAPH
        assert enrichment.attributes["toolscore.tool_calls"] == ["search_flights", "book_flight"]
        assert enrichment.attributes["toolscore.evaluation.travel.trajectory.label"] == "pass"
        assert "toolscore.run.incomplete" not in enrichment.attributes
        assert [agent for *_, agent, _ in telemetry.scores] == ["travel", "travel"]
        every_span_once(sink, spans)


def test_parents_arriving_first_hold_only_the_topmost_recognised_span() -> None:
    spans = list(reversed(graph_trace()))  # root, graph, node, tools: as a collector may receive them
    with hand_driven(PipelineConfig(settle_ms=30, max_hold_ms=60_000, trace_idle_timeout_s=60)) as driven:
        driven.offer(spans)
        driven.at(29)
        assert driven.sink.enriched == []  # held: the graph settles 30 ms after it came
        driven.at(30)
        assert [carrier.span_id for carrier, _ in driven.sink.enriched] == [GRAPH]
        assert driven.engine.flush(5.0)
        every_span_once(driven.sink, spans)


def test_a_trace_whose_root_never_comes_is_scored_on_the_candidate_and_flagged_incomplete() -> None:
    spans = graph_trace(root=False)
    with hand_driven(PipelineConfig(settle_ms=20, trace_idle_timeout_s=0.2, max_hold_ms=60_000)) as driven:
        driven.offer(spans)
        driven.at(199)
        assert driven.sink.enriched == []  # the candidate waits for its trace to finish: the root may come
        driven.at(200)  # the trace's idle timeout: it is finished without its root
        ((run_span, enrichment),) = driven.sink.enriched
        assert run_span.span_id == GRAPH
        assert enrichment.attributes["toolscore.run.incomplete"] is True
        every_span_once(driven.sink, spans)


def test_a_candidate_held_longer_than_max_hold_goes_on_and_its_run_is_still_scored_once() -> None:
    spans = graph_trace()
    config = PipelineConfig(settle_ms=100, max_hold_ms=100, trace_idle_timeout_s=60)
    with hand_driven(config) as driven:
        sink = driven.sink
        driven.offer(spans[:4])  # the root stays away: the graph would wait for it
        driven.at(99)
        assert GRAPH not in {r.span_id for r in sink.released}
        driven.at(100)
        assert GRAPH in {r.span_id for r in sink.released}  # let go at max_hold_ms, unscored
        assert sink.enriched == []
        driven.offer(spans[4:])
        assert driven.engine.flush(5.0)
        assert sink.enriched == []  # its span had gone on: the scores are in logs and metrics
        assert [agent for *_, agent, _ in driven.telemetry.scores] == ["travel", "travel"]
        every_span_once(sink, spans)


def test_a_run_inferred_at_an_unrecognised_root_is_selected_by_its_attributes() -> None:
    """The root keeps its attributes though no convention claims it: `match.attributes` selects that run."""
    root = record(ROOT, None, "handle_request", {"test_case.id": "book-001"})
    tools = [
        record(f"90000000000000{i + 1:02x}", ROOT, f"execute_tool {name}", tool_attrs(name, f"c{i}"))
        for i, name in enumerate(["search_flights", "book_flight"])
    ]
    by_test_case = {
        "name": "by-test-case",
        "match": {"attributes": {"test_case.id": "book-001"}},
        "scorers": [{"type": "tool_selection", "expected_tool": "book_flight"}],
    }
    with recording_engine(PipelineConfig(settle_ms=20), by_test_case) as (pipeline, sink, telemetry):
        offer(pipeline, [*tools, root])
        assert pipeline.flush(5.0)
        assert [(expectation, result.value) for result, expectation, *_ in telemetry.scores] == [("by-test-case", 1.0)]
        every_span_once(sink, [*tools, root])


def test_a_run_inferred_under_an_inferred_run_is_scored_once_at_its_enclosing_run_spans_settle() -> None:
    """Run span > tool > tool > tool, names all different: each tool with a tool right under it stands for a run
    inferred under the one above, the innermost two links below the run span. Both are scored when the run span
    settles, as `toolscore extract` gives them, though the trace has not finished (its root has not come), each
    with its scores on the span that stands for it; the finish scores neither again."""
    run, delegate, lookup, fetch = "1000000000000000", "1000000000000001", "1000000000000002", "1000000000000003"
    spans = [
        record(fetch, lookup, "execute_tool fetch", tool_attrs("fetch", "c3")),
        record(lookup, delegate, "execute_tool lookup", tool_attrs("lookup", "c2")),
        record(delegate, run, "execute_tool delegate", tool_attrs("delegate", "c1")),
        record(run, ROOT, "invoke_agent travel", run_attrs("travel")),
    ]
    root = record(ROOT, None, "POST /chat", {})
    every_agent = {
        "name": "every-agent",
        "match": {"agent": {"regex": "."}},
        "scorers": [{"type": "tool_selection", "expected_tool": "fetch"}],
    }
    scored: list[AgentRun] = []
    config = PipelineConfig(settle_ms=30, trace_idle_timeout_s=60, max_hold_ms=60_000)
    sink: ListSink[SpanRecord] = ListSink()
    with registry_with(every_agent) as registry:
        pipeline: Engine[SpanRecord] = Engine(
            registry, sink, lambda r: r, config, Recording(), on_scored=lambda r, *_: scored.append(r)
        )
        pipeline.start()
        try:
            offer(pipeline, spans)
            assert wait_until(lambda: len(scored) == 3)
            assert len(pipeline.store) == 1, "scored at the run span's settle: the trace is still pending"
            offer(pipeline, [root])
            assert pipeline.flush(5.0)
            assert len(pipeline.store) == 0
        finally:
            pipeline.shutdown(5.0)
    assert Counter(r.span_id for r in scored) == {run: 1, delegate: 1, lookup: 1}, "each run scored once"
    by_span = {r.span_id: r.model_dump() for r in scored}
    assert by_span == {r.span_id: r.model_dump() for r in rebuild_runs([*spans, root])}
    assert [call["span_id"] for call in by_span[lookup]["calls"]] == [fetch]
    assert by_span[lookup]["parent_span_id"] == delegate
    assert [span.span_id for span, _ in sink.enriched] == [run, delegate, lookup]
    every_span_once(sink, [*spans, root])


CREWAI = Path(__file__).parent / "testdata" / "traces" / "crewai"
CREWAI_TRUTH = Path(__file__).parent / "testdata" / "truth" / "crewai"


def crewai_delegation(name: str) -> tuple[list[SpanRecord], list[dict[str, Any]]]:
    """A CrewAI capture in the order its spans ended (as an exporter sends them), and its truth's runs: the
    coordinator's (its AGENT span) and the coworker's, whose run span is the `Delegate work to coworker` tool
    span (no AGENT span of its own)."""
    spans = sorted(read_trace_file(CREWAI / f"{name}.pb"), key=lambda s: s.end_ns)
    runs: list[dict[str, Any]] = json.loads((CREWAI_TRUTH / f"{name}.truth.json").read_text())["runs"]
    return spans, runs


@pytest.mark.parametrize("capture", ["f_agent_as_tool", "f_hierarchical"])
def test_a_run_inferred_at_a_tool_span_gets_its_scores_on_that_span(capture: str) -> None:
    spans, runs = crewai_delegation(capture)
    by_id = {s.span_id: s for s in spans}
    (coworker,) = [run for run in runs if by_id[run["agent_span_id"]].name == "Delegate work to coworker.run"]
    expectations = [
        {
            "name": f"script-{index}",
            "match": {"agent": run["agent_name"]},
            "scorers": [{"type": "trajectory", "expected": [{"name": call["name"]} for call in run["calls"]]}],
        }
        for index, run in enumerate(runs)
    ]
    config = PipelineConfig(settle_ms=30, max_hold_ms=60_000)
    with recording_engine(config, *expectations) as (pipeline, sink, telemetry):
        offer(pipeline, spans)
        assert pipeline.flush(5.0)
        enriched = {span.span_id: enrichment.attributes for span, enrichment in sink.enriched}
        assert set(enriched) == {run["agent_span_id"] for run in runs}, "every run's scores are on its span"
        for index, run in enumerate(runs):
            on_span = enriched[run["agent_span_id"]]
            assert on_span["toolscore.tool_calls"] == [call["name"] for call in run["calls"]]
            labels = {k: v for k, v in on_span.items() if str(k).endswith(".trajectory.label")}
            assert labels == {f"toolscore.evaluation.script_{index}.trajectory.label": "pass"}
        assert Counter(agent for *_, agent, _ in telemetry.scores)[coworker["agent_name"]] == 1
        every_span_once(sink, spans)


def test_a_tool_span_over_a_tool_span_is_one_call_and_goes_on_unchanged_at_its_runs_settle() -> None:
    """A tool span with a tool span right under it and nothing else is one call in two layers (a decorator over
    the framework's tool): held as it may stand for a run, it goes on unchanged when its run settles."""
    outer, inner = "2200000000000001", "2200000000000002"
    spans = [
        record(inner, outer, "execute_tool search_flights", tool_attrs("search_flights", "c0")),
        record(outer, GRAPH, "execute_tool search_flights", tool_attrs("search_flights", "c0")),
        record("2200000000000003", GRAPH, "execute_tool book_flight", tool_attrs("book_flight", "c1")),
        record(GRAPH, None, "invoke_agent travel", run_attrs()),
    ]
    with recording_engine(PipelineConfig(settle_ms=30, max_hold_ms=60_000)) as (pipeline, sink, _):
        offer(pipeline, spans)
        assert wait_until(lambda: len(sink.enriched) == 1)
        ((run_span, enrichment),) = sink.enriched
        assert run_span.span_id == GRAPH
        assert enrichment.attributes["toolscore.tool_calls"] == ["search_flights", "book_flight"]
        assert wait_until(lambda: outer in {r.span_id for r in sink.released})
        assert pipeline.flush(5.0)
        every_span_once(sink, spans)


LLAMAINDEX = Path(__file__).parent / "testdata" / "traces" / "llamaindex-openllmetry"


def test_a_root_that_ends_before_its_work_is_scored_whole_when_its_trace_goes_idle() -> None:
    """OpenLLMetry ends LlamaIndex's `Workflow.run` span (the root `FunctionAgent.workflow`, where the run is
    inferred) when `run` returns its handler: the model and tool steps end after it. Sent as an exporter sends
    them, the root's batch first and the rest 2 s later (past `settle_ms`), the run waits for its trace to go
    idle and is scored with its call, not flagged; taken at the root's settle it would have had none."""
    spans = sorted(read_trace_file(LLAMAINDEX / "a_single_tool.pb"), key=lambda s: s.end_ns)
    (root,) = [s for s in spans if s.parent_id is None]
    first, rest = [s for s in spans if s.end_ns <= root.end_ns], [s for s in spans if s.end_ns > root.end_ns]
    assert [s.attributes.get("tool.name") for s in rest if "tool.name" in s.attributes] == ["get_weather"]
    expectation = {
        "name": "weather",
        "match": {"agent": "weather_agent"},
        "scorers": [{"type": "trajectory", "expected": [{"name": "get_weather"}]}],
    }
    config = PipelineConfig(settle_ms=250, trace_idle_timeout_s=5, max_hold_ms=60_000)
    with hand_driven(config, expectation) as driven:
        driven.offer(first)
        driven.at(2_000)
        assert driven.telemetry.scores == [], "the root's arrival, settled, is not its trace's end"
        assert root.span_id not in {r.span_id for r in driven.sink.released}, "held: its run is inferred at it"
        driven.offer(rest)
        driven.at(6_999)
        assert driven.sink.enriched == []
        driven.at(7_000)  # idle: 5 s after the last span
        ((run_span, enrichment),) = driven.sink.enriched
        assert run_span.span_id == root.span_id
        assert enrichment.attributes["toolscore.tool_calls"] == ["get_weather"]
        assert enrichment.attributes["toolscore.evaluation.weather.trajectory.label"] == "pass"
        assert "toolscore.run.incomplete" not in enrichment.attributes
        every_span_once(driven.sink, spans)


def test_only_a_root_its_convention_says_ends_early_waits_for_idle() -> None:
    """The same trace with the root's scope renamed (no convention's LlamaIndex root): the root's arrival,
    settled, ends the trace, as for any other root (so the run is scored from the spans come by then)."""
    spans = sorted(read_trace_file(LLAMAINDEX / "a_single_tool.pb"), key=lambda s: s.end_ns)
    (root,) = [s for s in spans if s.parent_id is None]
    spans = [dataclasses.replace(s, scope="app") if s is root else s for s in spans]
    first = [s for s in spans if s.end_ns <= root.end_ns]
    with hand_driven(PipelineConfig(settle_ms=250, trace_idle_timeout_s=5, max_hold_ms=60_000)) as driven:
        driven.offer(first)
        driven.at(250)
        assert driven.engine.store.traces.get(root.trace_id) is None, "finished at its root's settle"
