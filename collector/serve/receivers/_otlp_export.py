"""One OTLP trace export, whatever the transport: decode, hand to `Ingest`, and phrase the answer.

Both receivers share this so that gRPC and HTTP answer the same request the same way: the same decode
errors (naming the byte offset or field path), the same partial-success counts and messages, the same
retry delay when the collector is overloaded. Only the framing differs (a gRPC status with details in
trailing metadata; an HTTP status with a `google.rpc.Status` body).
"""

from __future__ import annotations

import logging
import threading
from typing import Any, Protocol

from google.protobuf.duration_pb2 import Duration
from google.rpc import code_pb2, error_details_pb2, status_pb2
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceRequest,
    ExportTraceServiceResponse,
)

from toolscore.collector.serve._encode import count_spans
from toolscore.collector.serve.receivers._ingest import Ingest, IngestResult
from toolscore.collector.sources.errors import SpanDecodeError, capped
from toolscore.collector.sources.otlp_proto import parse_trace_export

__all__ = [
    "BadPayload",
    "ReceiverHandle",
    "ReceiverTelemetry",
    "TooManySpans",
    "accept_bytes_safely",
    "accept_safely",
    "bad_payload_status",
    "check_span_limit",
    "decode_slots",
    "early_refusal",
    "export_response",
    "overloaded_status",
    "parse_proto_request",
    "retry_info",
    "span_count",
]

_log = logging.getLogger(__name__)


class BadPayload(ValueError):
    """A request body that cannot be used at all: INVALID_ARGUMENT / HTTP 400, never retried.

    `field` is the path of the offending field (`resourceSpans[0].scopeSpans[0].spans[2]`), `offset` a
    byte offset into the (decompressed) body; either may be None. The message is `capped`: decoders
    quote the value at fault (json_format quotes a whole bad number), and it goes back to the sender.
    """

    def __init__(self, message: str, *, field: str | None = None, offset: int | None = None) -> None:
        message = capped(message)
        where = f"{field}: " if field else (f"byte {offset}: " if offset is not None else "")
        super().__init__(where + message)
        self.message = message
        self.field = field
        self.offset = offset

    @property
    def reason(self) -> str:
        """The `toolscore.refusal.reason` this refusal is counted under."""
        return "invalid"

    @property
    def spans(self) -> int | None:
        """Spans the refused request held, when they were counted."""
        return None


class TooManySpans(BadPayload):
    """A request over `max_spans_per_request` (spans, or resource and scope blocks): counted `too_many_spans`."""

    def __init__(self, message: str, spans: int | None) -> None:
        super().__init__(message)
        self._spans = spans

    @property
    def reason(self) -> str:
        return "too_many_spans"

    @property
    def spans(self) -> int | None:
        """The request's spans when counted whole; None when the count stopped past the limit."""
        return self._spans


class ReceiverTelemetry(Protocol):
    """What the receivers report (`toolscore.receiver.refused`, `toolscore.spans{outcome=refused}`); never raises.

    Overload refusals are counted by the ingest (`Ingest.refusal` and `accept` decide them); the receivers
    count what they refuse themselves.
    """

    def request_refused(self, reason: str, spans: int | None = None) -> None:
        """An export request was refused whole; `spans`: how many it held, when they were counted."""

    def spans_refused(self, n: int, reason: str) -> None:
        """`n` spans were left out of an accepted request (partial success)."""


class ReceiverHandle(Protocol):
    """A started receiver: the port it is bound to (useful with port 0), and a graceful stop."""

    @property
    def port(self) -> int: ...

    @property
    def tls(self) -> bool: ...

    def stop(self, grace_s: float = 5.0) -> None:
        """Refuse new requests, let those in flight finish within `grace_s`, then close. Idempotent."""
        ...


def check_span_limit(spans: int, blocks: int, limit: int, *, exact: bool = True, items: str = "spans") -> None:
    """Raise `TooManySpans` when a request holds more than `limit` spans (or log records: `items`), or resource
    and scope blocks.

    `exact=False`: the counts stopped at `limit + 1` (`encode.count_spans`), so the message says "more than".
    """
    for count, what in ((spans, items), (blocks, "resource and scope blocks")):
        if count > limit:
            held = str(count) if exact else f"more than {limit}"
            raise TooManySpans(
                f"the request holds {held} {what}, over the limit of {limit} per request "
                "(receiver.max_spans_per_request): send smaller batches",
                spans if exact else None,
            )


def parse_proto_request(data: bytes, max_spans: int | None = None) -> ExportTraceServiceRequest:
    """A binary OTLP body as a request; raises `BadPayload` naming where the encoding breaks.

    `max_spans`: refuse a request of more spans (or resource and scope blocks) than that, counted on the
    wire before the protobuf runtime builds a message for each (about 170 bytes per empty span entry
    of 2 bytes). The count costs about 0.2 µs per span; the parse it spares a hostile request would take
    ~90 times its size.
    """
    counted = count_spans(data, max_spans) if max_spans is not None else None
    if counted is not None and max_spans is not None:
        check_span_limit(*counted, max_spans, exact=False)
    try:
        request = parse_trace_export(data)
    except SpanDecodeError as exc:
        raise BadPayload(exc.message, offset=exc.offset) from None
    if counted is None and max_spans is not None:  # bytes the walk refused but the runtime took: count them now
        scopes = [scope for resource in request.resource_spans for scope in resource.scope_spans]
        spans = sum(len(scope.spans) for scope in scopes)
        check_span_limit(spans, len(request.resource_spans) + len(scopes), max_spans)
    return request


def span_count(request: ExportTraceServiceRequest) -> int:
    """The spans of a parsed request."""
    return sum(len(scope.spans) for resource in request.resource_spans for scope in resource.scope_spans)


def decode_slots(limit: int) -> threading.BoundedSemaphore:
    """The slots both receivers take to decode a request and hand it to the ingest (`max_concurrent_decodes`).

    A request costs up to ~50 times its decompressed bytes from its parse until `accept` returns
    (docs/serve.md, "Memory per request"); bounding how many are decoded at once bounds that over every gRPC
    worker and HTTP connection. The receivers take a slot only once the whole body is in, so a slow
    sender cannot hold one.
    """
    return threading.BoundedSemaphore(limit)


def accept_bytes_safely(ingest: Ingest, data: bytes, max_spans: int) -> IngestResult | None:
    """`ingest.accept_bytes`, or None (parse the request and `accept` it) when it raised (logged)."""
    try:
        return ingest.accept_bytes(data, max_spans)
    except Exception:
        _log.exception("Ingest.accept_bytes raised; reading the request as usual")
        return None


def accept_safely(ingest: Ingest, request: ExportTraceServiceRequest, data: bytes | None = None) -> IngestResult | None:
    """`ingest.accept`, or None when it broke its promise not to raise (logged; answer an internal error)."""
    try:
        return ingest.accept(request, data)
    except Exception:
        _log.exception("Ingest.accept raised; answering the export with an internal error")
        return None


def early_refusal(ingest: Ingest) -> IngestResult | None:
    """`ingest.refusal()`, or None (read the request, let `accept` decide) when it raised (logged)."""
    try:
        return ingest.refusal()
    except Exception:
        _log.exception("Ingest.refusal raised; reading the request as usual")
        return None


def export_response(result: IngestResult, rejected_before: int = 0, message_before: str = "") -> Any:
    """The `ExportTraceServiceResponse`: partial success only when something was rejected or said.

    `rejected_before`/`message_before` are spans the receiver itself left out while decoding (OTLP/JSON
    ids that are not hex), added to what the ingest rejected. The message is `capped`, so that no
    answer to an accepted request can outgrow the sender's receive limit and be retried.
    """
    response = ExportTraceServiceResponse()
    rejected = rejected_before + result.rejected_spans
    message = "; ".join(m for m in (message_before, result.error_message) if m)
    if rejected or message:
        response.partial_success.rejected_spans = rejected
        response.partial_success.error_message = capped(message)
    return response


def retry_info(retry_after_s: float) -> Any:
    """`google.rpc.RetryInfo` with the delay the sender should wait."""
    delay = Duration()
    delay.FromNanoseconds(int(max(retry_after_s, 0.0) * 1e9))
    return error_details_pb2.RetryInfo(retry_delay=delay)


def _status(code: int, message: str, detail: Any) -> Any:
    status = status_pb2.Status(code=code, message=message)
    status.details.add().Pack(detail)
    return status


def bad_payload_status(exc: BadPayload) -> Any:
    """`google.rpc.Status` INVALID_ARGUMENT with a `BadRequest` naming the field (or byte) at fault."""
    where = exc.field or (f"byte {exc.offset}" if exc.offset is not None else "(request)")
    violation = error_details_pb2.BadRequest.FieldViolation(field=where, description=exc.message)
    return _status(code_pb2.INVALID_ARGUMENT, str(exc), error_details_pb2.BadRequest(field_violations=[violation]))


def overloaded_status(retry_after_s: float) -> Any:
    """`google.rpc.Status` RESOURCE_EXHAUSTED with `RetryInfo`, which OTLP senders read as "retry later"."""
    message = f"toolscore is overloaded: the request was not accepted, retry in {retry_after_s:g}s"
    return _status(code_pb2.RESOURCE_EXHAUSTED, message, retry_info(retry_after_s))
