"""Every address `toolscore serve` will listen on, checked before anything starts, so that all conflicts are
reported at once.

Started one by one, the components find a taken port one at a time: the user frees one, starts again, and
meets the next; and grpc, which binds in C, first writes its own log line ("Failed to add port to server")
that names neither the key nor the variable to change. Binding a plain socket to each address first, as the
servers will, finds every conflict, and says for each which key and which `TOOLSCORE_*` variable set it.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

from toolscore.collector import env
from toolscore.collector.serve._bind_probe import bind_error
from toolscore.collector.serve._config import ENV_NESTED_DELIMITER, ENV_PREFIX, ServeConfig
from toolscore.collector.serve.receivers._config import split_endpoint

__all__ = ["Listener", "listen_conflicts", "listeners"]


@dataclass(frozen=True)
class Listener:
    """One address the collector listens on, and the configuration that sets it."""

    what: str
    """What listens there, in the user's words: `OTLP/gRPC receiver`."""
    key: str
    """The configuration key, `receiver.grpc_endpoint`."""
    variables: tuple[str, ...]
    """The environment variables that set it, toolscore's own first."""
    host: str
    port: int
    host_key: str = ""
    """The key of the host, when another than `key` (`telemetry.prometheus_host`): named for an address this
    machine does not have."""
    host_variables: tuple[str, ...] = ()

    @property
    def address(self) -> str:
        return f"[{self.host}]:{self.port}" if ":" in self.host else f"{self.host}:{self.port}"


def _variable(key: str) -> str:
    return ENV_PREFIX + ENV_NESTED_DELIMITER.join(part.upper() for part in key.split("."))


def listeners(config: ServeConfig) -> Iterator[Listener]:
    """The addresses `config` listens on: the OTLP receivers (the HTTP one also serves `/healthz` and
    `/readyz`) and the Prometheus endpoint."""
    receiver = config.receiver
    for enabled, what, key, endpoint in (
        (receiver.grpc_enabled, "OTLP/gRPC receiver", "receiver.grpc_endpoint", receiver.grpc_endpoint),
        (
            receiver.http_enabled,
            "OTLP/HTTP receiver and health endpoints",
            "receiver.http_endpoint",
            receiver.http_endpoint,
        ),
    ):
        if enabled:
            host, port = split_endpoint(endpoint)
            yield Listener(what, key, (_variable(key),), host, port)
    telemetry = config.telemetry
    if telemetry.enabled and telemetry.prometheus_enabled:
        key, host_key = "telemetry.prometheus_port", "telemetry.prometheus_host"
        yield Listener(
            "Prometheus metrics endpoint",
            key,
            (_variable(key), env.OTEL_EXPORTER_PROMETHEUS_PORT),
            telemetry.prometheus_host,
            telemetry.prometheus_port,
            host_key,
            (_variable(host_key), env.OTEL_EXPORTER_PROMETHEUS_HOST),
        )


def _ui_listener(config: ServeConfig) -> Iterator[Listener]:
    if config.ui.enabled and config.score_store.enabled:
        host, port = split_endpoint(config.ui.endpoint)
        yield Listener("runs page", "ui.endpoint", (_variable("ui.endpoint"),), host, port)


def listen_conflicts(config: ServeConfig) -> list[str]:
    """One line per address `config` cannot listen on (taken by another process, or by another of its own
    listeners), each naming the key and the variables that set it; empty when all are free. Port 0 (any free
    port) is never a conflict."""
    problems: list[str] = []
    claimed: list[Listener] = []
    for listener in (*listeners(config), *_ui_listener(config)):
        if listener.port == 0:
            continue
        other = next((earlier for earlier in claimed if _overlap(earlier, listener)), None)
        if other is not None:
            problems.append(f"{_where(listener, False)}: the same port as {other.key} ({other.address})")
            continue
        claimed.append(listener)
        error = bind_error(listener.host, listener.port)
        if error is not None:
            problems.append(f"{_where(listener, error[1])}: {error[0]}")
    return problems


def _where(listener: Listener, host: bool) -> str:
    """`key address (VARIABLES; what)`, naming the host's key when the host is at fault."""
    key, variables = listener.key, listener.variables
    if host and listener.host_key:
        key, variables = listener.host_key, listener.host_variables
    return f"{key} {listener.address} ({', '.join(variables)}; {listener.what})"


_ANY = frozenset({"", "0.0.0.0", "::"})


def _overlap(a: Listener, b: Listener) -> bool:
    """Whether two of the collector's own listeners would take the same port (a wildcard host takes every one)."""
    return a.port == b.port and (a.host == b.host or a.host in _ANY or b.host in _ANY)
