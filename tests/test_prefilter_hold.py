"""The pre-filter in `serve` behind a Collector: a trace's spans in any order, plain ancestors first, change no score.

Every capture of tests/testdata/traces is replayed into `CollectorPipeline` among plain HTTP and database
traces of another service, each trace's spans shuffled and its plain spans (those no convention marker is on,
which includes the ancestors extraction walks through) sent before its first marked span, in requests of 1-7
spans that mix traces. With the pre-filter on (the default) the runs, their calls and their scores must be
those of `prefilter: false`, and every span must reach the real OTLP receiver downstream exactly once, as
received (run spans with the same scores). A capture gets an HTTP server span above its root, so that its
root is plain too and arrives first, and one synthetic run has a plain span between its run span and its tool
spans, which extraction must walk through.
"""

from __future__ import annotations

import random
import time
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.proto.common.v1.common_pb2 import InstrumentationScope
from opentelemetry.proto.resource.v1.resource_pb2 import Resource
from opentelemetry.proto.trace.v1.trace_pb2 import Span
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import set_span_in_context

from tests.bench.bench_extract import EPOCH_NS
from tests.bench.mixed import Tracers, plain_trace
from tests.capture_replay import CAPTURES, captures_expectations
from tests.otlp_downstream import GrpcDownstream, spans_of
from tests.pipeline_builders import Recording, registry_with, run_attrs, tool_attrs
from toolscore.collector.pipeline.markers import convention_markers
from toolscore.collector.registry import Registry
from toolscore.collector.serve._encode import without_spans
from toolscore.collector.serve._pipeline import CollectorPipeline
from toolscore.collector.serve._pipeline_config import ServePipelineConfig
from toolscore.collector.serve._prefilter import span_offsets
from toolscore.collector.serve.forward import ForwardConfig
from toolscore.collector.serve.forward._forwarder import Forwarder
from toolscore.collector.serve.receivers._ingest import IngestResult
from toolscore.collector.serve.scores import ScoreStoreConfig, query_runs
from toolscore.collector.serve.scores._store import ScoreStore
from toolscore.collector.sources._accel import checked_table

Item = tuple[Resource, InstrumentationScope, Span]
SETTLE_MS = 3_000.0
"""Longer than the replay takes: without the pre-filter too, every span of a trace comes within a settle of its root."""
CHAIN = {"name": "chain", "match": {"agent": "chain"}, "scorers": [{"type": "trajectory", "expected": [{"name": "a"}]}]}


def _items(request: ExportTraceServiceRequest) -> list[Item]:
    return [(rs.resource, ss.scope, span) for rs, ss, span in spans_of([request])]


def _with_plain_root(items: list[Item], rng: random.Random) -> list[Item]:
    """The capture's spans under one HTTP server span of its service (its roots become children of it)."""
    roots = [span for _, _, span in items if not span.parent_span_id]
    resource = items[0][0]
    root = Span(
        trace_id=roots[0].trace_id,
        span_id=rng.randbytes(8),
        name="POST /agent",
        kind=Span.SPAN_KIND_SERVER,
        start_time_unix_nano=min(s.start_time_unix_nano for _, _, s in items) - 1_000,
        end_time_unix_nano=max(s.end_time_unix_nano for _, _, s in items) + 1_000,
    )
    root.attributes.add(key="http.request.method").value.string_value = "POST"
    root.attributes.add(key="http.route").value.string_value = "/agent"
    moved = []
    for resource_of, scope, span in items:
        if not span.parent_span_id and span.trace_id == root.trace_id:
            child = Span.FromString(span.SerializeToString())
            child.parent_span_id = root.span_id
            moved.append((resource_of, scope, child))
        else:
            moved.append((resource_of, scope, span))
    return [(resource, InstrumentationScope(name="opentelemetry.instrumentation.fastapi"), root), *moved]


def _plain_first(items: list[Item], rng: random.Random) -> list[Item]:
    """Each trace's plain spans, shuffled, then its marked ones, shuffled: the worst order for the pre-filter."""
    markers = convention_markers()
    assert markers is not None
    plain, marked = [], []
    for item in items:
        _, scope, span = item
        (marked if markers.marks(scope.name, (kv.key for kv in span.attributes)) else plain).append(item)
    rng.shuffle(plain)
    rng.shuffle(marked)
    assert marked
    return plain + marked


def _chain_run() -> ExportTraceServiceRequest:
    """invoke_agent chain → POST /internal (plain) → execute_tool a: the tool is found through the plain span only."""
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    agent, http = provider.get_tracer("agent-app"), provider.get_tracer("opentelemetry.instrumentation.httpx")
    run = agent.start_span("invoke_agent chain", attributes=run_attrs("chain"))
    hop = http.start_span("POST /internal", set_span_in_context(run), attributes={"http.request.method": "POST"})
    agent.start_span("execute_tool a", set_span_in_context(hop), attributes=tool_attrs("a", "c1")).end()
    hop.end()
    run.end()
    provider.shutdown()
    return encode_spans(exporter.get_finished_spans())


def _requests(seed: int, grouped: bool) -> list[ExportTraceServiceRequest]:
    """Every capture (under a plain root) and the chain run, plain spans first, among plain traces, in requests of
    1-7 spans that mix them (`grouped`: a request's spans of one resource and scope share their blocks, as a
    Collector's batches do; else each span has blocks of its own)."""
    rng = random.Random(seed)
    sequences = []
    for path in sorted(p for p in CAPTURES.glob("*/*.pb") if not p.name.endswith(".logs.pb")):
        items = _items(ExportTraceServiceRequest.FromString(path.read_bytes()))
        sequences.append(_plain_first(_with_plain_root(items, rng), rng))
    sequences.append(_plain_first(_items(_chain_run()), rng))
    plain_items = _items(encode_spans(_plain_spans(600, seed)))
    requests = []
    for sequence in sequences:
        rest = list(sequence)
        while rest:
            size = rng.randint(1, 7)
            chunk, rest = rest[:size], rest[size:]
            chunk += [plain_items.pop() for _ in range(min(len(plain_items), rng.randint(0, 3)))]
            rng.shuffle(chunk)
            requests.append(_request(chunk, grouped))
            if plain_items and rng.random() < 0.3:  # a request of plain traces only, forwarded whole when plain
                requests.append(_request([plain_items.pop() for _ in range(min(len(plain_items), 5))], grouped))
    if plain_items:
        requests.append(_request(plain_items, grouped))
    return requests


def _request(items: list[Item], grouped: bool = False) -> ExportTraceServiceRequest:
    request = ExportTraceServiceRequest()
    resources: dict[bytes, Any] = {}
    blocks: dict[tuple[bytes, bytes], Any] = {}
    for resource, scope, span in items:
        key = (resource.SerializeToString(), scope.SerializeToString())
        scope_spans = blocks.get(key) if grouped else None
        if scope_spans is None:
            resource_spans = resources.get(key[0]) if grouped else None
            if resource_spans is None:
                resource_spans = resources[key[0]] = request.resource_spans.add()
                resource_spans.resource.CopyFrom(resource)
            scope_spans = blocks[key] = resource_spans.scope_spans.add()
            scope_spans.scope.CopyFrom(scope)
        scope_spans.spans.append(span)
    return request


@pytest.fixture(scope="module")
def registry(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Registry]:
    path = tmp_path_factory.mktemp("expectations") / "captures.yaml"
    captures_expectations(path)
    with registry_with(CHAIN, *yaml.safe_load(path.read_text())["expectations"]) as registry:
        yield registry


def _accept(pipeline: CollectorPipeline, request: ExportTraceServiceRequest, unparsed: bool) -> IngestResult:
    """The request as a receiver gives it: `accept_bytes` first when `unparsed` (its answer, when it has one:
    the request read from its bytes alone), else `accept` of the parsed request. Where the compiled walks are
    built, every request here is one `accept_bytes` answers (checked, so that the parse is not what ran)."""
    data = request.SerializeToString()
    answer = pipeline.accept_bytes(data, 10_000) if unparsed else None
    assert answer is not None or not unparsed or checked_table is None
    return answer if answer is not None else pipeline.accept(request, data)


def _replay(
    registry: Registry, requests: list[ExportTraceServiceRequest], prefilter: bool, store: Path, unparsed: bool = False
) -> Any:
    downstream = GrpcDownstream()
    forwarder = Forwarder(ForwardConfig(endpoint=downstream.endpoint, batch_timeout_ms=5.0))
    config = ServePipelineConfig(settle_ms=SETTLE_MS, prefilter=prefilter)
    telemetry = Recording()
    pipeline = CollectorPipeline(
        registry, forwarder, config, telemetry, ScoreStore(ScoreStoreConfig(path=str(store), write_interval_ms=10))
    )
    try:
        for request in requests:
            assert not _accept(pipeline, request, unparsed).overloaded
        assert pipeline.flush(30)
    finally:
        pipeline.shutdown(5)
        downstream.stop()
    runs = {
        (run.trace_id, run.span_id): (
            run.agent,
            [call["name"] for call in run.calls],
            run.incomplete,
            sorted((s.expectation, s.scorer, s.value, s.label, s.explanation) for s in run.scores),
        )
        for run in query_runs(store, limit=100_000)
    }
    forwarded = Counter(
        (span.trace_id, span.span_id, span.name, _scores(span)) for _, _, span in spans_of(downstream.requests)
    )
    return runs, forwarded, telemetry


def _scores(span: Span) -> tuple[tuple[str, str], ...]:
    return tuple(
        sorted((kv.key, str(kv.value).strip()) for kv in span.attributes if kv.key.startswith("toolscore.evaluation"))
    )


@pytest.mark.parametrize(
    ("seed", "grouped", "unparsed"),
    [(3, False, False), (17, True, False), (23, True, True)],
    ids=["own blocks", "shared blocks", "shared blocks, read from the bytes"],
)
def test_with_plain_ancestors_first_the_prefilter_scores_every_capture_as_without_it(
    registry: Registry, tmp_path: Path, seed: int, grouped: bool, unparsed: bool
) -> None:
    """`unparsed`: as the receivers send binary requests, each is offered from its bytes first, so that the mixed
    ones go the compiled walk's way (`checked_table`, `bytes_carriers`) rather than the parse's."""
    requests = _requests(seed, grouped)
    sent = Counter((span.trace_id, span.span_id) for _, _, span in spans_of(requests))
    runs, forwarded, telemetry = _replay(registry, requests, True, tmp_path / "on.db", unparsed)
    unfiltered_runs, unfiltered, _ = _replay(registry, requests, False, tmp_path / "off.db")
    assert len(unfiltered_runs) > 20
    assert runs == unfiltered_runs
    chain = [value for value in runs.values() if value[0] == "chain"]
    assert chain == [("chain", ["a"], False, [("chain", "trajectory", 1.0, "pass", chain[0][3][0][4])])]
    assert Counter((trace_id, span_id) for trace_id, span_id, _, _ in forwarded.elements()) == sent  # exactly once
    assert forwarded == unfiltered  # the run spans carry the same scores
    assert telemetry.counts["received"] == telemetry.counts["passed"] == sum(sent.values())


@pytest.mark.parametrize("unparsed", [False, True], ids=["parsed", "read from the bytes"])
def test_the_plain_spans_of_a_mixed_request_go_on_together_as_the_received_request_without_the_others(
    registry: Registry, unparsed: bool
) -> None:
    """A request whose spans part ways (one agent trace among plain ones, in one scope block): its plain spans are
    held as one request, the received bytes without the agent trace's spans, and forwarded as such."""
    rng = random.Random(5)
    plain, agent = _items(encode_spans(_plain_spans(30, 5))), _items(_chain_run())
    resource, scope = plain[0][0], plain[0][1]
    mixed = [(resource, scope, span) for _, _, span in plain + agent]
    rng.shuffle(mixed)
    request = _request(mixed, grouped=True)
    assert len(request.resource_spans) == len(request.resource_spans[0].scope_spans) == 1
    data = request.SerializeToString()
    chain_trace = agent[0][2].trace_id
    cut = [i for i, (_, _, span) in enumerate(spans_of([request])) if span.trace_id == chain_trace]
    offsets = span_offsets(data)
    assert offsets is not None
    expected = ExportTraceServiceRequest.FromString(without_spans(data, offsets, cut))
    downstream = GrpcDownstream()
    forwarder = Forwarder(ForwardConfig(endpoint=downstream.endpoint, batch_timeout_ms=5.0))
    pipeline = CollectorPipeline(registry, forwarder, ServePipelineConfig(settle_ms=100.0), Recording(), None)
    try:
        assert _accept(pipeline, request, unparsed) == IngestResult()
        assert pipeline.flush(30)
    finally:
        pipeline.shutdown(5)
        downstream.stop()
    plain_requests = [r for r in downstream.requests if any(s.trace_id != chain_trace for _, _, s in spans_of([r]))]
    assert plain_requests == [expected]
    assert len(_spans_of(expected)) == len(plain)
    forwarded_chain = [s for _, _, s in spans_of(downstream.requests) if s.trace_id == chain_trace]
    assert len(forwarded_chain) == len(agent)


def _spans_of(request: ExportTraceServiceRequest) -> list[Span]:
    return [span for _, _, span in spans_of([request])]


class _Out:
    """What a `PlainHold` lets go of: requests forwarded whole, spans released one by one."""

    def __init__(self) -> None:
        self.whole: list[bytes] = []
        self.spans: list[Any] = []
        self.telemetry = Recording()

    def hold(self, settle_ms: float = 30.0, hold_ms: float = 5_000.0, max_bytes: int = 1 << 20) -> Any:
        from toolscore.collector.serve._hold import PlainHold
        from toolscore.collector.serve._pipeline import _split_request

        return PlainHold(
            settle_ms=settle_ms,
            hold_ms=hold_ms,
            max_bytes=max_bytes,
            forward=lambda data, spans: self.whole.append(data),
            release=self.spans.extend,
            split=_split_request,
            telemetry=self.telemetry,
        )


def _plain_spans(spans: int, seed: int) -> list[Any]:
    """HTTP requests of a service with no agent in them (`mixed.plain_trace`), as the SDK ends them."""
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    tracers, rng = Tracers(provider), random.Random(seed)
    ended = k = 0
    while ended < spans:
        ended += plain_trace(tracers, rng, EPOCH_NS + k * 10**9)
        k += 1
    provider.shutdown()
    return list(exporter.get_finished_spans())


def _plain_request(seed: int, spans: int = 12) -> tuple[ExportTraceServiceRequest, bytes]:
    request = encode_spans(_plain_spans(spans, seed))
    return request, request.SerializeToString()


def _trace_roots(request: ExportTraceServiceRequest) -> list[tuple[bytes, bool]]:
    return [(span.trace_id, not span.parent_span_id) for _, _, span in spans_of([request])]


def _hold(hold: Any, data: bytes, spans: list[tuple[bytes, bool]]) -> None:
    counts: dict[bytes, int] = {}
    for trace_id, _ in spans:
        counts[trace_id] = counts.get(trace_id, 0) + 1
    hold.hold_request(data, counts, {trace_id for trace_id, root in spans if root}, len(spans))


def test_a_held_plain_request_goes_on_as_received_once_its_roots_have_settled() -> None:
    out = _Out()
    hold = out.hold(settle_ms=30)
    request, data = _plain_request(1)
    _hold(hold, data, _trace_roots(request))
    assert out.whole == []
    deadline = time.monotonic() + 5
    while not out.whole and time.monotonic() < deadline:
        time.sleep(0.01)
    assert out.whole == [data]  # the very bytes received, once
    assert hold.held_bytes == 0
    hold.close()
    assert out.whole == [data]


def test_a_held_request_without_its_roots_waits_hold_ms() -> None:
    out = _Out()
    hold = out.hold(settle_ms=10, hold_ms=300)
    request, data = _plain_request(2)
    children = [(trace_id, False) for trace_id, _ in _trace_roots(request)]  # their roots are elsewhere
    started = time.monotonic()
    _hold(hold, data, children)
    while not out.whole and time.monotonic() < started + 5:
        time.sleep(0.01)
    assert out.whole == [data]
    assert time.monotonic() - started >= 0.29
    hold.close()


def test_taking_a_trace_splits_its_request_and_the_rest_waits_for_its_own_trace() -> None:
    out = _Out()
    hold = out.hold(settle_ms=60_000)
    request, data = _plain_request(3)
    pairs = _trace_roots(request)
    first = pairs[0][0]
    _hold(hold, data, [(trace_id, False) for trace_id, _ in pairs])
    taken = hold.take([first])
    assert [span.trace_id for span, _, _ in taken] == [trace_id for trace_id, _ in pairs if trace_id == first]
    assert all(span is not None and entry is not None for span, _, entry in taken)  # decodable, bytes as received
    assert out.whole == out.spans == []
    hold.flush()
    assert sorted(span.span_id for span, _, _ in out.spans + taken) == sorted(
        s.span_id for _, _, s in spans_of([request])
    )
    hold.close()


def test_past_max_bytes_the_oldest_request_goes_on_whole_counted_dropped() -> None:
    out = _Out()
    first, first_data = _plain_request(4)
    hold = out.hold(settle_ms=60_000, max_bytes=len(first_data) + 1_000)
    second, second_data = _plain_request(5)
    _hold(hold, first_data, [(t, False) for t, _ in _trace_roots(first)])
    _hold(hold, second_data, [(t, False) for t, _ in _trace_roots(second)])
    assert out.whole == [first_data]
    assert out.telemetry.counts["dropped:prefilter_hold_bytes"] == len(_trace_roots(first))
    hold.close()
    assert out.whole == [first_data, second_data]
    assert (
        out.telemetry.counts["received"]
        == out.telemetry.counts["passed"]
        == len(_trace_roots(first)) * 2 - (len(_trace_roots(first)) - len(_trace_roots(second)))
    )


def test_a_genai_log_event_sends_the_held_plain_spans_of_its_trace_to_the_pipeline(registry: Registry) -> None:
    """An event marks its trace as an agent's (its span may carry no marker itself): what was held of the trace
    goes to the engine then, not when the hold runs out; it is still forwarded once."""
    from toolscore.collector.sources import LogBatch
    from toolscore.collector.sources.log_events import LogEvent
    from toolscore.collector.spans import SpanEvent

    downstream = GrpcDownstream()
    forwarder = Forwarder(ForwardConfig(endpoint=downstream.endpoint, batch_timeout_ms=5.0))
    config = ServePipelineConfig(settle_ms=5_000, prefilter_hold_ms=60_000)
    telemetry = Recording()
    pipeline = CollectorPipeline(registry, forwarder, config, telemetry)
    request, _ = _plain_request(6, spans=4)
    child = next(span for _, _, span in spans_of([request]) if span.parent_span_id)
    try:
        assert pipeline.hold is not None
        assert pipeline.accept(request, request.SerializeToString()) == IngestResult()
        assert child.trace_id in pipeline.hold
        event = SpanEvent("gen_ai.choice", 1, {"index": 0})
        answer = pipeline.accept_logs(LogBatch([LogEvent(child.trace_id.hex(), child.span_id.hex(), event)]))
        assert not answer.overloaded
        assert child.trace_id not in pipeline.hold
        assert pipeline.flush(10)
    finally:
        pipeline.shutdown(5)
        downstream.stop()
    assert Counter(downstream.span_ids) == Counter(span.span_id for _, _, span in spans_of([request]))


def test_after_close_a_request_is_not_held_but_goes_on_at_once() -> None:
    out = _Out()
    hold = out.hold(settle_ms=60_000)
    hold.close()
    request, data = _plain_request(7)
    _hold(hold, data, _trace_roots(request))
    assert out.whole == [data]
    assert all(trace_id not in hold for trace_id, _ in _trace_roots(request))
