"""How often a pending trace is rebuilt, and that a rebuild reused is what rebuilding again would give.

A trace is rebuilt at each of its runs' settles and when it finishes (`runs`), unless no span has
changed it since its last rebuild, which is then reused (`rebuilt`). When its root is a run already
scored with everything under it, the finish has nothing left to score and rebuilds nothing. So every
tool span is read once for the benchmarks' traces (`bench_extract`'s, made with the real SDK: an
`invoke_agent` root, `chat` spans and 3-8 `execute_tool` spans, ending children first) and for traces
of k of those runs whose spans come together (under an unrecognised root, as a chat session's turns,
or as sub-agents under the tools of a root run), in process and in `toolscore serve`. A session whose
runs settle one at a time (each turn scored before the next comes) has each settle rebuild the spans under
its run span only, and its finish the whole trace: every tool span read twice, whatever its runs. The engine's
`stats` (the `ExtractStats` every rebuild adds to) count the rebuilt traces and the calls built, so the
rebuilds are counted without looking inside the engine.
"""

from __future__ import annotations

import json
import random
from collections.abc import Callable
from typing import Any

import pytest
from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import Tracer, use_span

from tests.bench.bench_extract import EPOCH_NS, _tool
from tests.bench.bench_extract import _run as bench_run
from tests.bench.bench_inprocess import EXPECTATION, RESOURCE
from tests.bench.workload import make_args
from tests.pipeline_builders import (
    TRAVEL,
    NotingRegistry,
    Recording,
    genai_run,
    hand_driven,
    record,
    registry_with,
    tool_attrs,
    wait_until,
)
from toolscore.collector.extract import rebuild_runs
from toolscore.collector.pipeline import Engine, PipelineConfig, ToolscoreSpanProcessor
from toolscore.collector.serve._pipeline import CollectorPipeline
from toolscore.collector.serve.receivers._ingest import IngestResult
from toolscore.collector.sources import spans_from_readable
from toolscore.collector.sources.otlp_proto import spans_from_proto_bytes
from toolscore.collector.spans import SpanRecord
from toolscore.scorers import AgentRun

TRACES = 12
CONFIG = PipelineConfig(settle_ms=20)
SCOPE = ("opentelemetry.instrumentation.openai_agents", "0.9.0")


def _play(tracer: Tracer, seed: int = 3) -> None:
    rng = random.Random(seed)
    for i in range(TRACES):
        bench_run(tracer, rng, EPOCH_NS + i * 10**9)


def _tool_spans(spans: list[ReadableSpan]) -> int:
    return sum(span.name.startswith("execute_tool") for span in spans)


def _settled(engine: Engine[Any], telemetry: Recording) -> bool:
    """Every run scored at its settle and every trace finished, before any flush."""
    return sum(telemetry.outcomes.values()) == TRACES and len(engine.store) == 0


def test_an_agent_run_at_its_trace_root_is_rebuilt_once_in_process() -> None:
    exporter = InMemorySpanExporter()
    telemetry = Recording()
    provider = TracerProvider(resource=RESOURCE)
    with registry_with(EXPECTATION) as registry:
        processor = ToolscoreSpanProcessor(registry, SimpleSpanProcessor(exporter), CONFIG, telemetry)
        provider.add_span_processor(processor)
        try:
            _play(provider.get_tracer(*SCOPE))
            assert wait_until(lambda: _settled(processor.engine, telemetry))
            stats = processor.engine.stats
            spans = list(exporter.get_finished_spans())
        finally:
            provider.shutdown()
    assert (stats.traces, stats.runs) == (TRACES, TRACES), "one rebuild per trace, none at its finish"
    assert stats.calls == _tool_spans(spans), "each tool span is read into a call once"
    live = {
        span.context.span_id: (span.attributes or {})["toolscore.tool_calls"]
        for span in spans
        if span.context is not None and span.name.startswith("invoke_agent")
    }
    offline = {
        int(run.span_id or "", 16): tuple(call.name for call in run.calls)
        for run in rebuild_runs(spans_from_readable(spans))
    }
    assert live == offline


def test_an_agent_run_at_its_trace_root_is_rebuilt_once_in_serve() -> None:
    exporter = InMemorySpanExporter()
    provider = TracerProvider(resource=RESOURCE)
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    _play(provider.get_tracer(*SCOPE))
    provider.shutdown()
    spans = list(exporter.get_finished_spans())
    telemetry = Recording()
    with registry_with(EXPECTATION) as registry:
        pipeline = CollectorPipeline(registry, None, CONFIG, telemetry)
        try:
            data = encode_spans(spans).SerializeToString()
            assert pipeline.accept(ExportTraceServiceRequest.FromString(data), data) == IngestResult()
            assert wait_until(lambda: _settled(pipeline.engine, telemetry))
            stats = pipeline.engine.stats
        finally:
            assert pipeline.shutdown(5)
    assert (stats.traces, stats.runs) == (TRACES, TRACES), "one rebuild per trace, none at its finish"
    assert stats.calls == _tool_spans(spans), "each tool span is read into a call once"
    assert len(telemetry.scores) == 2 * TRACES, "both of the expectation's scorers scored every run"


# -- traces of several runs ------------------------------------------------------------------------

MULTI = PipelineConfig(settle_ms=2000)
"""Long beside the time a trace takes to play (a few milliseconds; on a loaded machine, a nested trace of 8
runs took more than 250 ms), so that every span of a trace has come before its first run settles, as when its
runs are sent in one export batch."""


def _session(tracer: Tracer, rng: random.Random, t: int, k: int) -> None:
    """k benchmark runs, one after the other, under a root no convention recognises (a chat session)."""
    root = tracer.start_span("session", start_time=t)
    with use_span(root, end_on_exit=False):
        for i in range(k):
            bench_run(tracer, rng, t + i * 100_000_000)
    root.end(end_time=t + k * 100_000_000 + 1)


def _nested(tracer: Tracer, rng: random.Random, t: int, k: int) -> None:
    """A root run whose k - 1 `delegate` tools each run a benchmark run (a sub-agent), and one tool of its own."""
    root = tracer.start_span("invoke_agent travel-agent", start_time=t)
    root.set_attributes({"gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": "travel-agent"})
    with use_span(root, end_on_exit=False):
        for i in range(k - 1):
            tool = tracer.start_span("execute_tool delegate", start_time=t + i)
            tool.set_attributes({**_delegate(i), "gen_ai.tool.call.arguments": json.dumps(make_args(rng))})
            with use_span(tool, end_on_exit=False):
                bench_run(tracer, rng, t + i * 100_000_000)
            tool.end(end_time=t + (i + 1) * 100_000_000)
        _tool(tracer, rng, t + 1, (f"own_{k}", "get_weather", json.dumps(make_args(rng))), fail=False)
    root.end(end_time=t + k * 100_000_000 + 1)


def _delegate(i: int) -> dict[str, Any]:
    return {"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "delegate", "gen_ai.tool.call.id": f"d{i}"}


SHAPES: dict[str, Callable[[Tracer, random.Random, int, int], None]] = {"session": _session, "nested": _nested}


def _play_shape(tracer: Tracer, shape: str, k: int) -> None:
    rng = random.Random(k)
    for i in range(TRACES):
        SHAPES[shape](tracer, rng, EPOCH_NS + i * 10**10, k)


def _dump(runs: list[AgentRun]) -> list[dict[str, Any]]:
    return [run.model_dump() for run in sorted(runs, key=lambda r: (r.trace_id, r.start_ns or 0, r.span_id))]


SCORED_WITHIN_S = 60.0
"""The bound on the wait for every run of the 12 traces to be scored (each settles `MULTI.settle_ms` after it ends)."""


def _all_scored(engine: Engine[Any], noting: NotingRegistry, runs: int) -> Callable[[], bool]:
    return lambda: len(noting.runs) == runs and len(engine.store) == 0


@pytest.mark.parametrize("k", [2, 4, 8])
@pytest.mark.parametrize("shape", SHAPES)
def test_a_trace_of_several_runs_is_rebuilt_once_in_process(shape: str, k: int) -> None:
    exporter, ended = InMemorySpanExporter(), InMemorySpanExporter()
    provider = TracerProvider(resource=RESOURCE)
    with registry_with(EXPECTATION) as registry:
        noting = NotingRegistry(registry)
        processor = ToolscoreSpanProcessor(noting, SimpleSpanProcessor(exporter), MULTI, Recording())
        provider.add_span_processor(processor)
        provider.add_span_processor(SimpleSpanProcessor(ended))  # the spans as ended, without scores
        try:
            _play_shape(provider.get_tracer(*SCOPE), shape, k)
            assert wait_until(_all_scored(processor.engine, noting, k * TRACES), SCORED_WITHIN_S)
            stats = processor.engine.stats
            spans = list(ended.get_finished_spans())
        finally:
            provider.shutdown()
    assert (stats.traces, stats.runs) == (TRACES, k * TRACES), "one rebuild per trace, reused by its other runs"
    assert stats.calls == _tool_spans(spans), "each tool span is read into a call once"
    assert _dump(noting.runs) == _dump(rebuild_runs(spans_from_readable(spans)))


@pytest.mark.parametrize("k", [2, 4, 8])
@pytest.mark.parametrize("shape", SHAPES)
def test_a_trace_of_several_runs_is_rebuilt_once_in_serve(shape: str, k: int) -> None:
    exporter = InMemorySpanExporter()
    provider = TracerProvider(resource=RESOURCE)
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    _play_shape(provider.get_tracer(*SCOPE), shape, k)
    provider.shutdown()
    spans = list(exporter.get_finished_spans())
    data = encode_spans(spans).SerializeToString()
    with registry_with(EXPECTATION) as registry:
        noting = NotingRegistry(registry)
        pipeline = CollectorPipeline(noting, None, MULTI, Recording())
        try:
            assert pipeline.accept(ExportTraceServiceRequest.FromString(data), data) == IngestResult()
            assert wait_until(_all_scored(pipeline.engine, noting, k * TRACES), SCORED_WITHIN_S)
            stats = pipeline.engine.stats
        finally:
            assert pipeline.shutdown(5)
    assert (stats.traces, stats.runs) == (TRACES, k * TRACES), "one rebuild per trace, reused by its other runs"
    assert stats.calls == _tool_spans(spans), "each tool span is read into a call once"
    assert _dump(noting.runs) == _dump(rebuild_runs(spans_from_proto_bytes(data)))


# -- a session whose runs settle one at a time --------------------------------------------------------

TURNS = PipelineConfig(settle_ms=20)
"""Short beside the waits between two turns: each run settles before the next one starts."""


def _turns(tracer: Tracer, k: int, turn_over: Callable[[int], None]) -> None:
    """TRACES chat sessions, each one trace of k benchmark runs under an unrecognised root, played turn by turn:
    the i-th run of every session, then `turn_over(i)` (which waits for those runs to be scored), then the next."""
    rng = random.Random(k)
    roots = [tracer.start_span("session", start_time=EPOCH_NS + t * 10**10) for t in range(TRACES)]
    for i in range(k):
        for t, root in enumerate(roots):
            with use_span(root, end_on_exit=False):
                bench_run(tracer, rng, EPOCH_NS + t * 10**10 + i * 100_000_000)
        turn_over(i)
    for t, root in enumerate(roots):
        root.end(end_time=EPOCH_NS + t * 10**10 + k * 100_000_000 + 1)


def _scored(noting: NotingRegistry, runs: int) -> Callable[[], bool]:
    return lambda: len(noting.runs) == runs


def _turn_rebuilds(stats: Any, tool_spans: int, k: int) -> None:
    """Each settle rebuilt the spans under its run only, and the finish the whole trace once: every tool span is
    read twice, whatever the number of turns (it was read at every later settle: k + 1 whole rebuilds)."""
    assert (stats.traces, stats.runs) == ((k + 1) * TRACES, 2 * k * TRACES), "k settles of one run, one finish"
    assert stats.calls == 2 * tool_spans, "each tool span read at its run's settle and at the finish"


@pytest.mark.parametrize("k", [2, 4, 8])
def test_a_session_whose_runs_settle_one_at_a_time_reads_each_tool_span_twice_in_process(k: int) -> None:
    exporter, ended = InMemorySpanExporter(), InMemorySpanExporter()
    provider = TracerProvider(resource=RESOURCE)
    with registry_with(EXPECTATION) as registry:
        noting = NotingRegistry(registry)
        processor = ToolscoreSpanProcessor(noting, SimpleSpanProcessor(exporter), TURNS, Recording())
        provider.add_span_processor(processor)
        provider.add_span_processor(SimpleSpanProcessor(ended))
        try:

            def turn_over(i: int) -> None:
                assert wait_until(_scored(noting, (i + 1) * TRACES)), f"turn {i} scored before the next"

            _turns(provider.get_tracer(*SCOPE), k, turn_over)
            assert wait_until(_all_scored(processor.engine, noting, k * TRACES), SCORED_WITHIN_S)
            stats = processor.engine.stats
            spans = list(ended.get_finished_spans())
        finally:
            provider.shutdown()
    _turn_rebuilds(stats, _tool_spans(spans), k)
    assert _dump(noting.runs) == _dump(rebuild_runs(spans_from_readable(spans)))


@pytest.mark.parametrize("k", [2, 4, 8])
def test_a_session_whose_runs_settle_one_at_a_time_reads_each_tool_span_twice_in_serve(k: int) -> None:
    exporter = InMemorySpanExporter()
    provider = TracerProvider(resource=RESOURCE)
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    batches: list[bytes] = []

    def turn_over(i: int) -> None:  # one export request per turn, as a batch exporter sends a quiet session's
        batches.append(encode_spans(exporter.get_finished_spans()).SerializeToString())
        exporter.clear()

    _turns(provider.get_tracer(*SCOPE), k, turn_over)
    turn_over(k)  # the roots
    provider.shutdown()
    with registry_with(EXPECTATION) as registry:
        noting = NotingRegistry(registry)
        pipeline = CollectorPipeline(noting, None, TURNS, Recording())
        try:
            for i, data in enumerate(batches[:k]):
                assert pipeline.accept(ExportTraceServiceRequest.FromString(data), data) == IngestResult()
                assert wait_until(_scored(noting, (i + 1) * TRACES)), f"turn {i} scored before the next"
            assert pipeline.accept(ExportTraceServiceRequest.FromString(batches[k]), batches[k]) == IngestResult()
            assert wait_until(_all_scored(pipeline.engine, noting, k * TRACES), SCORED_WITHIN_S)
            stats = pipeline.engine.stats
        finally:
            assert pipeline.shutdown(5)
    records = [record for data in batches for record in spans_from_proto_bytes(data)]
    _turn_rebuilds(stats, sum(record.name.startswith("execute_tool") for record in records), k)
    assert _dump(noting.runs) == _dump(rebuild_runs(records))


# -- what may change between two uses of one rebuild -------------------------------------------------

SETTLE_MS = 300
FIRST, SECOND, ROOT = "1000000000000000", "2000000000000000", "9000000000000000"
CHANGES = ["span", "over_cap", "refused", "registry"]


def _tool_record(span_id: str, name: str) -> SpanRecord:
    return record(span_id, SECOND, f"execute_tool {name}", tool_attrs(name, f"c{span_id[-2:]}"))


@pytest.mark.parametrize("change", CHANGES)
def test_what_changes_after_a_rebuild_is_in_the_next_run_scored_from_it(change: str) -> None:
    """Two runs held at once: the first settles (the trace is rebuilt), then something changes, then the second.

    The second run's span has a span under it arrive half a settle later, so it settles after the first,
    with the change between (the engine is stepped by hand at those times). A span kept (`span`) changes
    the trace's spans: the second run's calls hold its call, as rebuilding gives. The rest change no span:
    the rebuild is reused, and what is read after it still applies to the second run: the trace cut by
    `max_spans_per_trace` (`over_cap`) or a span a full queue refused under it (`refused`) flag it
    incomplete; an expectation written since (`registry`) is matched.
    """
    root = record(ROOT, None, "POST /chat", {})
    first = genai_run(FIRST, ["search_flights"], parent=ROOT)
    *_, second_run = genai_run(SECOND, [], parent=ROOT)
    tools = [_tool_record(f"20000000000000{i:02x}", name) for i, name in enumerate(["search_flights", "book_flight"])]
    late = _tool_record("20000000000000ff", "get_weather")
    config = PipelineConfig(settle_ms=SETTLE_MS, max_spans_per_trace=5 if change == "over_cap" else 2_000)
    with hand_driven(config, registry=NotingRegistry) as driven:
        pipeline, noting = driven.engine, driven.engine.registry
        assert isinstance(noting, NotingRegistry)
        driven.offer([root, *first, second_run, tools[0]])  # the root first: a span under a missing one would
        driven.at(SETTLE_MS / 2)  # hold every run of the trace back (`TraceStore._under`)
        driven.offer([tools[1]])  # half a settle later: the second run now settles half a settle after the first
        driven.at(SETTLE_MS)
        assert [r.span_id for r in noting.runs] == [FIRST]
        if change in ("span", "over_cap"):
            driven.offer([late])
        elif change == "refused":
            pipeline.note_refused(root.trace_id, late.span_id, SECOND)
        else:
            noting.registry.put({**TRAVEL, "name": "travel-too"})
        driven.at(2 * SETTLE_MS)
        assert len(noting.runs) == 2
        assert len(pipeline.store) == 0
        stats = pipeline.stats
    scored = {carrier.span_id: enrichment.attributes for carrier, enrichment in driven.sink.enriched}
    assert sorted(scored) == [FIRST, SECOND], "each run scored once"
    second = scored[SECOND]
    kept = [*first, second_run, *tools, *([late] if change == "span" else []), root]
    (offline,) = [run for run in rebuild_runs(kept) if run.span_id == SECOND]
    assert second["toolscore.tool_calls"] == [call.name for call in offline.calls]
    assert second.get("toolscore.run.incomplete", False) == (change in ("over_cap", "refused"))
    assert second["toolscore.expectations"] == (["travel", "travel-too"] if change == "registry" else ["travel"])
    assert stats.traces == (2 if change == "span" else 1), "rebuilt again only for a span kept; the finish reuses"


def test_a_rebuild_that_leaves_a_run_for_the_trace_finish_alone_is_not_kept() -> None:
    """A run inferred under no run span waits for its trace's finish, up to `trace_idle_timeout_s`: the
    settle's rebuild is not kept that long, uncounted, and the finish rebuilds (the same runs)."""
    root = record(ROOT, None, "POST /chat", {})
    run = genai_run(FIRST, ["search_flights"], parent=ROOT)
    orphan = record("30000000000000a1", ROOT, "execute_tool get_weather", tool_attrs("get_weather", "w1"))
    spans = [*run, orphan, root]
    with hand_driven(PipelineConfig(settle_ms=20), registry=NotingRegistry) as driven:
        noting = driven.engine.registry
        assert isinstance(noting, NotingRegistry)
        driven.offer(spans)
        driven.at(20)  # the run's settle and the trace's, its root having ended
        assert len(driven.engine.store) == 0
        stats = driven.engine.stats
    assert [r.span_id for r in noting.runs] == [FIRST, ROOT], "the run at its settle, the one inferred at the finish"
    assert stats.traces == 2, "rebuilt at the settle and again at the finish"
    assert _dump(noting.runs) == _dump(rebuild_runs(spans))


def test_a_rebuild_leaving_runs_inferred_under_inferred_runs_in_a_held_run_is_kept_for_that_runs_settle() -> None:
    """Two held runs; under the second, tool > tool > tool of different names: the tools with a tool right under
    them stand for runs inferred one under the other, the innermost two links below the second run span. The
    first run's settle leaves all three for the second's, which scores them: its rebuild is kept, and that
    settle and the finish reuse it."""
    root = record(ROOT, None, "POST /chat", {})
    first = genai_run(FIRST, ["search_flights"], parent=ROOT)
    *_, second_run = genai_run(SECOND, [], parent=ROOT)
    delegate, lookup, fetch = "2000000000000001", "2000000000000002", "2000000000000003"
    chain = [
        record(delegate, SECOND, "execute_tool delegate", tool_attrs("delegate", "d1")),
        record(lookup, delegate, "execute_tool lookup", tool_attrs("lookup", "l1")),
        record(fetch, lookup, "execute_tool fetch", tool_attrs("fetch", "f1")),
    ]
    with hand_driven(PipelineConfig(settle_ms=SETTLE_MS), registry=NotingRegistry) as driven:
        noting = driven.engine.registry
        assert isinstance(noting, NotingRegistry)
        driven.offer([root, *first, second_run, *chain[:2]])  # the root first, as above
        driven.at(SETTLE_MS / 2)
        driven.offer([chain[2]])  # half a settle later: the second run now settles half a settle after the first
        driven.at(SETTLE_MS)
        assert [r.span_id for r in noting.runs] == [FIRST]
        driven.at(SETTLE_MS * 3 / 2)
        assert len(driven.engine.store) == 0
        stats = driven.engine.stats
    assert [r.span_id for r in noting.runs] == [FIRST, SECOND, delegate, lookup], "the first, then the second's 3"
    assert _dump(noting.runs) == _dump(rebuild_runs([root, *first, second_run, *chain]))
    assert sorted(carrier.span_id for carrier, _ in driven.sink.enriched) == [FIRST, SECOND]
    assert stats.traces == 1, "rebuilt at the first settle only: the second and the finish reuse it"
