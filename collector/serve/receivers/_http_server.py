"""`BoundedHTTPServer`: the standard library's threading HTTP server, made safe to expose.

`ThreadingHTTPServer` starts a thread per connection without limit and waits forever on a silent
client. Here at most `max_connections` connections are served at once; one beyond the bound is
answered 503 with `Retry-After` and closed (closed unanswered under TLS, where answering would mean a
handshake on the accepting thread), which HTTP senders such as OTLP exporters retry. Each connection is
closed after `idle_timeout_s` of silence, and its TLS handshake runs on its own thread, so a client that
never finishes it blocks nobody else. A socket timeout bounds one read only, so a client sending a byte
now and then would keep its slot forever: each request must also arrive whole (request line, headers and
body) within `request_timeout_s` of its first byte, or it is answered 408 and the connection closed.
Handlers derive from `BoundedRequestHandler`, whose reads enforce that deadline. `drain` lets requests in
flight finish, then cuts idle keep-alive connections, for a graceful stop. Both refusals are logged at
most once each every 10 s (`LimitedLog`): a flood of connections must not flood the log too.
"""

from __future__ import annotations

import contextlib
import io
import json
import logging
import socket
import ssl
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from toolscore.collector.serve._limited_log import LimitedLog

__all__ = ["BoundedHTTPServer", "BoundedRequestHandler"]

_log = logging.getLogger(__name__)

_BUSY_BODY = b'{"code": 14, "message": "too many connections, retry later"}'
_BUSY = (
    b"HTTP/1.1 503 Service Unavailable\r\nRetry-After: 1\r\nContent-Type: application/json\r\n"
    b"Connection: close\r\nContent-Length: %d\r\n\r\n%s" % (len(_BUSY_BODY), _BUSY_BODY)
)


class _RequestReader(io.RawIOBase):
    """A connection's reads: each bounded by the idle timeout, and all of one request's by its deadline.

    The deadline starts with the first bytes received after `next_request`, so the wait for a
    keep-alive connection's next request is bounded by the idle timeout alone.
    """

    def __init__(self, connection: socket.socket, idle_timeout_s: float, request_timeout_s: float) -> None:
        super().__init__()
        self._connection, self._idle_s, self._request_s = connection, idle_timeout_s, request_timeout_s
        self._deadline: float | None = None
        self.expired = False
        """The current request's deadline passed while it was being read."""

    def readable(self) -> bool:
        return True

    def next_request(self) -> None:
        self._deadline, self.expired = None, False
        self._connection.settimeout(self._idle_s)

    def writing(self) -> None:
        """An answer is being written: give it the idle timeout, not what was left of the request's."""
        if self._deadline is not None:
            self._connection.settimeout(self._idle_s)

    def readinto(self, buffer: Any) -> int:
        if self._deadline is not None:
            remaining = self._deadline - time.monotonic()
            if remaining <= 0:
                self.expired = True
                raise TimeoutError(f"the request did not arrive within {self._request_s:g}s")
            self._connection.settimeout(min(self._idle_s, remaining))
        try:
            received = self._connection.recv_into(buffer)
        except TimeoutError:
            self.expired = self._deadline is not None and time.monotonic() >= self._deadline
            raise
        if received and self._deadline is None:
            self._deadline = time.monotonic() + self._request_s
        return received


class BoundedRequestHandler(BaseHTTPRequestHandler):
    """A request handler whose requests must arrive within the server's `request_timeout_s` (else 408)."""

    server: BoundedHTTPServer
    _reader: _RequestReader

    def setup(self) -> None:
        super().setup()
        self.rfile.close()  # the standard buffered socket reader, replaced by one that keeps the deadline
        self._reader = _RequestReader(self.connection, self.server.idle_timeout_s, self.server.request_timeout_s)
        self.rfile = io.BufferedReader(self._reader)

    def handle_one_request(self) -> None:
        self._reader.next_request()
        super().handle_one_request()  # a read past the deadline raises TimeoutError, which ends the request
        if self._reader.expired:
            self.close_connection = True
            self.server.refused("timeout")
            self._request_timeout()

    def end_headers(self) -> None:
        self._reader.writing()
        super().end_headers()

    def _request_timeout(self) -> None:
        """408 and close: the request was not answered, and the rest of it would be taken for the next one."""
        timeout_s = self.server.request_timeout_s
        line = "HTTP: a request from %s:%s did not arrive within %gs; closing"
        self.server.limited_log.log(logging.INFO, "timeout", line, *self.client_address[:2], timeout_s)
        message = f"the request did not arrive within {timeout_s:g}s (request_timeout_s)"
        body = json.dumps({"code": 4, "message": message}).encode()  # google.rpc.Code DEADLINE_EXCEEDED
        head = (
            "HTTP/1.1 408 Request Timeout\r\nContent-Type: application/json\r\nConnection: close\r\n"
            f"Content-Length: {len(body)}\r\n\r\n"
        )
        with contextlib.suppress(OSError):
            self.connection.settimeout(1.0)
            self.connection.sendall(head.encode() + body)


class BoundedHTTPServer(ThreadingHTTPServer):
    """`ThreadingHTTPServer` with a connection bound, TLS on the connection's thread, and draining on stop."""

    daemon_threads = True
    block_on_close = False

    def __init__(
        self,
        host: str,
        port: int,
        handler: type[BoundedRequestHandler],
        *,
        max_connections: int,
        idle_timeout_s: float,
        request_timeout_s: float,
        tls_context: ssl.SSLContext | None = None,
    ) -> None:
        self.address_family = socket.AF_INET6 if ":" in host else socket.AF_INET
        self.max_connections, self.idle_timeout_s, self.tls_context = max_connections, idle_timeout_s, tls_context
        self.request_timeout_s = request_timeout_s
        self.closing = False
        """Set on stop: handlers answer `Connection: close`, so keep-alive clients go away."""
        self._slots = threading.BoundedSemaphore(max_connections)
        self._lock = threading.Condition()
        self._in_flight = 0
        self._open: set[socket.socket] = set()
        self.limited_log = LimitedLog(_log)
        super().__init__((host, port), handler)

    def handle_error(self, request: Any, client_address: Any) -> None:
        """A connection that fails (usually the client leaving mid-answer) is logged, not printed to stderr."""
        _log.debug("HTTP: connection from %s failed", client_address, exc_info=True)

    def refused(self, reason: str) -> None:
        """Told of each connection turned away at the bound (`too_many_connections`) and each request cut at
        its deadline (`timeout`); nothing here, a subclass counts them. Must not raise."""

    def process_request(self, request: Any, client_address: Any) -> None:
        if not self._slots.acquire(blocking=False):
            self.limited_log.log(
                logging.WARNING,
                "too_many_connections",
                "HTTP: %d connections open, refusing one from %s:%s",
                self.max_connections,
                *client_address[:2],
            )
            self.refused("too_many_connections")
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
            super().finish_request(request, client_address)
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
