"""OTLP/HTTP receiver: `POST /v1/traces` and `POST /v1/logs` (protobuf or JSON, gzip or not) → `Ingest`, plus
`/healthz` and `/readyz`. A logs export's GenAI events go to `Ingest.accept_logs` (`otlp_logs_export`), behind
the same authentication, limits and overload answers as traces.

Served by `BoundedHTTPServer` (standard library, HTTP/1.1 keep-alive, one thread per connection, at
most `http_max_connections` of them, idle ones closed after `http_idle_timeout_s`, and a request that
takes longer than `http_request_timeout_s` to arrive answered 408 and closed).

Answers follow OTLP/HTTP: 200 with an `ExportTraceServiceResponse` (partial success when spans were
rejected) or an `ExportLogsServiceResponse` (partial success for the records not read), in the request's
content type; 400 with a `google.rpc.Status` naming what is wrong and
where (also for a Content-Length that is not a number, or several that disagree); 401 without the
bearer token; 404 for other paths and 405 with `Allow` for any other method (HEAD and TRACE too); 411
without Content-Length or `Transfer-Encoding: chunked`; 413 for a body (as sent, chunked or not), or a
decompressed body, over the limit; 415 for another content type or encoding; 501 for a transfer coding
other than chunked; 429 with `Retry-After` when the ingest is overloaded (before the body is read, when
`Ingest.refusal` already says so). A request refused before its body is read (for its size, auth, type or
overload) still has its body read and dropped before the answer, up to `http_max_discard_bytes` and within
`http_request_timeout_s`, and its connection is kept: Python's `http.client` sends the whole body before it
reads a byte of the answer, and an unread body closed under it is a broken pipe, not a 413. A longer body, or
one whose end is unknown, is answered at once with `Connection: close`, since the unread body would otherwise
be taken for the next request. `Expect: 100-continue` is answered only once the request passed those checks,
so a sender is never invited to upload a body that is then refused (one that was not invited is not read).

Every refusal is logged, as the gRPC receiver logs its own, at most one line per refusal reason every 10 s
(`LimitedLog`), so a sender that keeps sending what cannot be taken cannot flood the log: at INFO the sender's
address, what it said it sent (Content-Type, Content-Encoding, Content-Length or chunked) and the answer;
overload's 429 (pushback the sender retries, counted by the ingest) at WARNING with the queues' state
(`overload_log`), since sustained overload needs an operator.
"""

from __future__ import annotations

import json
import logging
import math
import ssl
import threading
from dataclasses import dataclass, field
from typing import Any, Literal
from urllib.parse import urlsplit

from google.protobuf import json_format
from google.rpc import code_pb2, status_pb2
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

from toolscore.collector.bearer import bearer_matches
from toolscore.collector.serve._health import HealthState
from toolscore.collector.serve._limited_log import LimitedLog
from toolscore.collector.serve.receivers._config import ReceiverConfig, split_endpoint
from toolscore.collector.serve.receivers._http_body import (
    PROTOBUF,
    BodyCut,
    BodyTooLarge,
    Encoding,
    content_length,
    discard,
    discard_chunked,
    gunzip_bounded,
    media_format,
    read_chunked,
)
from toolscore.collector.serve.receivers._http_server import BoundedHTTPServer, BoundedRequestHandler
from toolscore.collector.serve.receivers._ingest import Ingest, IngestResult
from toolscore.collector.serve.receivers._otlp_export import (
    BadPayload,
    ReceiverTelemetry,
    accept_bytes_safely,
    accept_safely,
    bad_payload_status,
    decode_slots,
    early_refusal,
    export_response,
    overloaded_status,
    parse_proto_request,
    span_count,
)
from toolscore.collector.serve.receivers._otlp_json_request import request_from_json
from toolscore.collector.serve.receivers._otlp_logs_export import (
    accept_logs_safely,
    logs_from_json,
    logs_from_proto,
    logs_response,
)
from toolscore.collector.serve.receivers._overload_log import log_overload
from toolscore.collector.telemetry.base import NoopTelemetry

__all__ = ["LOGS_PATH", "TRACES_PATH", "HttpReceiver", "start_http_receiver"]

_log = logging.getLogger(__name__)

TRACES_PATH = "/v1/traces"
LOGS_PATH = "/v1/logs"
_EXPORT_PATHS = (TRACES_PATH, LOGS_PATH)
_HEALTH_PATHS = ("/healthz", "/readyz")


class _Server(BoundedHTTPServer):
    """The bounded server plus what the handler needs: the ingest, the limits, the health state and where
    refusals are counted."""

    def __init__(
        self,
        ingest: Ingest,
        config: ReceiverConfig,
        health: HealthState,
        tls: ssl.SSLContext | None,
        decodes: threading.Semaphore,
        *,
        telemetry: ReceiverTelemetry,
    ) -> None:
        self.ingest, self.config, self.health, self.decodes = ingest, config, health, decodes
        self.telemetry = telemetry
        self.refusal_log = LimitedLog(_log)
        host, port = split_endpoint(config.http_endpoint)
        super().__init__(
            host,
            port,
            _Handler,
            max_connections=config.http_max_connections,
            idle_timeout_s=config.http_idle_timeout_s,
            request_timeout_s=config.http_request_timeout_s,
            tls_context=tls,
        )

    def refused(self, reason: str) -> None:
        """The bounded server turned a connection (`too_many_connections`) or a request (`timeout`) away."""
        self.telemetry.request_refused(reason)


class _Handler(BoundedRequestHandler):
    protocol_version = "HTTP/1.1"
    server_version = "toolscore"
    sys_version = ""
    server: _Server
    _continue_pending = False
    """The request asked `Expect: 100-continue` and has not been answered yet."""
    _dropped: bool | None = None
    """An unread body was read and dropped (True), or cannot be (False); None: not tried (`_drop_unread`)."""

    def log_message(self, format: str, *args: Any) -> None:
        _log.debug("OTLP/HTTP %s: " + format, self.client_address[0], *args)

    def parse_request(self) -> bool:
        """The standard parse, plus: a method without a `do_` handler (anything but GET and POST) is
        answered by `_other_method` (405 with `Allow`, or 404), not with the standard library's 501 page."""
        self._continue_pending, self._dropped = False, None
        if not super().parse_request():
            return False
        if hasattr(self, f"do_{self.command}"):
            return True
        self._other_method()
        return False

    def handle_expect_100(self) -> bool:
        """Defer `100 Continue` until the request has passed auth and size checks (`_read_body`)."""
        self._continue_pending = True
        return True

    def _route(self) -> str:
        return urlsplit(self.path).path

    def _format(self) -> Encoding:
        """The format of error bodies: protobuf for protobuf senders, readable JSON for everyone else."""
        return "proto" if media_format(self.headers.get("Content-Type")) == "proto" else "json"

    def _reply(self, code: int, message: Any, fmt: Encoding, headers: dict[str, str] | None = None) -> None:
        if fmt == "proto":
            body, content_type = message.SerializeToString(), PROTOBUF
        else:
            body, content_type = json.dumps(json_format.MessageToDict(message)).encode(), "application/json"
        if self.server.closing:
            self.close_connection = True
        self.send_response(code)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        for name, value in (headers or {}).items():
            self.send_header(name, value)
        if self.close_connection:
            self.send_header("Connection", "close")
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(body)

    def _refuse(self, reason: str, code: int, rpc_code: int, message: str, *, unread: bool = True) -> None:
        """Refuse an export: its unread body dropped (`_drop_unread`), counted and logged under `reason` (a
        `toolscore.refusal.reason`), then `_fail`. A body that does not arrive in time is answered 408 instead."""
        if unread:
            self._drop_unread()
        self._refused(reason, code, message)
        self._fail(code, rpc_code, message, unread=unread)

    def _drop_unread(self) -> bool:
        """Read and drop the body of a request answered before its body was read, so that a client that reads
        nothing before it has sent all gets the answer; True: done, the connection can carry the next request.

        Only a body whose end is certain (one Content-Length, or chunked alone) and no longer than
        `http_max_discard_bytes`; never one the sender waits to be invited to send (`Expect: 100-continue`).
        Its reads keep the request's deadline: a body that comes too slowly raises `TimeoutError` (408).
        Tried once per request.
        """
        if self._dropped is None:
            self._dropped = False
            bound = self.server.config.http_max_discard_bytes
            framing = None if self._continue_pending else _declared_framing(self.headers)
            try:
                if framing == "chunked":
                    self._dropped = discard_chunked(self.rfile, bound)
                elif framing is not None and framing <= bound:
                    discard(self.rfile, framing)
                    self._dropped = True
            except (BodyCut, BadPayload):
                pass  # the sender went away, or its framing broke: the connection is closed after the answer
        return self._dropped

    def _refused(self, reason: str, code: int, message: object, spans: int | None = None) -> None:
        """Count a refused export under `reason`, and log it (at most one line per reason every 10 s). A flood of
        bad requests is refused thousands of times a second: the limiter is asked first, and the line (what the
        sender said it sent) is only made for a refusal whose line goes out."""
        self.server.telemetry.request_refused(reason, spans)
        log = self.server.refusal_log
        held = log.take(logging.INFO, reason)
        if held is None:
            return
        line = "OTLP/HTTP export refused from %s (%s): %d %s"
        log.emit(logging.INFO, held, line, self._peer(), self._sent() or "no Content-Type", code, message)

    def _sent(self) -> str:
        """What the sender said it sent, quoted: the headers that decide how its body is read."""
        headers = self.headers
        return ", ".join(
            f"{name} {_quoted(value)}"
            for name in ("Content-Type", "Content-Encoding", "Content-Length", "Transfer-Encoding")
            if (value := headers.get(name)) is not None
        )

    def _fail(self, code: int, rpc_code: int, message: str, *, unread: bool = True, **headers: str) -> None:
        """An error answer; `unread`: the body was not read, so it is dropped first (`_drop_unread`), or else
        the connection closed after the answer, since the rest would be taken for the next request."""
        if unread and not self._drop_unread():
            self.close_connection = True
        status = status_pb2.Status(code=rpc_code, message=message)
        self._reply(code, status, self._format(), {k.replace("_", "-"): v for k, v in headers.items()})

    def _wrong_method(self, allow: str) -> None:
        self._fail(405, code_pb2.UNIMPLEMENTED, f"{self.command} is not allowed on {self._route()}", Allow=allow)

    def _not_found(self) -> None:
        message = (
            f"no such path {self._route()!r}: OTLP traces go to POST {TRACES_PATH}, GenAI logs to POST {LOGS_PATH}"
        )
        self._fail(404, code_pb2.NOT_FOUND, message)

    def do_GET(self) -> None:
        path = self._route()
        if path in _HEALTH_PATHS:
            state = self.server.health
            code, body = state.liveness() if path == "/healthz" else state.readiness()
            data = json.dumps(body).encode()
            self.send_response(code)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)
        elif path in _EXPORT_PATHS:
            self._wrong_method("POST")
        else:
            self._not_found()

    def do_POST(self) -> None:
        path = self._route()
        if path in _EXPORT_PATHS:
            self.server.request_started()
            try:
                self._export(logs=path == LOGS_PATH)
            finally:
                self.server.request_done()
        elif path in _HEALTH_PATHS:
            self._wrong_method("GET")
        else:
            self._not_found()

    def _other_method(self) -> None:
        path = self._route()
        if path in _EXPORT_PATHS:
            self._wrong_method("POST")
        elif path in _HEALTH_PATHS:
            self._wrong_method("GET")
        else:
            self._not_found()

    def _authorized(self) -> bool:
        token = self.server.config.bearer_token
        if token is None:
            return True
        return bearer_matches(self.headers.get("Authorization"), token)

    def _export(self, *, logs: bool) -> None:
        body = self._read_body()
        if body is None:
            return
        with self.server.decodes:  # a decoded request costs many times its bytes: see ReceiverConfig
            if logs:
                self._take_logs(body)
            else:
                self._take(body)

    def _take_logs(self, body: bytes) -> None:
        """Decode a logs export's GenAI events, hand them to the ingest and answer."""
        fmt, max_records = self._format(), self.server.config.max_spans_per_request
        try:
            batch = logs_from_proto(body, max_records) if fmt == "proto" else logs_from_json(body, max_records)
        except BadPayload as exc:
            self._refused(exc.reason, 400, exc)
            self._reply(400, bad_payload_status(exc), fmt)
            return
        except Exception:
            _log.exception("OTLP/HTTP: decoding a %d-byte %s logs body failed unexpectedly", len(body), fmt)
            message = "toolscore failed to decode the request (see its log)"
            self._refuse("internal", 500, code_pb2.INTERNAL, message, unread=False)
            return
        result = accept_logs_safely(self.server.ingest, batch)
        if result is None:
            message = "toolscore failed to take the request (see its log)"
            self._refuse("internal", 500, code_pb2.INTERNAL, message, unread=False)
        elif result.overloaded:  # counted by the ingest, which decided it
            self._overloaded(result)
        else:
            self._reply(200, logs_response(result), fmt)

    def _take(self, body: bytes) -> None:
        """Decode the body, hand the request to the ingest and answer."""
        fmt, max_spans = self._format(), self.server.config.max_spans_per_request
        request: ExportTraceServiceRequest | None = None
        rejected, message = 0, ""
        # a protobuf body the ingest can hold from its bytes is not decoded at all (`Ingest.accept_bytes`)
        result = accept_bytes_safely(self.server.ingest, body, max_spans) if fmt == "proto" else None
        if result is None:
            try:
                data: bytes | None = None
                if fmt == "proto":
                    request, data = parse_proto_request(body, max_spans), body
                else:
                    decoded = request_from_json(body, max_spans)
                    request, rejected, message = decoded.request, decoded.rejected_spans, decoded.error_message
            except BadPayload as exc:
                self._refused(exc.reason, 400, exc, exc.spans)
                self._reply(400, bad_payload_status(exc), fmt)
                return
            except Exception:
                _log.exception("OTLP/HTTP: decoding a %d-byte %s body failed unexpectedly", len(body), fmt)
                message = "toolscore failed to decode the request (see its log)"
                self._refuse("internal", 500, code_pb2.INTERNAL, message, unread=False)
                return
            if rejected:  # spans the JSON decoding left out (ids that are not hex); the ingest counts its own
                self.server.telemetry.spans_refused(rejected, "invalid")
            result = accept_safely(self.server.ingest, request, data)
        if result is None:
            message = "toolscore failed to take the request (see its log)"
            self._refused("internal", 500, message, span_count(request) if request is not None else None)
            self._fail(500, code_pb2.INTERNAL, message, unread=False)
        elif result.overloaded:  # counted by the ingest, which decided it
            self._overloaded(result)
        else:
            self._reply(200, export_response(result, rejected, message), fmt)

    def _overloaded(self, result: IngestResult) -> None:
        """429 with `Retry-After`, logged now and then (`overload_log`); counted by the ingest, which decided it."""
        retry_after_s = result.retry_after_s
        retry_after = str(max(1, math.ceil(retry_after_s)))
        log_overload(
            self.server.refusal_log,
            "OTLP/HTTP",
            reason=result.reason,
            peer=self._peer,
            answer="429",
            retry_after_s=retry_after_s,
            state=self.server.ingest.load,
        )
        self._reply(429, overloaded_status(retry_after_s), self._format(), {"Retry-After": retry_after})

    def _peer(self) -> str:
        host, port = self.client_address[:2]
        return f"{host}:{port}"

    def _framing(self) -> int | Literal["chunked"] | None:
        """How the body is delimited: its Content-Length, or chunked; None once an error has been answered."""
        headers, limit = self.headers, self.server.config.max_message_bytes
        codings = [c.strip().lower() for v in headers.get_all("Transfer-Encoding") or () for c in v.split(",")]
        if codings:
            if headers.get("Content-Length") is not None:
                self.close_connection = True  # RFC 9112 §6.3: chunked wins, but the framing was ambiguous
            if codings == ["chunked"]:
                return "chunked"
            if codings[-1] != "chunked":
                message = f"Transfer-Encoding {headers.get('Transfer-Encoding')!r}: the body's end is unknown"
                self._refuse("invalid", 400, code_pb2.INVALID_ARGUMENT, message + " (chunked must come last)")
            else:
                message = f"Transfer-Encoding {headers.get('Transfer-Encoding')!r}: only chunked is supported"
                self._refuse("unsupported", 501, code_pb2.UNIMPLEMENTED, message + " (send gzip as Content-Encoding)")
            return None
        length_values = headers.get_all("Content-Length")
        if length_values is None:
            message = "a Content-Length or Transfer-Encoding: chunked is required"
            self._refuse("invalid", 411, code_pb2.INVALID_ARGUMENT, message)
            return None
        try:
            return content_length(length_values, limit)
        except BodyTooLarge as exc:
            self._refuse("too_large", 413, code_pb2.RESOURCE_EXHAUSTED, str(exc))
        except BadPayload as exc:
            self._refuse("invalid", 400, code_pb2.INVALID_ARGUMENT, str(exc))
        return None

    def _receive(self, framing: int | Literal["chunked"]) -> bytes:
        """The body as sent; raises `BodyCut`, `BodyTooLarge` or `BadPayload` (framing) as `read_chunked` does."""
        if framing == "chunked":
            config = self.server.config
            return read_chunked(self.rfile, config.max_message_bytes, config.http_max_discard_bytes)
        body = self.rfile.read(framing)
        if len(body) < framing:
            raise BodyCut
        return body

    def _read_body(self) -> bytes | None:
        """The decompressed body, or None once an error has been answered."""
        config, headers = self.server.config, self.headers
        if not self._authorized():
            message = "missing or wrong bearer token"
            self._drop_unread()
            self._refused("unauthenticated", 401, message)
            self._fail(401, code_pb2.UNAUTHENTICATED, message, WWW_Authenticate="Bearer")
            return None
        if media_format(headers.get("Content-Type")) is None:
            got = headers.get("Content-Type") or "(none)"
            message = f"Content-Type {got!r}: send {PROTOBUF} or application/json"
            self._refuse("unsupported", 415, code_pb2.INVALID_ARGUMENT, message)
            return None
        encoding = (headers.get("Content-Encoding") or "identity").strip().lower()
        if encoding not in ("identity", "gzip", "x-gzip"):
            message = f"Content-Encoding {encoding!r}: only gzip is supported"
            self._refuse("unsupported", 415, code_pb2.INVALID_ARGUMENT, message)
            return None
        framing = self._framing()
        if framing is None:
            return None
        refusal = early_refusal(self.server.ingest)
        if refusal is not None:
            if not self._drop_unread():
                self.close_connection = True
            self._overloaded(refusal)
            return None
        if self._continue_pending:
            self.send_response_only(100)
            self.end_headers()
        try:
            body = self._receive(framing)
        except BodyCut:
            self.close_connection = True  # the sender went away mid-body: there is no one to answer
            return None
        except BodyTooLarge as exc:  # chunked: the rest was dropped, or is left unread past the discard bound
            self._dropped = exc.drained
            self._refuse("too_large", 413, code_pb2.RESOURCE_EXHAUSTED, str(exc))
            return None
        except BadPayload as exc:  # chunked framing broke: the rest of the connection cannot be read
            self._dropped = False
            self._refuse("invalid", 400, code_pb2.INVALID_ARGUMENT, str(exc))
            return None
        if encoding == "identity":
            return body
        try:
            return gunzip_bounded(body, config.decompressed_limit)
        except BodyTooLarge as exc:
            self._refuse("too_large", 413, code_pb2.RESOURCE_EXHAUSTED, str(exc), unread=False)
        except BadPayload as exc:
            self._refused("invalid", 400, exc)
            self._reply(400, bad_payload_status(exc), self._format())
        return None


_QUOTED_CHARS = 80


def _declared_framing(headers: Any) -> int | Literal["chunked"] | None:
    """How a request's body is delimited when that is certain: one Content-Length (or several that agree),
    or `Transfer-Encoding: chunked` alone; None for anything else (what `_Handler._framing` refuses)."""
    codings = [c.strip().lower() for v in headers.get_all("Transfer-Encoding") or () for c in v.split(",")]
    lengths = headers.get_all("Content-Length")
    if codings:
        return "chunked" if codings == ["chunked"] and lengths is None else None
    if lengths is None:
        return None  # no body, by RFC 9112 §6.3, but a sender refused 411 for it may well send one
    try:
        return content_length(lengths, _NO_LIMIT)
    except ValueError:  # BadPayload or BodyTooLarge: not a number, several that disagree, too many digits
        return None


_NO_LIMIT = 10**18


def _quoted(value: str) -> str:
    """A header value as the sender wrote it, quoted (control characters escaped) and cut short."""
    return repr(value if len(value) <= _QUOTED_CHARS else value[:_QUOTED_CHARS] + "...")


@dataclass
class HttpReceiver:
    """A started OTLP/HTTP receiver (a `ReceiverHandle`)."""

    server: _Server
    thread: threading.Thread
    port: int
    tls: bool = False
    _stopped: bool = field(default=False, repr=False)

    def stop(self, grace_s: float = 5.0) -> None:
        """Stop accepting, let requests in flight finish within `grace_s`, close the rest. Idempotent."""
        if self._stopped:
            return
        self._stopped = True
        self.server.closing = True
        self.server.shutdown()
        self.server.server_close()
        self.server.drain(grace_s)
        self.thread.join(timeout=grace_s + 1.0)


def _tls_context(config: ReceiverConfig) -> ssl.SSLContext | None:
    if not (config.tls_cert_file and config.tls_key_file):
        return None
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.minimum_version = ssl.TLSVersion.TLSv1_2
    context.load_cert_chain(config.tls_cert_file, config.tls_key_file)
    return context


def start_http_receiver(
    ingest: Ingest,
    config: ReceiverConfig,
    health: HealthState,
    decodes: threading.Semaphore | None = None,
    telemetry: ReceiverTelemetry | None = None,
) -> HttpReceiver:
    """Bind `config.http_endpoint` and serve on a background thread; raises `OSError` when it cannot bind.

    `decodes`: the decode slots shared with the gRPC receiver (default: its own, `max_concurrent_decodes`).
    `telemetry`: where the requests it refuses itself are counted (overload is the ingest's to count).
    """
    slots = decode_slots(config.max_concurrent_decodes) if decodes is None else decodes
    server = _Server(ingest, config, health, _tls_context(config), slots, telemetry=telemetry or NoopTelemetry())
    thread = threading.Thread(
        target=server.serve_forever, kwargs={"poll_interval": 0.1}, name="toolscore-otlp-http", daemon=True
    )
    thread.start()
    port = int(server.server_address[1])
    _log.info(
        "OTLP/HTTP receiver listening on %s (port %d)%s", config.http_endpoint, port, " TLS" if config.tls else ""
    )
    return HttpReceiver(server, thread, port, tls=config.tls)
