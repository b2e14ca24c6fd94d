"""One OTLP export attempt over gRPC or HTTP/protobuf, classified the way the OTLP specification says.

A transport only sends and classifies: `Attempt` says whether the request arrived (and how many of its
spans the downstream rejected), whether to retry it, and after how long the downstream asked to be
left alone. Retrying, queueing and counting belong to the `Forwarder`.
"""

from __future__ import annotations

import gzip
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

import grpc
import urllib3
from google.rpc import error_details_pb2, status_pb2
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceResponse

from toolscore.collector.serve._readable_file import check_readable
from toolscore.collector.serve.forward._config import ForwardConfig, grpc_target

__all__ = ["Attempt", "GrpcTransport", "HttpTransport", "Transport", "make_transport"]

# OTLP/gRPC: retryable status codes; RESOURCE_EXHAUSTED only when the server sends RetryInfo.
_RETRYABLE_GRPC = frozenset(
    {
        grpc.StatusCode.CANCELLED,
        grpc.StatusCode.DEADLINE_EXCEEDED,
        grpc.StatusCode.ABORTED,
        grpc.StatusCode.OUT_OF_RANGE,
        grpc.StatusCode.UNAVAILABLE,
        grpc.StatusCode.DATA_LOSS,
    }
)
# OTLP/HTTP: retryable response codes.
_RETRYABLE_HTTP = frozenset({429, 502, 503, 504})
_STATUS_DETAILS = "grpc-status-details-bin"
_EXPORT_METHOD = "/opentelemetry.proto.collector.trace.v1.TraceService/Export"


@dataclass(frozen=True, slots=True)
class Attempt:
    """How one export attempt ended."""

    delivered: bool
    """The downstream took the request (some spans may still be in `rejected_spans`)."""
    retryable: bool = False
    """Not delivered, and worth trying again."""
    retry_after_s: float | None = None
    """The downstream's own wait (gRPC RetryInfo, HTTP Retry-After), overriding the backoff."""
    rejected_spans: int = 0
    """Spans the downstream refused (partial success, or the whole request on a permanent error)."""
    message: str = ""


class Transport(Protocol):
    """Sends one serialized request; safe for concurrent use by the forwarder's sender threads; never raises."""

    def send(self, request: bytes, spans: int) -> Attempt: ...

    def close(self) -> None: ...


def _read(path: str | None) -> bytes | None:
    return Path(path).read_bytes() if path else None


def _reconnect_options(config: ForwardConfig) -> list[tuple[str, int]]:
    """The channel's reconnect backoff, held to the forwarder's own.

    A channel whose connection failed does not connect again until its own backoff (1 s, x1.6 per failure,
    up to 120 s) has passed: calls made meanwhile fail at once with UNAVAILABLE. After a 30 s outage that
    backoff is ~10 s, so forwarding resumed 15-16 s after the downstream came back, though the forwarder's
    retries wait at most `backoff_max_s` (x1.5 jitter). With the channel's backoff between the same bounds,
    the downstream is tried again within about `backoff_max_s` of its return.
    """
    initial_ms = max(1, int(config.backoff_initial_s * 1000))
    max_ms = max(initial_ms, int(config.backoff_max_s * 1000))
    # Not `grpc.min_reconnect_backoff_ms`: gRPC reads it as the least time a connection attempt is given
    # (default 20 s), and a slow TLS handshake must still have that.
    return [("grpc.initial_reconnect_backoff_ms", initial_ms), ("grpc.max_reconnect_backoff_ms", max_ms)]


class GrpcTransport:
    """`TraceService/Export` over one channel (gRPC multiplexes the senders' calls on it)."""

    def __init__(self, config: ForwardConfig) -> None:
        assert config.endpoint
        target, tls = grpc_target(config.endpoint, config.insecure)
        options = [("grpc.max_send_message_length", -1), *_reconnect_options(config)]
        if tls:
            credentials = grpc.ssl_channel_credentials(
                _read(config.certificate_file), _read(config.client_key_file), _read(config.client_certificate_file)
            )
            self._channel = grpc.secure_channel(target, credentials, options)
        else:
            self._channel = grpc.insecure_channel(target, options)
        self._export = self._channel.unary_unary(  # the request is already serialized: sent as it is
            _EXPORT_METHOD, request_serializer=None, response_deserializer=ExportTraceServiceResponse.FromString
        )
        self._metadata = tuple(config.headers.items())
        self._timeout_s = config.timeout_s
        self._compression = grpc.Compression.Gzip if config.compression == "gzip" else None

    def send(self, request: bytes, spans: int) -> Attempt:
        try:
            response = self._export(
                request, timeout=self._timeout_s, metadata=self._metadata, compression=self._compression
            )
        except grpc.RpcError as error:
            return _grpc_failure(error, spans)
        except Exception as error:  # a bug or a broken channel must not kill the sender thread
            return Attempt(False, retryable=True, message=f"{type(error).__name__}: {error}")
        return _partial(response)

    def close(self) -> None:
        self._channel.close()


def _grpc_failure(error: grpc.RpcError, spans: int) -> Attempt:
    code: grpc.StatusCode = error.code() if hasattr(error, "code") else grpc.StatusCode.UNKNOWN
    details = error.details() if hasattr(error, "details") else ""
    message = f"{code.name}: {details}"
    retry_after = _retry_info(error)
    if code in _RETRYABLE_GRPC or (code is grpc.StatusCode.RESOURCE_EXHAUSTED and retry_after is not None):
        return Attempt(False, retryable=True, retry_after_s=retry_after, message=message)
    return Attempt(False, rejected_spans=spans, message=message)


def _retry_info(error: Any) -> float | None:
    """The `google.rpc.RetryInfo` delay in the error's status details, if the server sent one."""
    try:
        metadata = error.trailing_metadata() or ()
    except Exception:
        return None
    for key, value in metadata:
        if key != _STATUS_DETAILS:
            continue
        status = status_pb2.Status.FromString(value)
        for detail in status.details:
            if detail.Is(error_details_pb2.RetryInfo.DESCRIPTOR):
                info = error_details_pb2.RetryInfo()
                detail.Unpack(info)
                return float(info.retry_delay.seconds + info.retry_delay.nanos / 1e9)
    return None


def _partial(response: ExportTraceServiceResponse) -> Attempt:
    partial = response.partial_success
    return Attempt(True, rejected_spans=partial.rejected_spans, message=partial.error_message)


class HttpTransport:
    """`POST` of the serialized request to the `/v1/traces` URL, over a pooled urllib3 connection."""

    def __init__(self, config: ForwardConfig) -> None:
        assert config.endpoint
        self._url = config.endpoint
        self._headers = {**config.headers, "Content-Type": "application/x-protobuf"}
        self._gzip = config.compression == "gzip"
        if self._gzip:
            self._headers["Content-Encoding"] = "gzip"
        self._pool = urllib3.PoolManager(
            maxsize=max(config.senders, 1),
            ca_certs=config.certificate_file,
            cert_file=config.client_certificate_file,
            key_file=config.client_key_file,
            retries=False,
            timeout=urllib3.Timeout(total=config.timeout_s),
        )

    def send(self, request: bytes, spans: int) -> Attempt:
        body = gzip.compress(request, compresslevel=5) if self._gzip else request
        try:
            response = self._pool.request("POST", self._url, body=body, headers=self._headers)
        except Exception as error:  # connection refused, timeout, TLS: all transient from here
            return Attempt(False, retryable=True, message=f"{type(error).__name__}: {error}")
        status = response.status
        if 200 <= status < 300:
            try:
                return _partial(ExportTraceServiceResponse.FromString(response.data))
            except Exception:
                return Attempt(True)
        message = f"HTTP {status}: {_status_message(response.data)}"
        if status in _RETRYABLE_HTTP:
            return Attempt(False, retryable=True, retry_after_s=_retry_after(response.headers), message=message)
        return Attempt(False, rejected_spans=spans, message=message)

    def close(self) -> None:
        self._pool.clear()


def _status_message(body: bytes) -> str:
    """The `google.rpc.Status` message an OTLP/HTTP server sends with an error, else the body's start."""
    try:
        return status_pb2.Status.FromString(body).message or body[:200].decode("utf-8", "replace")
    except Exception:
        return body[:200].decode("utf-8", "replace")


def _retry_after(headers: Any) -> float | None:
    value = headers.get("Retry-After")
    try:
        return max(0.0, float(value)) if value is not None else None
    except ValueError:  # an HTTP date: fall back to the backoff
        return None


def make_transport(config: ForwardConfig) -> Transport:
    """The transport for `config.protocol`; raises `ValueError` naming the key of a TLS file it cannot read.

    Checked here, at start, because neither transport says which key was wrong: gRPC reads the files at
    once but reports only the path, and urllib3 reads them at its first connection, so every export would
    fail (retried, then dropped) while the collector looked healthy. Files a plain-text endpoint never
    uses are not checked. Not at configuration time, unlike the receiver's: a bad `OTEL_EXPORTER_OTLP_*`
    value is logged and its default used (`ForwardConfig.from_env`), which for a CA would quietly trust
    the system's CAs instead.
    """
    tls = grpc_target(config.endpoint or "", config.insecure)[1] if config.protocol == "grpc" else _https(config)
    for key in _TLS_FILES if tls else ():
        path = getattr(config, key)
        if path is not None:
            try:
                check_readable(path)
            except ValueError as exc:
                raise ValueError(f"forward.{key}: {exc}") from None
    return GrpcTransport(config) if config.protocol == "grpc" else HttpTransport(config)


_TLS_FILES = ("certificate_file", "client_certificate_file", "client_key_file")


def _https(config: ForwardConfig) -> bool:
    return (config.endpoint or "").lower().startswith("https://")
