"""Steady traffic reaches a steady memory: every structure the pipeline keeps across traces is bounded, and a
long run of traces past every bound leaves its memory flat (measured with tracemalloc, in-process, in seconds).

The structure that outlives its traces is the memory of finished traces' span ids (`FinishedTraces`): it grows
until `max_pending_traces` traces have finished, or `max_finished_bytes` is reached, then turns over. Its
estimate of its own bytes is checked against a measure, since `max_finished_bytes` bounds that estimate.
"""

from __future__ import annotations

import gc
import time
import tracemalloc
from collections.abc import Callable, Sequence
from typing import Any

import pytest
from opentelemetry.proto.trace.v1.trace_pb2 import Span
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import InMemoryMetricReader

from tests.pipeline_builders import TRAVEL, genai_run, registry_with, tool_attrs
from toolscore.collector.extract import Role
from toolscore.collector.extract.conventions import Read
from toolscore.collector.extract.conventions.genai import GenAIExtractor
from toolscore.collector.pipeline import Engine, PipelineConfig
from toolscore.collector.pipeline.group import Admit, TraceStore
from toolscore.collector.sources.otlp_proto import span_record
from toolscore.collector.spans import SpanRecord
from toolscore.collector.telemetry import create_telemetry

MISSING_PARENT = "ffffffffffffffff"


def _decoded(trace: int, span: int, parent: str | None) -> SpanRecord:
    """A tool span decoded from OTLP protobuf, as `toolscore serve` decodes it (fresh id strings per span)."""
    message = Span(
        trace_id=trace.to_bytes(16, "big"),
        span_id=(trace << 16 | span).to_bytes(8, "big"),
        parent_span_id=bytes.fromhex(parent) if parent is not None else b"",
        name=f"execute_tool t{span}",
        start_time_unix_nano=1,
        end_time_unix_nano=2,
    )
    for key, value in tool_attrs(f"t{span}", f"c{span}").items():
        attribute = message.attributes.add()
        attribute.key, attribute.value.string_value = key, value
    return span_record(message, {}, "scope")


def _orphans(trace: int, spans: int) -> list[SpanRecord]:
    """`spans` siblings under a parent that never comes: orphan traffic, no run, finished when it goes idle."""
    return [_decoded(trace, k + 1, MISSING_PARENT) for k in range(spans)]


def _tree(trace: int, spans: int) -> list[SpanRecord]:
    """A root and `spans - 1` children, children first (as they end)."""
    root = f"{trace << 16:016x}"
    return [*(_decoded(trace, k + 1, root) for k in range(spans - 1)), _decoded(trace, 0, None)]


@pytest.mark.parametrize(
    ("shape", "spans"),
    [(_orphans, 1), (_orphans, 3), (_tree, 3), (_tree, 50), (_tree, 2000)],
    ids=["1 orphan", "3 orphans", "tree of 3", "tree of 50", "tree of 2000"],
)
def test_the_finished_traces_estimate_is_within_30_percent_of_their_measured_memory(
    shape: Callable[[int, int], list[SpanRecord]], spans: int
) -> None:
    """`max_finished_bytes` bounds an estimate: ~105 bytes per span id and ~350 per trace, as measured here (the
    spans are decoded while traced, so the id strings the memory keeps of them are counted)."""
    traces = max(10, 6_000 // spans)
    store: TraceStore[Any] = TraceStore(10**9, 10**6)
    gc.collect()
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        for trace in range(1, traces + 1):
            for span in shape(trace, spans):
                admission = store.admit(span, None, 0)
            assert admission.trace is not None
            store.finish(admission.trace)
        del span, admission
        gc.collect()
        taken = tracemalloc.get_traced_memory()[0] - before
    finally:
        tracemalloc.stop()
    assert len(store.finished) == traces
    assert store.finished.ids() == traces * spans
    assert 0.75 <= store.finished.size / taken <= 1.3, f"estimated {store.finished.size:,} B for {taken:,} B taken"


def test_the_memory_of_finished_traces_is_bounded_in_bytes_and_counts_what_it_forgets() -> None:
    """Past `max_finished_bytes`, the oldest finished traces are forgotten, counted by that reason; a span of a
    trace still remembered is a duplicate, one of a forgotten trace is taken as new."""
    forgotten: list[tuple[int, str]] = []
    store: TraceStore[Any] = TraceStore(
        1_000, 100, on_forget=lambda n, reason: forgotten.append((n, reason)), max_finished_bytes=20_000
    )
    for trace in range(1, 41):
        for span in _tree(trace, 10):
            admission = store.admit(span, None, 0)
        assert admission.trace is not None
        store.finish(admission.trace)
        assert store.finished.size <= 20_000
    kept = len(store.finished)
    assert 10 < kept < 40, "the byte bound, not the trace bound, decides"
    assert forgotten == [(10, "max_finished_bytes")] * (40 - kept)
    assert store.admit(_tree(40, 10)[0], None, 0).kind is Admit.DUPLICATE
    assert store.admit(_tree(1, 10)[0], None, 0).kind is Admit.STORED


def test_a_reopened_traces_memory_counts_against_the_pending_bytes_and_goes_back_with_it() -> None:
    store: TraceStore[Any] = TraceStore(1_000, 100)
    for span in _tree(1, 10):
        admission = store.admit(span, None, 0)
    assert admission.trace is not None
    store.finish(admission.trace)
    remembered = store.finished.size
    assert store.size == 0
    late = _decoded(1, 99, MISSING_PARENT)  # a span of the finished trace, under no span it passed on
    reopened = store.admit(late, None, 0)
    assert reopened.kind is Admit.STORED
    assert reopened.trace is not None
    assert store.finished.size == 0
    assert store.size > remembered, "its earlier memory counts while it is pending, with the new span"
    store.finish(reopened.trace)
    assert store.size == 0
    assert store.finished.ids() == 11


class _CountingSink:
    """Counts what leaves the pipeline, keeping nothing: a `ListSink` would itself grow with the traffic."""

    def __init__(self) -> None:
        self.released = self.enriched = 0

    def release(self, carriers: Sequence[Any]) -> None:
        self.released += len(carriers)

    def release_run(self, carrier: Any, enrichment: Any) -> None:
        self.enriched += 1


MAX_TRACES = 300


def _sizes(pipeline: Engine[SpanRecord]) -> dict[str, int]:
    """The length of every structure the engine keeps across traces, and the finished memory's bytes."""
    store = pipeline.store
    return {
        "pending traces": len(store.traces),
        "pending bytes": store.size,
        "finished traces": len(store.finished),
        "finished bytes": store.finished.size,
        "finished ids": store.finished.ids(),
        "refused traces": len(pipeline.refusals),
        "settle deadlines": len(pipeline._settle),
        "idle deadlines": len(pipeline._idle),
        "hold deadlines": len(pipeline._hold),
        "runs in flight": len(pipeline._in_flight),
        "unreadable remembered": len(pipeline.stats._unreadable),
    }


def _counted(reader: InMemoryMetricReader, name: str, **attributes: str) -> float:
    data = reader.get_metrics_data()
    return sum(
        point.value  # type: ignore[union-attr]
        for resource in (data.resource_metrics if data else [])
        for scope in resource.scope_metrics
        for metric in scope.metrics
        if metric.name == name
        for point in metric.data.data_points
        if attributes.items() <= dict(point.attributes or {}).items()
    )


def _reader_fails_on_broken(monkeypatch: pytest.MonkeyPatch) -> None:
    """The GenAI reader raises on `execute_tool broken` spans: spans its convention cannot read, remembered as
    counted per pending trace (`CountedStats`)."""
    read = GenAIExtractor.read

    def failing(self: GenAIExtractor, span: SpanRecord, role: Role) -> Read:
        if span.name == "execute_tool broken":
            raise ValueError("an attribute in a shape the reader does not expect")
        return read(self, span, role)

    monkeypatch.setattr(GenAIExtractor, "read", failing)


def _phase(pipeline: Engine[SpanRecord], reader: InMemoryMetricReader, burst: list[int]) -> None:
    """The `burst` of traces at once, 3 in 4 of them orphans, the rest scored runs, each with a span a full queue
    refused (noted before any of the burst's spans come); then the idle deadlines finish what is pending."""
    for trace in burst:
        pipeline.note_refused(f"{trace:032x}", "00000000000000aa", MISSING_PARENT)
    for n, trace in enumerate(burst):
        if n % 4 == 3:
            spans = genai_run(f"{trace:016x}", ["search_flights", "broken"], trace_id=f"{trace:032x}")
        else:
            spans = _orphans(trace, 3)
        pipeline.offer_all(spans)
    deadline = time.monotonic() + 20
    while (pipeline.backlog() or len(pipeline.store.traces)) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert pipeline.flush(10.0)
    reader.collect()
    gc.collect()


def test_under_steady_traffic_past_every_bound_the_engines_memory_stops_growing(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Orphan traffic (the probe's: spans under a parent that never comes, finished when they go idle), with
    scored runs (one of whose spans its convention cannot read) and spans a full queue refused mixed in, through
    the engine with the real OTel telemetry, in bursts past `max_pending_traces` (the oldest traces pushed out,
    the oldest refused spans forgotten): once every bound is passed, two later phases of as many traces leave
    every structure's size, and the traced memory, where they were."""
    _reader_fails_on_broken(monkeypatch)
    config = PipelineConfig(max_pending_traces=MAX_TRACES, settle_ms=0, trace_idle_timeout_s=0.3, queue_size=100_000)
    reader = InMemoryMetricReader()
    telemetry = create_telemetry(meter_provider=MeterProvider(metric_readers=[reader]))
    sink = _CountingSink()
    traces = iter(range(1, 10**9))

    def burst() -> list[int]:
        return [next(traces) for _ in range(2 * MAX_TRACES)]

    with registry_with(TRAVEL) as registry:
        pipeline: Engine[SpanRecord] = Engine(registry, sink, lambda r: r, config, telemetry)
        pipeline.start()
        try:
            _phase(pipeline, reader, burst())  # fills every bound, before anything is traced
            tracemalloc.start()
            try:
                _phase(pipeline, reader, burst())  # turns every bounded structure over: all it holds is traced
                first, sizes = tracemalloc.take_snapshot(), _sizes(pipeline)
                _phase(pipeline, reader, burst())
                second, later = tracemalloc.take_snapshot(), _sizes(pipeline)
            finally:
                tracemalloc.stop()
        finally:
            pipeline.shutdown(5.0)
    assert _counted(reader, "toolscore.spans", **{"toolscore.drop.reason": "max_pending_traces"}) > 0
    assert _counted(reader, "toolscore.dedupe.forgotten", **{"toolscore.forget.reason": "max_pending_traces"}) > 0
    assert _counted(reader, "toolscore.spans.forgotten") > 0, "refused spans past max_pending_traces traces"
    assert _counted(reader, "toolscore.spans.unreadable") > 0
    assert sink.enriched > 0
    assert sizes["finished traces"] == MAX_TRACES, sizes
    assert sizes["pending traces"] == sizes["refused traces"] == sizes["runs in flight"] == 0, sizes
    pruned = "unreadable remembered"  # let go lazily, at twice the pending traces, and at least 64
    assert sizes.pop(pruned) <= 64
    assert later.pop(pruned) <= 64
    assert later == sizes
    grown = sum(stat.size_diff for stat in second.compare_to(first, "filename"))
    # Dict resizes move it by ~10 KB either way; keeping one id string a trace (~110 B) would add 66 KB.
    assert abs(grown) < 48 * 1024, f"{grown:,} B more after {2 * MAX_TRACES} more traces"
