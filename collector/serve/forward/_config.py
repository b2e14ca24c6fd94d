"""Where and how `toolscore serve` forwards spans: `ForwardConfig`, read from the standard OTLP variables.

The defaults follow the OpenTelemetry Collector's exporter helper (a bounded sending queue, exponential
backoff with jitter, a total retry budget) scaled to a sidecar: a downstream outage of about a minute
is absorbed, a longer one drops the oldest work it cannot hold, and every drop is counted.
"""

from __future__ import annotations

import logging
from typing import Any, Literal
from urllib.parse import unquote, urlsplit

from pydantic import BaseModel, ConfigDict, Field, ValidationError, ValidationInfo, field_validator

from toolscore.collector import env
from toolscore.collector.serve.receivers._config import split_endpoint
from toolscore.collector.telemetry.setup import OtlpProtocol

__all__ = [
    "ForwardConfig",
    "check_endpoint",
    "endpoint_doubt",
    "environment_endpoint",
    "environment_values",
    "parse_headers",
    "standard_variable",
]

_log = logging.getLogger(__name__)


class ForwardConfig(BaseModel):
    """The downstream OTLP endpoint spans are forwarded to, and how hard to try."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    protocol: OtlpProtocol = Field(
        default="grpc",
        description="`grpc` or `http/protobuf` (spans are forwarded as protobuf: `http/json` is refused, and "
        "every OTLP/HTTP receiver takes protobuf at the same URL). Env: OTEL_EXPORTER_OTLP_TRACES_PROTOCOL, "
        "OTEL_EXPORTER_OTLP_PROTOCOL. Default: grpc.",
    )
    endpoint: str | None = Field(
        default=None,
        description="Downstream OTLP endpoint: `http(s)://host:port` for gRPC, the full `/v1/traces` URL for "
        "HTTP. Unset: spans are not forwarded (they are counted as passed and discarded). "
        "Env: OTEL_EXPORTER_OTLP_TRACES_ENDPOINT, else OTEL_EXPORTER_OTLP_ENDPOINT (+ `/v1/traces` for HTTP). "
        "Default: unset.",
    )
    headers: dict[str, str] = Field(
        default={},  # pydantic copies it per instance
        description="Headers (gRPC metadata) sent with every export, e.g. an API key. "
        "Env: OTEL_EXPORTER_OTLP_TRACES_HEADERS, OTEL_EXPORTER_OTLP_HEADERS (`k=v,k2=v2`). Default: {}.",
    )
    insecure: bool = Field(
        default=False,
        description="Plain-text gRPC to an endpoint given without a scheme (`http://` is always plain text, "
        "`https://` always TLS). Env: OTEL_EXPORTER_OTLP_TRACES_INSECURE, OTEL_EXPORTER_OTLP_INSECURE. "
        "Default: false.",
    )
    certificate_file: str | None = Field(
        default=None,
        description="PEM file of the CA to trust for the downstream's certificate (unset: the system's). "
        "Env: OTEL_EXPORTER_OTLP_[TRACES_]CERTIFICATE. Default: unset.",
    )
    client_certificate_file: str | None = Field(
        default=None,
        description="PEM client certificate for mutual TLS. Env: OTEL_EXPORTER_OTLP_[TRACES_]CLIENT_CERTIFICATE. "
        "Default: unset.",
    )
    client_key_file: str | None = Field(
        default=None,
        description="PEM key of `client_certificate_file`. Env: OTEL_EXPORTER_OTLP_[TRACES_]CLIENT_KEY. "
        "Default: unset.",
    )
    compression: Literal["none", "gzip"] = Field(
        default="none",
        description="Compress exports. Env: OTEL_EXPORTER_OTLP_TRACES_COMPRESSION, OTEL_EXPORTER_OTLP_COMPRESSION. "
        "Default: none.",
    )
    timeout_s: float = Field(
        default=10.0,
        gt=0,
        description="Longest one export attempt may take. Env: OTEL_EXPORTER_OTLP_[TRACES_]TIMEOUT (in ms). "
        "Default: 10.",
    )
    queue_max_requests: int = Field(
        default=1_000,
        ge=1,
        description="Export requests waiting to be sent (or retried); a request that would exceed it is "
        "dropped and its spans counted (`queue_full`), and the receivers answer RESOURCE_EXHAUSTED / 429 "
        "while the queue is full. Default: 1000.",
    )
    queue_max_spans: int = Field(
        default=200_000,
        ge=1,
        description="Spans in the waiting requests, bounding memory like `queue_max_requests`. Default: 200000.",
    )
    max_retry_s: float = Field(
        default=60.0,
        ge=0,
        description="Longest a request is retried, from its first attempt, before its spans are dropped "
        "(`retries_exhausted`); 0 = never retry. Default: 60.",
    )
    backoff_initial_s: float = Field(
        default=0.5, gt=0, description="Wait before the first retry; doubles after each failure. Default: 0.5."
    )
    backoff_max_s: float = Field(
        default=10.0, gt=0, description="Longest wait between two retries (before jitter). Default: 10."
    )
    senders: int = Field(default=2, ge=1, description="Requests in flight at once (one thread each). Default: 2.")
    batch_max_spans: int = Field(
        default=512,
        ge=1,
        description="Spans per forwarded request: released spans are regrouped by resource and scope and "
        "sent when this many are buffered. Default: 512.",
    )
    batch_max_bytes: int = Field(
        default=4_000_000,
        ge=1,
        description="Largest forwarded request (serialized bytes); a bigger batch is split, since receivers "
        "usually refuse messages over 4 MiB. Default: 4000000.",
    )
    batch_timeout_ms: float = Field(
        default=50.0,
        ge=0,
        description="Longest a released span waits in the buffer for others before its request is sent. Default: 50.",
    )

    @field_validator("protocol", mode="before")
    @classmethod
    def _protobuf_only(cls, protocol: Any) -> Any:
        if protocol == "http/json":
            raise ValueError(
                "http/json is not supported for forwarding: spans are forwarded as they were received, in protobuf; "
                "use http/protobuf, which every OTLP/HTTP receiver accepts at the same URL"
            )
        return protocol

    @field_validator("endpoint")
    @classmethod
    def _endpoint_fits_protocol(cls, endpoint: str | None, info: ValidationInfo) -> str | None:
        if endpoint and "protocol" in info.data:  # a bad protocol is reported on its own
            check_endpoint(endpoint, info.data["protocol"])
        return endpoint

    @property
    def enabled(self) -> bool:
        return bool(self.endpoint)

    @classmethod
    def from_env(cls, **explicit: Any) -> ForwardConfig:
        """Explicit values, then the OTEL_EXPORTER_OTLP_* variables, then the defaults.

        A bad explicit value raises (pydantic `ValidationError`); a bad environment value is logged and
        its default used, so a typo in an application's environment cannot stop it. `toolscore serve` does
        not come here: it validates `environment_values()` with the rest of its configuration and refuses
        to start on a bad one, since a collector that forwards nowhere would drop every span it receives.
        """
        merged = {**environment_values(), **explicit}
        for _ in range(len(_SETTINGS) + 1):  # dropping a bad protocol can make the endpoint wrong in turn
            try:
                return cls(**merged)
            except ValidationError as exc:
                bad_env = {
                    str(error["loc"][0]) for error in exc.errors() if error["loc"] and error["loc"][0] not in explicit
                }
                if not bad_env:
                    raise
                env.log_ignored(exc, cls, "forward", bad_env, _variable_of)
                merged = {k: v for k, v in merged.items() if k not in bad_env}
        return cls(**explicit)


_SETTINGS = {
    "protocol": "PROTOCOL",
    "endpoint": "ENDPOINT",
    "headers": "HEADERS",
    "insecure": "INSECURE",
    "timeout_s": "TIMEOUT",
    "compression": "COMPRESSION",
    "certificate_file": "CERTIFICATE",
    "client_certificate_file": "CLIENT_CERTIFICATE",
    "client_key_file": "CLIENT_KEY",
}
"""The `OTEL_EXPORTER_OTLP_[TRACES_]<setting>` each field is read from."""


def standard_variable(field: str) -> str | None:
    """The `OTEL_EXPORTER_OTLP_*` variable `from_env` reads `field` from (the traces-specific one when it is set),
    None when neither is set: a check across keys names it as where a value came from, since the agents'
    variables, left set where the collector starts, are a likely source of a forward endpoint."""
    setting = _SETTINGS.get(field)
    if setting is None:
        return None
    specific = f"OTEL_EXPORTER_OTLP_TRACES_{setting}"
    if env.env_str(specific) is not None:
        return specific
    general = f"OTEL_EXPORTER_OTLP_{setting}"
    return general if env.env_str(general) is not None else None


def _variable_of(field: str) -> str:
    """The variable a refused field value came from: the traces-specific one when it is set."""
    return standard_variable(field) or f"OTEL_EXPORTER_OTLP_{_SETTINGS.get(field, field.upper())}"


def _traces_env(setting: str) -> str | None:
    """`OTEL_EXPORTER_OTLP_TRACES_<setting>`, else `OTEL_EXPORTER_OTLP_<setting>`."""
    return env.env_str(f"OTEL_EXPORTER_OTLP_TRACES_{setting}") or env.env_str(f"OTEL_EXPORTER_OTLP_{setting}")


def environment_endpoint(protocol: str) -> str | None:
    """The endpoint the standard variables give for `protocol`, as the OTLP exporter specification builds it.

    `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT` is used as it is. `OTEL_EXPORTER_OTLP_ENDPOINT` is a base: OTLP/HTTP
    appends `v1/traces` to its path (`http://host:4318` and `http://host:4318/` both give
    `http://host:4318/v1/traces`), gRPC uses it as it is.
    """
    specific = env.env_str(env.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT)
    if specific is not None:
        return specific
    base = env.env_str(env.OTEL_EXPORTER_OTLP_ENDPOINT)
    if base is None or protocol == "grpc":
        return base
    return base.rstrip("/") + "/v1/traces"


def parse_headers(text: str) -> dict[str, str]:
    """`k=v,k2=v%202` (the OTLP exporter format) as a dict; malformed entries are logged and skipped."""
    headers: dict[str, str] = {}
    for item in text.split(","):
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            if item.strip():
                _log.warning("OTLP header %r is not key=value; skipped", item.strip())
            continue
        headers[unquote(key.strip()).lower()] = unquote(value.strip())
    return headers


def environment_values() -> dict[str, Any]:
    """The fields the `OTEL_EXPORTER_OTLP_[TRACES_]*` variables set, as written, not yet validated: the caller
    decides what a bad one does (`from_env` logs it and keeps the default; `toolscore serve` refuses to start)."""
    protocol = (_traces_env("PROTOCOL") or "grpc").strip().lower()
    out: dict[str, Any] = {"endpoint": environment_endpoint(protocol)}
    if _traces_env("PROTOCOL") is not None:
        out["protocol"] = protocol
    if (headers := _traces_env("HEADERS")) is not None:
        out["headers"] = parse_headers(headers)
    if (insecure := _traces_env("INSECURE")) is not None:
        out["insecure"] = insecure.strip().lower()  # pydantic reads true/false, 1/0, yes/no, on/off
    if (timeout := _traces_env("TIMEOUT")) is not None:
        try:
            out["timeout_s"] = float(timeout) / 1000
        except ValueError:
            out["timeout_s"] = timeout  # refused by validation, naming the variable
    if (compression := _traces_env("COMPRESSION")) is not None:
        out["compression"] = compression.strip().lower()
    for field, setting in (
        ("certificate_file", "CERTIFICATE"),
        ("client_certificate_file", "CLIENT_CERTIFICATE"),
        ("client_key_file", "CLIENT_KEY"),
    ):
        if (path := _traces_env(setting)) is not None:
            out[field] = path
    return out


def check_endpoint(endpoint: str, protocol: OtlpProtocol) -> None:
    """Refuse an endpoint the exporter would only fail on later, with transport errors that hide the cause.

    The likeliest mistake is the OTLP/HTTP URL (`.../v1/traces`) with the protocol left at its gRPC
    default: gRPC then speaks HTTP/2 to an HTTP/1.1 server and reports frame errors.
    """
    if "://" not in endpoint:
        if protocol != "grpc":
            raise ValueError(f"endpoint {endpoint!r}: an OTLP/HTTP endpoint is a URL, http(s)://host:port/v1/traces")
        split_endpoint(endpoint)
        return
    parts = urlsplit(endpoint)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise ValueError(f"endpoint {endpoint!r} must be an http:// or https:// URL (or host:port for gRPC)")
    if protocol == "grpc" and parts.path.strip("/"):
        raise ValueError(
            f"endpoint {endpoint!r} has a path ({parts.path}), but the protocol is grpc, which sends to host:port "
            "only: for an OTLP/HTTP endpoint set OTEL_EXPORTER_OTLP_TRACES_PROTOCOL=http/protobuf (or "
            "forward.protocol: http/protobuf); for gRPC give http(s)://host:port"
        )


def grpc_target(endpoint: str, insecure: bool) -> tuple[str, bool]:
    """(`host:port`, use TLS) from an endpoint: the scheme decides when there is one, else `insecure`."""
    if "://" not in endpoint:
        return endpoint.rstrip("/"), not insecure
    parts = urlsplit(endpoint)
    return parts.netloc, parts.scheme == "https"


def endpoint_doubt(endpoint: str, protocol: str) -> str | None:
    """What is likely wrong with an endpoint that is valid, said once at start; None when nothing is.

    An OTLP/HTTP URL without a path is sent to as given, as the specification says of the signal's own variable
    (`OTEL_EXPORTER_OTLP_TRACES_ENDPOINT`): the receiver answers 404 and every span is dropped, unless it really
    takes traces at `/`. Refusing it would refuse such a receiver; saying it names the likely fix.
    """
    if protocol == "grpc" or "://" not in endpoint or urlsplit(endpoint).path.strip("/"):
        return None
    return (
        f"forward.endpoint {endpoint!r} has no path, and OTLP/HTTP sends to the URL as given: most receivers take "
        "traces at /v1/traces. Give the full URL, or set OTEL_EXPORTER_OTLP_ENDPOINT (a base, to which /v1/traces "
        "is appended) instead of OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"
    )
