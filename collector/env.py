"""Every environment variable toolscore's collector reads, in one place, each with its default.

Precedence everywhere: an explicit argument, then the environment, then the default. A bad explicit
value raises; a bad environment value is logged and the default is used, because a typo in a
deployment's environment must not take the instrumented application down. The standard ``OTEL_*``
variables are honoured where they apply (the OTLP exporters also read their own endpoint, headers,
protocol and TLS variables directly).
"""

from __future__ import annotations

import logging
import os
from collections.abc import Callable, Collection
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # this module is read on every import path: pydantic only when an error is logged
    from pydantic import BaseModel, ValidationError

__all__ = [
    "OTEL_EXPORTER_OTLP_CERTIFICATE",
    "OTEL_EXPORTER_OTLP_COMPRESSION",
    "OTEL_EXPORTER_OTLP_ENDPOINT",
    "OTEL_EXPORTER_OTLP_HEADERS",
    "OTEL_EXPORTER_OTLP_INSECURE",
    "OTEL_EXPORTER_OTLP_LOGS_ENDPOINT",
    "OTEL_EXPORTER_OTLP_METRICS_ENDPOINT",
    "OTEL_EXPORTER_OTLP_PROTOCOL",
    "OTEL_EXPORTER_OTLP_TIMEOUT",
    "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT",
    "OTEL_EXPORTER_PROMETHEUS_HOST",
    "OTEL_EXPORTER_PROMETHEUS_PORT",
    "OTEL_LOGS_EXPORTER",
    "OTEL_METRICS_EXPORTER",
    "OTEL_METRIC_EXPORT_INTERVAL",
    "OTEL_SDK_DISABLED",
    "OTEL_TRACES_EXPORTER",
    "TOOLSCORE_MAX_AGENT_VERSIONS",
    "TOOLSCORE_MAX_ATTRIBUTE_VALUES",
    "TOOLSCORE_PRIVACY_HASH_KEY",
    "TOOLSCORE_TELEMETRY_ENABLED",
    "env_bool",
    "env_int",
    "env_list",
    "env_str",
    "log_ignored",
]

_log = logging.getLogger(__name__)

# --- toolscore's own variables -------------------------------------------------------------------

TOOLSCORE_TELEMETRY_ENABLED = "TOOLSCORE_TELEMETRY_ENABLED"
"""``true``/``false``: whether toolscore reports metrics and evaluation events about itself.
Default: true (``OTEL_SDK_DISABLED=true`` also turns it off)."""

TOOLSCORE_MAX_ATTRIBUTE_VALUES = "TOOLSCORE_MAX_ATTRIBUTE_VALUES"
"""Distinct values each name-valued metric attribute (scorer, expectation, agent, error type) may
take before further values are reported as ``_other``. Default: 100."""

TOOLSCORE_MAX_AGENT_VERSIONS = "TOOLSCORE_MAX_AGENT_VERSIONS"
"""Versions per agent with series of their own in ``toolscore.expectation.version.runs`` (the most recently
seen) before an older one's later runs count as ``_other``: the N of the canary alert's N + 1 series per agent.
Default: 5."""

TOOLSCORE_PRIVACY_HASH_KEY = "TOOLSCORE_PRIVACY_HASH_KEY"
"""Key of the privacy masks' HMAC when `privacy.hash_key` is unset (a secret: set it from a secret store, the
same in every replica and for the offline commands, so their markers compare). Default: unset, a random key
per process (markers then compare within one process only; a WARNING says so)."""

# --- standard OpenTelemetry variables toolscore honours ------------------------------------------

OTEL_SDK_DISABLED = "OTEL_SDK_DISABLED"
"""``true`` disables toolscore's self-telemetry like the rest of the SDK. Default: false."""

OTEL_METRICS_EXPORTER = "OTEL_METRICS_EXPORTER"
"""Comma-separated metric exporters; toolscore acts on ``otlp``, ``prometheus`` and ``none``.
Default: ``otlp`` (which only exports when an OTLP endpoint is set)."""

OTEL_TRACES_EXPORTER = "OTEL_TRACES_EXPORTER"
"""Span exporter behind `instrument()`'s scoring processor: ``otlp``, ``console`` or ``none``.
Default: ``otlp``."""

OTEL_LOGS_EXPORTER = "OTEL_LOGS_EXPORTER"
"""Comma-separated log exporters; toolscore acts on ``otlp`` and ``none``. Default: ``otlp``."""

OTEL_EXPORTER_OTLP_ENDPOINT = "OTEL_EXPORTER_OTLP_ENDPOINT"
"""Base OTLP endpoint for every signal. Default: unset (no OTLP export of toolscore's own metrics/logs)."""

OTEL_EXPORTER_OTLP_METRICS_ENDPOINT = "OTEL_EXPORTER_OTLP_METRICS_ENDPOINT"
"""OTLP endpoint for metrics only. Default: unset."""

OTEL_EXPORTER_OTLP_LOGS_ENDPOINT = "OTEL_EXPORTER_OTLP_LOGS_ENDPOINT"
"""OTLP endpoint for logs (the ``gen_ai.evaluation.result`` events) only. Default: unset."""

OTEL_EXPORTER_OTLP_PROTOCOL = "OTEL_EXPORTER_OTLP_PROTOCOL"
"""``grpc`` or ``http/protobuf``; the per-signal ``OTEL_EXPORTER_OTLP_{TRACES,METRICS,LOGS}_PROTOCOL``
override it. Default: ``grpc`` (the Python SDK's OTLP default)."""

OTEL_EXPORTER_OTLP_TRACES_ENDPOINT = "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"
"""Where `toolscore serve` forwards spans, used as is (the base endpoint gets ``/v1/traces`` appended
for HTTP). Default: unset (with no base endpoint either, spans are not forwarded)."""

OTEL_EXPORTER_OTLP_HEADERS = "OTEL_EXPORTER_OTLP_HEADERS"
"""``key=value,...`` (values URL-encoded) sent with every OTLP export; the ``_TRACES_`` variant
overrides it for forwarded spans. Default: none."""

OTEL_EXPORTER_OTLP_INSECURE = "OTEL_EXPORTER_OTLP_INSECURE"
"""``true``: plain-text gRPC to an endpoint without an ``http(s)://`` scheme (the ``_TRACES_`` variant
overrides it). Default: false."""

OTEL_EXPORTER_OTLP_TIMEOUT = "OTEL_EXPORTER_OTLP_TIMEOUT"
"""Milliseconds one OTLP export may take (the ``_TRACES_`` variant overrides it). Default: 10000."""

OTEL_EXPORTER_OTLP_COMPRESSION = "OTEL_EXPORTER_OTLP_COMPRESSION"
"""``gzip`` or ``none`` for OTLP exports (the ``_TRACES_`` variant overrides it). Default: none."""

OTEL_EXPORTER_OTLP_CERTIFICATE = "OTEL_EXPORTER_OTLP_CERTIFICATE"
"""PEM file of the CA that signs the OTLP endpoint's certificate (``_CLIENT_CERTIFICATE`` and
``_CLIENT_KEY`` add a client certificate; ``_TRACES_`` variants override them). Default: system CAs."""

OTEL_METRIC_EXPORT_INTERVAL = "OTEL_METRIC_EXPORT_INTERVAL"
"""Milliseconds between two OTLP metric exports. Default: 60000."""

OTEL_EXPORTER_PROMETHEUS_HOST = "OTEL_EXPORTER_PROMETHEUS_HOST"
"""Address the Prometheus ``/metrics`` endpoint listens on. Default: ``127.0.0.1`` (the spec's
``localhost``, spelled so it never resolves to an IPv6-only or outside address)."""

OTEL_EXPORTER_PROMETHEUS_PORT = "OTEL_EXPORTER_PROMETHEUS_PORT"
"""Port of the Prometheus ``/metrics`` endpoint. Default: 9464."""

_TRUE = frozenset({"1", "true", "yes", "on"})
_FALSE = frozenset({"0", "false", "no", "off"})


def env_str(name: str, default: str | None = None) -> str | None:
    """The variable's stripped value, or `default` when unset or blank."""
    value = os.environ.get(name, "").strip()
    return value or default


def env_bool(name: str, default: bool) -> bool:
    """``true/false/1/0/yes/no/on/off`` (any case); anything else is logged and `default` used."""
    value = env_str(name)
    if value is None:
        return default
    if value.lower() in _TRUE:
        return True
    if value.lower() in _FALSE:
        return False
    _log.warning("%s=%r is not a boolean; using the default %s", name, value, default)
    return default


def env_int(name: str, default: int, minimum: int | None = None) -> int:
    """An integer at least `minimum`; anything else is logged and `default` used."""
    value = env_str(name)
    if value is None:
        return default
    try:
        number = int(value)
    except ValueError:
        _log.warning("%s=%r is not an integer; using the default %s", name, value, default)
        return default
    if minimum is not None and number < minimum:
        _log.warning("%s=%r is below %s; using the default %s", name, value, minimum, default)
        return default
    return number


def env_list(name: str, default: tuple[str, ...]) -> tuple[str, ...]:
    """A comma-separated list, lower-cased, blanks dropped; `default` when unset."""
    value = env_str(name)
    if value is None:
        return default
    return tuple(item.strip().lower() for item in value.split(",") if item.strip())


def log_ignored(
    exc: ValidationError,
    model: type[BaseModel],
    section: str,
    fields: Collection[str],
    variable_of: Callable[[str], str],
) -> None:
    """Log each error of `exc` on one of `fields` (values read from the environment, now dropped).

    Each line names the variable the author set, the key it feeds and what is wrong with the value,
    in the words of the configuration errors: the model's field names and pydantic's dump would not
    say which variable to fix.
    """
    from toolscore.collector.error_text import error_message

    for error in exc.errors(include_url=False):
        field = str(error["loc"][0]) if error["loc"] else ""
        if field in fields:
            message = error_message(error, model)
            _log.warning("%s ignored, %s.%s keeps its default: %s", variable_of(field), section, field, message)
