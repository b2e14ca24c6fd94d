"""A real OpenAI-compatible chat-completions server on 127.0.0.1, scripted by the test.

Tests push `Reply` values onto a queue; each `POST /v1/chat/completions` pops one (or uses
`default`, else answers 500 so a missing script fails loudly). The server records every request
body and the most requests it ever held at once, so tests can check retries, caching and
concurrency through real HTTP rather than a mocked client. `close()` wakes slow handlers and joins
every thread, so nothing outlives the test.
"""

from __future__ import annotations

import json
import secrets
import threading
from collections import deque
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

__all__ = ["OpenAIServer", "Reply", "completion_body", "tool_calls_body"]


@dataclass(frozen=True)
class Reply:
    """One scripted answer: an assistant message, or an HTTP error, optionally after a delay."""

    content: str = ""
    status: int = 200
    delay_s: float = 0.0
    raw_body: str | None = field(default=None, repr=False)

    @classmethod
    def json(cls, value: Any, delay_s: float = 0.0) -> Reply:
        """An assistant message whose content is `value` as JSON text."""
        return cls(content=json.dumps(value), delay_s=delay_s)

    @classmethod
    def error(cls, status: int, message: str = "scripted error") -> Reply:
        return cls(status=status, raw_body=json.dumps({"error": {"message": message, "type": "server_error"}}))

    def body(self) -> bytes:
        return (self.raw_body if self.raw_body is not None else completion_body(self.content)).encode()


def completion_body(content: str) -> str:
    """The JSON an OpenAI chat completion returns for one assistant message."""
    return json.dumps(
        {
            "id": "chatcmpl-test",
            "object": "chat.completion",
            "created": 0,
            "model": "judge-test",
            "choices": [{"index": 0, "message": {"role": "assistant", "content": content}, "finish_reason": "stop"}],
            "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2},
        }
    )


class _Server(ThreadingHTTPServer):
    daemon_threads = False
    block_on_close = True

    def handle_error(self, request: Any, client_address: Any) -> None:
        """Clients that gave up (timeouts) close their sockets; that is expected, not an error."""


class OpenAIServer:
    """Start with `start()` (or use as a context manager); `base_url` is what `api_base` takes."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._queue: deque[Reply] = deque()
        self._closing = threading.Event()
        self._prefix = secrets.token_hex(4)
        self.default: Reply | None = None
        self.requests: list[dict[str, Any]] = []
        self.in_flight = 0
        self.max_in_flight = 0
        self._httpd: _Server | None = None
        self._thread: threading.Thread | None = None

    @property
    def base_url(self) -> str:
        """Unique per server (a random path prefix), so judges of different tests never share a cache."""
        assert self._httpd is not None, "server not started"
        return f"http://127.0.0.1:{self._httpd.server_address[1]}/{self._prefix}/v1"

    def push(self, *replies: Reply) -> None:
        with self._lock:
            self._queue.extend(replies)

    def pending(self) -> int:
        """Scripted replies not yet served."""
        with self._lock:
            return len(self._queue)

    def prompts(self) -> list[str]:
        """The text of every message of every request, joined, in arrival order."""
        with self._lock:
            return ["\n".join(str(m.get("content", "")) for m in r.get("messages", [])) for r in self.requests]

    def start(self) -> OpenAIServer:
        self._httpd = _Server(("127.0.0.1", 0), _handler_for(self))
        self._thread = threading.Thread(target=self._httpd.serve_forever, args=(0.05,), name="openai-test-server")
        self._thread.start()
        return self

    def close(self) -> None:
        self._closing.set()
        if self._httpd is not None:
            self._httpd.shutdown()
            self._httpd.server_close()
        if self._thread is not None:
            self._thread.join(timeout=10)
        self._httpd = self._thread = None

    def __enter__(self) -> OpenAIServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _take(self, request: dict[str, Any]) -> Reply:
        with self._lock:
            self.requests.append(request)
            self.in_flight += 1
            self.max_in_flight = max(self.max_in_flight, self.in_flight)
            if self._queue:
                return self._queue.popleft()
        return self.default or Reply.error(500, "no scripted reply left")

    def _serve(self, handler: BaseHTTPRequestHandler) -> None:
        length = int(handler.headers.get("Content-Length", "0"))
        try:
            request = json.loads(handler.rfile.read(length) or b"{}")
        except ValueError:
            request = {"unparsable": True}
        reply = self._take(request)
        try:
            if reply.delay_s:
                self._closing.wait(reply.delay_s)
        finally:
            # Before replying: a client cannot send its next request before it has read this reply.
            with self._lock:
                self.in_flight -= 1
        body = reply.body()
        handler.send_response(reply.status)
        handler.send_header("Content-Type", "application/json")
        handler.send_header("Content-Length", str(len(body)))
        handler.end_headers()
        handler.wfile.write(body)


def _handler_for(server: OpenAIServer) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            if self.path == f"/{server._prefix}/v1/chat/completions":
                server._serve(self)
            else:
                self.send_error(404)

        def log_message(self, format: str, *args: Any) -> None:
            """Quiet: pytest would show every request line on stderr."""

    return Handler


def tool_calls_body(calls: list[tuple[str, str, str]]) -> str:
    """The JSON of a chat completion whose one choice issues tool calls, each (call id, name, arguments JSON)."""
    tool_calls = [
        {"id": call_id, "type": "function", "function": {"name": name, "arguments": arguments}}
        for call_id, name, arguments in calls
    ]
    message = {"role": "assistant", "content": None, "tool_calls": tool_calls}
    return json.dumps(
        {
            "id": "chatcmpl-tools",
            "object": "chat.completion",
            "created": 0,
            "model": "agent-test",
            "choices": [{"index": 0, "message": message, "finish_reason": "tool_calls"}],
            "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2},
        }
    )
