"""In-process cost of the toolscore span processor, beside the same tracer with only `BatchSpanProcessor`.

The workload is the extraction benchmark's GenAI agent runs (an `invoke_agent` span, `chat` spans,
3-8 `execute_tool` spans with ~200-byte JSON arguments, 10-15 attributes per span), made live with
the real SDK. Cost per span is process CPU time (every thread: the app's, toolscore's worker, the
batch processor's) from the first span to the end of `force_flush`, so scoring is included; the
app-thread figures count only the thread that ends the spans, and the `.gc` figures the part of either
that garbage collection passes took (`gc.callbacks`). Exports go to an exporter that
discards. The processor runs with its own OTel telemetry on an SDK `MeterProvider` (one for the
process, read in memory) and the global logger provider, as `ToolscoreSpanProcessor(registry, next)`
does in an application that set up metrics: not with the tests' `Recording`, which keeps every
score it is told and so would make the garbage collector walk them all. Score delay is wall time
from a run span's arrival to its scores, with `settle_ms=50` and runs paced 5 ms apart. Memory is
tracemalloc over 10,000 pending one-run traces (the held run
spans themselves belong to the application and are not counted). `inprocess.on_end_plain` is `on_end` alone on
plain spans, the compiled gate against the Python `on_end` (`_plain_on_end`).
"""

from __future__ import annotations

import gc
import os
import random
import statistics
import threading
import time
import tracemalloc
from collections.abc import Callable, Sequence
from unittest import mock

from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import InMemoryMetricReader
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import ReadableSpan, SpanProcessor, TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor, SimpleSpanProcessor, SpanExporter, SpanExportResult
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from tests.bench.bench_extract import EPOCH_NS
from tests.bench.bench_extract import _run as agent_run
from tests.bench.harness import Bench
from tests.bench.mixed import AGENT_SCOPE, Tracers, generated_spans, play_mixed
from tests.pipeline_builders import Recording
from toolscore.collector.pipeline import Engine, PipelineConfig, RunEnrichment, ToolscoreSpanProcessor
from toolscore.collector.registry import Registry
from toolscore.collector.registry.stores import MemoryStore
from toolscore.collector.sources import spans_from_readable
from toolscore.collector.spans import SpanRecord
from toolscore.collector.telemetry import NoopTelemetry, create_telemetry
from toolscore.scorers._accel import PURE_PYTHON_ENV

RUNS = 300
COST_RUNS = 1500
"""Runs per timed pass of the cost figures (~15,600 spans): each side meets several full collections."""
MIXED_SPANS = 16_000
"""Spans per timed pass of the mixed loads, about as many as the all-agent load's `COST_RUNS` runs."""
RESOURCE = Resource.create({"service.name": "travel-agent", "deployment.environment": "prod"})
EXPECTATION = {
    "name": "travel",
    "match": {"agent": "travel-agent"},
    "scorers": [
        {"type": "tool_selection", "expected_tool": "search_flights"},
        {"type": "trajectory", "mode": "unordered", "expected": [{"name": "search_flights"}, {"name": "get_weather"}]},
    ],
}


class _Discard(SpanExporter):
    def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
        return SpanExportResult.SUCCESS


class _DiscardSink:
    def release(self, carriers: Sequence[ReadableSpan]) -> None:
        pass

    def release_run(self, carrier: ReadableSpan, enrichment: RunEnrichment) -> None:
        pass


def _play(provider: TracerProvider, runs: int, pace_s: float = 0.0, seed: int = 5) -> None:
    tracer = provider.get_tracer("opentelemetry.instrumentation.openai_agents", "0.9.0")
    rng = random.Random(seed)
    for r in range(runs):
        agent_run(tracer, rng, EPOCH_NS + r * 10**9)
        if pace_s:
            time.sleep(pace_s)


def _span_count(workload: int) -> int:
    exporter = InMemorySpanExporter()
    provider = TracerProvider(resource=RESOURCE)
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    _play(provider, workload)
    provider.shutdown()
    return len(exporter.get_finished_spans())


class _GcTime:
    """The CPU time garbage collection passes take while installed (`gc.callbacks`): on every thread, and on one.

    A pass runs on whichever thread's allocation crossed the collector's threshold, and walks every young
    object, whoever made it: so the objects a processor keeps show on the thread that ends spans too.
    """

    def __init__(self, thread: int) -> None:
        self.thread = thread
        self.total = self.on_thread = 0.0
        self._started: dict[int, float] = {}

    def __enter__(self) -> _GcTime:
        gc.callbacks.append(self._callback)
        return self

    def __exit__(self, *exc: object) -> None:
        gc.callbacks.remove(self._callback)

    def _callback(self, phase: str, info: dict[str, int]) -> None:
        ident = threading.get_ident()
        if phase == "start":
            self._started[ident] = time.thread_time()
            return
        started = self._started.pop(ident, None)
        if started is not None:
            took = time.thread_time() - started
            self.total += took
            if ident == self.thread:
                self.on_thread += took


def _cost(
    make: Callable[[], SpanProcessor], spans: int, play: Callable[[TracerProvider], object]
) -> tuple[float, float, float, float]:
    """(process CPU µs per span, app-thread CPU µs per span, and of each the garbage collector's) for one pass.

    Each pass starts from a full collection, untimed, and is long enough (`COST_RUNS`) to trigger the
    collector's full passes itself: otherwise the baseline's garbage is collected in whichever pass
    the collector's counters happen to cross their threshold, which with these pass lengths was
    always the toolscore pass (measured: the baseline alone has a full collection every 2-3 passes).
    """
    gc.collect()
    provider = TracerProvider(resource=RESOURCE)
    provider.add_span_processor(make())
    with _GcTime(threading.get_ident()) as collected:
        cpu, thread = time.process_time(), time.thread_time()
        play(provider)
        thread = time.thread_time() - thread
        provider.force_flush(60_000)
        cpu = time.process_time() - cpu
    provider.shutdown()
    return cpu / spans * 1e6, thread / spans * 1e6, collected.total / spans * 1e6, collected.on_thread / spans * 1e6


def _costs(b: Bench, registry: Registry, workload: int, runs: int = 7) -> None:
    """The all-agent load: bench_extract's runs alone, every span an agent's."""
    spans = _span_count(workload)
    samples = _alternated(registry, spans, lambda provider: _play(provider, workload), runs, variants=False)
    base, ours = samples["baseline"], samples["toolscore"]
    for which, prefix in enumerate(("inprocess", "inprocess.app_thread", "inprocess.gc", "inprocess.app_thread.gc")):
        _paired(b, prefix, [s[which] for s in base], [s[which] for s in ours])
    b.target("inprocess.us_per_span", "<=", 1.6)
    b.target("inprocess.app_thread.us_per_span", "<=", 1.05)


def _mixed_costs(b: Bench, registry: Registry, spans: int, runs: int = 7) -> None:
    """The mixed loads (`mixed`): 10% and 1% agent spans among the service's HTTP and database spans.

    Each pass of toolscore with its pre-filter follows a pass of toolscore without it
    (`PipelineConfig.prefilter`), which follows a baseline pass, so the pre-filter's effect is in the same run.
    """
    for share, name in ((0.10, "mixed10"), (0.01, "mixed1")):
        ended, _ = generated_spans(share, spans)
        total = len(ended)
        del ended
        samples = _alternated(registry, total, lambda provider, s=share: play_mixed(Tracers(provider), s, spans), runs)
        base, ours, unfiltered = samples["baseline"], samples["toolscore"], samples["no_prefilter"]
        for which, prefix in ((0, f"inprocess.{name}"), (1, f"inprocess.{name}.app_thread")):
            _paired(b, f"{prefix}.no_prefilter", [s[which] for s in base], [s[which] for s in unfiltered])
            _paired(b, prefix, [s[which] for s in base], [s[which] for s in ours])
        for which, prefix in ((2, f"inprocess.{name}.gc"), (3, f"inprocess.{name}.app_thread.gc")):
            _paired(b, prefix, [s[which] for s in base], [s[which] for s in ours])
        b.target(f"inprocess.{name}.us_per_span", "<=", 1.25 if share == 0.10 else 1.05)
        b.target(f"inprocess.{name}.app_thread.us_per_span", "<=", 1.05)


def _alternated(
    registry: Registry, spans: int, play: Callable[[TracerProvider], object], runs: int, *, variants: bool = True
) -> dict[str, list[tuple[float, float, float, float]]]:
    """Each variant's `_cost` figures per pass, passes interleaved, the first (warm-up) left out."""

    def baseline() -> SpanProcessor:
        return BatchSpanProcessor(_Discard())

    meters = MeterProvider(metric_readers=[InMemoryMetricReader()])

    def toolscore(prefilter: bool = True) -> SpanProcessor:
        return ToolscoreSpanProcessor(
            registry,
            BatchSpanProcessor(_Discard()),
            PipelineConfig(prefilter=prefilter),
            telemetry=create_telemetry(meter_provider=meters),
        )

    makers: dict[str, Callable[[], SpanProcessor]] = {"baseline": baseline, "toolscore": toolscore}
    if variants:
        makers = {"baseline": baseline, "no_prefilter": lambda: toolscore(False), "toolscore": toolscore}
    samples: dict[str, list[tuple[float, float, float, float]]] = {name: [] for name in makers}
    for _ in range(runs + 1):  # interleaved, so drift on a shared machine hits both alike; the first is warm-up
        for name, make in makers.items():
            samples[name].append(_cost(make, spans, play))
    meters.shutdown()
    return {name: values[1:] for name, values in samples.items()}


def _paired(b: Bench, prefix: str, base: list[float], ours: list[float]) -> None:
    """Both figures, the ratio being the median of the per-pair ratios (as `Bench.pair` does).

    The machine's load drifts over seconds by more than the effect measured; each measured pass runs
    right after its baseline pass, so the ratio of the two is steadier than the ratio of two medians.
    """
    baseline = f"{prefix}.baseline.us_per_span"
    b.record(baseline, base, unit="us", higher_is_better=False)
    b.record(f"{prefix}.us_per_span", ours, unit="us", baseline=baseline, higher_is_better=False)
    ratios = [o / s for o, s in zip(ours, base, strict=True)]
    figure = b.figures[f"{prefix}.us_per_span"]
    figure.ratio = statistics.median(ratios)
    print(f"{prefix + '.ratio':<55} {figure.ratio:.2f}x  (median of pairs; pairs {min(ratios):.2f}-{max(ratios):.2f})")


def _plain_on_end(b: Bench, registry: Registry, spans: int, runs: int = 9) -> None:
    """`on_end` alone on the mixed load's plain spans: with the compiled gate (`span_gate`), and with the Python
    `on_end` deciding every span (`TOOLSCORE_PURE_PYTHON`, as without a C compiler), timed alternately.

    The spans are ended beforehand and `next` is the SDK's no-op `SpanProcessor`, so the figure is what the
    processor adds to the application's thread per plain span, with nothing else around it (in a service, the
    span's own making evicts caches between two calls, and each costs more: compare the `mixed` figures' app
    thread).
    """
    ended, _ = generated_spans(0.0, spans)
    agent_traces = {span.context.trace_id for span in ended if span.instrumentation_scope.name == AGENT_SCOPE}
    plain = [span for span in ended if span.context.trace_id not in agent_traces]
    gated = ToolscoreSpanProcessor(registry, SpanProcessor(), telemetry=NoopTelemetry())
    with mock.patch.dict(os.environ, {PURE_PYTHON_ENV: "1"}):
        python = ToolscoreSpanProcessor(registry, SpanProcessor(), telemetry=NoopTelemetry())
    assert "on_end" in vars(gated), "the compiled gate is not built"
    assert "on_end" not in vars(python)
    repeat = 20

    def ends(processor: ToolscoreSpanProcessor) -> Callable[[], None]:
        def run() -> None:
            on_end = processor.on_end
            for _ in range(repeat):
                for span in plain:
                    on_end(span)

        return run

    try:
        b.pair(
            "inprocess.on_end_plain.spans_per_s",
            ends(gated),
            "inprocess.on_end_plain.python.spans_per_s",
            ends(python),
            len(plain) * repeat,
            unit="spans/s",
            runs=runs,
        )
    finally:
        gated.shutdown()
        python.shutdown()


def _delays(b: Bench, registry: Registry, runs: int = 200) -> None:
    telemetry = Recording()
    provider = TracerProvider(resource=RESOURCE)
    config = PipelineConfig(settle_ms=50)
    provider.add_span_processor(ToolscoreSpanProcessor(registry, BatchSpanProcessor(_Discard()), config, telemetry))
    _play(provider, runs, pace_s=0.005)
    deadline = time.monotonic() + 30
    while len(telemetry.delays) < runs and time.monotonic() < deadline:
        time.sleep(0.01)
    provider.shutdown()
    ms = sorted(d * 1000 for d in telemetry.delays)
    cuts = statistics.quantiles(ms, n=100)
    b.record("pipeline.score_delay_ms.p50", [statistics.median(ms)], unit="ms", higher_is_better=False)
    b.record("pipeline.score_delay_ms.p99", [cuts[98]], unit="ms", higher_is_better=False)


def _pending_memory(b: Bench, registry: Registry, runs: int = 10_000) -> None:
    exporter = InMemorySpanExporter()
    provider = TracerProvider(resource=RESOURCE)
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    _play(provider, runs, seed=9)
    spans = list(exporter.get_finished_spans())
    provider.shutdown()
    hour = 3_600_000.0
    config = PipelineConfig(
        settle_ms=hour,
        max_hold_ms=hour,
        trace_idle_timeout_s=hour,
        max_pending_traces=runs * 2,
        max_pending_bytes=1 << 40,  # measured, not bounded: every run stays pending
        queue_size=len(spans),
    )

    def decode(span: ReadableSpan) -> SpanRecord | None:
        records = spans_from_readable((span,))
        return records[0] if records else None

    tracemalloc.start()
    engine: Engine[ReadableSpan] = Engine(registry, _DiscardSink(), decode, config, Recording())
    engine.start()
    before = tracemalloc.get_traced_memory()[0]
    for span in spans:
        engine.offer(span)
    while len(engine.intake) or len(engine.store) < runs:
        time.sleep(0.01)
    time.sleep(0.05)
    held = tracemalloc.get_traced_memory()[0] - before
    tracemalloc.stop()
    engine.shutdown(30)
    b.record("memory.bytes_per_pending_span", [held / len(spans)], unit="B", higher_is_better=False)
    b.record("memory.bytes_per_pending_run", [held / runs], unit="B", higher_is_better=False)


def bench(b: Bench, *, quick: bool = False) -> None:
    """`quick`: a few runs of each measurement, for the smoke test."""
    registry = Registry(MemoryStore())
    try:
        registry.put(EXPECTATION)
        if quick:
            _costs(b, registry, workload=10, runs=1)
            _mixed_costs(b, registry, spans=2_000, runs=1)
            _plain_on_end(b, registry, spans=500, runs=1)
            _delays(b, registry, runs=10)
            _pending_memory(b, registry, runs=50)
        else:
            _costs(b, registry, workload=COST_RUNS)
            _mixed_costs(b, registry, spans=MIXED_SPANS)
            _plain_on_end(b, registry, spans=4_000)
            _delays(b, registry)
            _pending_memory(b, registry)
    finally:
        registry.close()
