"""The running collector: builds every component from a `ServeConfig`, serves, and shuts down gracefully.

    start:    registry ─→ telemetry ─→ score store ─→ forwarder ─→ CollectorPipeline ─→ receivers ─→ ready
    SIGTERM:  not ready ─→ receivers stop (calls in flight finish) ─→ pipeline: score or release every
              pending run, forward it, close the store ─→ telemetry flush ─→ registry closed ─→ exit 0

Components are started in dependency order and stopped in reverse, so nothing is handed work by a part
that is already gone. The service is threaded rather than asyncio: the receivers are grpc's thread-pool
server and a threading HTTP server, the engine and forwarder own their threads, so the main thread only
waits for a signal (the same shape as grpc's graceful-shutdown example, with `stop(grace)` in `finally`).
One grace period (`shutdown_grace_s`) bounds the whole shutdown; each step gets what the earlier ones left.
"""

from __future__ import annotations

import gc
import logging
import signal
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, cast

from opentelemetry.sdk.resources import Resource

from toolscore.collector.registry import InvalidExpectation, PostgresStoreConfig, Registry, SqliteStoreConfig
from toolscore.collector.serve._config import DEFAULT_EXPECTATIONS_DIR, ServeConfig
from toolscore.collector.serve._health import HealthState
from toolscore.collector.serve._listen_check import listen_conflicts
from toolscore.collector.serve._next_steps import next_steps
from toolscore.collector.serve._phoenix import PhoenixAnnotations, PhoenixTelemetry
from toolscore.collector.serve._pipeline import CollectorPipeline
from toolscore.collector.serve.forward._forwarder import Forwarder, ForwardTelemetry
from toolscore.collector.serve.receivers._grpc_receiver import GrpcReceiver, start_grpc_receiver
from toolscore.collector.serve.receivers._http_receiver import HttpReceiver, start_http_receiver
from toolscore.collector.serve.receivers._otlp_export import decode_slots
from toolscore.collector.serve.scores._store import ScoreStore, ScoreStoreTelemetry
from toolscore.collector.telemetry.setup import TelemetrySetup, setup_telemetry

__all__ = ["Service", "ServiceStartError", "run_service", "start_service"]

_log = logging.getLogger("toolscore.serve")
_RECEIVER_SHARE = 0.25
"""Of the grace period, what the receivers get to finish calls in flight; the pipeline gets the rest."""


class ServiceStartError(RuntimeError):
    """A component could not start (a port taken, a bad expectations file, an unreachable database).

    `bad_config`: the configuration is at fault (the expectation files `registry.files` names), so `toolscore
    serve` exits 2 as for any configuration error, rather than 1 (a start that failed on the world).
    """

    def __init__(self, message: str, *, bad_config: bool = False) -> None:
        super().__init__(message)
        self.bad_config = bad_config


@dataclass
class Service:
    """Every running part; `shutdown` stops them in reverse order of start. Idempotent."""

    config: ServeConfig
    health: HealthState
    registry: Registry | None = None
    telemetry: TelemetrySetup | None = None
    store: ScoreStore | None = None
    forwarder: Forwarder | None = None
    pipeline: CollectorPipeline | None = None
    grpc: GrpcReceiver | None = None
    http: HttpReceiver | None = None
    _stopped: bool = field(default=False, repr=False)
    _gc_threshold: tuple[int, int, int] | None = field(default=None, repr=False)

    def shutdown(self, grace_s: float | None = None) -> bool:
        """Drain within `grace_s` (default: the config's); True when nothing pending was cut off."""
        if self._stopped:
            return True
        self._stopped = True
        grace = self.config.shutdown_grace_s if grace_s is None else grace_s
        deadline = time.monotonic() + grace
        self.health.ready = False
        receivers = [r for r in (self.grpc, self.http) if r is not None]
        for receiver in receivers:
            receiver.stop(grace * _RECEIVER_SHARE / len(receivers))
        ok = True
        if self.pipeline is not None:
            ok = self.pipeline.shutdown(max(0.5, deadline - time.monotonic()))
        elif self.forwarder is not None:  # the pipeline owns them once built; here it never was
            self.forwarder.shutdown(max(0.5, deadline - time.monotonic()))
        if self.pipeline is None and self.store is not None:
            self.store.close(max(0.5, deadline - time.monotonic()))
        if self.telemetry is not None:
            self.telemetry.shutdown()
        if self.registry is not None:
            self.registry.close()
        if self._gc_threshold is not None:
            gc.set_threshold(*self._gc_threshold)
        self.health.live = False
        return ok

    def tune_gc(self) -> None:
        """Apply `gc_threshold` for as long as the service runs (`shutdown` restores the previous one)."""
        if self.config.gc_threshold and self._gc_threshold is None:
            self._gc_threshold = gc.get_threshold()
            gc.set_threshold(self.config.gc_threshold, *self._gc_threshold[1:])

    @property
    def grpc_port(self) -> int | None:
        return self.grpc.port if self.grpc is not None else None

    @property
    def http_port(self) -> int | None:
        return self.http.port if self.http is not None else None


def _step(what: str, build: Callable[[], Any]) -> Any:
    try:
        return build()
    except InvalidExpectation as exc:  # the files are at fault, not the store the registry opened
        problems = "".join(f"\n  {problem}" for problem in exc.problems)
        raise ServiceStartError(f"invalid expectation files (registry.files):{problems}", bad_config=True) from exc
    except Exception as exc:
        raise ServiceStartError(f"{what}: {exc}") from exc


def start_service(config: ServeConfig) -> Service:
    """Start every component and mark the service ready; on failure stop what was started and raise."""
    conflicts = listen_conflicts(config)
    if conflicts:  # all at once, before any part starts (and before grpc logs its own bind failure)
        lines = "".join(f"\n  {line}" for line in conflicts)
        raise ServiceStartError(
            f"{len(conflicts)} listening address{'es' if len(conflicts) > 1 else ''} unavailable; free "
            f"{'them' if len(conflicts) > 1 else 'it'}, or set another in the configuration file or the variable "
            f"named:{lines}",
            bad_config=True,
        )
    service = Service(config, HealthState())
    try:
        service.tune_gc()
        _start_parts(service, config)
    except BaseException:
        service.shutdown(grace_s=1.0)
        raise
    # Logged before /readyz turns 200, so whoever sees the service ready also finds where it listens.
    waiting = service.health.waiting_for() if service.health.waiting_for is not None else None
    if waiting:
        _log.warning("toolscore serve started, not ready (%s): %s", waiting, _describe(service))
    else:
        _log.info(
            "toolscore serve ready: %s; %s; %s",
            _describe(service),
            _expectations(service.registry, config),
            next_steps(config, service.grpc_port, service.http_port, service.registry),
        )
        _warn_if_nothing_to_score(service.registry, config)
    service.health.ready = True
    return service


def _start_parts(service: Service, config: ServeConfig) -> None:
    store_config = config.registry.store
    registry_where = (
        f" ({store_config.path}, registry.store.path)" if isinstance(store_config, SqliteStoreConfig) else ""
    )
    # A database server that cannot be reached may come back: the service starts, forwards, and is not
    # ready until it has read it. A SQLite file that cannot be opened will not: that, and bad expectation
    # files, fail the start.
    wait = isinstance(store_config, PostgresStoreConfig)
    registry = _step(
        f"expectations registry{registry_where}", lambda: Registry(config=config.registry, wait_for_store=wait)
    )
    service.registry = registry
    service.health.waiting_for = lambda: (
        None if registry.loaded else f"waiting for the registry store: {registry.health.error or 'connecting'}"
    )
    resource = Resource.create({"service.name": "toolscore"})
    metrics = config.telemetry
    telemetry_where = (
        f" (Prometheus endpoint {metrics.prometheus_host}:{metrics.prometheus_port}, telemetry.prometheus_port)"
        if metrics.enabled and metrics.prometheus_enabled
        else ""
    )
    service.telemetry = _step(f"telemetry{telemetry_where}", lambda: setup_telemetry(config.telemetry, resource))
    telemetry = service.telemetry.telemetry
    if config.score_store.enabled:
        where = f"score store ({config.score_store.path}, score_store.path)"
        store_telemetry = cast(ScoreStoreTelemetry, telemetry)  # both implementations report the store too
        service.store = _step(where, lambda: ScoreStore(config.score_store, store_telemetry))
    if config.forward.enabled:
        forward_telemetry = cast(ForwardTelemetry, telemetry)  # both implementations report forwarding too
        service.forwarder = _step("forwarder", lambda: Forwarder(config.forward, forward_telemetry))
    forwarder, store = service.forwarder, service.store
    annotations = (
        PhoenixAnnotations(config.phoenix, cast(PhoenixTelemetry, telemetry)) if config.phoenix.enabled else None
    )
    service.pipeline = _step(
        "pipeline",
        lambda: CollectorPipeline(registry, forwarder, config.pipeline, telemetry, store, annotations=annotations),
    )
    ingest = service.pipeline
    receiver = config.receiver
    decodes = decode_slots(receiver.max_concurrent_decodes)  # one bound over both receivers
    if receiver.grpc_enabled:
        where = f"OTLP/gRPC receiver ({receiver.grpc_endpoint}, receiver.grpc_endpoint)"
        service.grpc = _step(where, lambda: start_grpc_receiver(ingest, receiver, decodes, telemetry))
    if receiver.http_enabled:
        where = f"OTLP/HTTP receiver ({receiver.http_endpoint}, receiver.http_endpoint)"
        service.http = _step(where, lambda: start_http_receiver(ingest, receiver, service.health, decodes, telemetry))


def _describe(service: Service) -> str:
    parts = []
    if service.grpc is not None:
        parts.append(f"OTLP/gRPC on port {service.grpc.port}")
    if service.http is not None:
        parts.append(f"OTLP/HTTP on port {service.http.port}")
    if service.telemetry is not None and service.telemetry.prometheus_address is not None:
        parts.append("metrics on http://{}:{}/metrics".format(*service.telemetry.prometheus_address))
    forward = service.config.forward
    parts.append(f"forwarding to {forward.endpoint} ({forward.protocol})" if forward.enabled else "no downstream")
    return ", ".join(parts)


def _expectations(registry: Registry | None, config: ServeConfig) -> str:
    """How many expectations runs are scored against, and from where, for whoever reads the start log."""
    enabled = sum(1 for e in registry.index.expectations if e.enabled) if registry is not None else 0
    store = config.registry.store
    where = store.path if isinstance(store, SqliteStoreConfig) else f"a {store.type} store"
    files = ", ".join(config.registry.files)
    return f"{enabled} enabled expectation(s) in {where}" + (f", applied from {files}" if files else " (no files)")


def _warn_if_nothing_to_score(registry: Registry | None, config: ServeConfig) -> None:
    """A collector with no expectation that can match scores nothing, and would say nothing of it.

    The easy way there: `toolscore serve` started outside a checkout, where `deploy/expectations/`
    (read by default) does not exist, so it receives and forwards every span and no score appears.
    """
    if registry is None or any(e.enabled and not e.match.empty for e in registry.index.expectations):
        return
    files = config.registry.files
    if files:
        why = f"the files ({', '.join(files)}) and the store define none that is enabled and selects runs"
    else:
        why = f"registry.files is empty ({DEFAULT_EXPECTATIONS_DIR}/ is read by default, and {Path.cwd()} has none)"
    store = config.registry.store
    db = f" --db {store.path}" if isinstance(store, SqliteStoreConfig) else ""
    _log.warning(
        "nothing to score: %s. Spans are received and passed on, but no run is scored: set registry.files "
        "(TOOLSCORE_REGISTRY__FILES='[\"DIR\"]'), or run `toolscore expectations apply FILE%s`",
        why,
        db,
    )


def run_service(config: ServeConfig, stop: threading.Event | None = None) -> int:
    """Serve until SIGTERM/SIGINT (or `stop` is set), then shut down within the grace period; returns 0.

    Signal handlers can only be installed from the main thread; from another thread, pass `stop`.
    """
    stop = stop or threading.Event()
    previous: dict[signal.Signals, Any] = {}
    if threading.current_thread() is threading.main_thread():
        for signum in (signal.SIGTERM, signal.SIGINT):
            previous[signum] = signal.signal(signum, lambda signum, frame: stop.set())
    try:
        service = start_service(config)
        try:
            stop.wait()
            _log.info("shutting down (grace %.1f s)", config.shutdown_grace_s)
        finally:
            drained = service.shutdown()
        if not drained:
            _log.warning(
                "the grace period ended before every pending span was delivered (what was dropped is counted "
                "and logged above)"
            )
        _log.info("toolscore serve stopped")
        return 0
    finally:
        for signum, handler in previous.items():
            signal.signal(signum, handler)
