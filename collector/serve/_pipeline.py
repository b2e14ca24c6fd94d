"""`CollectorPipeline`: the `Ingest` behind the OTLP receivers, scoring runs and forwarding every span.

    receiver ─accept_bytes(data), else accept(request)─→ pre-filter (`_prefilter`, a compiled walk of the bytes):
        spans of no agent trace ─→ PlainHold (`_hold`), unread; the agent traces' spans read alone (`_walked`)
        PlainHold ─┬ their trace shows a marker ─→ Engine.offer, ahead of that request's spans
                   └ their trace's root settled, or `prefilter_hold_ms` ─→ Forwarder / RequestSink, as received
        ─→ check ids (bad: rejected, partial success) ─→ Engine.offer((span, block))
        ─(worker thread)─→ group / settle / score ─┬─ other spans ────────→ RequestSink.release
                                                   └─ run spans, scored ─→ RequestSink.release_run (in place)
        RequestSink ─(regroup by resource/scope, batch)─→ [redacting: masked, when privacy masks] ─→ Forwarder.submit
            ─→ downstream OTLP
        Engine.on_scored ─┬→ ScoreStore.record (SQLite, written off the worker thread; and on_sampled_out)
                          └→ PhoenixAnnotations.record (Phoenix span annotations, posted off it)

Overload: the engine's queue is bounded per request. A request does not fit when the queue already
holds spans and it would not fit beside them, or the forwarder's queue is full; an accepted request is
queued whole, and an empty queue takes any one request (however large: `max_message_bytes` bounds it),
so every run of an accepted request is scored. A request that does not fit waits for room, up to
`overload_wait_ms`, with at most `max_waiting_requests` waiting at once (each on its receiver's thread,
polling without the GIL): the sender's call simply takes longer, rather than being refused and sent
again and again while the queue is full. Past the wait, or with every waiting place taken, `accept`
refuses the whole request (RESOURCE_EXHAUSTED / 429, so the sender retries it). The last check and the
queueing happen under one lock, so receivers racing each other never overshoot. `refusal` gives the
same answer before a request is read, when every waiting place is taken and one of the size of the
recent ones (a running average of their span counts) would not fit: the receivers then refuse it
unread, and a sender retrying against a full queue costs a check rather than a parse. A request that
waited is timed, by how it ended (`request_waited`: `toolscore.receiver.wait.duration`), so operators see
the pushback the senders feel before it turns into refusals; one that fit at once is not.

A logs export's GenAI events (`accept_logs`) go to the engine's queue of events (`Engine.offer_events`),
bounded, waited for and refused the same way (`queue_size`; the forwarder does not count: logs are not
forwarded). Its other records are not read and not forwarded either: toolscore is not a logs pipeline
(`sources.log_events`); the sender is told how many and why in OTLP's partial success, and they are
counted (`toolscore.log_records`, outcome `refused`).
"""

from __future__ import annotations

import itertools
import logging
import threading
import time
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING

from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

from toolscore.collector.pipeline.config import PipelineConfig
from toolscore.collector.pipeline.engine import Engine
from toolscore.collector.pipeline.markers import convention_markers
from toolscore.collector.pipeline.match import Matcher
from toolscore.collector.serve._carrier import (
    Carrier,
    ResourceBlock,
    ScopeBlock,
    carrier_bytes,
    decode_carrier,
    held_carrier,
)
from toolscore.collector.serve._encode import span_entries, without_spans
from toolscore.collector.serve._hold import PlainHold
from toolscore.collector.serve._pipeline_config import ServePipelineConfig
from toolscore.collector.serve._prefilter import PlainRequest, SpanPlan, WirePrefilter, all_ids_ok, plain_traces
from toolscore.collector.serve._regroup import RequestSink
from toolscore.collector.serve._walked import bytes_carriers, parsed_carriers
from toolscore.collector.serve.forward._forwarder import Forwarder
from toolscore.collector.serve.forward._judge_spans import judge_tracer
from toolscore.collector.serve.forward._redact import redacting
from toolscore.collector.serve.receivers._ingest import IngestResult
from toolscore.collector.serve.receivers._otlp_export import span_count
from toolscore.collector.sources.errors import DecodeStats
from toolscore.collector.sources.otlp_proto import count_skipped, ids_ok
from toolscore.collector.telemetry import NoopTelemetry, PipelineTelemetry
from toolscore.collector.telemetry.base import RefusalReason, WaitOutcome

if TYPE_CHECKING:
    from toolscore.collector.registry import Expectation
    from toolscore.collector.serve._phoenix import PhoenixAnnotations
    from toolscore.collector.serve.scores._store import ScoreStore
    from toolscore.collector.sources.log_events import LogBatch
    from toolscore.scorers import AgentRun, ScoreResult

__all__ = ["CollectorPipeline"]

_log = logging.getLogger("toolscore.serve")

_WAIT_POLL_S = 0.01
"""How often a waiting request looks for room. The queue holds about half a second of the worker's
work when a typical request first fits again, so a late look never leaves the worker idle, and eight
waiting requests wake the interpreter 800 times a second at most."""


def _on_scored(
    store: ScoreStore | None, annotations: PhoenixAnnotations | None
) -> Callable[[AgentRun, Expectation, ScoreResult, str | None], None] | None:
    """What sees every result: the store, Phoenix, both (the engine takes one callback) or none."""
    if store is None or annotations is None:
        return store.record if store is not None else annotations.record if annotations is not None else None

    def both(run: AgentRun, expectation: Expectation, result: ScoreResult, agent_version: str | None) -> None:
        store.record(run, expectation, result, agent_version)
        annotations.record(run, expectation, result, agent_version)

    return both


def _discard(request: bytes, spans: int) -> bool:
    """No downstream configured: the spans were counted as passed by the engine and go nowhere."""
    return True


class CollectorPipeline:
    """Implements `Ingest`; owns the engine and the sink, and shuts down the forwarder and store it is given.

    `forwarder=None` means no downstream: spans are scored and discarded. `telemetry` should be the
    same object the forwarder reports through (`OTelPipelineTelemetry` implements both protocols).
    """

    def __init__(
        self,
        registry: Matcher,
        forwarder: Forwarder | None = None,
        config: PipelineConfig | None = None,
        telemetry: PipelineTelemetry | None = None,
        store: ScoreStore | None = None,
        *,
        annotations: PhoenixAnnotations | None = None,
        retry_after_s: float = 1.0,
    ) -> None:
        self.config = config if isinstance(config, ServePipelineConfig) else _serve_config(config)
        self.telemetry: PipelineTelemetry = telemetry or NoopTelemetry()
        self.forwarder = forwarder
        self.store = store
        self.annotations = annotations
        self.retry_after_s = retry_after_s
        if forwarder is not None:
            batch = forwarder.config
            # masked as the runs are when the privacy settings mask anything; the received bytes otherwise
            submit = redacting(forwarder.submit, self.config.extract.privacy)
            self._submit = submit
            self.sink = RequestSink(submit, batch.batch_max_spans, batch.batch_timeout_ms, batch.batch_max_bytes)
        else:
            self._submit = _discard
            self.sink = RequestSink(_discard, batch_max_spans=1)
        self._judge_spans = judge_tracer(submit) if forwarder is not None else None
        self.engine: Engine[Carrier] = Engine(
            registry,
            self.sink,
            decode_carrier,
            self.config,
            self.telemetry,
            on_scored=_on_scored(store, annotations),
            on_sampled_out=store.record_sampled_out if store is not None else None,
            hold=held_carrier,
            size=carrier_bytes,
            tracer=self._judge_spans[0] if self._judge_spans is not None else None,
            flag_runs_begun_elsewhere=self.config.flag_runs_begun_before_start,
        )
        markers = convention_markers() if self.config.prefilter else None
        self.prefilter = WirePrefilter(markers, 2 * self.config.max_pending_traces) if markers is not None else None
        """Forwards the spans of traces that showed no agent marker as received, unread (`_prefilter`)."""
        self.hold = (
            PlainHold(
                settle_ms=self.config.settle_ms,
                hold_ms=self.config.prefilter_hold_ms,
                max_bytes=self.config.prefilter_hold_bytes,
                forward=self._submit,
                release=self.sink.release,
                split=_split_request,
                telemetry=self.telemetry,
            )
            if self.prefilter is not None
            else None
        )
        """The plain spans of traces not known to be an agent's yet, until their trace decides (`_hold`)."""
        self.engine.start()
        self._closed = False
        self._admit = threading.Lock()
        """Held from a request's overload check to its spans being queued, and while closing."""
        self._typical_spans = 0.0
        """Running average of the accepted requests' span counts (updated without a lock: a lost update is harmless)."""
        self._waiting = 0
        """Requests waiting for room now (`_room`), changed under `_waiting_lock`."""
        self._waiting_lock = threading.Lock()

    def refusal(self) -> IngestResult | None:
        """Overloaded when a request of the typical size would be refused now (see the module docstring)."""
        if not self._closed and self.config.overload_wait_ms and self._waiting < self.config.max_waiting_requests:
            return None  # it may wait for room: read it
        reason = self._overload(self._typical_spans)
        return None if reason is None else self._refuse(reason)  # unread: its spans are not counted

    def accept(self, request: ExportTraceServiceRequest, data: bytes | None = None) -> IngestResult:
        """Queue the spans of `request` that have usable ids for the engine, waiting for room if need be,
        or refuse it whole (see the module docstring)."""
        try:
            total = span_count(request)
            start = time.monotonic()
            deadline = start + self.config.overload_wait_ms / 1000
            agent: list[bool] | None = None
            offsets: list[tuple[int, int]] | None = None
            if self.prefilter is not None and total:
                wire = request.SerializeToString() if data is None else data  # OTLP/JSON: its protobuf bytes
                plan = self.prefilter.agent_spans(request, wire)
                if isinstance(plan, PlainRequest):
                    return self._hold_whole(plan, wire, total, start, deadline)
                if data is not None and plan.offsets is not None and all_ids_ok(plan):
                    return self._accept_plan(request, data, plan, start, deadline)
                agent, offsets = plan.agent, plan.offsets if data is not None else None
            # before the walk too, so that a request refused at once is not walked
            reason, waited = self._room(total, deadline, self._overload)
            if reason is not None:
                return self._refuse(reason, total, start if waited else None)
            carriers, passing, stats = _carriers(request, data, total, agent, offsets)
            traces = {span.trace_id for span, _, _ in carriers}
            refused = self._offer(carriers, traces, total, start, deadline, waited=waited)
            if refused is not None:
                return refused
            # once the request is taken: a refused one comes again whole
            if passing and data is not None and offsets is not None and agent is not None and stats is None:
                self._hold_rest(request, data, SpanPlan(agent, offsets), passing)
            elif passing:
                self._pass_on(passing)
        except Exception as error:  # never raise into a receiver; say what happened instead
            return _failed("an export request", error)
        if stats is None:
            return IngestResult()
        self.telemetry.spans_refused(stats.skipped_total, "invalid")
        shown = "; ".join(stats.examples[:3])
        more = f" (and {stats.skipped_total - 3} more)" if stats.skipped_total > 3 else ""
        return IngestResult(rejected_spans=stats.skipped_total, error_message=f"spans with unusable ids: {shown}{more}")

    def accept_bytes(self, data: bytes, max_spans: int) -> IngestResult | None:
        """A binary request read from its bytes alone by the pre-filter's compiled walks, without the protobuf
        runtime's parse, which would cost more than everything else most of its spans meet here: held whole when
        no span is of an agent trace, else its agent traces' spans to the engine and the rest held as one
        (`WirePrefilter.request_plan`). None: the receiver parses it and calls `accept` (see
        `Ingest.accept_bytes`)."""
        try:
            plan = self.prefilter.request_plan(data, max_spans) if self.prefilter is not None else None
            if plan is None:
                return None  # the usual path decides, and refuses with its own answer
            start = time.monotonic()
            deadline = start + self.config.overload_wait_ms / 1000
            if isinstance(plan, PlainRequest):
                return self._hold_whole(plan, data, plan.spans, start, deadline)
            return self._accept_plan(None, data, plan, start, deadline)
        except Exception as error:  # never raise into a receiver; say what happened instead
            return _failed("an export request", error)

    def _accept_plan(
        self, request: ExportTraceServiceRequest | None, data: bytes, plan: SpanPlan, start: float, deadline: float
    ) -> IngestResult:
        """A request the compiled walk read, every id usable: its agent traces' spans to the engine (read from the
        parsed request, or from the bytes when it was not parsed: `_walked`), the rest held as one request."""
        total = len(plan.agent)
        reason, waited = self._room(total, deadline, self._overload)
        if reason is not None:
            return self._refuse(reason, total, start if waited else None)
        carriers = bytes_carriers(data, plan) if request is None else parsed_carriers(request, data, plan)
        assert plan.ids is not None
        traces = set(itertools.compress(plan.ids, plan.agent))
        refused = self._offer(carriers, traces, total, start, deadline, waited=waited)
        if refused is not None:
            return refused
        if len(carriers) < total:  # once the request is taken: a refused one comes again whole
            self._hold_rest(request, data, plan, [])
        return IngestResult()

    def _offer(
        self, carriers: list[Carrier], traces: set[bytes], total: int, start: float, deadline: float, *, waited: bool
    ) -> IngestResult | None:
        """Queue `carriers` (a request's spans for the engine, of the trace ids `traces`), the plain spans held of
        their traces first, once they fit, waiting for room until `deadline`; the refusal when they never do, None
        once queued."""
        hold = self.hold
        early = traces if hold is not None else ()
        while True:
            with self._admit:
                held = hold.held(early) if hold is not None and early else 0
                reason = self._overload(len(carriers) + held)
                if reason is None:
                    # the plain spans held for these traces first, as they came: extraction walks through them
                    self.engine.offer_all(hold.take(early) + carriers if held and hold is not None else carriers)
                    break
            # another request took the room first
            reason, again = self._room(len(carriers) + held, deadline, self._overload)
            waited = waited or again
            if reason is not None:
                return self._refuse(reason, total, start if waited else None)
        if waited:
            self.telemetry.request_waited(time.monotonic() - start, "accepted")
        typical = self._typical_spans
        self._typical_spans = typical + (len(carriers) - typical) / 4 if typical else float(len(carriers))
        return None

    def _hold_whole(self, plain: PlainRequest, data: bytes, total: int, start: float, deadline: float) -> IngestResult:
        """A request with no span of an agent trace: held as received, once the forwarder has room, until its
        traces decide (`_hold`); then forwarded as received (masked too, when the privacy settings mask)."""
        reason, waited = self._room(total, deadline, self._forward_overload)
        if reason is not None:
            return self._refuse(reason, total, start if waited else None)
        if waited:
            self.telemetry.request_waited(time.monotonic() - start, "accepted")
        assert self.hold is not None
        self.hold.hold_request(data, plain.counts, plain.roots, plain.spans)
        self._take_known(plain.counts)
        return IngestResult()

    def _pass_on(self, passing: list[Carrier]) -> None:
        """Spans of no agent trace: held, each as its bytes, until their traces decide; forwarded at once when the
        pre-filter is off."""
        if self.hold is not None:
            self.hold.hold_spans(passing)
            self._take_known({span.trace_id for span, _, _ in passing})
        else:
            self.telemetry.spans_received(len(passing))
            self.sink.release(passing)
            self.telemetry.spans_passed(len(passing))

    def _hold_rest(
        self, request: ExportTraceServiceRequest | None, data: bytes, plan: SpanPlan, passing: list[Carrier]
    ) -> None:
        """A request's spans of no agent trace, held until their traces decide as one request: the received one
        without its other spans (`without_spans`). Their traces and roots are read from the compiled walk where
        it ran (`plan.flags`), else from `passing`, their carriers."""
        hold = self.hold
        assert hold is not None
        assert plan.offsets is not None
        counts: dict[bytes, int] = {}
        root_traces: set[bytes] = set()
        if plan.ids is not None:
            counts, root_traces = plain_traces(plan)
        else:
            for span, _, _ in passing:
                trace_id = span.trace_id
                counts[trace_id] = counts.get(trace_id, 0) + 1
                if not span.parent_span_id:
                    root_traces.add(trace_id)
        try:
            rest = without_spans(data, plan.offsets, list(itertools.compress(range(len(plan.agent)), plan.agent)))
        except (IndexError, ValueError):  # not expected of walked bytes: each span held alone instead
            parsed = request if request is not None else ExportTraceServiceRequest.FromString(data)
            hold.hold_spans(passing or _carriers(parsed, data, len(plan.agent), plan.agent, plan.offsets)[1])
        else:
            hold.hold_request(rest, counts, root_traces, sum(counts.values()))
        self._take_known(counts)

    def _take_known(self, trace_ids: Iterable[bytes]) -> None:
        """Spans just held of a trace another request has shown a marker of meanwhile (receivers race): to the
        engine, as that request's `take` would have sent them had they been held before it."""
        if self.prefilter is None or self.hold is None:
            return
        known = self.prefilter.traces
        marked = [trace_id for trace_id in trace_ids if trace_id in known]
        if marked:
            with self._admit:
                self.engine.offer_all(self.hold.take(marked))

    def accept_logs(self, batch: LogBatch) -> IngestResult:
        """Queue the GenAI events of a logs export for the engine, waiting for room if need be, or refuse it
        whole; answer for the records not read (see the module docstring)."""
        try:
            events = batch.events
            if self.prefilter is not None and events:
                named = {event.trace_id for event in events}
                self.prefilter.note_events(named)
                self._take_known(_trace_ids(named))
            start = time.monotonic()
            deadline = start + self.config.overload_wait_ms / 1000
            waited = False
            while events:
                reason, again = self._room(len(events), deadline, self._events_overload)
                waited = waited or again
                if reason is not None:
                    return self._refuse(reason, None, start if waited else None)
                with self._admit:
                    if self._events_overload(len(events)) is None:
                        self.engine.offer_events(events)
                        break
            if waited:
                self.telemetry.request_waited(time.monotonic() - start, "accepted")
        except Exception as error:  # never raise into a receiver; say what happened instead
            return _failed("a logs export", error)
        refusals = batch.refusals
        for reason, n in refusals.counts.items():
            self.telemetry.log_records(n, "refused", reason)
        return IngestResult(rejected_spans=refusals.total, error_message=refusals.message)

    def _room(
        self, spans: int, deadline: float, overload: Callable[[float], RefusalReason | None]
    ) -> tuple[RefusalReason | None, bool]:
        """(None once `spans` more spans (or events) fit, as `overload` says, else why they do not; whether it
        waited for them).

        It waits until `deadline` when they do not fit at once and there is a place to wait."""
        reason = overload(spans)
        if reason is None or reason == "shutdown" or time.monotonic() >= deadline:
            return reason, False
        with self._waiting_lock:
            if self._waiting >= self.config.max_waiting_requests:
                return reason, False
            self._waiting += 1
        try:
            while (left := deadline - time.monotonic()) > 0:
                time.sleep(min(_WAIT_POLL_S, left))
                reason = overload(spans)
                if reason is None or reason == "shutdown":
                    break
            return reason, True
        finally:
            with self._waiting_lock:
                self._waiting -= 1

    def _refuse(
        self, reason: RefusalReason, counted: int | None = None, waited_since: float | None = None
    ) -> IngestResult:
        """The overloaded answer, counted (with the request's `counted` spans when it was read, and the
        time since `waited_since` when it waited for room)."""
        if waited_since is not None:
            outcome: WaitOutcome = "shutdown" if reason == "shutdown" else "refused"
            self.telemetry.request_waited(time.monotonic() - waited_since, outcome)
        self.telemetry.request_refused(reason, counted)
        return IngestResult(overloaded=True, retry_after_s=self.retry_after_s, reason=reason)

    def load(self) -> str:
        """The queues `_overload` reads and the places to wait for room, as they are now (unlocked reads)."""
        config = self.config
        text = (
            f"spans queued for scoring {len(self.engine.intake)}/{config.queue_size}, "
            f"requests waiting for room {self._waiting}/{config.max_waiting_requests}"
        )
        forwarder = self.forwarder
        if forwarder is None:
            return text
        limits = forwarder.config
        return (
            f"{text}, forward queue {forwarder.queued_requests}/{limits.queue_max_requests} requests "
            f"({forwarder.queued_spans}/{limits.queue_max_spans} spans)"
        )

    def _overload(self, spans: float) -> RefusalReason | None:
        if self._closed:
            return "shutdown"
        queued = len(self.engine.intake)
        if queued and queued + spans > self.config.queue_size:
            return "queue_full"
        if self.forwarder is not None and not self.forwarder.has_room(spans):
            return "forward_queue_full"
        return None

    def _forward_overload(self, spans: float) -> RefusalReason | None:
        """`_overload` for a request forwarded whole: the forwarder's queue only."""
        if self._closed:
            return "shutdown"
        if self.forwarder is not None and not self.forwarder.has_room(spans):
            return "forward_queue_full"
        return None

    def _events_overload(self, events: float) -> RefusalReason | None:
        """`_overload` for a logs export's events: the engine's queue of events, no forwarder."""
        if self._closed:
            return "shutdown"
        queued = len(self.engine.events)
        if queued and queued + events > self.config.queue_size:
            return "queue_full"
        return None

    def flush(self, timeout_s: float) -> bool:
        """Score or release everything pending and deliver it downstream; True when all done in time."""
        deadline = time.monotonic() + timeout_s
        if self.hold is not None:
            self.hold.flush()
        ok = self.engine.flush(timeout_s)
        self.sink.flush()
        if self.forwarder is not None:
            ok = self.forwarder.flush(max(0.0, deadline - time.monotonic())) and ok
        if self.store is not None:
            ok = self.store.flush(max(0.0, deadline - time.monotonic())) and ok
        if self.annotations is not None:
            ok = self.annotations.flush(max(0.0, deadline - time.monotonic())) and ok
        return ok

    def shutdown(self, timeout_s: float) -> bool:
        """Refuse new requests, score or release every pending run, forward it all, close the store and the
        Phoenix sink. Idempotent.

        The engine gets up to half of `timeout_s` (judges in flight are cut off there), the forwarder the rest.
        """
        with self._admit:  # a request checked before this is queued before the engine drains for the last time
            if self._closed:
                return True
            self._closed = True
        deadline = time.monotonic() + timeout_s
        if self.hold is not None:
            self.hold.close()
        ok = self.engine.shutdown(timeout_s / 2)
        if self._judge_spans is not None:
            self._judge_spans[1].shutdown()
        self.sink.close()
        if self.forwarder is not None:
            ok = self.forwarder.shutdown(max(0.0, deadline - time.monotonic())) and ok
        if self.store is not None:
            ok = self.store.close(max(0.5, deadline - time.monotonic())) and ok
        if self.annotations is not None:  # after the forwarder: the run spans went to Phoenix first
            ok = self.annotations.close(max(0.5, deadline - time.monotonic())) and ok
        return ok


def _serve_config(config: PipelineConfig | None) -> ServePipelineConfig:
    """Serve's settings from the shared ones: every shared key as given, serve's own keys at their defaults."""
    return ServePipelineConfig() if config is None else ServePipelineConfig(**config.model_dump())


def _trace_ids(hex_ids: set[str]) -> set[bytes]:
    """Lowercase hex trace ids (log events') as bytes; those that are not hex left out."""
    out = set()
    for trace_id in hex_ids:
        try:
            out.add(bytes.fromhex(trace_id))
        except ValueError:
            continue
    return out


def _split_request(data: bytes) -> list[tuple[bytes, Carrier]]:
    """A request held whole (`_hold`), parsed into its spans with their received bytes, each under its trace id
    (under none, b"", when its ids are unusable: it is then forwarded as received, never scored)."""
    from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

    request = ExportTraceServiceRequest.FromString(data)
    entries = span_entries(data)
    received = iter(entries if entries is not None and len(entries) == span_count(request) else itertools.repeat(None))
    out: list[tuple[bytes, Carrier]] = []
    for resource_spans in request.resource_spans:
        resource = ResourceBlock(resource_spans)
        for scope_spans in resource_spans.scope_spans:
            block = ScopeBlock(resource, scope_spans)
            out += [
                (span.trace_id if ids_ok(span) else b"", (span, block, next(received))) for span in scope_spans.spans
            ]
    return out


def _failed(what: str, error: Exception) -> IngestResult:
    """The answer for a request whose ingest raised (logged with its traceback): a receiver is never raised into."""
    _log.exception("ingesting %s failed", what)
    return IngestResult(error_message=f"internal error while ingesting: {type(error).__name__}")


def _carriers(
    request: ExportTraceServiceRequest,
    data: bytes | None,
    total: int,
    agent: list[bool] | None = None,
    offsets: list[tuple[int, int]] | None = None,
) -> tuple[list[Carrier], list[Carrier], DecodeStats | None]:
    """The request's `total` spans with usable ids, each with its blocks and received bytes: for the engine, and
    (those `agent` says are of no agent trace) for the sink as received; the others counted."""
    carriers: list[Carrier] = []
    passing: list[Carrier] = []
    append = carriers.append
    stats: DecodeStats | None = None
    if offsets is not None and data is not None:
        view = memoryview(data)
        entries: list[memoryview] | None = [view[at:stop] for at, stop in offsets]
    else:
        entries = span_entries(data) if data is not None else None
    received = iter(entries if entries is not None and len(entries) == total else itertools.repeat(None))
    wanted = iter(agent) if agent is not None else itertools.repeat(True)
    for resource_spans in request.resource_spans:
        resource = ResourceBlock(resource_spans)
        for scope_spans in resource_spans.scope_spans:
            block = ScopeBlock(resource, scope_spans)
            for span in scope_spans.spans:
                entry = next(received)
                of_agent = next(wanted)
                if not ids_ok(span):
                    stats = stats or DecodeStats()
                    count_skipped(span, stats)
                elif of_agent:
                    append((span, block, entry))
                else:
                    passing.append((span, block, entry))
    return carriers, passing, stats
