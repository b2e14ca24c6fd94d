"""`ReceiverConfig`: where the OTLP receivers listen, how much they accept, and who may send.

One model for both transports, because the limits must agree: a request refused over HTTP for its size
must not get through over gRPC. `max_message_bytes` bounds what is parsed, whatever the encoding: the
gRPC message after decompression, the HTTP body as sent, and (unless
`max_decompressed_bytes` says otherwise) the HTTP body after gzip, so a small gzip bomb cannot expand
into memory. Bytes are not the whole story: parsing builds a message per entry, and an entry can be two
bytes, so `max_spans_per_request` bounds the entries and `max_concurrent_decodes` how many requests are
being decoded at once (docs/serve.md, "Memory per request").
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from toolscore.collector.serve._readable_file import ReadableFile

__all__ = [
    "DEFAULT_MAX_DISCARD_BYTES",
    "DEFAULT_MAX_MESSAGE_BYTES",
    "DEFAULT_MAX_SPANS_PER_REQUEST",
    "ReceiverConfig",
    "split_endpoint",
]

DEFAULT_MAX_MESSAGE_BYTES = 4 * 1024 * 1024
"""4 MiB: gRPC's own default receive limit, which OTLP senders already batch under."""

DEFAULT_MAX_DISCARD_BYTES = 64 * 1024 * 1024
"""64 MiB: 16 times the default request limit, an SDK batch (512 spans) of 128 KiB prompts; read and dropped in
well under a second on a local network, within `http_request_timeout_s` down to ~2.2 MB/s."""

DEFAULT_MAX_SPANS_PER_REQUEST = 65_536
"""Senders batch far fewer (OTel Collector batch processor: 8,192; SDK BatchSpanProcessor: 512), and a
span with its ids, name and times takes at least ~60 bytes, so 4 MiB of real spans holds about this many."""


def split_endpoint(endpoint: str) -> tuple[str, int]:
    """`host:port` (IPv6 as `[::1]:4317`) as a host and a port; raises `ValueError` naming the rule."""
    host, sep, port_text = endpoint.rpartition(":")
    if not sep or not host or not port_text.isdigit():
        raise ValueError(f"endpoint {endpoint!r} must be host:port, e.g. 127.0.0.1:4317 or [::1]:4317")
    port = int(port_text)
    if port > 65535:
        raise ValueError(f"endpoint {endpoint!r}: port {port} is above 65535")
    if host.startswith("[") and host.endswith("]"):
        host = host[1:-1]
    return host, port


class ReceiverConfig(BaseModel):
    """The OTLP/gRPC and OTLP/HTTP receivers: addresses, size limits, bearer-token auth and TLS."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    grpc_enabled: bool = Field(
        default=True, description="Serve OTLP/gRPC (`TraceService/Export`, and `LogsService/Export` for GenAI events)."
    )
    grpc_endpoint: str = Field(
        default="127.0.0.1:4317",
        description="host:port the OTLP/gRPC receiver listens on; port 0 picks a free port. "
        "Use 0.0.0.0:4317 to accept connections from other hosts.",
    )
    http_enabled: bool = Field(
        default=True, description="Serve OTLP/HTTP (`POST /v1/traces`, `POST /v1/logs`), `/healthz`, `/readyz`."
    )
    http_endpoint: str = Field(
        default="127.0.0.1:4318", description="host:port the OTLP/HTTP receiver listens on; port 0 picks a free port."
    )
    max_message_bytes: int = Field(
        default=DEFAULT_MAX_MESSAGE_BYTES,
        gt=0,
        description="Largest request accepted, in bytes: a larger gRPC message (after decompression) gets "
        "RESOURCE_EXHAUSTED, a larger HTTP body 413, counted `too_large`. gRPC messages up to twice this are "
        "received to be counted; grpc refuses larger ones itself, unread and uncounted.",
    )
    max_decompressed_bytes: int | None = Field(
        default=None,
        gt=0,
        description="Largest HTTP body after gzip decompression, in bytes (larger: 413, decompression stops "
        "there). Default: `max_message_bytes`.",
    )
    max_spans_per_request: int = Field(
        default=DEFAULT_MAX_SPANS_PER_REQUEST,
        gt=0,
        description="Most spans (or log records) in one request, and most resource and scope blocks (more: "
        "INVALID_ARGUMENT / 400 saying so). Counted on the wire before the request is parsed: parsing builds "
        "~170 bytes per span entry however small, so 4 MiB of empty entries would take ~350 MB. 65536 is 8 times an "
        "OpenTelemetry Collector's default batch (8192) and 128 times an SDK's (512), and about as many real "
        "spans as 4 MiB holds.",
    )
    max_concurrent_decodes: int = Field(
        default=2,
        gt=0,
        description="Requests decoded and handed to the pipeline at once, over both receivers; the others "
        "wait with their body read. Each one decoding can take up to ~50 times its decompressed size; "
        "decoding holds the interpreter lock, so more slots add memory, not throughput.",
    )
    bearer_token: str | None = Field(
        default=None,
        description="When set, every export must carry `authorization: Bearer <token>` (gRPC metadata or "
        "HTTP header); others get UNAUTHENTICATED / 401. Health endpoints stay open.",
    )
    tls_cert_file: ReadableFile | None = Field(
        default=None,
        description="PEM certificate (chain) for both receivers; with `tls_key_file`, serve TLS only. "
        "Must be readable when the configuration is loaded: it is read once, at start.",
    )
    tls_key_file: ReadableFile | None = Field(
        default=None, description="PEM private key of `tls_cert_file`; must be readable, as that one."
    )
    grpc_max_workers: int = Field(
        default=8,
        gt=0,
        description="Threads answering gRPC calls; further calls wait for one, up to `grpc_max_concurrent_calls`.",
    )
    grpc_max_concurrent_calls: int = Field(
        default=64,
        gt=0,
        description="Export calls taken at once, running on the `grpc_max_workers` threads or waiting for one; "
        "a call beyond this gets RESOURCE_EXHAUSTED with a 1 s retry delay, its message unread, and the sender "
        "retries (counted `too_many_calls`). Without a bound, waiting calls would queue in grpc without limit. "
        "As many refusals may wait for the one thread that answers them; past that, they are answered at once "
        "on grpc's polling thread.",
    )
    http_max_connections: int = Field(
        default=64,
        gt=0,
        description="Open HTTP connections served at once, one thread each; a connection beyond this gets 503 "
        "with `Retry-After` (plain HTTP) or is closed (TLS), and the sender retries.",
    )
    http_idle_timeout_s: float = Field(
        default=30.0,
        gt=0,
        description="An HTTP connection that sends nothing for this long is closed, so idle clients cannot hold "
        "the connection slots.",
    )
    http_request_timeout_s: float = Field(
        default=30.0,
        gt=0,
        description="An HTTP request must arrive whole (request line, headers, body) within this long of its "
        "first byte, else it gets 408 and its connection is closed: the idle timeout bounds each wait only, so "
        "without this a client sending a byte now and then would hold a connection slot for good. OTLP "
        "exporters give up on an export after 10 s by default, so 30 s cuts off no sender still waiting.",
    )

    http_max_discard_bytes: int = Field(
        default=DEFAULT_MAX_DISCARD_BYTES,
        ge=0,
        description="An HTTP body refused before it is read (413 for its size, 401, 429, ...) is still read and "
        "dropped, up to this many bytes and within `http_request_timeout_s`, so that a client that sends its "
        "whole body before reading the answer (Python's http.client) gets the answer rather than a broken "
        "connection, and the connection is kept. A longer body is answered at once with `Connection: close`, "
        "unread. Dropped bodies are read 64 KiB at a time: they cost time on the connection, not memory.",
    )

    @field_validator("grpc_endpoint", "http_endpoint")
    @classmethod
    def _endpoint(cls, value: str) -> str:
        split_endpoint(value)
        return value

    @model_validator(mode="before")
    @classmethod
    def _tls_pair(cls, data: Any) -> Any:
        """Checked before the files are: one of the two alone is the mistake to report, not that it is missing."""
        if isinstance(data, dict) and (data.get("tls_cert_file") is None) != (data.get("tls_key_file") is None):
            raise ValueError("tls_cert_file and tls_key_file must be set together (or neither)")
        return data

    @model_validator(mode="after")
    def _token_not_blank(self) -> ReceiverConfig:
        if self.bearer_token is not None and not self.bearer_token.strip():
            raise ValueError("bearer_token must not be blank: leave it unset to turn auth off")
        return self

    @property
    def decompressed_limit(self) -> int:
        """The effective limit on a decompressed HTTP body."""
        return self.max_decompressed_bytes or self.max_message_bytes

    @property
    def tls(self) -> bool:
        return self.tls_cert_file is not None
