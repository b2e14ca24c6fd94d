"""The registry over gRPC (`toolscore.registry.v1.ExpectationRegistry`), in grpc's asyncio shape.

    request ─→ BearerTokenInterceptor ─→ RegistryServicer ─(worker thread)─→ Registry ─→ store
                                                    ↑                              │
    WatchExpectations stream ←── Watches ←──────────┴──── Registry.subscribe ←─────┘

Store calls block (SQLite, PostgreSQL), so each runs in a worker thread and the event loop only moves
messages. A write goes through the store's optimistic-concurrency check and is stored whole or not at
all; registry errors become status codes with `google.rpc` details (field paths, versions), never a
message a client must parse. Watchers are fed by the registry's change feed, which delivers every
change — this server's and other replicas' — once, in commit order (`watch.py`); replies that could
outgrow a message are paged (`pages.py`).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

import grpc

from toolscore.collector.registry._errors import (
    InvalidExpectation,
    NotFound,
    Problem,
    RegistryError,
    StoreUnavailable,
)
from toolscore.collector.registry._model import Expectation
from toolscore.collector.registry._registry import Applied, Registry
from toolscore.collector.registry._validation import check_privacy
from toolscore.collector.registry.api._convert import (
    expectation_from_proto,
    expectation_to_proto,
)
from toolscore.collector.registry.api._pages import history_page, list_page, read_limit, seq_token
from toolscore.collector.registry.api._server_auth import BearerTokenInterceptor
from toolscore.collector.registry.api._server_config import RegistryServerConfig
from toolscore.collector.registry.api._status import STATUS_DETAILS_KEY, abort_with
from toolscore.collector.registry.api._watch import WATCH_SEQ_KEY, Watches
from toolscore.collector.registry.stores._store import Change, check_expected_version
from toolscore.registry.v1 import registry_pb2 as pb
from toolscore.registry.v1 import registry_pb2_grpc as pb_grpc

__all__ = [
    "STATUS_DETAILS_KEY",
    "WATCH_SEQ_KEY",
    "RegistryServer",
    "RegistryServerConfig",
    "RegistryServicer",
    "serve_registry",
    "start_registry_server",
]

_log = logging.getLogger("toolscore.registry")
_T = TypeVar("_T")


class RegistryServicer:
    """The seven RPCs over one `Registry`. Methods are looked up by name by the generated handler."""

    def __init__(self, registry: Registry, *, watch_queue_size: int = 10_000, max_watches: int = 100) -> None:
        self._registry = registry
        self._watches = Watches(registry, queue_size=watch_queue_size, max_streams=max_watches)

    async def _run(self, context: Any, fn: Callable[..., _T], *args: Any) -> _T:
        """`fn(*args)` in a worker thread; registry errors abort the call with their status.

        A store that is not read yet, or did not answer within its timeout, is UNAVAILABLE with the
        store's own words (which store, which timeout setting): logged in one line, not a traceback.
        """
        try:
            return await asyncio.to_thread(fn, *args)
        except RegistryError as exc:
            error: RegistryError | StoreUnavailable = exc
        except StoreUnavailable as exc:
            _log.warning("registry store call %s failed: %s", getattr(fn, "__name__", fn), exc)
            error = exc
        except Exception as exc:  # the store failed (disk, network): the client may retry
            _log.exception("registry store call %s failed", getattr(fn, "__name__", fn))
            await context.abort(grpc.StatusCode.UNAVAILABLE, f"registry store failed: {exc}")
            raise
        await abort_with(context, error)

    def _put(self, msg: pb.PutExpectationRequest) -> tuple[Expectation, bool]:
        exp = expectation_from_proto(msg.expectation)
        check_privacy(exp, self._registry.privacy)
        expected = msg.expected_version if msg.HasField("expected_version") else None
        if expected is not None and expected < 0:
            raise InvalidExpectation.single("expected_version", "must be 0 (create) or a version >= 1")
        if msg.validate_only:
            try:
                live: int | None = self._registry.get(exp.name).version
            except NotFound:
                live = None
            check_expected_version(exp.name, live, expected)
            return exp, live is None
        stored, change = self._registry.store.put(exp, expected)
        self._registry.refresh_after_write()
        return stored, change.kind == "created"

    def _apply(self, msg: pb.ApplyExpectationsRequest) -> Applied:
        parsed: list[Expectation] = []
        problems: list[Problem] = []
        for i, item in enumerate(msg.expectations):
            try:
                parsed.append(expectation_from_proto(item))
            except InvalidExpectation as exc:
                problems.extend(Problem(f"[{i}].{p.field}".rstrip("."), p.message) for p in exc.problems)
        if problems:
            raise InvalidExpectation(problems)
        return self._registry.apply(parsed, prune=list(msg.prune))

    def _delete(self, msg: pb.DeleteExpectationRequest) -> Change:
        expected = msg.expected_version if msg.HasField("expected_version") else None
        if expected is not None and expected < 1:
            raise InvalidExpectation.single("expected_version", "must be a version >= 1")
        return self._registry.delete(msg.name, expected)

    async def PutExpectation(self, request: pb.PutExpectationRequest, context: Any) -> pb.PutExpectationResponse:
        stored, created = await self._run(context, self._put, request)
        return pb.PutExpectationResponse(expectation=expectation_to_proto(stored), created=created)

    async def GetExpectation(self, request: pb.GetExpectationRequest, context: Any) -> pb.GetExpectationResponse:
        exp = await self._run(context, self._registry.get, request.name)
        return pb.GetExpectationResponse(expectation=expectation_to_proto(exp))

    async def ListExpectations(self, request: pb.ListExpectationsRequest, context: Any) -> pb.ListExpectationsResponse:
        if request.page_size < 0:
            await abort_with(context, InvalidExpectation.single("page_size", "must be 0 (everything) or more"))
        limit = read_limit(request.page_size)
        found = await self._run(context, self._registry.list, request.name_prefix, request.page_token, limit)
        return list_page(found, request.page_size)

    async def DeleteExpectation(
        self, request: pb.DeleteExpectationRequest, context: Any
    ) -> pb.DeleteExpectationResponse:
        change = await self._run(context, self._delete, request)
        return pb.DeleteExpectationResponse(version=change.version)

    async def ApplyExpectations(
        self, request: pb.ApplyExpectationsRequest, context: Any
    ) -> pb.ApplyExpectationsResponse:
        applied = await self._run(context, self._apply, request)
        return pb.ApplyExpectationsResponse(
            results=[pb.AppliedExpectation(name=name, action=action) for name, action in applied]
        )

    async def GetExpectationHistory(
        self, request: pb.GetExpectationHistoryRequest, context: Any
    ) -> pb.GetExpectationHistoryResponse:
        try:
            after, limit = seq_token(request.page_token), read_limit(request.page_size)
        except InvalidExpectation as exc:
            await abort_with(context, exc)
        changes = await self._run(context, self._registry.history_changes, request.name, after, limit)
        return history_page(changes, request.page_size)

    async def WatchExpectations(
        self, request: pb.WatchExpectationsRequest, context: Any
    ) -> AsyncIterator[pb.WatchExpectationsResponse]:
        async for change in self._watches.stream(request, context, self._run):
            yield change

    def close_watches(self) -> None:
        """End every watch stream, so a graceful stop does not wait out `grace_s` on them."""
        self._watches.close()

    @property
    def watches_cut(self) -> int:
        """Watch streams ended because their client fell `watch_queue_size` changes behind."""
        return self._watches.cut

    @property
    def watches_refused(self) -> int:
        """Watch streams refused because `max_watches` were open."""
        return self._watches.refused


@dataclass
class RegistryServer:
    """A started server: the port it is bound to, and a graceful `stop`."""

    server: Any
    servicer: RegistryServicer
    port: int
    grace_s: float
    tls: bool = False
    _stopped: bool = field(default=False, repr=False)

    async def stop(self, grace_s: float | None = None) -> None:
        """End watch streams, then let other calls in flight finish within the grace period. Idempotent."""
        if self._stopped:
            return
        self._stopped = True
        self.servicer.close_watches()
        await self.server.stop(self.grace_s if grace_s is None else grace_s)

    async def wait_for_termination(self) -> None:
        await self.server.wait_for_termination()


async def start_registry_server(registry: Registry, config: RegistryServerConfig | None = None) -> RegistryServer:
    """Bind and start; raises `RuntimeError` when the address cannot be bound."""
    config = config or RegistryServerConfig()
    interceptors = [BearerTokenInterceptor(config.token, reads=config.auth_reads)] if config.token else []
    server = grpc.aio.server(interceptors=interceptors)
    servicer = RegistryServicer(registry, watch_queue_size=config.watch_queue_size, max_watches=config.max_watches)
    pb_grpc.add_ExpectationRegistryServicer_to_server(servicer, server)
    address = f"{config.host}:{config.port}"
    if config.tls_cert_file and config.tls_key_file:
        pair = (Path(config.tls_key_file).read_bytes(), Path(config.tls_cert_file).read_bytes())
        port = server.add_secure_port(address, grpc.ssl_server_credentials([pair]))
    else:
        port = server.add_insecure_port(address)
    await server.start()
    _log.info("registry API listening on %s:%d%s", config.host, port, " (TLS)" if config.tls_cert_file else "")
    return RegistryServer(server, servicer, int(port), config.grace_s, tls=config.tls_cert_file is not None)


async def serve_registry(
    registry: Registry,
    config: RegistryServerConfig | None = None,
    *,
    stop: asyncio.Event | None = None,
    on_start: Callable[[RegistryServer], None] | None = None,
) -> None:
    """Serve until `stop` is set (or the task is cancelled), then stop gracefully.

    `on_start` is called once the server listens (with it, the bound port when `port=0`).
    """
    running = await start_registry_server(registry, config)
    try:
        if on_start is not None:
            on_start(running)
        if stop is None:
            await running.wait_for_termination()
        else:
            await stop.wait()
    finally:
        await running.stop()
