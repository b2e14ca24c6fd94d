"""What answers an OTLP/gRPC call before a worker thread takes it: authentication, overload, the call bound.

grpc's synchronous server runs every call it takes on its thread pool, whose queue has no bound: a call
beyond `grpc_max_workers` waits there, its message held by grpc up to the HTTP/2 flow-control window,
for as long as the calls ahead of it take. Interceptors run on grpc's polling thread, before that
queue, so the decisions are taken there:

- `BearerAuth`: a call without the token is refused (`unauthenticated`);
- `ShedOverload`: while `Ingest.refusal` says the pipeline is overloaded, a call is refused with its
  retry delay (the ingest counts it);
- `CallSlots`: at most `grpc_max_concurrent_calls` Export calls are taken at once, running or waiting
  for a worker; another is refused RESOURCE_EXHAUSTED with a one-second `RetryInfo` (`too_many_calls`).
  The polling thread takes a slot; the call gives it back when it ends, whatever the outcome.

Each refusal is logged through the receiver's `LimitedLog`: authentication's at INFO, overload's and the
call bound's at WARNING (`overload_log`).

A refusal never reads the request (its handler takes the request as a stream it never reads: on the
wire a unary call and a one-message stream are the same) and never waits for a worker: it runs on a
thread of its own, named by the `experimental_thread_pool` attribute grpc's server looks for on a
behavior (a grpc without it would run refusals on the workers: later, still answered and counted).
That thread's queue is bounded too (`RefusalPool`): past `grpc_max_concurrent_calls` refusals waiting
for it, a refusal is answered at once on grpc's polling thread, the same answer counted the same way.

Not grpc's own `maximum_concurrent_rpcs`: past it the server answers a bare RESOURCE_EXHAUSTED, without
`RetryInfo`, which OTLP makes a permanent failure (the OpenTelemetry Collector's exporter drops the
batch); and it decides in its polling loop after the interceptors have run, where nothing can count it.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any, ParamSpec, TypeVar

import grpc

from toolscore.collector.bearer import bearer_matches
from toolscore.collector.serve._limited_log import LimitedLog
from toolscore.collector.serve.receivers._ingest import Ingest, IngestResult
from toolscore.collector.serve.receivers._otlp_export import (
    ReceiverTelemetry,
    early_refusal,
    overloaded_status,
    retry_info,
)
from toolscore.collector.serve.receivers._overload_log import log_overload

__all__ = [
    "EXPORT_METHOD",
    "EXPORT_METHODS",
    "LOGS_EXPORT_METHOD",
    "LOGS_SERVICE",
    "TRACE_SERVICE",
    "BearerAuth",
    "CallSlots",
    "RefusalPool",
    "ShedOverload",
    "abort",
    "abort_overloaded",
    "log_refusal",
    "refusal_pool",
]

TRACE_SERVICE = "opentelemetry.proto.collector.trace.v1.TraceService"
EXPORT_METHOD = f"/{TRACE_SERVICE}/Export"
LOGS_SERVICE = "opentelemetry.proto.collector.logs.v1.LogsService"
LOGS_EXPORT_METHOD = f"/{LOGS_SERVICE}/Export"
EXPORT_METHODS = frozenset({EXPORT_METHOD, LOGS_EXPORT_METHOD})
"""The calls the gates bound: traces and the GenAI logs, one server, the same limits."""
_UNAUTHENTICATED = "missing or wrong bearer token: send `authorization: Bearer <token>` metadata"
_CALLS_RETRY_AFTER_S = 1.0
"""The retry delay past `grpc_max_concurrent_calls`, as HTTP's `Retry-After: 1` past `http_max_connections`."""

_P = ParamSpec("_P")
_T = TypeVar("_T")


@dataclass(frozen=True)
class _RpcStatus(grpc.Status):  # type: ignore[misc]
    code: grpc.StatusCode
    details: str
    trailing_metadata: tuple[tuple[str, bytes], ...]


def abort(context: Any, code: grpc.StatusCode, status: Any, extra: Sequence[tuple[str, bytes]] = ()) -> None:
    """End the call with `code` and the `google.rpc.Status` in `grpc-status-details-bin`; raises, as grpc does."""
    trailers = (("grpc-status-details-bin", status.SerializeToString()), *extra)
    context.abort_with_status(_RpcStatus(code, status.message, trailers))


def abort_overloaded(
    context: Any, retry_after_s: float, *, log: LimitedLog, reason: str, state: Callable[[], str]
) -> None:
    """RESOURCE_EXHAUSTED with `RetryInfo`, also in the `google.rpc.retryinfo-bin` trailer the OTel Python
    exporter reads its delay from; logged now and then under `reason` with `state()` (`overload_log`). Raises."""
    answer = "RESOURCE_EXHAUSTED"
    log_overload(
        log, "OTLP/gRPC", reason=reason, peer=context.peer, answer=answer, retry_after_s=retry_after_s, state=state
    )
    delay = retry_info(retry_after_s).SerializeToString()
    status = overloaded_status(retry_after_s)
    abort(context, grpc.StatusCode.RESOURCE_EXHAUSTED, status, [("google.rpc.retryinfo-bin", delay)])


def log_refusal(log: LimitedLog, context: Any, reason: str, message: object) -> None:
    """Log a refused call at INFO under `reason`, naming the peer, when a line of it is due. A flood of bad calls
    is refused thousands of times a second: the limiter is asked first (`LimitedLog.take`), and the peer only
    for a line that goes out."""
    held = log.take(logging.INFO, reason)
    if held is not None:
        log.emit(logging.INFO, held, "OTLP/gRPC export refused from %s: %s", context.peer(), message)


class RefusalPool(ThreadPoolExecutor):
    """The one thread refusals are answered on, apart from the workers, with at most `max_waiting` handed to it.

    Its queue would otherwise have no bound either: under a flood of refused calls, each refusal waiting
    for the thread holds its call, and what grpc has received of its message, until the thread reaches
    it. Past the bound, `submit` answers at once on the thread that hands the refusal over, grpc's
    polling thread: the same answer (never reading the request), counted under the same reason. That
    thread pays for the answer then, as it already pays for grpc's own refusals; the waiting ones are
    answered in turn. Returns a completed future then, as grpc only waits for it to finish.
    """

    def __init__(self, max_waiting: int) -> None:
        super().__init__(max_workers=1, thread_name_prefix="toolscore-otlp-grpc-refusals")
        self.max_waiting = max_waiting
        self._room = threading.BoundedSemaphore(max_waiting)

    def submit(self, fn: Callable[_P, _T], /, *args: _P.args, **kwargs: _P.kwargs) -> Future[_T]:
        if not self._room.acquire(blocking=False):
            return _answered_here(fn, *args, **kwargs)
        try:
            future = super().submit(fn, *args, **kwargs)
        except BaseException:  # shut down: the room was never used
            self._room.release()
            raise
        future.add_done_callback(self._give_back)
        return future

    def _give_back(self, future: Future[Any]) -> None:
        self._room.release()


def _answered_here(fn: Callable[_P, _T], /, *args: _P.args, **kwargs: _P.kwargs) -> Future[_T]:
    """`fn` run on the calling thread, as a completed future (its error kept, as the pool's threads keep it)."""
    future: Future[_T] = Future()
    try:
        future.set_result(fn(*args, **kwargs))
    except BaseException as exc:
        future.set_exception(exc)
    return future


def refusal_pool(max_waiting: int) -> RefusalPool:
    """The thread refusals run on, apart from the workers, its queue bounded (see the module docstring)."""
    return RefusalPool(max_waiting)


class _Unread:
    """A stream-unary behavior that answers with `answer(context)` without reading the request, on `pool`."""

    def __init__(self, answer: Callable[[Any], None], pool: ThreadPoolExecutor) -> None:
        self._answer = answer
        self.experimental_thread_pool = pool

    def __call__(self, unread: Any, context: Any) -> None:
        self._answer(context)


def _refusal(answer: Callable[[Any], None], pool: ThreadPoolExecutor) -> Any:
    return grpc.stream_unary_rpc_method_handler(_Unread(answer, pool))


class BearerAuth(grpc.ServerInterceptor):  # type: ignore[misc]
    """Refuses calls without `authorization: Bearer <token>` before their message is even received."""

    def __init__(
        self, token: str, telemetry: ReceiverTelemetry, pool: ThreadPoolExecutor, refusal_log: LimitedLog
    ) -> None:
        self._token = token
        self._telemetry = telemetry
        self._refusal_log = refusal_log
        self._deny = _refusal(self._refuse, pool)

    def _refuse(self, context: Any) -> None:
        self._telemetry.request_refused("unauthenticated")
        log_refusal(self._refusal_log, context, "unauthenticated", _UNAUTHENTICATED)
        context.abort(grpc.StatusCode.UNAUTHENTICATED, _UNAUTHENTICATED)

    def intercept_service(self, continuation: Callable[[Any], Any], details: Any) -> Any:
        for key, value in details.invocation_metadata or ():
            if key == "authorization":
                if bearer_matches(value if isinstance(value, str) else bytes(value), self._token):
                    return continuation(details)
                break
        return self._deny


class ShedOverload(grpc.ServerInterceptor):  # type: ignore[misc]
    """Refuses `Export` calls unread while `Ingest.refusal` answers; the ingest counts them."""

    def __init__(self, ingest: Ingest, pool: ThreadPoolExecutor, refusal_log: LimitedLog) -> None:
        self._ingest = ingest
        self._pool = pool
        self._refusal_log = refusal_log

    def intercept_service(self, continuation: Callable[[Any], Any], details: Any) -> Any:
        if details.method in EXPORT_METHODS:
            answer = early_refusal(self._ingest)
            if answer is not None:
                return _refusal(lambda context: self._refuse(context, answer), self._pool)
        return continuation(details)

    def _refuse(self, context: Any, answer: IngestResult) -> None:
        log, state = self._refusal_log, self._ingest.load
        abort_overloaded(context, answer.retry_after_s, log=log, reason=answer.reason, state=state)


class CallSlots(grpc.ServerInterceptor):  # type: ignore[misc]
    """At most `limit` `Export` calls taken at once; the others refused unread (`too_many_calls`).

    Must be the last interceptor: a call it admits holds a slot until its behavior calls `leave`, so
    no later interceptor may substitute another handler for it.
    """

    def __init__(
        self, limit: int, telemetry: ReceiverTelemetry, pool: ThreadPoolExecutor, refusal_log: LimitedLog
    ) -> None:
        self.limit = limit
        self._slots = threading.BoundedSemaphore(limit)
        self._telemetry = telemetry
        self._refusal_log = refusal_log
        self._busy = _refusal(self._refuse, pool)

    def _refuse(self, context: Any) -> None:
        self._telemetry.request_refused("too_many_calls")
        log = self._refusal_log
        abort_overloaded(context, _CALLS_RETRY_AFTER_S, log=log, reason="too_many_calls", state=self._state)

    def _state(self) -> str:
        return f"calls taken: {self.limit} of {self.limit} (receiver.grpc_max_concurrent_calls)"

    def intercept_service(self, continuation: Callable[[Any], Any], details: Any) -> Any:
        if details.method in EXPORT_METHODS and not self._slots.acquire(blocking=False):
            return self._busy
        return continuation(details)

    def leave(self) -> None:
        """Give back the slot of an admitted `Export` call; exactly once per call, when it ends."""
        self._slots.release()
