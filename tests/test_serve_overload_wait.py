"""A request that finds serve's queue full waits for room (`overload_wait_ms`) before it is refused.

Refusing at once made a saturated collector receive the same requests again and again, a few
milliseconds apart: the sender's call now takes longer instead, and only a request that waited its
whole time, or found every waiting place taken (`max_waiting_requests`), is refused for retry.
"""

from __future__ import annotations

import threading
import time
from collections import Counter
from collections.abc import Iterator

import grpc
import pytest
from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.proto.collector.trace.v1.trace_service_pb2_grpc import TraceServiceStub

from tests.metric_reader import Meters
from tests.otlp_downstream import GrpcDownstream, spans_of
from tests.pipeline_builders import TRAVEL, Recording, registry_with
from tests.test_serve_pipeline import Gate, sdk_spans
from toolscore.collector.registry import Registry
from toolscore.collector.serve._pipeline import CollectorPipeline
from toolscore.collector.serve._pipeline_config import ServePipelineConfig
from toolscore.collector.serve.forward import ForwardConfig
from toolscore.collector.serve.forward._forwarder import Forwarder
from toolscore.collector.serve.receivers import ReceiverConfig
from toolscore.collector.serve.receivers._grpc_receiver import start_grpc_receiver
from toolscore.collector.serve.receivers._ingest import IngestResult
from toolscore.collector.telemetry import PipelineTelemetry

FORWARD = {"backoff_initial_s": 0.02, "backoff_max_s": 0.1, "batch_timeout_ms": 5.0}


@pytest.fixture
def registry() -> Iterator[Registry]:
    with registry_with(TRAVEL) as registry:
        yield registry


@pytest.fixture
def downstream() -> Iterator[GrpcDownstream]:
    server = GrpcDownstream()
    yield server
    server.stop()


def held(
    registry: Registry,
    downstream: GrpcDownstream | None = None,
    telemetry: PipelineTelemetry | None = None,
    **config: float,
) -> tuple[CollectorPipeline, Gate, Recording]:
    """A pipeline (queue of 8 spans) whose worker is held scoring a run, with 5 loose spans queued behind it:
    another request of 5 spans does not fit until the gate opens. It reports to a `Recording`, or to `telemetry`
    (the `Recording` returned then records nothing)."""
    gate = Gate(registry)
    recording = Recording()
    forwarder = None if downstream is None else Forwarder(ForwardConfig(endpoint=downstream.endpoint, **FORWARD))
    # loose spans fill the queue: they are read (prefilter off), not forwarded unread
    serve_config = ServePipelineConfig(settle_ms=20, queue_size=8, prefilter=False, **config)
    pipeline = CollectorPipeline(gate, forwarder, serve_config, telemetry or recording)
    assert pipeline.accept(encode_spans(sdk_spans(("travel", ("book_flight",))))) == IngestResult()
    assert gate.entered.wait(5)
    assert pipeline.accept(encode_spans(sdk_spans(loose=5))) == IngestResult()
    return pipeline, gate, recording


class Sender(threading.Thread):
    """`pipeline.accept(request)` on a thread of its own, as a receiver's thread calls it; timed."""

    def __init__(self, pipeline: CollectorPipeline, request: ExportTraceServiceRequest) -> None:
        super().__init__(daemon=True)
        self.pipeline, self.request = pipeline, request
        self.result: IngestResult | None = None
        self.took_s = 0.0
        self.start()

    def run(self) -> None:
        start = time.monotonic()
        self.result = self.pipeline.accept(self.request)
        self.took_s = time.monotonic() - start


def test_a_request_that_does_not_fit_waits_for_room_and_is_taken(
    registry: Registry, downstream: GrpcDownstream
) -> None:
    pipeline, gate, telemetry = held(registry, downstream, overload_wait_ms=10_000)
    request = encode_spans(sdk_spans(loose=5))
    sender = Sender(pipeline, request)
    sender.join(0.3)
    assert sender.is_alive(), "the request waits while the queue is full"
    gate.opened.set()
    sender.join(5)
    assert sender.result == IngestResult()  # taken, not refused
    assert not any(key.startswith("refused:") for key in telemetry.counts)
    ((outcome, waited_s),) = telemetry.waits  # the requests that fit at once are not timed
    assert outcome == "accepted"
    assert 0.3 <= waited_s <= sender.took_s
    assert pipeline.flush(5)
    assert Counter(downstream.span_ids).most_common(1)[0][1] == 1  # each span forwarded once
    assert {span.span_id for _, _, span in spans_of([request])} <= set(downstream.span_ids)
    pipeline.shutdown(2)


def test_a_request_waits_no_longer_than_overload_wait_ms(registry: Registry) -> None:
    pipeline, gate, telemetry = held(registry, overload_wait_ms=300)
    sender = Sender(pipeline, encode_spans(sdk_spans(loose=5)))
    sender.join(5)
    assert sender.result is not None
    assert sender.result.overloaded
    assert 0.3 <= sender.took_s < 3.0
    assert telemetry.counts["refused:queue_full"] == 1
    ((outcome, waited_s),) = telemetry.waits
    assert outcome == "refused"
    assert 0.3 <= waited_s <= sender.took_s
    gate.opened.set()
    pipeline.shutdown(2)


def test_beyond_max_waiting_requests_a_request_is_refused_at_once_and_unread(registry: Registry) -> None:
    pipeline, gate, telemetry = held(registry, overload_wait_ms=10_000, max_waiting_requests=1)
    assert pipeline.accept(encode_spans(sdk_spans(loose=3))) == IngestResult()  # the queue is full: 8 of 8
    assert pipeline.refusal() is None  # a place to wait is free: read the request
    waiting = Sender(pipeline, encode_spans(sdk_spans(loose=5)))
    deadline = time.monotonic() + 5
    while pipeline.refusal() is None:  # once the place is taken, a typical request is refused unread
        assert time.monotonic() < deadline
        time.sleep(0.01)
    assert telemetry.counts["refused:queue_full"] == 1
    late = Sender(pipeline, encode_spans(sdk_spans(loose=5)))  # read all the same (a receiver that did not ask)
    late.join(5)
    assert late.result is not None
    assert late.result.overloaded
    assert late.took_s < 1.0
    assert telemetry.counts["refused:queue_full"] == 2
    assert telemetry.waits == [], "refused without waiting: counted as refused only"
    gate.opened.set()
    waiting.join(5)
    assert waiting.result == IngestResult()
    assert [outcome for outcome, _ in telemetry.waits] == ["accepted"]
    assert pipeline.refusal() is None
    pipeline.shutdown(2)


def test_shutdown_refuses_a_waiting_request_at_once(registry: Registry) -> None:
    pipeline, gate, telemetry = held(registry, overload_wait_ms=10_000)
    sender = Sender(pipeline, encode_spans(sdk_spans(loose=5)))
    sender.join(0.2)
    assert sender.is_alive()
    closing = threading.Thread(target=pipeline.shutdown, args=(5,), daemon=True)
    closing.start()  # held by the worker until the gate opens, but closed to requests at once
    sender.join(2)
    assert sender.result is not None
    assert sender.result.overloaded
    assert telemetry.counts["refused:shutdown"] == 1
    assert [outcome for outcome, _ in telemetry.waits] == ["shutdown"]
    gate.opened.set()
    closing.join(10)
    assert not closing.is_alive()


def test_over_grpc_an_export_against_a_full_queue_succeeds_once_there_is_room(
    registry: Registry, downstream: GrpcDownstream
) -> None:
    """The sender sees a slow answer, not RESOURCE_EXHAUSTED and a retry."""
    pipeline, gate, telemetry = held(registry, downstream)  # the default wait: a second
    receiver = start_grpc_receiver(pipeline, ReceiverConfig(grpc_endpoint="127.0.0.1:0"))
    request = encode_spans(sdk_spans(loose=5))
    opener = threading.Timer(0.3, gate.opened.set)
    opener.start()
    try:
        with grpc.insecure_channel(f"127.0.0.1:{receiver.port}") as channel:
            start = time.monotonic()
            response = TraceServiceStub(channel).Export(request, timeout=10)
            took_s = time.monotonic() - start
    finally:
        opener.cancel()
        gate.opened.set()
        receiver.stop(0)
    assert not response.HasField("partial_success")
    assert took_s >= 0.25  # it waited for the gate
    assert not any(key.startswith("refused:") for key in telemetry.counts)
    assert pipeline.flush(5)
    assert {span.span_id for _, _, span in spans_of([request])} <= set(downstream.span_ids)
    pipeline.shutdown(2)


def test_over_grpc_waits_are_reported_by_outcome_with_their_duration(registry: Registry, meters: Meters) -> None:
    """The real receiver, pipeline and OTel telemetry: one export waits out its 0.4 s and is refused, the next
    waits until the gate opens 0.2 s later and is taken; the requests that fit at once are not timed."""
    pipeline, gate, _ = held(registry, telemetry=meters.telemetry, overload_wait_ms=400)
    receiver = start_grpc_receiver(pipeline, ReceiverConfig(grpc_endpoint="127.0.0.1:0"))
    opener = threading.Timer(0.2, gate.opened.set)
    try:
        with grpc.insecure_channel(f"127.0.0.1:{receiver.port}") as channel:
            export = TraceServiceStub(channel).Export
            with pytest.raises(grpc.RpcError) as refused:
                export(encode_spans(sdk_spans(loose=5)), timeout=10)
            assert refused.value.code() == grpc.StatusCode.RESOURCE_EXHAUSTED
            opener.start()
            start = time.monotonic()
            export(encode_spans(sdk_spans(loose=5)), timeout=10)
            took_s = time.monotonic() - start
    finally:
        opener.cancel()
        gate.opened.set()
        receiver.stop(0)
    waits = meters.histogram("toolscore.receiver.wait.duration", "toolscore.wait.outcome")
    assert set(waits) == {"refused", "accepted"}
    (refused_n, refused_s), (accepted_n, accepted_s) = waits["refused"], waits["accepted"]
    assert (refused_n, accepted_n) == (1, 1)
    assert 0.4 <= refused_s < 1.0
    assert 0.15 <= accepted_s <= took_s
    assert meters.refused() == {"queue_full": 1}, "the refused one is counted as refused once"
    pipeline.shutdown(2)
