"""Memory and queue bounds, with the real OTel telemetry read through `InMemoryMetricReader`."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import pytest
from opentelemetry import trace as trace_api
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import InMemoryMetricReader
from opentelemetry.sdk.trace import ReadableSpan, SpanProcessor, Tracer, TracerProvider

from tests.pipeline_builders import (
    TRACE,
    TRAVEL,
    HandDriven,
    Recording,
    agent_run,
    by_name,
    genai_run,
    hand_driven,
    record,
    recording_engine,
    registry_with,
    run_attrs,
    tool_attrs,
    wait_until,
)
from toolscore.collector.extract import ExtractConfig, Role
from toolscore.collector.extract.conventions import Read
from toolscore.collector.extract.conventions.genai import GenAIExtractor
from toolscore.collector.pipeline import Engine, ListSink, PipelineConfig, ToolscoreSpanProcessor
from toolscore.collector.pipeline.counted_stats import CountedStats
from toolscore.collector.pipeline.group import (
    _ATTRIBUTE_BYTES,
    _EVENT_BYTES,
    _ITEM_BYTES,
    _SPAN_BYTES,
    _UNPLACED_BYTES,
    _UNPLACED_PARENT_BYTES,
    Admit,
    TraceStore,
    item_bytes,
    record_bytes,
)
from toolscore.collector.pipeline.worker import Worker
from toolscore.collector.registry import Registry
from toolscore.collector.spans import SpanEvent, SpanRecord
from toolscore.collector.telemetry import PipelineTelemetry, create_telemetry


def points(reader: InMemoryMetricReader, name: str) -> dict[tuple[tuple[str, Any], ...], float]:
    """The metric's data points, by sorted attributes."""
    data = reader.get_metrics_data()
    out: dict[tuple[tuple[str, Any], ...], float] = {}
    for resource in data.resource_metrics if data else []:
        for scope in resource.scope_metrics:
            for metric in scope.metrics:
                if metric.name == name:
                    for point in metric.data.data_points:
                        out[tuple(sorted((point.attributes or {}).items()))] = point.value  # type: ignore[union-attr]
    return out


def spans_metric(reader: InMemoryMetricReader, outcome: str, reason: str | None = None) -> float:
    key = [("toolscore.span.outcome", outcome)]
    if reason is not None:
        key.insert(0, ("toolscore.drop.reason", reason))
    return points(reader, "toolscore.spans").get(tuple(key), 0)


@contextmanager
def engine(config: PipelineConfig) -> Iterator[tuple[Engine[SpanRecord], ListSink[SpanRecord], InMemoryMetricReader]]:
    reader = InMemoryMetricReader()
    telemetry = create_telemetry(meter_provider=MeterProvider(metric_readers=[reader]))
    sink: ListSink[SpanRecord] = ListSink()
    with registry_with(TRAVEL) as registry:
        pipeline: Engine[SpanRecord] = Engine(registry, sink, lambda r: r, config, telemetry)
        pipeline.start()
        try:
            yield pipeline, sink, reader
        finally:
            pipeline.shutdown(5.0)


HOLD = {"settle_ms": 60_000, "max_hold_ms": 60_000}
RUN = "1000000000000000"


@contextmanager
def stepped(config: PipelineConfig) -> Iterator[tuple[HandDriven, InMemoryMetricReader]]:
    """`engine`, without the thread: the test steps it (`HandDriven.at`), at times of its choosing."""
    reader = InMemoryMetricReader()
    telemetry = create_telemetry(meter_provider=MeterProvider(metric_readers=[reader]))
    with hand_driven(config, telemetry=telemetry) as driven:
        yield driven, reader


def _one_run_then_the_next(driven: HandDriven, first: list[SpanRecord], then: list[SpanRecord]) -> None:
    """Offer `first` and step to its run span's settle, then `then` and step to theirs: two settles of one trace."""
    settle_ms = driven.engine.config.settle_ms
    driven.offer(first)
    driven.at(settle_ms)
    assert len(driven.sink.enriched) == 1
    driven.offer(then)
    driven.at(2 * settle_ms)
    assert len(driven.sink.enriched) == 2
    assert driven.engine.flush(5.0)


def test_oldest_trace_is_released_unscored_when_pending_traces_are_full() -> None:
    traces = [genai_run("1000000000000000", ["search_flights", "book_flight"], trace_id=f"{i:032x}") for i in (1, 2, 3)]
    with engine(PipelineConfig(max_pending_traces=2, **HOLD)) as (pipeline, sink, reader):
        for spans in traces:
            for span in spans:
                assert pipeline.offer(span)
        assert pipeline.flush(5.0)
        assert traces[0][-1] in sink.released  # the first trace's run span went on unscored
        assert [r.trace_id for r, _ in sink.enriched] == [f"{2:032x}", f"{3:032x}"]
        assert spans_metric(reader, "dropped", "max_pending_traces") == 3
        assert spans_metric(reader, "passed") == spans_metric(reader, "received") == 9


def _prompted(trace: int, prompt_bytes: int) -> list[SpanRecord]:
    """A run whose run span carries a prompt of `prompt_bytes` characters (as model spans do, whole)."""
    spans = genai_run("1000000000000000", ["search_flights", "book_flight"], trace_id=f"{trace:032x}")
    spans[-1].attributes["gen_ai.input.messages"] = "x" * prompt_bytes
    return spans


def test_oldest_traces_are_released_unscored_past_the_pending_bytes() -> None:
    """Three runs of ~40 kB each against a 100 kB budget: the first goes on unscored, counted by reason."""
    traces = [_prompted(i, 40_000) for i in (1, 2, 3)]
    with engine(PipelineConfig(max_pending_bytes=100_000, **HOLD)) as (pipeline, sink, reader):
        for spans in traces:
            for span in spans:
                assert pipeline.offer(span)
        assert wait_until(lambda: traces[0][-1] in sink.released)
        assert 80_000 < pipeline.store.size <= 100_000
        assert pipeline.flush(5.0)
        assert [r.trace_id for r, _ in sink.enriched] == [f"{2:032x}", f"{3:032x}"]
        assert spans_metric(reader, "dropped", "max_pending_bytes") == 3
        assert spans_metric(reader, "dropped", "max_pending_traces") == 0
        assert spans_metric(reader, "passed") == spans_metric(reader, "received") == 9
        assert pipeline.store.size == 0  # every trace finished gives its bytes back


def test_one_trace_alone_over_the_pending_bytes_is_still_scored() -> None:
    spans = _prompted(1, 50_000)
    with engine(PipelineConfig(max_pending_bytes=10_000, **HOLD)) as (pipeline, sink, reader):
        for span in spans:
            assert pipeline.offer(span)
        assert pipeline.flush(5.0)
        assert [r.trace_id for r, _ in sink.enriched] == [f"{1:032x}"]
        assert spans_metric(reader, "dropped", "max_pending_bytes") == 0


def _otlp_span(
    n: int, attributes: list[tuple[str, Any]], events: list[tuple[str, dict[str, str]]], tool: bool, *, alone: bool
) -> Any:
    """A tool span, or (`tool` False) a span no convention recognises, whose parent has not arrived: the same
    parent as the other spans', or (`alone`) one of its own."""
    from opentelemetry.proto.trace.v1.trace_pb2 import Span

    parent = (n + (1 << 40)).to_bytes(8, "big") if alone else b"\x03" * 8
    span = Span(trace_id=b"\x01" * 16, span_id=n.to_bytes(8, "big"), parent_span_id=parent, name="execute_tool")
    recognised = [("gen_ai.operation.name", "execute_tool"), ("gen_ai.tool.name", "search_flights")] if tool else []
    for key, value in [*recognised, *attributes]:
        kv = span.attributes.add()
        kv.key = key
        if isinstance(value, str):
            kv.value.string_value = value
        else:
            kv.value.int_value = value
    for name, event_attributes in events:
        event = span.events.add()
        event.name = name
        for key, text in event_attributes.items():
            kv = event.attributes.add()
            kv.key = key
            kv.value.string_value = text
    return span


_TYPICAL = [
    ("gen_ai.tool.call.id", "call_abc123"),
    ("gen_ai.tool.call.arguments", '{"origin": "SFO", "destination": "NRT", "date": "2026-12-01", "passengers": 2}'),
    ("gen_ai.tool.call.result", '{"flights": [{"id": "AA1", "price": 900}]}'),
    ("gen_ai.agent.name", "travel"),
    ("server.address", "api.openai.com"),
    ("thread.id", 1234),
]


@pytest.mark.parametrize("tool", [True, False], ids=["tool span", "unrecognised span, parent not arrived"])
@pytest.mark.parametrize("source", ["record", "received bytes"])
@pytest.mark.parametrize(
    ("shape", "count", "attributes", "events", "alone"),
    [
        ("typical tool span", 300, _TYPICAL, [], False),
        ("typical tool span, each under a parent of its own", 300, _TYPICAL, [], True),
        ("one short attribute", 1000, [("k", "v")], [], False),
        ("one short attribute, each under a parent of its own", 1000, [("k", "v")], [], True),
        ("a 20 kB prompt", 100, [("gen_ai.input.messages", "p" * 20_000)], [], False),
        ("1,000 one-letter attributes", 30, [(f"a{i}", "x") for i in range(1000)], [], False),
        ("1,000 int attributes", 30, [(f"a{i}", i) for i in range(1000)], [], False),
        ("1,000 events of one attribute", 30, [], [("e", {"k": "v"})] * 1000, False),
        ("1,000 empty events", 30, [], [("", {})] * 1000, False),
    ],
)
def test_pending_bytes_estimate_the_memory_the_kept_spans_take(
    source: str,
    shape: str,
    count: int,
    attributes: list[tuple[str, Any]],
    events: list[Any],
    *,
    alone: bool,
    tool: bool,
) -> None:
    """`max_pending_bytes` bounds memory: what a kept span counts for is within ~30% of what it takes, measured,
    for prompts and for spans of many small entries alike (their Python objects are several times their text),
    and for the unrecognised spans that keep their attributes but not their events until their parent comes
    (with their entries in the list of such spans: small spans waiting each for a parent of its own show it)."""
    import gc
    import tracemalloc

    from toolscore.collector.serve._carrier import carrier_bytes
    from toolscore.collector.sources.otlp_proto import span_record

    spans = [_otlp_span(n + 1, attributes, events, tool, alone=alone) for n in range(count)]
    received = [span.SerializeToString() for span in spans]
    store: TraceStore[Any] = TraceStore(10_000, 10_000, size=carrier_bytes if source == "received bytes" else None)
    gc.collect()
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        for span, data in zip(spans, received, strict=True):
            admission = store.admit(
                span_record(span, {}, "scope"), (None, None, data if source != "record" else None), 0
            )
            assert admission.kind is Admit.STORED
        gc.collect()
        taken = tracemalloc.get_traced_memory()[0] - before
    finally:
        tracemalloc.stop()
    assert 0.8 <= store.size / taken <= 1.4, f"{shape}: counted {store.size:,} B for {taken:,} B taken"


def test_record_bytes_counts_each_attribute_and_event_once_with_its_text() -> None:
    """`record_bytes` is the per-span, per-attribute and per-event costs plus the text of the span's and its
    events' attributes (keys, strings, string list items; `_ITEM_BYTES` for other list items), each once."""
    record = SpanRecord(
        TRACE, "0000000000000002", "0000000000000001", "execute_tool search",
        attributes={"tool": "search_flights", "count": 3, "tags": ["a", "bc", 7]},
        events=(
            SpanEvent("exception", 0, {"exception.type": "ValueError", "exception.message": "no flights"}),
            SpanEvent("retry", 0, {}),
            SpanEvent("log", 0, {"lines": ["one", 2]}),
        ),
    )  # fmt: skip
    span_text = len("tool") + len("search_flights") + len("count") + len("tags") + len("a") + len("bc") + _ITEM_BYTES
    event_text = (
        len("exception.type") + len("ValueError") + len("exception.message") + len("no flights")
        + len("lines") + len("one") + _ITEM_BYTES
    )  # fmt: skip
    expected = _SPAN_BYTES + 3 * _ATTRIBUTE_BYTES + 3 * _EVENT_BYTES + 3 * _ATTRIBUTE_BYTES + span_text + event_text
    assert record_bytes(record) == expected
    assert item_bytes(record) == expected - span_text - event_text


@pytest.mark.parametrize(
    ("parent_attributes", "keeps"), [({"http.route": "/chat"}, False), (tool_attrs("delegate", "c0"), True)]
)
def test_a_span_keeps_its_attributes_until_its_parent_arrives_and_then_only_under_a_tool(
    parent_attributes: dict[str, Any], keeps: bool
) -> None:
    """A run may be inferred at a tool's unrecognised child, and its attributes select it (`match.attributes`):
    such a span keeps them (not its events) while its parent is unknown, and gives their bytes back once the
    parent shows it is no tool span."""
    store: TraceStore[SpanRecord] = TraceStore(10, 100)
    child = SpanRecord(
        TRACE, "0000000000000002", "0000000000000001", "sub_agent", attributes={"k": "v" * 5_000},
        events=(SpanEvent("log", 0, {"message": "e" * 5_000}),),
    )  # fmt: skip
    parent = record("0000000000000001", "0000000000000000", "execute_tool delegate", parent_attributes)
    store.admit(child, child, 0)
    kept = store.traces[TRACE].records[child.span_id].span
    assert (kept.attributes, kept.events) == (child.attributes, ())
    assert store.size == store.traces[TRACE].size == record_bytes(kept) + _WAITING

    store.admit(parent, parent, 0)  # its own parent has not arrived: unrecognised, it keeps its attributes too

    after = store.traces[TRACE].records[child.span_id].span
    assert after.attributes == (child.attributes if keeps else {})
    slim = item_bytes(SpanRecord(TRACE, child.span_id, None, ""))
    parent_waits = 0 if keeps else _WAITING  # an unrecognised parent waits for its own parent
    assert (
        store.size
        == store.traces[TRACE].size
        == ((record_bytes(kept) if keeps else slim) + record_bytes(parent) + parent_waits)
    )
    store.finish(store.traces[TRACE])
    assert store.size == 0


_WAITING = _UNPLACED_PARENT_BYTES + _UNPLACED_BYTES
"""What a span waiting alone for its parent adds to its record's bytes; each sibling waiting too, `_UNPLACED_BYTES`."""
PARENT = "00000000000000a0"


def _waiting(span_id: str, parent_id: str = PARENT, trace_id: str = TRACE) -> SpanRecord:
    """A span no convention recognises whose parent has not arrived: it keeps its attributes meanwhile."""
    return SpanRecord(trace_id, span_id, parent_id, "SELECT", attributes={"db.statement": f"SELECT {span_id}"})


@pytest.mark.parametrize(
    ("parent_attributes", "slims"), [({"http.route": "/chat"}, True), (tool_attrs("delegate", "c0"), False)]
)
def test_spans_waiting_for_their_parent_count_for_their_entries_until_it_comes(
    parent_attributes: dict[str, Any], *, slims: bool
) -> None:
    """The list of spans waiting for their parent is pending memory too: each entry counts (and each parent's
    list), and is given back when the parent comes, whether it slims them or (a tool span) they keep their
    attributes; what is left is exactly what the records count for, and nothing once the trace finishes."""
    store: TraceStore[SpanRecord] = TraceStore(10, 100)
    siblings = [_waiting(f"{i:016x}") for i in (2, 3, 4)]
    cut_off = _waiting("0000000000000005", parent_id="00000000000000ff")  # its parent never comes
    for span in (*siblings, cut_off):
        assert store.admit(span, span, 0).kind is Admit.STORED
    records = sum(map(record_bytes, (*siblings, cut_off)))
    assert store.size == store.traces[TRACE].size == records + 4 * _UNPLACED_BYTES + 2 * _UNPLACED_PARENT_BYTES

    parent = record(PARENT, None, "execute_tool delegate", parent_attributes)  # the root: it waits for nothing
    store.admit(parent, parent, 0)

    trace = store.traces[TRACE]
    assert [bool(trace.records[span.span_id].span.attributes) for span in siblings] == [not slims] * 3
    placed = 3 * _SPAN_BYTES if slims else sum(map(record_bytes, siblings))
    assert store.size == trace.size == placed + record_bytes(parent) + record_bytes(cut_off) + _WAITING
    store.finish(trace)
    assert store.size == 0


@pytest.mark.parametrize("path", ["trace finishes", "max_pending_traces", "max_pending_bytes"])
def test_pending_bytes_of_spans_waiting_for_their_parent_fall_to_zero_when_their_trace_goes(path: str) -> None:
    """The engine's pending bytes (the `toolscore.pending.bytes` gauge) count the waiting spans' entries and give
    them back with their trace, whether it finishes or is pushed out by either bound."""
    waiting = [_waiting(f"{i:016x}") for i in (2, 3, 4)]
    expected = sum(map(record_bytes, waiting)) + 3 * _UNPLACED_BYTES + _UNPLACED_PARENT_BYTES
    bounds: dict[str, Any] = {
        "trace finishes": {},
        "max_pending_traces": {"max_pending_traces": 1},
        "max_pending_bytes": {"max_pending_bytes": expected + 1_000},
    }[path]
    with engine(PipelineConfig(**bounds, **HOLD)) as (pipeline, _, reader):
        for span in waiting:
            assert pipeline.offer(span)
        assert wait_until(lambda: pipeline.store.size == expected)
        assert points(reader, "toolscore.pending.bytes") == {(): expected}
        if path == "trace finishes":
            assert pipeline.flush(5.0)
            newer = 0
        else:  # a span of another trace, alone under the bound but not with the waiting spans' trace
            other = SpanRecord(f"{2:032x}", "0000000000000001", None, "GET /", attributes={"q": "x" * 1_500})
            assert pipeline.offer(other)
            assert wait_until(lambda: TRACE not in pipeline.store.traces)
            assert spans_metric(reader, "dropped", path) == 3
            newer = record_bytes(other)
        assert pipeline.store.size == newer
        assert points(reader, "toolscore.pending.bytes") == {(): newer}


def test_spans_over_the_per_trace_limit_pass_on_and_the_run_is_incomplete() -> None:
    spans = genai_run("1000000000000000", ["a", "b", "c", "d"])
    with engine(PipelineConfig(max_spans_per_trace=3, **HOLD)) as (pipeline, sink, reader):
        for span in spans:
            assert pipeline.offer(span)
        assert pipeline.flush(5.0)
        (_, enrichment), *_ = sink.enriched
        assert enrichment.attributes["toolscore.tool_calls"] == ["a", "b", "c"]
        assert enrichment.attributes["toolscore.run.incomplete"] is True
        assert spans_metric(reader, "dropped", "max_spans_per_trace") == 1
        assert points(reader, "toolscore.runs") == {
            (("gen_ai.agent.name", "travel"), ("toolscore.run.outcome", "incomplete")): 1
        }


class _Gate(SpanProcessor):
    """A next processor that blocks the pipeline's worker thread until opened; the app thread never waits."""

    def __init__(self) -> None:
        self.open = threading.Event()
        self.entered = threading.Event()
        self.spans: list[ReadableSpan] = []
        self.lock = threading.Lock()

    def on_end(self, span: ReadableSpan) -> None:
        if threading.current_thread().name == "toolscore-pipeline":
            self.entered.set()
            self.open.wait(10)
        with self.lock:
            self.spans.append(span)

    def force_flush(self, timeout_millis: int = 30_000) -> bool:
        return True


def test_calls_left_out_of_a_score_are_counted_by_reason() -> None:
    long_run = genai_run("1000000000000000", ["search_flights", "book_flight", "get_weather"], trace_id=f"{1:032x}")
    orphans = genai_run("2000000000000000", ["search_flights", "book_flight"], trace_id=f"{2:032x}")[:-1]
    config = PipelineConfig(settle_ms=20, extract=ExtractConfig(max_calls_per_run=1, infer_runs=False))
    with engine(config) as (pipeline, sink, reader):
        for span in (*long_run, *orphans):  # the orphans' run span never comes
            assert pipeline.offer(span)
        assert pipeline.flush(5.0)
        ((_, enrichment),) = sink.enriched
        assert enrichment.attributes["toolscore.tool_calls"] == ["search_flights"]
        assert points(reader, "toolscore.calls.dropped") == {
            (("toolscore.call.drop.reason", "calls_over_limit"),): 2,
            (("toolscore.call.drop.reason", "call_without_run"),): 2,
        }


def test_calls_over_the_limit_are_counted_once_however_often_their_trace_is_rebuilt() -> None:
    """Two runs of one trace, scored one after the other: the second rebuild sees the first run's extra call again.

    The trace is rebuilt when the first run settles and, the second run's spans having come since, when
    the second does (its finish reuses that rebuild); each run's dropped call is counted when that run is
    scored, once.
    """
    root = record("9000000000000000", None, "POST /chat", {})
    first = genai_run(RUN, ["search_flights", "book_flight"], parent=root.span_id)
    second = genai_run("2000000000000000", ["search_flights", "book_flight"], parent=root.span_id)
    config = PipelineConfig(settle_ms=20, extract=ExtractConfig(max_calls_per_run=1))
    with stepped(config) as (driven, reader):
        _one_run_then_the_next(driven, first, [*second, root])
        assert [e.attributes["toolscore.tool_calls"] for _, e in driven.sink.enriched] == [["search_flights"]] * 2
        assert points(reader, "toolscore.calls.dropped") == {(("toolscore.call.drop.reason", "calls_over_limit"),): 2}


def test_a_call_whose_run_span_has_not_arrived_when_another_run_settles_is_not_counted_without_run() -> None:
    """With `infer_runs` off, a call is `call_without_run` only if its trace finishes without its run span."""
    root = record("9000000000000000", None, "POST /chat", {})
    first = genai_run(RUN, ["search_flights"], parent=root.span_id)
    *second_calls, second_run = genai_run("2000000000000000", ["book_flight"], parent=root.span_id)
    config = PipelineConfig(settle_ms=20, extract=ExtractConfig(infer_runs=False))
    with stepped(config) as (driven, reader):
        driven.offer([*second_calls, *first])  # the second run's call first: its run span is still running
        driven.at(20)  # the first run settles
        assert len(driven.sink.enriched) == 1
        driven.offer([second_run, root])
        assert driven.engine.flush(5.0)
        calls = {r.span_id: e.attributes["toolscore.tool_calls"] for r, e in driven.sink.enriched}
        assert calls == {RUN: ["search_flights"], "2000000000000000": ["book_flight"]}
        assert points(reader, "toolscore.calls.dropped") == {}


def test_a_span_its_convention_cannot_read_is_counted_once_however_often_its_trace_is_rebuilt(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """`toolscore.spans.unreadable` counts spans, once each, however often their trace is rebuilt and reads them.

    The second run's spans come after the first run was scored, so the trace is rebuilt at each settle
    and the broken span read twice (the engine's `stats` tally reads); its finish, with no span since,
    reuses the second rebuild.
    """
    read = GenAIExtractor.read

    def failing(self: GenAIExtractor, span: SpanRecord, role: Role) -> Read:
        if span.name == "execute_tool broken":
            raise ValueError("an attribute in a shape the reader does not expect")
        return read(self, span, role)

    monkeypatch.setattr(GenAIExtractor, "read", failing)
    root = record("9000000000000000", None, "POST /chat", {})
    first = genai_run(RUN, ["search_flights", "broken"], parent=root.span_id)
    second = genai_run("2000000000000000", ["book_flight"], parent=root.span_id)
    with stepped(PipelineConfig(settle_ms=20)) as (driven, reader):
        _one_run_then_the_next(driven, first, [*second, root])
        calls = {r.span_id: e.attributes["toolscore.tool_calls"] for r, e in driven.sink.enriched}
        assert calls == {RUN: ["search_flights"], "2000000000000000": ["book_flight"]}
        assert points(reader, "toolscore.spans.unreadable") == {(("toolscore.convention", "genai"),): 1}
    assert driven.engine.stats.skipped["read_error:genai"] == 2, "read at each of the two settles, not at the finish"


def test_the_unreadable_spans_remembered_as_counted_stay_bounded_by_the_pending_traces() -> None:
    telemetry = Recording()
    pending: set[str] = set()
    stats = CountedStats(telemetry, pending)
    for i in range(1000):  # a trace at a time, each pending while it is rebuilt twice
        span = record("1000000000000001", RUN, "execute_tool broken", {}, trace_id=f"{i:032x}")
        pending.add(span.trace_id)
        stats.read_failed(span, "genai")
        stats.read_failed(span, "genai")
        pending.discard(span.trace_id)
    assert telemetry.counts["unreadable:genai"] == 1000
    assert len(stats._unreadable) <= 64, "finished traces are forgotten"


def _stuck(
    registry: Registry, gate: _Gate, config: PipelineConfig, telemetry: PipelineTelemetry
) -> tuple[ToolscoreSpanProcessor, TracerProvider, Tracer]:
    """The processor in front of `gate`, on a provider, its worker held inside `gate` by a first span."""
    processor = ToolscoreSpanProcessor(registry, gate, config, telemetry)
    provider = TracerProvider()
    provider.add_span_processor(processor)
    tracer = provider.get_tracer("t")
    tracer.start_span("first", attributes={"gen_ai.operation.name": "chat"}).end()  # an agent's: not pre-filtered
    assert gate.entered.wait(5)  # the worker is now stuck in `next`
    return processor, provider, tracer


def test_full_queue_passes_spans_straight_on_and_counts_them() -> None:
    reader = InMemoryMetricReader()
    gate = _Gate()
    with registry_with(TRAVEL) as registry:
        telemetry = create_telemetry(meter_provider=MeterProvider(metric_readers=[reader]))
        processor, provider, tracer = _stuck(registry, gate, PipelineConfig(queue_size=4, settle_ms=0), telemetry)
        for _ in range(20):
            agent_run(tracer, tools=("search_flights",))
        assert len(gate.spans) == 40 - 4  # all but the queued four went straight on, on this thread
        gate.open.set()
        assert processor.force_flush(5_000)
        provider.shutdown()
    assert len(gate.spans) == 41
    assert spans_metric(reader, "dropped", "queue_full") == 36
    assert spans_metric(reader, "received") == spans_metric(reader, "passed") == 41


in_ = trace_api.set_span_in_context


def test_a_run_a_full_queue_refused_a_span_of_is_scored_flagged_incomplete_and_only_that_run() -> None:
    """The refused call goes straight on, unscored; its run must not be scored as if it had not happened.

    Two runs under one root: the call refused is run `travel`'s, so `support` is scored as complete.
    """
    gate = _Gate()
    telemetry = Recording()
    with registry_with(TRAVEL) as registry:
        processor, provider, tracer = _stuck(registry, gate, PipelineConfig(queue_size=1, settle_ms=0), telemetry)
        root = tracer.start_span("POST /chat")
        travel = tracer.start_span("invoke_agent travel", in_(root), attributes=run_attrs("travel"))
        support = tracer.start_span("invoke_agent support", in_(root), attributes=run_attrs("support"))
        lookup = tracer.start_span(
            "execute_tool lookup_order", in_(support), attributes=tool_attrs("lookup_order", "c0")
        )
        book = tracer.start_span("execute_tool book_flight", in_(travel), attributes=tool_attrs("book_flight", "c1"))
        lookup.end()  # queued: the one-span queue is full
        book.end()  # refused: it goes on at once, from this thread
        assert [span.name for span in gate.spans] == ["execute_tool book_flight"]
        gate.open.set()
        assert wait_until(lambda: len(processor.engine.intake) == 0)
        for span in (travel, support, root):  # one at a time: the queue holds one span
            span.end()
            assert wait_until(lambda: len(processor.engine.intake) == 0)
        assert processor.force_flush(5_000)
        provider.shutdown()
    spans = by_name(gate.spans)
    assert len(gate.spans) == 6
    refused_run = dict(spans["invoke_agent travel"].attributes or {})
    assert refused_run["toolscore.tool_calls"] == ()
    assert refused_run["toolscore.run.incomplete"] is True
    other_run = dict(spans["invoke_agent support"].attributes or {})
    assert other_run["toolscore.tool_calls"] == ("lookup_order",)
    assert "toolscore.run.incomplete" not in other_run
    assert telemetry.outcomes == {"incomplete": 1, "unmatched": 1}
    assert telemetry.counts["dropped:queue_full"] == 1


RUN_A, RUN_B, ROOT = "1000000000000000", "2000000000000000", "9000000000000000"


def two_runs() -> list[SpanRecord]:
    return [
        *genai_run(RUN_A, ["search_flights"], parent=ROOT),
        *genai_run(RUN_B, ["book_flight"], parent=ROOT),
        record(ROOT, None, "POST /chat", {}),
    ]


@pytest.mark.parametrize(
    ("refused", "flagged"),
    [
        ([("3000000000000006", RUN_A)], {RUN_A}),
        (
            [("3000000000000005", RUN_A), ("3000000000000006", "3000000000000005")],
            {RUN_A},
        ),  # placed through a refused parent
        ([("3000000000000006", ROOT)], set()),  # under the root, in no run
        ([("3000000000000006", "30000000000000ff")], {RUN_A, RUN_B}),  # its parent never comes: any run may miss it
    ],
    ids=["under-a-run", "under-a-refused-span", "under-no-run", "not-placed"],
)
def test_refused_spans_flag_the_runs_they_belonged_to(refused: list[tuple[str, str]], flagged: set[str]) -> None:
    with recording_engine(PipelineConfig(**HOLD)) as (pipeline, sink, _):
        for span_id, parent_id in refused:
            pipeline.note_refused(TRACE, span_id, parent_id)
        pipeline.offer_all(two_runs())
        assert pipeline.flush(5.0)
        incomplete = {r.span_id for r, e in sink.enriched if e.attributes.get("toolscore.run.incomplete")}
        assert incomplete == flagged
        assert len(sink.enriched) == 2


def test_refused_spans_past_the_bounds_are_counted_as_forgotten() -> None:
    """At most `queue_size` notes wait for the worker, and `max_pending_traces` traces are remembered."""
    with recording_engine(PipelineConfig(queue_size=2, max_pending_traces=1, **HOLD)) as (pipeline, _, telemetry):
        for trace in ("a", "b", "c"):  # the worker is idle: nothing takes the notes until it is woken
            pipeline.note_refused(trace * 32, "3000000000000006", None)
        pipeline.offer_all(two_runs())
        assert wait_until(lambda: telemetry.counts["forgotten"] > 0)
        assert pipeline.flush(5.0)
        assert telemetry.counts["forgotten"] == 2  # "c": the notes were full; "a": pushed out by "b"


def test_span_ids_the_memory_of_finished_traces_lets_go_of_are_counted_by_bound() -> None:
    """Finished traces are remembered to know re-sent spans; what the bounds make it forget is counted."""
    first, second, third = (genai_run(RUN, ["search_flights", "book_flight"], trace_id=f"{i:032x}") for i in (1, 2, 3))
    reopening = record("3000000000000001", None, "a later step", {}, f"{1:032x}")  # opens the trace again
    config = PipelineConfig(settle_ms=20, max_pending_traces=2, max_spans_per_trace=3)
    with engine(config) as (pipeline, sink, reader):
        for spans in (first, [reopening], second):
            for span in spans:
                assert pipeline.offer(span)
            assert pipeline.flush(5.0)
        assert points(reader, "toolscore.dedupe.forgotten") == {
            (("toolscore.forget.reason", "max_spans_per_trace"),): 1,  # 4 ids of the reopened trace, 3 kept
        }
        for span in third:
            assert pipeline.offer(span)
        assert pipeline.flush(5.0)
        assert points(reader, "toolscore.dedupe.forgotten") == {
            (("toolscore.forget.reason", "max_spans_per_trace"),): 1,
            (("toolscore.forget.reason", "max_pending_traces"),): 3,  # the first trace's, two traces later
        }
        assert pipeline.offer(first[-1])  # re-sent now, its run span is taken as new: the harm counted above
        assert pipeline.flush(5.0)
        assert [r.trace_id for r, _ in sink.enriched].count(f"{1:032x}") == 2


def test_pending_traces_are_observed_as_a_gauge() -> None:
    with engine(PipelineConfig(**HOLD)) as (pipeline, _, reader):
        for span in genai_run("1000000000000000", ["search_flights"]):
            assert pipeline.offer(span)
        assert wait_until(lambda: points(reader, "toolscore.pending.traces") == {(): 1})
        assert pipeline.flush(5.0)
        assert points(reader, "toolscore.pending.traces") == {(): 0}


def test_pending_bytes_are_observed_as_a_gauge_that_rises_with_kept_spans_and_falls_to_zero() -> None:
    """What `max_pending_bytes` bounds is visible before traces are dropped for it, and given back when they go."""
    first, second = _prompted(1, 40_000), _prompted(2, 40_000)
    with engine(PipelineConfig(**HOLD)) as (pipeline, _, reader):
        assert points(reader, "toolscore.pending.bytes") == {(): 0}
        for span in first:
            assert pipeline.offer(span)
        assert wait_until(lambda: points(reader, "toolscore.pending.bytes").get((), 0) > 40_000)
        held_one = points(reader, "toolscore.pending.bytes")[()]
        for span in second:
            assert pipeline.offer(span)
        assert wait_until(lambda: points(reader, "toolscore.pending.bytes").get((), 0) >= 2 * held_one)
        assert points(reader, "toolscore.pending.bytes") == {(): pipeline.store.size}
        assert pipeline.flush(5.0)  # both runs are scored and their traces finished
        assert points(reader, "toolscore.pending.bytes") == {(): 0}


def test_a_backlog_is_worked_through_in_bounded_steps() -> None:
    """A full queue is not drained in one step: spans go on (and deadlines are served) while the rest wait."""
    opened = threading.Event()
    batches: list[int] = []

    class Batches(ListSink[SpanRecord]):
        def release(self, carriers: Any) -> None:
            batches.append(len(carriers))
            super().release(carriers)

    def decode(record: SpanRecord) -> SpanRecord:
        opened.wait(5)  # the first span holds the worker while the backlog builds
        return record

    spans = [SpanRecord(f"{i + 1:032x}", f"{i + 1:016x}", None, f"GET /{i}") for i in range(3_000)]
    with registry_with(TRAVEL) as registry:
        pipeline: Engine[SpanRecord] = Engine(registry, Batches(), decode, PipelineConfig(queue_size=5_000))
        pipeline.start()
        try:
            assert pipeline.offer(spans[0])
            assert wait_until(lambda: len(pipeline.intake) == 0)  # taken: the worker waits in `decode`
            assert all(pipeline.offer(span) for span in spans[1:])
            opened.set()
            assert wait_until(lambda: sum(batches) == len(spans))
            assert max(batches) <= 1_024
            assert len(batches) >= 3
        finally:
            pipeline.shutdown(5.0)


def test_a_failing_step_does_not_leave_the_worker_spinning_on_a_stale_backlog() -> None:
    """The backlog is asked after every step, failed ones too: a step that raises then waits to be woken."""

    class Failing(Worker):
        def __init__(self) -> None:
            super().__init__("toolscore-test-worker")
            self.steps = 0

        def step(self, now_ns: int) -> None:
            self.steps += 1
            if self.steps > 1:
                raise RuntimeError("a bug in a later step")

        def backlog(self) -> bool:
            return self.steps == 1  # work was waiting after the first step only

        def next_deadline_ns(self) -> int | None:
            return None

    worker = Failing()
    worker.start()
    try:
        worker._wake.set()
        assert wait_until(lambda: worker.steps >= 2)
        time.sleep(0.2)
        assert worker.steps == 2  # the failed step left no backlog: the loop waits instead of stepping again
    finally:
        worker._stopping = True
        worker._wake.set()


class _StuckSink(ListSink[SpanRecord]):
    """Holds the worker inside its first `release` until `go` is set, as a downstream that hangs would."""

    def __init__(self) -> None:
        super().__init__()
        self.stuck, self.go = threading.Event(), threading.Event()

    def release(self, carriers: Any) -> None:
        if not self.stuck.is_set():
            self.stuck.set()
            self.go.wait(10)
        super().release(carriers)


def test_spans_queued_behind_a_worker_stuck_past_the_shutdown_timeout_go_on_and_are_counted() -> None:
    """Before, shutdown took them off the queue and, the worker being alive, neither passed them on nor counted them."""
    sink, telemetry = _StuckSink(), Recording()
    first = record("1000000000000001", None, "GET /health", {})
    behind = [record(f"20000000000000{i:02x}", None, f"GET /{i}", {}, trace_id=f"{i + 2:032x}") for i in range(5)]
    with registry_with(TRAVEL) as registry:
        pipeline: Engine[SpanRecord] = Engine(registry, sink, lambda r: r, PipelineConfig(), telemetry)
        pipeline.start()
        assert pipeline.offer(first)
        assert sink.stuck.wait(5)
        for span in behind:
            assert pipeline.offer(span)
        assert pipeline.shutdown(0.2) is False  # the worker is still inside release
        assert sorted(s.span_id for s in sink.released) == sorted(s.span_id for s in behind)
        assert telemetry.counts["dropped:shutdown"] == len(behind)
        sink.go.set()
        assert wait_until(lambda: first in sink.released)
        assert pipeline.stop(5)
    assert sorted(s.span_id for s in sink.released) == sorted(s.span_id for s in [first, *behind])
