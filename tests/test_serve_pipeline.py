"""CollectorPipeline end to end: SDK-encoded OTLP requests in, a real gRPC downstream out, scores in the store."""

from __future__ import annotations

import logging
import threading
import time
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import grpc
import pytest
from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.proto.collector.trace.v1.trace_service_pb2_grpc import TraceServiceStub
from opentelemetry.proto.common.v1.common_pb2 import AnyValue, KeyValue
from opentelemetry.proto.trace.v1.trace_pb2 import Span
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from tests.metric_reader import Meters
from tests.otlp_downstream import GrpcDownstream, HttpDownstream, spans_of
from tests.pipeline_builders import (
    COLLIDING,
    COLLIDING_LABELS,
    TRAVEL,
    Recording,
    agent_run,
    registry_with,
    run_attrs,
    tool_attrs,
)
from tests.privacy_runs import EMAIL, MASKING
from tests.serve_receiver_support import http_call
from toolscore.collector.extract.privacy import MARKER_PREFIX
from toolscore.collector.pipeline import PipelineConfig
from toolscore.collector.pipeline.group import item_bytes
from toolscore.collector.registry import Registry
from toolscore.collector.serve._encode import span_message
from toolscore.collector.serve._health import HealthState
from toolscore.collector.serve._pipeline import CollectorPipeline
from toolscore.collector.serve._pipeline_config import ServePipelineConfig
from toolscore.collector.serve.forward import ForwardConfig
from toolscore.collector.serve.forward._forwarder import Forwarder
from toolscore.collector.serve.receivers import ReceiverConfig
from toolscore.collector.serve.receivers._grpc_receiver import start_grpc_receiver
from toolscore.collector.serve.receivers._http_receiver import start_http_receiver
from toolscore.collector.serve.receivers._ingest import Ingest, IngestResult
from toolscore.collector.serve.scores import ScoreStoreConfig, query_runs
from toolscore.collector.serve.scores._store import ScoreStore
from toolscore.collector.sources.otlp_proto import decode_any_value
from toolscore.scorers import AgentRun

CONFIG = PipelineConfig(settle_ms=20)
# The tests of the queue's bounds fill it with loose spans (no agent marker), so they read every span: with the
# pre-filter on, those would be forwarded unread, never queued (see test_serve_prefilter).
FORWARD = {"backoff_initial_s": 0.02, "backoff_max_s": 0.1, "batch_timeout_ms": 5.0}
BAD_ARGS = '{"city": "\\ud800"}'


def sdk_spans(*agents: tuple[str, tuple[str, ...]], service: str = "shop", loose: int = 0) -> list[ReadableSpan]:
    """Agent runs (name, tools) and `loose` spans of no run, from the real SDK."""
    exporter = InMemorySpanExporter()
    provider = TracerProvider(resource=Resource.create({"service.name": service}))
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    tracer = provider.get_tracer("agent-app", "1.2")
    for agent, tools in agents:
        agent_run(tracer, agent, tools)
    for i in range(loose):
        tracer.start_span(f"GET /health {i}").end()
    provider.shutdown()
    return list(exporter.get_finished_spans())


def attributes(span: Any) -> dict[str, Any]:
    return {kv.key: decode_any_value(kv.value) for kv in span.attributes}


@pytest.fixture
def downstream() -> Iterator[GrpcDownstream]:
    server = GrpcDownstream()
    yield server
    server.stop()


@pytest.fixture
def registry() -> Iterator[Registry]:
    with registry_with(TRAVEL) as registry:
        yield registry


def make_pipeline(
    registry: Any, downstream: GrpcDownstream, config: PipelineConfig = CONFIG, **forward: Any
) -> CollectorPipeline:
    forwarder = Forwarder(ForwardConfig(endpoint=downstream.endpoint, **{**FORWARD, **forward}))
    return CollectorPipeline(registry, forwarder, config, Recording())


def test_run_spans_are_enriched_in_place_and_every_other_span_forwarded_once(
    registry: Registry, downstream: GrpcDownstream
) -> None:
    spans = sdk_spans(("travel", ("search_flights", "book_flight")), ("travel", ("book_hotel",)), loose=3)
    requests = [encode_spans(spans[:4]), encode_spans(spans[4:])]  # a run split across two requests
    originals = {span.span_id: span.SerializeToString() for _, _, span in spans_of(requests)}
    pipeline = make_pipeline(registry, downstream)
    ingest: Ingest = pipeline
    assert [ingest.accept(request).rejected_spans for request in requests] == [0, 0]
    assert pipeline.flush(5)

    received = list(spans_of(downstream.requests))
    assert Counter(span.span_id for _, _, span in received) == Counter(list(originals))
    runs = [span for _, _, span in received if span.name == "invoke_agent travel"]
    assert len(runs) == 2
    for resource_spans, scope_spans, span in received:
        assert attributes(resource_spans.resource)["service.name"] == "shop"
        assert (scope_spans.scope.name, scope_spans.scope.version) == ("agent-app", "1.2")
        if span not in runs:
            assert span.SerializeToString() == originals[span.span_id]  # forwarded untouched
    scores = {tuple(attributes(span)["toolscore.tool_calls"]): attributes(span) for span in runs}
    right, wrong = scores[("search_flights", "book_flight")], scores[("book_hotel",)]
    assert right["toolscore.evaluation.travel.tool_selection.score"] == 1.0
    assert right["toolscore.evaluation.travel.tool_selection.label"] == "pass"
    assert wrong["toolscore.evaluation.travel.tool_selection.label"] == "fail"
    assert right["toolscore.expectations"] == ["travel"]
    assert right["gen_ai.agent.name"] == "travel"  # the span's own attributes are kept
    run = next(span for span in runs if span.span_id == runs[0].span_id)
    events = [(event.name, attributes(event)) for event in run.events]
    assert {attrs["gen_ai.evaluation.name"] for name, attrs in events if name == "gen_ai.evaluation.result"} == {
        "tool_selection",
        "trajectory",
    }
    assert pipeline.shutdown(2)


def test_a_request_sent_again_reaches_downstream_once_with_its_run_span_scored(
    registry: Registry, downstream: GrpcDownstream
) -> None:
    """An exporter whose call timed out re-sends the request that toolscore had taken: once while the run span
    is held for its scores, once after. Each span of the agent's trace goes downstream once, the run span scored,
    never unscored; the loose span, of a trace with no agent marker, is forwarded unread each time it comes, as a
    pass-through collector forwards it (the pre-filter)."""
    spans = sdk_spans(("travel", ("search_flights", "book_flight")), loose=1)
    request = encode_spans(spans)
    recording = Recording()
    pipeline = CollectorPipeline(
        registry, Forwarder(ForwardConfig(endpoint=downstream.endpoint, **FORWARD)), CONFIG, recording
    )
    assert [pipeline.accept(request).rejected_spans for _ in range(2)] == [0, 0]
    assert pipeline.flush(5)
    assert pipeline.accept(request).rejected_spans == 0
    assert pipeline.flush(5)

    received = [span for _, _, span in spans_of(downstream.requests)]
    sent = Counter(span.span_id for _, _, span in spans_of([request]))
    (loose,) = [span for span in spans if span.name.startswith("GET /health")]
    sent[loose.context.span_id.to_bytes(8, "big")] = 3
    assert Counter(span.span_id for span in received) == sent
    (run,) = [span for span in received if span.name == "invoke_agent travel"]
    assert attributes(run)["toolscore.evaluation.travel.tool_selection.label"] == "pass"
    assert recording.counts["duplicate"] == 2 * (len(spans) - 1)
    assert pipeline.shutdown(2)


def test_names_that_reduce_to_one_key_get_the_same_suffixed_keys_as_in_process(downstream: GrpcDownstream) -> None:
    with registry_with(TRAVEL, *COLLIDING) as registry:
        pipeline = make_pipeline(registry, downstream)
        assert pipeline.accept(encode_spans(sdk_spans(("travel", ("book_flight",))))).rejected_spans == 0
        assert pipeline.flush(5)
        assert pipeline.shutdown(2)
    (run,) = [span for _, _, span in spans_of(downstream.requests) if span.name == "invoke_agent travel"]
    labels = {key: value for key, value in attributes(run).items() if key.endswith(".label")}
    assert labels == {**COLLIDING_LABELS, "toolscore.evaluation.travel.trajectory.label": "fail"}
    assert len([event for event in run.events if event.name == "gen_ai.evaluation.result"]) == 6


def test_a_graph_span_standing_for_an_inferred_run_is_enriched_in_place(
    registry: Registry, downstream: GrpcDownstream
) -> None:
    """No run span (as LangGraph): the topmost recognised span carries the scores; parents sent first."""
    exporter = InMemorySpanExporter()
    provider = TracerProvider(resource=Resource.create({"service.name": "shop"}))
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    tracer = provider.get_tracer("agent-app", "1.2")
    workflow = {"gen_ai.operation.name": "invoke_workflow"}
    with tracer.start_as_current_span("POST /chat"), tracer.start_as_current_span("travel", attributes=workflow):
        for i, tool in enumerate(("search_flights", "book_flight")):
            call = {"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": tool, "gen_ai.tool.call.id": f"c{i}"}
            tracer.start_span(f"execute_tool {tool}", attributes=call).end()
    provider.shutdown()
    spans = list(reversed(exporter.get_finished_spans()))  # root, graph, tools: the order parents end last
    requests = [encode_spans(spans[:2]), encode_spans(spans[2:])]
    pipeline = make_pipeline(registry, downstream)
    assert [pipeline.accept(request).rejected_spans for request in requests] == [0, 0]
    assert pipeline.flush(5)
    received = {span.name: span for _, _, span in spans_of(downstream.requests)}
    assert sorted(received) == sorted(span.name for span in spans)
    graph = attributes(received["travel"])
    assert graph["toolscore.tool_calls"] == ["search_flights", "book_flight"]
    assert graph["toolscore.evaluation.travel.tool_selection.label"] == "pass"
    assert "toolscore.tool_calls" not in attributes(received["POST /chat"])
    assert pipeline.shutdown(2)


def test_spans_with_bad_ids_are_rejected_and_reported(registry: Registry, downstream: GrpcDownstream) -> None:
    request = encode_spans(sdk_spans(loose=3))
    bad = request.resource_spans[0].scope_spans[0].spans[1]
    bad.trace_id = b"\x01\x02\x03"
    pipeline = make_pipeline(registry, downstream)
    result = pipeline.accept(request)
    assert (result.rejected_spans, result.overloaded) == (1, False)
    assert "bad_trace_id" in result.error_message
    assert "trace_id is 3 bytes 010203" in result.error_message
    assert pipeline.flush(5)
    assert len(downstream.span_ids) == 2
    assert bad.span_id not in downstream.span_ids
    pipeline.shutdown(2)


def test_a_huge_bad_id_is_quoted_short_so_a_default_grpc_client_reads_the_answer(
    registry: Registry, downstream: GrpcDownstream
) -> None:
    """A 2.2 MB trace id quoted whole made a 4.4 MB answer: over a default client's 4 MiB receive limit,
    so the sender saw RESOURCE_EXHAUSTED, retried, and the good spans were forwarded again."""
    request = encode_spans(sdk_spans(("travel", ("search_flights",)), loose=1))
    bad = request.resource_spans[0].scope_spans[0].spans.add(span_id=b"\x07" * 8, name="n" * 100_000)
    bad.trace_id = b"\x01" * 2_200_000
    pipeline = make_pipeline(registry, downstream)
    receiver = start_grpc_receiver(pipeline, ReceiverConfig(grpc_endpoint="127.0.0.1:0"))
    try:
        with grpc.insecure_channel(f"127.0.0.1:{receiver.port}") as channel:  # default options, as exporters use
            response = TraceServiceStub(channel).Export(request, timeout=10)
    finally:
        receiver.stop(0)
    message = response.partial_success.error_message
    assert response.partial_success.rejected_spans == 1
    assert len(message) < 1_000, message[:300]
    assert "trace_id is 2200000 bytes " + "01" * 32 + "… (2200000 bytes)" in message
    assert "span " + repr("n" * 64) + "… (100000 characters)" in message
    assert pipeline.flush(5)
    assert len(downstream.span_ids) == 3
    pipeline.shutdown(2)


def test_a_span_of_100000_attributes_and_one_of_100000_events_are_scored_and_forwarded(
    registry: Registry, downstream: GrpcDownstream
) -> None:
    """No per-span cap on attributes or events: `max_message_bytes` bounds a span (docs/serve.md, "Memory per span").

    A tool span with 100,000 attributes and its run span with 100,000 events (2.9 MB together, under the
    4 MiB default) go through the receiver, are grouped, read, scored and forwarded whole, and their
    bytes are given back once the trace is done.
    """
    request = encode_spans(sdk_spans(("travel", ("search_flights", "book_flight"))))
    spans = {span.name: span for _, _, span in spans_of([request])}
    tool, run = spans["execute_tool book_flight"], spans["invoke_agent travel"]
    tool.attributes.extend(KeyValue(key=f"k{i}", value=AnyValue(string_value="v")) for i in range(100_000))
    run.events.extend(
        Span.Event(name="e", attributes=[KeyValue(key="a", value=AnyValue(int_value=i))]) for i in range(100_000)
    )
    assert 2_000_000 < request.ByteSize() < 4 * 1024 * 1024
    pipeline = make_pipeline(registry, downstream)
    receiver = start_grpc_receiver(pipeline, ReceiverConfig(grpc_endpoint="127.0.0.1:0"))
    try:
        with grpc.insecure_channel(f"127.0.0.1:{receiver.port}") as channel:
            response = TraceServiceStub(channel).Export(request, timeout=30)
        assert not response.HasField("partial_success")
        assert pipeline.flush(30)
        assert pipeline.engine.store.size == 0
    finally:
        receiver.stop(0)
        pipeline.shutdown(5)
    forwarded = {span.name: span for _, _, span in spans_of(downstream.requests)}
    assert len(forwarded) == 3
    assert forwarded["execute_tool book_flight"] == tool  # forwarded as it came, all 100,000 attributes
    scored = forwarded["invoke_agent travel"]
    assert attributes(scored)["toolscore.tool_calls"] == ["search_flights", "book_flight"]
    assert attributes(scored)["toolscore.evaluation.travel.tool_selection.label"] == "pass"
    assert sum(event.name == "e" for event in scored.events) == 100_000


class Gate:
    """A registry whose `match` waits until opened: holds the worker so the engine's queue fills."""

    def __init__(self, registry: Registry) -> None:
        self.registry = registry
        self.entered = threading.Event()
        self.opened = threading.Event()

    def match(self, run: AgentRun) -> list[Any]:
        self.entered.set()
        self.opened.wait(10)
        return self.registry.match(run)


def _forwarded(registry: Registry, requests: list[tuple[ExportTraceServiceRequest, bytes | None]]) -> HttpDownstream:
    """The requests through a pipeline forwarding over OTLP/HTTP: the downstream, holding what it received."""
    downstream = HttpDownstream()
    config = ForwardConfig(endpoint=downstream.endpoint, protocol="http/protobuf", **FORWARD)
    pipeline = CollectorPipeline(registry, Forwarder(config), CONFIG, Recording())
    try:
        for request, data in requests:
            assert pipeline.accept(request, data) == IngestResult()
            assert pipeline.flush(5)
    finally:
        pipeline.shutdown(2)
        downstream.stop()
    return downstream


def _run_span(downstream: HttpDownstream) -> Any:
    return next(span for _, _, span in spans_of(downstream.requests) if span.name == "invoke_agent travel")


def test_spans_go_on_as_the_bytes_they_came_in(registry: Registry) -> None:
    """A span sent with its fields out of the protobuf runtime's order (the same span, other bytes): with
    the request's bytes given, it reaches downstream as sent; without, as the runtime writes it."""
    request = encode_spans(sdk_spans(("travel", ("book_flight",)), loose=1))
    loose = next(span for _, _, span in spans_of([request]) if span.name == "GET /health 0")
    canonical = loose.SerializeToString()
    nameless = type(loose)()
    nameless.CopyFrom(loose)
    nameless.name = ""
    as_sent = nameless.SerializeToString() + type(loose)(name=loose.name).SerializeToString()
    assert len(as_sent) == len(canonical)  # so it takes the canonical bytes' place in the request
    assert as_sent != canonical
    data = request.SerializeToString().replace(canonical, as_sent)
    with_bytes = _forwarded(registry, [(ExportTraceServiceRequest.FromString(data), data)])
    assert as_sent in b"".join(with_bytes.bodies)
    assert canonical not in b"".join(with_bytes.bodies)
    without = _forwarded(registry, [(ExportTraceServiceRequest.FromString(data), None)])
    assert canonical in b"".join(without.bodies)


def held_run_carrier(pipeline: CollectorPipeline) -> Any:
    """The carrier of the one run span the pipeline holds, once it does."""
    traces = pipeline.engine.store.traces
    deadline = time.monotonic() + 5
    while not any(trace.held for trace in list(traces.values())) and time.monotonic() < deadline:
        time.sleep(0.01)
    (trace,) = traces.values()
    (held,) = trace.held.values()
    return held.carrier


def test_a_run_span_waiting_for_its_scores_keeps_nothing_of_the_request(registry: Registry) -> None:
    """Spans passed on keep their received bytes until sent; a held run span keeps a copy of its own bytes
    (its scores are appended to them), and its resource and scope copied out of the parsed request: any
    message or view of the request would keep all of it alive, every span parsed, while the run waits."""
    pipeline = CollectorPipeline(registry, None, PipelineConfig(settle_ms=60_000, max_hold_ms=120_000), Recording())
    try:
        data = encode_spans(sdk_spans(("travel", ("book_flight",)))).SerializeToString()
        assert pipeline.accept(ExportTraceServiceRequest.FromString(data), data) == IngestResult()
        span, block, received = held_run_carrier(pipeline)
        assert span is None
        assert type(received) is bytes  # a copy, not a view of `data`
        request = ExportTraceServiceRequest.FromString(data)
        ((resource_spans, scope_spans, sent),) = [s for s in spans_of([request]) if s[2].name == "invoke_agent travel"]
        assert span_message(received) == sent
        assert (block.resource.message.resource, block.message.scope) == (resource_spans.resource, scope_spans.scope)
        assert not block.message.spans, "the request's other spans are not held"
        assert not block.resource.message.scope_spans
    finally:
        assert pipeline.shutdown(5)


def test_without_its_received_bytes_a_held_run_span_is_a_copy_of_its_message(registry: Registry) -> None:
    pipeline = CollectorPipeline(registry, None, PipelineConfig(settle_ms=60_000, max_hold_ms=120_000), Recording())
    try:
        request = encode_spans(sdk_spans(("travel", ("book_flight",))))
        assert pipeline.accept(request) == IngestResult()  # no bytes given: an HTTP/JSON request
        span, _, received = held_run_carrier(pipeline)
        ((_, _, sent),) = [s for s in spans_of([request]) if s[2].name == "invoke_agent travel"]
        assert (span, received) == (sent, None)
        assert span is not sent
    finally:
        assert pipeline.shutdown(5)


def test_pending_spans_count_their_received_bytes_against_the_budget(registry: Registry) -> None:
    """`toolscore serve` sizes a kept span by its bytes on the wire (for its text, without walking its attributes
    again) and its record's per-item costs."""
    pipeline = CollectorPipeline(registry, None, PipelineConfig(settle_ms=60_000, max_hold_ms=120_000), Recording())
    try:
        request = encode_spans(sdk_spans(("travel", ("search_flights", "book_flight"))))
        data = request.SerializeToString()
        sizes = [len(span.SerializeToString()) for _, _, span in spans_of([request])]
        framed = sum(1 + (1 if n < 128 else 2) + n for n in sizes)  # each span's tag, length and bytes
        assert all(n < 16_384 for n in sizes)
        assert pipeline.accept(ExportTraceServiceRequest.FromString(data), data) == IngestResult()
        store = pipeline.engine.store
        deadline = time.monotonic() + 5
        while not any(trace.held for trace in list(store.traces.values())) and time.monotonic() < deadline:
            time.sleep(0.01)
        kept = [node.span for trace in store.traces.values() for node in trace.records.values()]
        assert len(kept) == len(sizes)
        assert store.size == framed + sum(map(item_bytes, kept))
    finally:
        assert pipeline.shutdown(5)


def test_a_run_span_already_carrying_one_of_our_keys_has_it_replaced(registry: Registry) -> None:
    """A key of ours in the received span (scored by a toolscore upstream) is replaced, not repeated."""
    request = encode_spans(sdk_spans(("travel", ("book_flight",))))
    run = next(span for _, _, span in spans_of([request]) if span.name == "invoke_agent travel")
    stale = run.attributes.add(key="toolscore.evaluation.travel.tool_selection.label")
    stale.value.string_value = "stale"
    data = request.SerializeToString()
    forwarded = _run_span(_forwarded(registry, [(ExportTraceServiceRequest.FromString(data), data)]))
    keys = [kv.key for kv in forwarded.attributes]
    assert keys.count("toolscore.evaluation.travel.tool_selection.label") == 1
    assert attributes(forwarded)["toolscore.evaluation.travel.tool_selection.label"] == "pass"


def test_a_request_that_does_not_fit_the_queue_is_refused_for_retry(
    registry: Registry, downstream: GrpcDownstream
) -> None:
    gate = Gate(registry)
    forwarder = Forwarder(ForwardConfig(endpoint=downstream.endpoint, **FORWARD))
    telemetry = Recording()
    at_once = ServePipelineConfig(settle_ms=20, queue_size=8, overload_wait_ms=0, prefilter=False)
    pipeline = CollectorPipeline(gate, forwarder, at_once, telemetry)
    run = encode_spans(sdk_spans(("travel", ("book_flight",))))
    first, second = encode_spans(sdk_spans(loose=5)), encode_spans(sdk_spans(loose=5))
    assert pipeline.accept(run) == IngestResult()
    assert gate.entered.wait(5)  # the worker is now stuck scoring the run
    assert not pipeline.accept(first).overloaded  # queue empty: 5 spans go in
    refused = pipeline.accept(second)
    assert refused.overloaded
    assert refused.retry_after_s > 0
    assert telemetry.counts["refused:queue_full"] == 1
    gate.opened.set()
    assert pipeline.flush(5)
    assert not pipeline.accept(second).overloaded  # the sender's retry
    assert pipeline.flush(5)
    expected = [span.span_id for _, _, span in spans_of([run, first, second])]
    assert Counter(downstream.span_ids) == Counter(expected)
    pipeline.shutdown(2)


def test_an_overload_refusal_is_logged_with_the_queues_that_decided_it(
    registry: Registry, downstream: GrpcDownstream, caplog: pytest.LogCaptureFixture
) -> None:
    """Through the real HTTP receiver: the 429's WARNING line names the reason the pipeline counted and the
    state of its queues, the numbers an operator sizes `queue_size` and the forward queue by."""
    gate = Gate(registry)
    forwarder = Forwarder(ForwardConfig(endpoint=downstream.endpoint, **FORWARD))
    at_once = ServePipelineConfig(settle_ms=20, queue_size=8, overload_wait_ms=0, prefilter=False)
    pipeline = CollectorPipeline(gate, forwarder, at_once, Recording())
    receiver = start_http_receiver(pipeline, ReceiverConfig(http_endpoint="127.0.0.1:0"), HealthState())
    try:
        assert pipeline.accept(encode_spans(sdk_spans(("travel", ("book_flight",))))) == IngestResult()
        assert gate.entered.wait(5)  # the worker is now stuck scoring the run
        assert not pipeline.accept(encode_spans(sdk_spans(loose=5))).overloaded
        with caplog.at_level(logging.WARNING, logger="toolscore.collector.serve.receivers._http_receiver"):
            refused = http_call(receiver.port, encode_spans(sdk_spans(loose=5)).SerializeToString())
        assert refused.status == 429
    finally:
        gate.opened.set()
        receiver.stop(0)
        pipeline.shutdown(2)
    (line,) = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert line.endswith(
        ": 429, retry in 1s (overloaded: queue_full; spans queued for scoring 5/8, requests waiting for room 0/8, "
        "forward queue 0/1000 requests (0/200000 spans))"
    )


def test_a_request_larger_than_the_queue_is_queued_and_scored_whole(
    registry: Registry, downstream: GrpcDownstream
) -> None:
    """An OpenTelemetry Collector sends 8,192-span batches: cut at the queue's size, half their runs went unscored."""
    telemetry = Recording()
    forwarder = Forwarder(ForwardConfig(endpoint=downstream.endpoint, **FORWARD))
    pipeline = CollectorPipeline(
        registry, forwarder, PipelineConfig(settle_ms=20, queue_size=4, prefilter=False), telemetry
    )
    request = encode_spans(sdk_spans(*[("travel", ("search_flights", "book_flight"))] * 5))  # 15 spans
    assert pipeline.accept(request) == IngestResult()
    assert pipeline.flush(5)
    assert telemetry.outcomes == Counter({"matched": 5})
    assert (telemetry.counts["received"], telemetry.counts["dropped:queue_full"]) == (15, 0)
    runs = [span for _, _, span in spans_of(downstream.requests) if span.name == "invoke_agent travel"]
    assert [attributes(run)["toolscore.evaluation.travel.tool_selection.label"] for run in runs] == ["pass"] * 5
    assert Counter(downstream.span_ids) == Counter(span.span_id for _, _, span in spans_of([request]))
    pipeline.shutdown(2)


def test_receivers_racing_for_the_queue_never_overshoot_it(registry: Registry) -> None:
    """The overload check and the queueing are one step: of requests that each fit alone, only one gets in."""
    gate = Gate(registry)
    at_once = ServePipelineConfig(settle_ms=20, queue_size=8, overload_wait_ms=0, prefilter=False)
    pipeline = CollectorPipeline(gate, None, at_once, Recording())
    assert pipeline.accept(encode_spans(sdk_spans(("travel", ("book_flight",))))) == IngestResult()
    assert gate.entered.wait(5)  # the worker is held with an empty queue
    requests = [encode_spans(sdk_spans(loose=5)) for _ in range(8)]
    start = threading.Barrier(len(requests))
    results: list[IngestResult] = []

    def send(request: ExportTraceServiceRequest) -> None:
        start.wait(5)
        results.append(pipeline.accept(request))

    threads = [threading.Thread(target=send, args=(request,)) for request in requests]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(5)
    assert sorted(result.overloaded for result in results) == [False] + [True] * 7
    assert len(pipeline.engine.intake) == 5
    assert pipeline.telemetry.counts["refused:queue_full"] == 7  # type: ignore[attr-defined]
    gate.opened.set()
    assert pipeline.shutdown(5)


def test_a_full_forward_queue_pushes_back_on_the_sender(registry: Registry, downstream: GrpcDownstream) -> None:
    downstream.stop()
    at_once = ServePipelineConfig(settle_ms=20, overload_wait_ms=0, prefilter=False)
    pipeline = make_pipeline(registry, downstream, at_once, queue_max_requests=1, senders=1, batch_max_spans=1)
    accepted = 0
    for _ in range(5):
        if pipeline.accept(encode_spans(sdk_spans(loose=1))).overloaded:
            break
        accepted += 1
        assert pipeline.engine.flush(2)  # the span is now with the forwarder: in flight or queued
    assert accepted == 2  # one retrying in flight, one queued; the third is refused
    assert pipeline.telemetry.counts["refused:forward_queue_full"] == 1  # type: ignore[attr-defined]
    downstream.start()
    assert pipeline.flush(10)
    assert len(downstream.span_ids) == accepted
    pipeline.shutdown(2)


def test_without_a_downstream_runs_are_scored_into_the_store(registry: Registry, tmp_path: Path) -> None:
    store = ScoreStore(ScoreStoreConfig(path=str(tmp_path / "scores.db"), write_interval_ms=10))
    pipeline = CollectorPipeline(registry, None, CONFIG, Recording(), store)
    pipeline.accept(encode_spans(sdk_spans(("travel", ("search_flights", "book_flight")), loose=2)))
    assert pipeline.flush(5)
    runs = query_runs(tmp_path / "scores.db")
    assert [(run.agent, [call["name"] for call in run.calls]) for run in runs] == [
        ("travel", ["search_flights", "book_flight"])
    ]
    assert {(s.expectation, s.scorer, s.label) for s in runs[0].scores} == {
        ("travel", "tool_selection", "pass"),
        ("travel", "trajectory", "pass"),
    }
    assert pipeline.shutdown(2)


def test_a_lone_surrogate_in_arguments_costs_no_run_of_the_store(
    registry: Registry, downstream: GrpcDownstream, tmp_path: Path
) -> None:
    """`{"city": "\\ud800"}` is valid JSON (ASCII on the wire) that decodes to a lone surrogate."""
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    tracer = provider.get_tracer("agent-app")
    with tracer.start_as_current_span("invoke_agent travel", attributes=run_attrs()):
        tracer.start_span("execute_tool book_flight", attributes=tool_attrs("book_flight", "c0", BAD_ARGS)).end()
    provider.shutdown()
    store = ScoreStore(ScoreStoreConfig(path=str(tmp_path / "scores.db"), write_interval_ms=10))
    forwarder = Forwarder(ForwardConfig(endpoint=downstream.endpoint, **FORWARD))
    pipeline = CollectorPipeline(registry, forwarder, CONFIG, Recording(), store)
    pipeline.accept(encode_spans(list(exporter.get_finished_spans())))
    assert pipeline.flush(5)
    later = [sdk_spans(("travel", ("search_flights", "book_flight"))) for _ in range(3)]
    for spans in later:
        pipeline.accept(encode_spans(spans))
    assert pipeline.flush(5)
    assert pipeline.shutdown(2)

    stored = query_runs(tmp_path / "scores.db")
    assert len(stored) == 4
    assert [call["args"] for run in stored for call in run.calls if call["name"] == "book_flight"].count(
        {"city": "\ufffd"}
    ) == 1
    assert store.dropped == 0
    runs = [span for _, _, span in spans_of(downstream.requests) if span.name == "invoke_agent travel"]
    assert len(runs) == 4
    assert all("toolscore.evaluation.travel.tool_selection.label" in attributes(span) for span in runs)


def test_shutdown_scores_and_forwards_pending_runs(registry: Registry, downstream: GrpcDownstream) -> None:
    forwarder = Forwarder(ForwardConfig(endpoint=downstream.endpoint, **FORWARD))
    slow = PipelineConfig(settle_ms=60_000, max_hold_ms=120_000)
    pipeline = CollectorPipeline(registry, forwarder, slow, Recording())
    request = encode_spans(sdk_spans(("travel", ("book_flight",))))
    pipeline.accept(request)
    assert pipeline.shutdown(5)
    run = next(span for _, _, span in spans_of(downstream.requests) if span.name == "invoke_agent travel")
    assert attributes(run)["toolscore.evaluation.travel.tool_selection.label"] == "pass"
    assert len(downstream.span_ids) == 2
    assert pipeline.accept(request).overloaded  # after shutdown: refused, for the sender to retry elsewhere
    assert pipeline.refusal() is not None
    assert pipeline.telemetry.counts["refused:shutdown"] == 2  # type: ignore[attr-defined]


def test_a_request_refused_once_read_is_counted_with_its_spans(registry: Registry, meters: Meters) -> None:
    pipeline = CollectorPipeline(registry, None, CONFIG, meters.telemetry)
    assert pipeline.shutdown(2)
    assert pipeline.accept(encode_spans(sdk_spans(("travel", ("book_flight",))))).overloaded  # 2 spans, read
    assert pipeline.refusal() is not None  # unread: its spans are unknown
    assert meters.refused() == {"shutdown": 2}
    assert meters.refused_spans() == {"shutdown": 2}


def test_spans_with_unusable_ids_are_counted_as_refused(registry: Registry, meters: Meters) -> None:
    pipeline = CollectorPipeline(registry, None, CONFIG, meters.telemetry)
    request = encode_spans(sdk_spans(("travel", ("book_flight", "search"))))
    request.resource_spans[0].scope_spans[0].spans[0].span_id = bytes(8)
    try:
        result = pipeline.accept(request)
    finally:
        pipeline.shutdown(2)
    assert result.rejected_spans == 1
    assert (meters.refused_spans(), meters.refused()) == ({"invalid": 1}, {})  # the request itself was taken


def test_refusal_before_reading_judges_by_the_typical_request(registry: Registry) -> None:
    """Unread requests are refused only while one of the recent requests' size would not fit the queue
    (and no request may wait for room: see test_serve_overload_wait)."""
    gate = Gate(registry)
    at_once = ServePipelineConfig(settle_ms=20, queue_size=12, overload_wait_ms=0, prefilter=False)
    pipeline = CollectorPipeline(gate, None, at_once, Recording())
    assert pipeline.refusal() is None  # nothing seen yet, nothing queued
    assert pipeline.accept(encode_spans(sdk_spans(("travel", ("book_flight",))))) == IngestResult()
    assert gate.entered.wait(5)  # the worker is held: what is accepted now stays queued
    for _ in range(2):
        assert not pipeline.accept(encode_spans(sdk_spans(loose=4))).overloaded
        assert pipeline.refusal() is None  # 4 and 8 queued: another 4 still fit
    assert not pipeline.accept(encode_spans(sdk_spans(loose=3))).overloaded
    assert pipeline.refusal() is not None  # 11 queued: a typical request (about 3 spans) would not fit
    assert pipeline.telemetry.counts["refused:queue_full"] == 1  # type: ignore[attr-defined]
    assert not pipeline.accept(encode_spans(sdk_spans(loose=1))).overloaded  # `accept` still takes what fits
    gate.opened.set()
    assert pipeline.flush(5)
    assert pipeline.refusal() is None
    pipeline.shutdown(2)


def test_accept_never_raises_on_a_request_it_cannot_walk(registry: Registry) -> None:
    pipeline = CollectorPipeline(registry, None, CONFIG, Recording())
    result = pipeline.accept(None)  # type: ignore[arg-type]
    assert "internal error" in result.error_message
    assert pipeline.accept(ExportTraceServiceRequest()).rejected_spans == 0
    pipeline.shutdown(2)


def test_forwarded_requests_stay_under_the_span_and_byte_limits(registry: Registry, downstream: GrpcDownstream) -> None:
    pipeline = make_pipeline(registry, downstream, batch_max_spans=7, batch_max_bytes=2_000)
    request = encode_spans(sdk_spans(("travel", ("search_flights", "book_flight")), loose=40))
    expected = Counter(span.span_id for _, _, span in spans_of([request]))
    pipeline.accept(request)
    assert pipeline.flush(5)
    assert Counter(downstream.span_ids) == expected
    sizes = [(len(list(spans_of([r]))), r.ByteSize()) for r in downstream.requests]
    assert all(spans <= 7 and (size <= 2_000 or spans == 1) for spans, size in sizes), sizes
    assert len(sizes) > len(expected) / 7  # some batches were split by size
    pipeline.shutdown(2)


def test_with_the_prefilter_a_plain_request_is_forwarded_as_received_and_a_refused_mixed_one_not_at_all(
    registry: Registry, downstream: GrpcDownstream
) -> None:
    """A request of no agent trace goes downstream as the very bytes received, never queued; a mixed request refused
    for overload forwards none of its plain spans either, since its sender sends it again whole."""
    gate = Gate(registry)
    forwarder = Forwarder(ForwardConfig(endpoint=downstream.endpoint, **FORWARD))
    at_once = ServePipelineConfig(settle_ms=20, queue_size=4, overload_wait_ms=0, prefilter=True)
    pipeline = CollectorPipeline(gate, forwarder, at_once, Recording())
    assert pipeline.accept(encode_spans(sdk_spans(("travel", ("book_flight",))))) == IngestResult()
    assert gate.entered.wait(5)  # the worker is held scoring: what is accepted now stays queued
    assert pipeline.accept(encode_spans(sdk_spans(("travel", ("search_flights", "book_flight"))))) == IngestResult()
    plain = encode_spans(sdk_spans(loose=6))  # more than the queue holds: never queued
    assert pipeline.accept(plain, plain.SerializeToString()) == IngestResult()
    mixed = encode_spans(sdk_spans(("travel", ("get_weather", "book_flight")), loose=2))
    assert pipeline.accept(mixed, mixed.SerializeToString()).overloaded
    gate.opened.set()
    assert pipeline.flush(5)
    forwarded = set(downstream.span_ids)
    assert {span.span_id for _, _, span in spans_of([plain])} <= forwarded
    assert forwarded.isdisjoint(span.span_id for _, _, span in spans_of([mixed]))
    assert any(request == plain for request in downstream.requests)  # whole, as received
    pipeline.shutdown(2)


def test_with_masking_on_a_plain_request_the_prefilter_forwards_unread_is_masked_too(
    registry: Registry, downstream: GrpcDownstream
) -> None:
    """The pre-filter's whole-request path goes through the same redaction as the sink's: a secret in a span of
    no agent trace never reaches downstream either."""
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    provider.get_tracer("web").start_span("POST /signup", attributes={"user.email": EMAIL}).end()
    provider.shutdown()
    plain = encode_spans(exporter.get_finished_spans())
    forwarder = Forwarder(ForwardConfig(endpoint=downstream.endpoint, **FORWARD))
    config = ServePipelineConfig(settle_ms=20, extract={"privacy": MASKING}, prefilter=True)
    pipeline = CollectorPipeline(registry, forwarder, config, Recording())
    try:
        assert pipeline.prefilter is not None
        assert pipeline.accept(plain, plain.SerializeToString()) == IngestResult()
        assert pipeline.flush(5)
    finally:
        pipeline.shutdown(2)
    ((_, _, span),) = list(spans_of(downstream.requests))
    assert span.name == "POST /signup"
    assert EMAIL.encode() not in b"".join(r.SerializeToString() for r in downstream.requests)
    assert attributes(span)["user.email"].startswith(MARKER_PREFIX)
