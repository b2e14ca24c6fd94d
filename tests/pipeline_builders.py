"""Tiny builders for the pipeline tests: GenAI agent runs at a fixed epoch, a registry, a recording telemetry."""

from __future__ import annotations

import threading
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from typing import Any

from opentelemetry import trace as trace_api
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import Span, Tracer

from toolscore.collector.pipeline import Engine, ListSink, Matcher, PipelineConfig, ToolscoreSpanProcessor
from toolscore.collector.registry import Expectation, Registry
from toolscore.collector.registry.stores import MemoryStore
from toolscore.collector.spans import SpanRecord
from toolscore.collector.telemetry import PipelineTelemetry, RunSpanRef
from toolscore.scorers import AgentRun, ScoreResult

EPOCH_NS = 1_767_225_600_000_000_000
OnScored = Callable[[AgentRun, Expectation, ScoreResult, str | None], None]
TRACE = "0af7651916cd43dd8448eb211c80319c"

TRAVEL = {
    "name": "travel",
    "match": {"agent": "travel"},
    "scorers": [
        {"type": "tool_selection", "expected_tool": "book_flight"},
        {"type": "trajectory", "expected": [{"name": "search_flights"}, {"name": "book_flight"}]},
    ],
}


# Three expectations whose names reduce to one key, `travel_book_flight`, beside TRAVEL, whose keys do not collide;
# the third also has two scorers whose names reduce to one (`x`). Each scores `book_flight` against a different tool.
COLLIDING = (
    {
        "name": "travel.book-flight",
        "match": {"agent": "travel"},
        "scorers": [{"type": "tool_selection", "expected_tool": "book_flight"}],
    },
    {
        "name": "travel.book_flight",
        "match": {"agent": "travel"},
        "scorers": [{"type": "tool_selection", "expected_tool": "cancel"}],
    },
    {
        "name": "Travel.Book.Flight",
        "match": {"agent": "travel"},
        "scorers": [
            {"type": "tool_selection", "name": "x", "expected_tool": "refund"},
            {"type": "tool_selection", "name": "X", "expected_tool": "book_flight"},
        ],
    },
)
COLLIDING_LABELS = {
    # Written out, not computed: the suffixes must be these in every process (a BLAKE2b hash, not `hash()`).
    "toolscore.evaluation.travel_book_flight.tool_selection_6572fe.label": "pass",  # travel.book-flight
    "toolscore.evaluation.travel_book_flight.tool_selection_fb8cb1.label": "fail",  # travel.book_flight
    "toolscore.evaluation.travel_book_flight.x_e971a7.label": "fail",  # Travel.Book.Flight, x
    "toolscore.evaluation.travel_book_flight.x_bfcf94.label": "pass",  # Travel.Book.Flight, X
    "toolscore.evaluation.travel.tool_selection.label": "pass",  # TRAVEL: no collision, no suffix
}


def run_attrs(agent: str = "travel", **extra: Any) -> dict[str, Any]:
    return {"gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": agent, **extra}


def tool_attrs(name: str, call_id: str, args: str = "{}") -> dict[str, Any]:
    return {
        "gen_ai.operation.name": "execute_tool",
        "gen_ai.tool.name": name,
        "gen_ai.tool.call.id": call_id,
        "gen_ai.tool.call.arguments": args,
    }


def agent_run(
    tracer: Tracer,
    agent: str = "travel",
    tools: Sequence[str] = ("search_flights", "book_flight"),
    parent: Span | None = None,
    t0: int = EPOCH_NS,
) -> Span:
    """An `invoke_agent` span with one `execute_tool` child per tool, ended in order (children first)."""
    context = trace_api.set_span_in_context(parent) if parent is not None else None
    run = tracer.start_span(f"invoke_agent {agent}", context=context, attributes=run_attrs(agent), start_time=t0)
    inner = trace_api.set_span_in_context(run)
    for i, name in enumerate(tools):
        start = t0 + (i + 1) * 1_000_000
        tool = tracer.start_span(
            f"execute_tool {name}", context=inner, attributes=tool_attrs(name, f"call_{i}"), start_time=start
        )
        tool.end(end_time=start + 500_000)
    run.end(end_time=t0 + (len(tools) + 1) * 1_000_000)
    return run


@contextmanager
def registry_with(*expectations: dict[str, Any]) -> Iterator[Registry]:
    registry = Registry(MemoryStore())
    try:
        for expectation in expectations:
            registry.put(expectation)
        yield registry
    finally:
        registry.close()


@contextmanager
def traced(
    registry: Registry,
    config: PipelineConfig | None = None,
    telemetry: Any = None,
    exporter: InMemorySpanExporter | None = None,
) -> Iterator[tuple[Tracer, ToolscoreSpanProcessor, InMemorySpanExporter]]:
    """A provider whose only processor is toolscore in front of SimpleSpanProcessor(`exporter`, a new
    InMemorySpanExporter by default)."""
    exporter = exporter if exporter is not None else InMemorySpanExporter()
    provider = TracerProvider()
    processor = ToolscoreSpanProcessor(
        registry, SimpleSpanProcessor(exporter), config or PipelineConfig(settle_ms=20), telemetry or Recording()
    )
    provider.add_span_processor(processor)
    try:
        yield provider.get_tracer("toolscore-tests"), processor, exporter
    finally:
        provider.shutdown()


def by_name(spans: Sequence[ReadableSpan]) -> dict[str, ReadableSpan]:
    return {span.name: span for span in spans}


def record(
    span_id: str, parent: str | None, name: str, attributes: dict[str, Any], trace_id: str = TRACE
) -> SpanRecord:
    """A `SpanRecord` carrier for driving the engine directly (its decode is the identity)."""
    start = EPOCH_NS + int(span_id[-4:], 16) * 1000
    return SpanRecord(trace_id, span_id, parent, name, 1, start, start + 500, attributes=attributes, scope="test")


def genai_run(
    run_id: str, tools: Sequence[str], parent: str | None = None, trace_id: str = TRACE, agent: str = "travel"
) -> list[SpanRecord]:
    """The records of one GenAI run of `agent`, children before the run span (as they end)."""
    calls = [
        record(f"{run_id[:12]}{i + 1:04x}", run_id, f"execute_tool {name}", tool_attrs(name, f"c{i}"), trace_id)
        for i, name in enumerate(tools)
    ]
    return [*calls, record(run_id, parent, f"invoke_agent {agent}", run_attrs(agent), trace_id)]


class Recording:
    """A `PipelineTelemetry` that keeps everything it is told, thread-safe, for assertions."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.counts: Counter[str] = Counter()
        self.scores: list[tuple[ScoreResult, str, int, str | None, RunSpanRef | None]] = []
        self.verdicts: list[tuple[str, str | None, bool]] = []
        self.versions: list[str | None] = []
        self.score_versions: list[str | None] = []
        self.delays: list[float] = []
        self.waits: list[tuple[str, float]] = []
        self.judge: Counter[str] = Counter()
        self.outcomes: Counter[str] = Counter()
        self.pending: Callable[[], int] | None = None

    def spans_received(self, n: int) -> None:
        with self.lock:
            self.counts["received"] += n

    def spans_passed(self, n: int) -> None:
        with self.lock:
            self.counts["passed"] += n

    def spans_dropped(self, n: int, reason: str) -> None:
        with self.lock:
            self.counts[f"dropped:{reason}"] += n

    def log_records(self, n: int, outcome: str, reason: str = "") -> None:
        with self.lock:
            self.counts[f"log_records:{outcome}" + (f":{reason}" if reason else "")] += n

    def request_refused(self, reason: str, spans: int | None = None) -> None:
        with self.lock:
            self.counts[f"refused:{reason}"] += 1
            self.counts[f"refused_spans:{reason}"] += spans or 0

    def request_waited(self, seconds: float, outcome: str) -> None:
        with self.lock:
            self.waits.append((outcome, seconds))

    def spans_refused(self, n: int, reason: str) -> None:
        with self.lock:
            self.counts[f"refused_spans:{reason}"] += n

    def late_spans(self, n: int) -> None:
        with self.lock:
            self.counts["late"] += n

    def duplicate_spans(self, n: int) -> None:
        with self.lock:
            self.counts["duplicate"] += n

    def spans_forgotten(self, n: int) -> None:
        with self.lock:
            self.counts["forgotten"] += n

    def calls_dropped(self, n: int, reason: str) -> None:
        with self.lock:
            self.counts[f"calls_dropped:{reason}"] += n

    def spans_unreadable(self, n: int, convention: str) -> None:
        with self.lock:
            self.counts[f"unreadable:{convention}"] += n

    def dedupe_forgotten(self, n: int, reason: str) -> None:
        with self.lock:
            self.counts[f"dedupe_forgotten:{reason}"] += n

    def run_finished(self, outcome: str, agent: str | None) -> None:
        with self.lock:
            self.outcomes[outcome] += 1

    def run_verdict(self, expectation: str, agent: str | None, passed: bool, agent_version: str | None = None) -> None:
        with self.lock:
            self.verdicts.append((expectation, agent, passed))
            self.versions.append(agent_version)

    def score_recorded(
        self,
        result: ScoreResult,
        expectation: str,
        version: int,
        agent: str | None,
        run_span: RunSpanRef | None,
        *,
        agent_version: str | None = None,
    ) -> None:
        with self.lock:
            self.scores.append((result, expectation, version, agent, run_span))
            self.score_versions.append(agent_version)

    def score_delay(self, seconds: float) -> None:
        with self.lock:
            self.delays.append(seconds)

    def judge_outcome(self, outcome: str) -> None:
        with self.lock:
            self.judge[outcome] += 1

    def observe_pending(self, callback: Callable[[], int], limit: int | None = None) -> None:
        self.pending = callback

    def observe_pending_bytes(self, callback: Callable[[], int], limit: int | None = None) -> None:
        pass

    def observe_expectations(self, callback: Callable[[], Any]) -> None:
        pass

    def observe_registry(self, callback: Callable[[], Any]) -> None:
        pass


def wait_until(condition: Callable[[], bool], timeout_s: float = 5.0, poll_s: float = 0.002) -> bool:
    """Poll `condition` until it holds or `timeout_s` passes (a bounded wait, not a timed assertion)."""
    import time

    deadline = time.monotonic() + timeout_s
    while not condition():
        if time.monotonic() > deadline:
            return False
        time.sleep(poll_s)
    return True


@contextmanager
def recording_engine(
    config: PipelineConfig,
    *expectations: dict[str, Any],
    decode: Callable[[SpanRecord], SpanRecord | None] | None = None,
) -> Iterator[tuple[Engine[SpanRecord], ListSink[SpanRecord], Recording]]:
    """The engine over `SpanRecord` carriers (decode the identity unless given), scoring `expectations`
    (default TRAVEL)."""
    telemetry = Recording()
    sink: ListSink[SpanRecord] = ListSink()
    with registry_with(*(expectations or (TRAVEL,))) as registry:
        pipeline: Engine[SpanRecord] = Engine(registry, sink, decode or (lambda r: r), config, telemetry)
        pipeline.start()
        try:
            yield pipeline, sink, telemetry
        finally:
            pipeline.shutdown(5.0)


class HandDriven:
    """An engine built without its thread, stepped by the test at times of its choosing (`at`).

    Nothing happens between two steps: a settle, idle or hold deadline is served by the first step at or
    past it, so a test states "held at 249 ms, scored at 250 ms" exactly, and waits for nothing. Spans
    `offer`ed arrive and are taken at the clock's current time (the last `at`), as the thread takes them
    within a millisecond of their arrival.
    """

    START_NS = 1_000_000_000_000

    def __init__(
        self,
        registry: Matcher,
        config: PipelineConfig,
        on_scored: OnScored | None = None,
        telemetry: PipelineTelemetry | None = None,
        **options: Any,
    ) -> None:
        """`telemetry`: the engine's (default a `Recording`, as `self.telemetry`); `options`: its other keyword
        arguments (`flag_runs_begun_elsewhere`, ...)."""
        self.now_ns = self.START_NS
        self.sink: ListSink[SpanRecord] = ListSink()
        self.telemetry = Recording()
        self.engine: Engine[SpanRecord] = Engine(
            registry,
            self.sink,
            lambda r: r,
            config,
            telemetry or self.telemetry,
            on_scored=on_scored,
            clock=self.clock,
            **options,
        )

    def clock(self) -> int:
        return self.now_ns

    def offer(self, records: Sequence[SpanRecord]) -> None:
        for item in records:
            assert self.engine.offer(item)
        self.engine.step(self.now_ns)

    def at(self, ms: float) -> None:
        """Step the engine `ms` milliseconds after the test's start (time only moves forward)."""
        now = self.START_NS + round(ms * 1_000_000)
        assert now >= self.now_ns, "time only moves forward"
        self.now_ns = now
        self.engine.step(now)


@contextmanager
def hand_driven(
    config: PipelineConfig,
    *expectations: dict[str, Any],
    registry: Callable[[Registry], Matcher] = lambda r: r,
    on_scored: OnScored | None = None,
    telemetry: PipelineTelemetry | None = None,
    **options: Any,
) -> Iterator[HandDriven]:
    """`recording_engine`, without the thread: the test steps it (`HandDriven.at`); `registry` may wrap the
    registry (as `NotingRegistry` does); `telemetry` and `options` go to the engine (see `HandDriven`)."""
    with registry_with(*(expectations or (TRAVEL,))) as store:
        driven = HandDriven(registry(store), config, on_scored, telemetry, **options)
        try:
            yield driven
        finally:
            driven.engine.shutdown(5.0)


class NotingRegistry:
    """The registry, noting every run the engine asks it to match (the runs it scores) and the names matched."""

    def __init__(self, registry: Registry) -> None:
        self.registry = registry
        self.runs: list[AgentRun] = []
        self.matched: dict[str, list[str]] = {}

    def match(self, run: AgentRun) -> list[Expectation]:
        self.runs.append(run)
        found = self.registry.match(run)
        self.matched[run.run_id] = [e.name for e in found]
        return found
