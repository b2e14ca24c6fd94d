"""`BoundedHTTPServer`: the standard library's threading HTTP server, made safe to expose.

`ThreadingHTTPServer` starts a thread per connection without limit and waits forever on a silent
client. Here at most `max_connections` connections are served at once; one beyond the bound is
answered 503 with `Retry-After` and closed (closed unanswered under TLS, where answering would mean a
handshake on the accepting thread), which HTTP senders such as OTLP exporters retry. Each connection is
closed after `idle_timeout_s` of silence, and its TLS handshake runs on its own thread, so a client that
never finishes it blocks nobody else. `drain` lets requests in flight finish, then cuts idle keep-alive
connections, for a graceful stop.
"""

from __future__ import annotations

import contextlib
import logging
import socket
import ssl
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

__all__ = ["BoundedHTTPServer"]

_log = logging.getLogger(__name__)

_BUSY_BODY = b'{"code": 14, "message": "too many connections, retry later"}'
_BUSY = (
    b"HTTP/1.1 503 Service Unavailable\r\nRetry-After: 1\r\nContent-Type: application/json\r\n"
    b"Connection: close\r\nContent-Length: %d\r\n\r\n%s" % (len(_BUSY_BODY), _BUSY_BODY)
)


class BoundedHTTPServer(ThreadingHTTPServer):
    """`ThreadingHTTPServer` with a connection bound, TLS on the connection's thread, and draining on stop."""

    daemon_threads = True
    block_on_close = False

    def __init__(
        self,
        host: str,
        port: int,
        handler: type[BaseHTTPRequestHandler],
        *,
        max_connections: int,
        idle_timeout_s: float,
        tls_context: ssl.SSLContext | None = None,
    ) -> None:
        self.address_family = socket.AF_INET6 if ":" in host else socket.AF_INET
        self.max_connections, self.idle_timeout_s, self.tls_context = max_connections, idle_timeout_s, tls_context
        self._handler = handler
        self.closing = False
        """Set on stop: handlers answer `Connection: close`, so keep-alive clients go away."""
        self._slots = threading.BoundedSemaphore(max_connections)
        self._lock = threading.Condition()
        self._in_flight = 0
        self._open: set[socket.socket] = set()
        super().__init__((host, port), handler)

    def handle_error(self, request: Any, client_address: Any) -> None:
        """A connection that fails (usually the client leaving mid-answer) is logged, not printed to stderr."""
        _log.debug("HTTP: connection from %s failed", client_address, exc_info=True)

    def process_request(self, request: Any, client_address: Any) -> None:
        if not self._slots.acquire(blocking=False):
            _log.warning("HTTP: %d connections open, refusing one from %s", self.max_connections, client_address)
            if self.tls_context is None:
                try:
                    request.settimeout(1.0)
                    request.sendall(_BUSY)
                except OSError:
                    pass
            self.shutdown_request(request)
            return
        try:
            super().process_request(request, client_address)
        except BaseException:
            self._slots.release()
            raise

    def process_request_thread(self, request: Any, client_address: Any) -> None:
        try:
            super().process_request_thread(request, client_address)
        finally:
            self._slots.release()

    def finish_request(self, request: Any, client_address: Any) -> None:
        request.settimeout(self.idle_timeout_s)
        if self.tls_context is not None:
            try:
                request = self.tls_context.wrap_socket(request, server_side=True)
            except (OSError, ssl.SSLError) as exc:
                _log.debug("HTTP: TLS handshake with %s failed: %s", client_address, exc)
                return
        with self._lock:
            self._open.add(request)
        try:
            self._handler(request, client_address, self)
        finally:
            with self._lock:
                self._open.discard(request)
            if self.tls_context is not None:
                request.close()

    def request_started(self) -> None:
        """Handlers bracket each request with this and `request_done`, so `drain` knows what is in flight."""
        with self._lock:
            self._in_flight += 1

    def request_done(self) -> None:
        with self._lock:
            self._in_flight -= 1
            self._lock.notify_all()

    def drain(self, grace_s: float) -> None:
        """Wait for requests in flight (up to `grace_s`), then cut the idle keep-alive connections."""
        with self._lock:
            self._lock.wait_for(lambda: self._in_flight == 0, timeout=grace_s)
            connections = list(self._open)
        for connection in connections:
            with contextlib.suppress(OSError):
                connection.shutdown(socket.SHUT_RDWR)
