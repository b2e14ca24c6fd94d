"""OTLP/gRPC receiver: `opentelemetry.proto.collector.trace.v1.TraceService/Export` → `Ingest`, and on the same
server and port `opentelemetry.proto.collector.logs.v1.LogsService/Export` (`LogsServiceReceiver`: the GenAI
events of logs exports, `Ingest.accept_logs`), behind the same authentication, size limits and overload gates.

A synchronous `grpc.server` with a bounded thread pool: `Ingest.accept` is a quick, thread-safe hand-off,
so there is nothing to await, and threads keep the receiver independent of any event loop the service
runs. The servicer is the generated `TraceServiceServicer`, but it is registered without a request
deserializer rather than through `add_TraceServiceServicer_to_server`: the generated one raises on
bytes that do not parse, which grpc answers as INTERNAL with no detail, where OTLP wants
INVALID_ARGUMENT naming what is wrong; and `Export` parses the bytes itself, inside a decode slot
shared with the HTTP receiver (`max_concurrent_decodes`).

A message over `max_message_bytes` is refused RESOURCE_EXHAUSTED and counted `too_large`, as HTTP counts
its 413s. grpc's own limit (`max_receive_message_length`, checked after decompression) refuses a message
from its length prefix, before reading it, but toolscore never hears of it: the call just ends, as when a
sender cancels it. So grpc's limit is set at twice `max_message_bytes` (`_receive_limit`), and `Export`
refuses what lies between; only a message over twice the limit goes uncounted.

`Export` takes its request as a stream of one message (on the wire, the same as a unary call): grpc
then always calls it, even for a call cancelled while it waited for a worker, so it always gives back
the slot `grpc_gate.CallSlots` took for it. What is refused before a worker takes the call
(authentication, overload, the call bound) is `grpc_gate`'s.

Overload is RESOURCE_EXHAUSTED with a `google.rpc.RetryInfo`, which OTLP makes retryable. The status
details travel in the standard `grpc-status-details-bin` trailer; the same `RetryInfo` also goes in
`google.rpc.retryinfo-bin`, the trailer the OpenTelemetry Python exporter reads its delay from.

Every refusal is logged with the peer and why, at most one line per refusal reason every 10 s (`LimitedLog`,
shared with `grpc_gate`'s interceptors), as the HTTP receiver logs its own: a sender that keeps sending what
cannot be taken cannot flood the log. Overload and the call bound (pushback the sender retries) are logged at
WARNING with the queues' state (`overload_log`), since sustained overload needs an operator; the rest at INFO.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import grpc
from opentelemetry.proto.collector.logs.v1.logs_service_pb2 import ExportLogsServiceResponse
from opentelemetry.proto.collector.trace.v1 import trace_service_pb2_grpc
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceRequest,
    ExportTraceServiceResponse,
)

from toolscore.collector.serve._bind_probe import bind_error
from toolscore.collector.serve._limited_log import LimitedLog
from toolscore.collector.serve.receivers._config import ReceiverConfig, split_endpoint
from toolscore.collector.serve.receivers._grpc_gate import (
    EXPORT_METHOD,
    LOGS_SERVICE,
    TRACE_SERVICE,
    BearerAuth,
    CallSlots,
    ShedOverload,
    abort,
    abort_overloaded,
    log_refusal,
    refusal_pool,
)
from toolscore.collector.serve.receivers._ingest import Ingest
from toolscore.collector.serve.receivers._otlp_export import (
    BadPayload,
    ReceiverTelemetry,
    accept_bytes_safely,
    accept_safely,
    bad_payload_status,
    decode_slots,
    export_response,
    parse_proto_request,
    span_count,
)
from toolscore.collector.serve.receivers._otlp_logs_export import accept_logs_safely, logs_from_proto, logs_response
from toolscore.collector.telemetry.base import NoopTelemetry

__all__ = ["TRACE_SERVICE", "GrpcReceiver", "LogsServiceReceiver", "TraceServiceReceiver", "start_grpc_receiver"]

_log = logging.getLogger(__name__)

_ONE_MESSAGE = f'"{EXPORT_METHOD}" requires exactly one request message.'
"""grpc's own answer to a unary call that carries no message."""
_GRPC_MAX_INT = 2**31 - 1
"""grpc's channel arguments are C ints."""


def _receive_limit(max_message_bytes: int) -> int:
    """grpc's receive limit: twice `max_message_bytes`, so that `Export` sees, refuses and counts the messages
    in between. Receiving one takes about three times its size until it is refused (grpc's buffers and the
    copy handed to Python), so the gRPC workers hold at most `grpc_max_workers` × 6 × `max_message_bytes`."""
    return min(2 * max_message_bytes, _GRPC_MAX_INT)


@dataclass(frozen=True)
class _Undecodable:
    """What the deserializer hands the servicer instead of raising, so the answer can say why."""

    error: BadPayload
    reason: str
    """The `toolscore.refusal.reason` it is counted under."""


def _decode(data: bytes, max_spans: int) -> ExportTraceServiceRequest | _Undecodable:
    """The parsed request, or why not."""
    try:
        return parse_proto_request(data, max_spans)
    except BadPayload as exc:
        return _Undecodable(exc, exc.reason)
    except Exception as exc:  # never let grpc turn a decoder fault into a bare INTERNAL
        _log.exception("OTLP/gRPC: decoding a %d-byte request failed unexpectedly", len(data))
        return _Undecodable(BadPayload(f"the request could not be decoded: {exc!r}"), "internal")


_ENDED_WAIT_S = 0.05
"""How long a call without a request message is watched for grpc ending it (the rare path only)."""


def _ended_by_grpc(context: Any) -> bool:
    """Whether grpc itself ends a call that brought no request message, rather than the sender sending none.

    A message over grpc's own limit reaches the handler as no message at all, and the call's cancellation
    may be noted a moment later: without this wait, a sender's oversized request was now and then counted
    as `unsupported` instead of not at all (grpc answers it, and toolscore cannot see its size).
    """
    ended = threading.Event()
    if not context.add_callback(ended.set):
        return True  # already terminated
    return ended.wait(_ENDED_WAIT_S) or not context.is_active()


class TraceServiceReceiver(trace_service_pb2_grpc.TraceServiceServicer):
    """`Export` → `Ingest.accept`, with OTLP's answers for success, partial success, bad data and overload.

    Each call holds a slot of `slots`, taken when grpc admitted it; `Export` gives it back.
    """

    def __init__(
        self,
        ingest: Ingest,
        max_spans: int,
        decodes: threading.Semaphore,
        telemetry: ReceiverTelemetry,
        *,
        slots: CallSlots,
        max_bytes: int,
        refusal_log: LimitedLog | None = None,
    ) -> None:
        self._ingest = ingest
        self._refusal_log = refusal_log or LimitedLog(_log)
        self._max_spans = max_spans
        self._max_bytes = max_bytes
        self._decodes = decodes
        self._telemetry = telemetry
        self._slots = slots

    def Export(self, requests: Iterator[bytes], context: Any) -> Any:
        try:
            data = next(requests, None)  # raises grpc.RpcError when the call was cancelled: grpc ends it
            if data is None:
                if _ended_by_grpc(context):
                    return ExportTraceServiceResponse()  # grpc refused the message (over its limit): its answer stands
                self._refused(context, "unsupported", _ONE_MESSAGE)
                context.abort(grpc.StatusCode.UNIMPLEMENTED, _ONE_MESSAGE)
                raise AssertionError("unreachable: abort raises")
            if len(data) > self._max_bytes:
                self._refuse_too_large(len(data), context)
            return self._export(data, context)
        finally:
            self._slots.leave()

    def _refuse_too_large(self, size: int, context: Any) -> None:
        """RESOURCE_EXHAUSTED without `RetryInfo`, as grpc answers past its own limit: the same request would
        be refused again. Raises."""
        message = (
            f"the request is {size} bytes, over the {self._max_bytes}-byte limit (receiver.max_message_bytes): "
            "send smaller batches"
        )
        self._refused(context, "too_large", message)
        context.abort(grpc.StatusCode.RESOURCE_EXHAUSTED, message)

    def _export(self, data: bytes, context: Any) -> Any:
        with self._decodes:  # released by abort's exception too
            result = accept_bytes_safely(self._ingest, data, self._max_spans)
            request: ExportTraceServiceRequest | None = None
            if result is None:
                decoded = _decode(data, self._max_spans)
                if isinstance(decoded, _Undecodable):
                    self._refused(context, decoded.reason, decoded.error, decoded.error.spans)
                    abort(context, grpc.StatusCode.INVALID_ARGUMENT, bad_payload_status(decoded.error))
                    raise AssertionError("unreachable: abort raises")
                request = decoded
                result = accept_safely(self._ingest, request, data)
        if result is None:
            message = "toolscore failed to take the request (see its log)"
            self._refused(context, "internal", message, span_count(request) if request is not None else None)
            context.abort(grpc.StatusCode.INTERNAL, message)
            raise AssertionError("unreachable: abort raises")
        if result.overloaded:
            log, state = self._refusal_log, self._ingest.load
            abort_overloaded(context, result.retry_after_s, log=log, reason=result.reason, state=state)
        return export_response(result)

    def _refused(self, context: Any, reason: str, message: object, spans: int | None = None) -> None:
        """Count a refused export under `reason`, and log it (at most one line per reason every 10 s)."""
        self._telemetry.request_refused(reason, spans)
        log_refusal(self._refusal_log, context, reason, message)


class LogsServiceReceiver(TraceServiceReceiver):
    """`LogsService/Export` → `Ingest.accept_logs`: the trace receiver's call handling, limits and answers, with
    a logs export's decoding and partial success (`otlp_logs_export`)."""

    def _export(self, data: bytes, context: Any) -> Any:
        with self._decodes:  # released by abort's exception too
            try:
                batch = logs_from_proto(data, self._max_spans)
            except BadPayload as exc:
                self._refused(context, exc.reason, exc)
                abort(context, grpc.StatusCode.INVALID_ARGUMENT, bad_payload_status(exc))
                raise AssertionError("unreachable: abort raises") from None
            result = accept_logs_safely(self._ingest, batch)
        if result is None:
            message = "toolscore failed to take the request (see its log)"
            self._refused(context, "internal", message)
            context.abort(grpc.StatusCode.INTERNAL, message)
            raise AssertionError("unreachable: abort raises")
        if result.overloaded:
            log, state = self._refusal_log, self._ingest.load
            abort_overloaded(context, result.retry_after_s, log=log, reason=result.reason, state=state)
        return logs_response(result)


@dataclass
class GrpcReceiver:
    """A started OTLP/gRPC receiver (a `ReceiverHandle`)."""

    server: Any
    port: int
    tls: bool = False
    refusals: ThreadPoolExecutor | None = field(default=None, repr=False)
    """The thread refusals are answered on (`grpc_gate`), closed after the server."""
    workers: ThreadPoolExecutor | None = field(default=None, repr=False)
    """The threads calls run on: grpc's `stop` does not end them, so a stopped receiver would leave them idle."""
    _stopped: bool = field(default=False, repr=False)

    def stop(self, grace_s: float = 5.0) -> None:
        """Refuse new calls, let calls in flight finish within `grace_s`, then close. Idempotent."""
        if self._stopped:
            return
        self._stopped = True
        self.server.stop(grace_s).wait(grace_s + 1.0)
        for pool in (self.refusals, self.workers):
            if pool is not None:
                pool.shutdown(wait=False)


def start_grpc_receiver(
    ingest: Ingest,
    config: ReceiverConfig,
    decodes: threading.Semaphore | None = None,
    telemetry: ReceiverTelemetry | None = None,
) -> GrpcReceiver:
    """Bind `config.grpc_endpoint` and start serving; raises `OSError` saying why when it cannot be bound.

    `decodes`: the decode slots shared with the HTTP receiver (default: its own, `max_concurrent_decodes`).
    `telemetry`: where the requests it refuses itself are counted (overload is the ingest's to count).
    """
    if decodes is None:
        decodes = decode_slots(config.max_concurrent_decodes)
    telemetry = telemetry or NoopTelemetry()
    refusals = refusal_pool(config.grpc_max_concurrent_calls)  # waiting refusals hold calls as waiting calls do
    refusal_log = LimitedLog(_log)
    slots = CallSlots(config.grpc_max_concurrent_calls, telemetry, refusals, refusal_log)

    def export_handler(receiver: type[TraceServiceReceiver], serialize: Any) -> Any:
        """One service's `Export`, behind the same slots, limits and refusal log as the other's."""
        servicer = receiver(
            ingest,
            config.max_spans_per_request,
            decodes,
            telemetry,
            slots=slots,
            max_bytes=config.max_message_bytes,
            refusal_log=refusal_log,
        )
        return grpc.stream_unary_rpc_method_handler(servicer.Export, response_serializer=serialize)

    handler = export_handler(TraceServiceReceiver, ExportTraceServiceResponse.SerializeToString)
    logs_handler = export_handler(LogsServiceReceiver, ExportLogsServiceResponse.SerializeToString)
    interceptors: list[grpc.ServerInterceptor] = (
        [BearerAuth(config.bearer_token, telemetry, refusals, refusal_log)] if config.bearer_token else []
    )
    # after authentication: a stranger learns nothing of the load
    interceptors.append(ShedOverload(ingest, refusals, refusal_log))
    interceptors.append(slots)  # last: a call it admits must reach `Export`, which gives its slot back
    workers = ThreadPoolExecutor(max_workers=config.grpc_max_workers, thread_name_prefix="toolscore-otlp-grpc")
    server = grpc.server(
        workers,
        interceptors=interceptors,
        # SO_REUSEPORT off: a second collector on the same port must fail to start, not share the traffic.
        options=[
            ("grpc.max_receive_message_length", _receive_limit(config.max_message_bytes)),
            ("grpc.so_reuseport", 0),
        ],
    )
    server.add_generic_rpc_handlers(
        (
            grpc.method_handlers_generic_handler(TRACE_SERVICE, {"Export": handler}),
            grpc.method_handlers_generic_handler(LOGS_SERVICE, {"Export": logs_handler}),
        )
    )
    try:
        if config.tls_cert_file and config.tls_key_file:
            pair = (Path(config.tls_key_file).read_bytes(), Path(config.tls_cert_file).read_bytes())
            port = server.add_secure_port(config.grpc_endpoint, grpc.ssl_server_credentials([pair]))
        else:
            port = server.add_insecure_port(config.grpc_endpoint)
    except RuntimeError:
        port = 0
    if not port:
        server.stop(None)
        refusals.shutdown(wait=False)
        workers.shutdown(wait=False)
        raise OSError(_why_unbound(config.grpc_endpoint))
    server.start()
    _log.info(
        "OTLP/gRPC receiver listening on %s (port %d)%s", config.grpc_endpoint, port, " TLS" if config.tls else ""
    )
    return GrpcReceiver(server, int(port), tls=config.tls, refusals=refusals, workers=workers)


def _why_unbound(endpoint: str) -> str:
    """Why grpc could not listen on `endpoint`, in the operating system's words (grpc says only "Failed to bind");
    `toolscore serve` checks its addresses before starting, so this is for a port taken in between, and for
    callers of `start_grpc_receiver`."""
    host, port = split_endpoint(endpoint)
    error = bind_error(host, port)
    return error[0] if error is not None else "grpc could not listen there (GRPC_VERBOSITY=debug makes grpc log why)"
