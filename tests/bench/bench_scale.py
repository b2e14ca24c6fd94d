"""Collector throughput and memory as pending traces grow: 1k, 10k, then 100k traces waiting.

The collector's engine is fed as `toolscore serve` feeds it: OTLP protobuf requests, each span a
`(Span, ScopeBlock)` carrier decoded on the worker thread. A pending trace is one `execute_tool`
span (10 attributes, ~200-byte JSON arguments) whose parent, the agent's run span, has not arrived:
the trace waits for its run (idle timeout an hour away), as traces of long agent runs do. At each
level the engine then takes further traffic, bench_extract's complete GenAI agent runs (3-8 calls,
scored with `settle_ms=0` against a matching expectation), and the figure is that traffic's spans
per second of process CPU time, from the first offer to the last span released, scoring included.

`scale.spans_per_s.<n>` has `scale.spans_per_s.1k` as its baseline: a ratio near 1 means the cost
per span does not grow with what is pending. The levels cannot be interleaved (pending traces only
grow), so the ratio is of medians. `scale.bytes_per_pending_trace.<n>` is what the engine holds per
pending trace at that level: tracemalloc over offering the pending traces (not over the traffic).
"""

from __future__ import annotations

import json
import random
import threading
import time
import tracemalloc
from collections.abc import Sequence

from opentelemetry import context
from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import NonRecordingSpan, SpanContext, TraceFlags, set_span_in_context

from tests.bench.bench_extract import EPOCH_NS, _run, _tool
from tests.bench.bench_inprocess import EXPECTATION, RESOURCE
from tests.bench.harness import Bench
from tests.bench.workload import TOOLS, make_args
from toolscore.collector.pipeline import Engine, PipelineConfig, RunEnrichment
from toolscore.collector.registry import Registry
from toolscore.collector.registry.stores import MemoryStore
from toolscore.collector.serve._carrier import Carrier, ResourceBlock, ScopeBlock, decode_carrier

__all__ = ["LEVELS", "measure_levels"]

LEVELS = {"1k": 1_000, "10k": 10_000, "100k": 100_000}
TRAFFIC_RUNS = 200
"""Complete agent runs per timed pass (about 2,000 spans)."""
RUNS = 5
HOUR_MS = 3_600_000.0


class _CountingSink:
    """Counts what the engine releases; keeps nothing, so pending memory is the engine's own."""

    def __init__(self) -> None:
        self.released = 0
        self._cond = threading.Condition()

    def release(self, carriers: Sequence[Carrier]) -> None:
        with self._cond:
            self.released += len(carriers)
            self._cond.notify_all()

    def release_run(self, carrier: Carrier, enrichment: RunEnrichment) -> None:
        self.release((carrier,))

    def wait_for(self, total: int, timeout_s: float = 120.0) -> None:
        deadline = time.monotonic() + timeout_s
        with self._cond:
            while self.released < total:
                left = deadline - time.monotonic()
                assert left > 0, f"the engine released {self.released} of {total} spans in {timeout_s} s"
                self._cond.wait(left)


def _requests(spans: list[ReadableSpan], per_request: int = 500) -> list[ExportTraceServiceRequest]:
    """The spans as received: encoded, serialized and parsed again, `per_request` at a time."""
    return [
        ExportTraceServiceRequest.FromString(encode_spans(spans[i : i + per_request]).SerializeToString())
        for i in range(0, len(spans), per_request)
    ]


def _carriers(requests: list[ExportTraceServiceRequest]) -> list[Carrier]:
    """What `toolscore serve` offers the engine for these requests: one carrier per span."""
    out: list[Carrier] = []
    for request in requests:
        for resource_spans in request.resource_spans:
            resource = ResourceBlock(resource_spans)
            for scope_spans in resource_spans.scope_spans:
                block = ScopeBlock(resource, scope_spans)
                out.extend((span, block, None) for span in scope_spans.spans)
    return out


class _Spans:
    """Makes the benchmark's spans with the real SDK, every trace new."""

    def __init__(self, seed: int = 21) -> None:
        self.rng = random.Random(seed)
        self.exporter = InMemorySpanExporter()
        provider = TracerProvider(resource=RESOURCE)
        provider.add_span_processor(SimpleSpanProcessor(self.exporter))
        self.tracer = provider.get_tracer("opentelemetry.instrumentation.openai_agents", "0.9.0")
        self.t = EPOCH_NS

    def _take(self) -> list[Carrier]:
        spans = list(self.exporter.get_finished_spans())
        self.exporter.clear()
        return _carriers(_requests(spans))

    def pending(self, n: int) -> list[Carrier]:
        """`n` traces, each one tool span under a run span that has not arrived."""
        rng = self.rng
        for _ in range(n):
            parent = SpanContext(rng.getrandbits(128), rng.getrandbits(64), True, TraceFlags(TraceFlags.SAMPLED))
            token = context.attach(set_span_in_context(NonRecordingSpan(parent)))
            try:
                call = (f"call_{rng.getrandbits(32):x}", rng.choice(TOOLS), _args(rng))
                _tool(self.tracer, rng, self.t, call, fail=False)
            finally:
                context.detach(token)
            self.t += 1_000_000
        return self._take()

    def runs(self, n: int) -> list[Carrier]:
        """`n` complete agent runs."""
        for _ in range(n):
            _run(self.tracer, self.rng, self.t)
            self.t += 10**9
        return self._take()


def _args(rng: random.Random) -> str:
    return json.dumps(make_args(rng))


class _Scale:
    def __init__(self, registry: Registry, levels: dict[str, int], traffic_runs: int) -> None:
        self.levels, self.traffic_runs = levels, traffic_runs
        self.sink = _CountingSink()
        config = PipelineConfig(
            settle_ms=0,
            trace_idle_timeout_s=HOUR_MS / 1000,
            max_hold_ms=HOUR_MS,
            max_pending_traces=2 * max(levels.values()),
            max_pending_bytes=1 << 40,  # every trace stays pending: 100,000 of them pass the default 128 MiB
            queue_size=max(levels.values()) + 10_000,
        )
        self.engine: Engine[Carrier] = Engine(registry, self.sink, decode_carrier, config)
        self.engine.start()
        self.spans = _Spans()
        self.offered = 0

    def offer(self, carriers: list[Carrier]) -> None:
        offer = self.engine.offer
        for carrier in carriers:
            assert offer(carrier), "the engine's queue holds every span offered"
        self.offered += len(carriers)
        self.sink.wait_for(self.offered)

    def traffic_pass(self, carriers: list[Carrier]) -> float:
        start = time.process_time()
        self.offer(carriers)
        return len(carriers) / (time.process_time() - start)

    def fill(self, carriers: list[Carrier]) -> int:
        """Offer pending traces; the bytes the engine holds for them afterwards (tracemalloc, this call only)."""
        tracemalloc.start()
        before = tracemalloc.get_traced_memory()[0]
        self.offer(carriers)
        held = tracemalloc.get_traced_memory()[0] - before
        tracemalloc.stop()
        return held

    def run(self, b: Bench, runs: int) -> None:
        held = pending = 0
        first = next(iter(self.levels))
        for _ in range(2):  # warm-up before the first level: caches, first scorer set-up
            self.traffic_pass(self.spans.runs(self.traffic_runs))
        for label, n in self.levels.items():
            held += self.fill(self.spans.pending(n - pending))
            pending = n
            assert len(self.engine.store) >= n, f"{n} traces pending, {len(self.engine.store)} in the store"
            batches = [self.spans.runs(self.traffic_runs) for _ in range(runs + 1)]
            samples = [self.traffic_pass(batch) for batch in batches][1:]  # the first is warm-up
            assert len(self.engine.store) == n, "the traffic's traces are all scored and finished"
            baseline = None if label == first else f"scale.spans_per_s.{first}"
            b.record(f"scale.spans_per_s.{label}", samples, unit="spans/s", baseline=baseline)
            b.record(f"scale.bytes_per_pending_trace.{label}", [held / n], unit="B", higher_is_better=False)


def measure_levels(b: Bench, levels: dict[str, int], traffic_runs: int, runs: int) -> None:
    registry = Registry(MemoryStore())
    try:
        registry.put(EXPECTATION)
        scale = _Scale(registry, levels, traffic_runs)
        try:
            scale.run(b, runs)
        finally:
            scale.engine.shutdown(30)
    finally:
        registry.close()


def bench(b: Bench, *, quick: bool = False) -> None:
    """`quick`: 10 and 100 pending traces, a few runs of traffic, for the smoke test."""
    if quick:
        measure_levels(b, {"10": 10, "100": 100}, traffic_runs=5, runs=1)
    else:
        measure_levels(b, LEVELS, TRAFFIC_RUNS, RUNS)
