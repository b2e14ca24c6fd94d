"""A real OpenAI-compatible (and Anthropic-compatible) HTTP server on 127.0.0.1 whose model answers come from a script.

Capture scripts point a framework's OpenAI client at `base_url` and name the model
`scripted-<agent>`; each request pops that model's next `Turn` (tool calls, or final text), so the
tool calls a run makes are known before it starts. Chat Completions and the Responses API are both
served, streamed (SSE, chunked the way OpenAI chunks them) or not, because frameworks differ in which
they use. Anthropic's Messages API (`POST /v1/messages`, `anthropic_base_url` for the `anthropic`
client) is served from the same turns, plain or streamed as Anthropic streams it, so a loop on the
`anthropic` client is captured against the same scenarios. An unknown or exhausted model answers HTTP
500 naming the model, so a script mistake fails loudly instead of letting the framework loop. Every
request body is kept in `requests` for checks.

Standard library only: the module is imported from each framework's own virtual environment.
"""

from __future__ import annotations

import contextlib
import itertools
import json
import socket
import threading
from collections import deque
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

__all__ = ["ScriptedOpenAI", "ToolCall", "Turn"]


@dataclass(frozen=True)
class ToolCall:
    """One tool call the scripted model makes: its call id, the tool's name, and the arguments."""

    id: str
    name: str
    args: Mapping[str, Any] = field(default_factory=dict)

    @property
    def arguments(self) -> str:
        """The arguments as the JSON text OpenAI sends (unicode kept as is, as OpenAI does)."""
        return json.dumps(self.args, ensure_ascii=False)


@dataclass(frozen=True)
class Turn:
    """One model response: tool calls (several = parallel calls in one response) or final text."""

    calls: Sequence[ToolCall] = ()
    text: str | None = None

    def __post_init__(self) -> None:
        if bool(self.calls) == (self.text is not None):
            raise ValueError("a Turn is either tool calls or final text, exactly one of them")
        object.__setattr__(self, "calls", tuple(self.calls))


class ScriptError(LookupError):
    """The request's model has no turn left (or was never scripted)."""


class _Server(ThreadingHTTPServer):
    """Joins its handler threads on close; idle keep-alive connections are cut first so none waits."""

    daemon_threads = False
    block_on_close = True
    owner: ScriptedOpenAI

    def __init__(self, address: tuple[str, int], handler: type[BaseHTTPRequestHandler]) -> None:
        super().__init__(address, handler)
        self._open: set[socket.socket] = set()
        self._open_lock = threading.Lock()

    def process_request(self, request: Any, client_address: Any) -> None:
        with self._open_lock:
            self._open.add(request)
        super().process_request(request, client_address)

    def shutdown_request(self, request: Any) -> None:
        with self._open_lock:
            self._open.discard(request)
        super().shutdown_request(request)

    def cut_connections(self) -> None:
        with self._open_lock:
            for sock in self._open:
                with contextlib.suppress(OSError):
                    sock.shutdown(socket.SHUT_RDWR)


class ScriptedOpenAI:
    """The server: `with ScriptedOpenAI({"scripted-a": [Turn(...)]}) as server: ... server.base_url`."""

    def __init__(self, script: Mapping[str, Sequence[Turn]], host: str = "127.0.0.1", port: int = 0) -> None:
        self._turns: dict[str, deque[Turn]] = {model: deque(turns) for model, turns in script.items()}
        self._lock = threading.Lock()
        self.requests: list[dict[str, Any]] = []
        """Every request body received (parsed JSON), in arrival order."""
        self.paths: list[str] = []
        """The path of each request in `requests`, same order."""
        self._httpd = _Server((host, port), _Handler)
        self._httpd.owner = self
        self._thread = threading.Thread(target=self._httpd.serve_forever, name="scripted-openai", daemon=True)
        self._thread.start()

    @property
    def port(self) -> int:
        return int(self._httpd.server_address[1])

    @property
    def base_url(self) -> str:
        """What an OpenAI client takes as `base_url`: `http://127.0.0.1:PORT/v1`."""
        return f"http://127.0.0.1:{self.port}/v1"

    @property
    def anthropic_base_url(self) -> str:
        """What the `anthropic` client takes as `base_url` (it appends `/v1/messages` itself)."""
        return f"http://127.0.0.1:{self.port}"

    def remaining(self) -> dict[str, int]:
        """Turns not yet served, per model (only models with some left)."""
        with self._lock:
            return {model: len(turns) for model, turns in self._turns.items() if turns}

    def assert_consumed(self) -> None:
        """Raise when a scripted turn was never asked for: the run did not go as scripted."""
        left = self.remaining()
        if left:
            raise AssertionError(f"scripted turns never requested: {left}")

    def close(self) -> None:
        """Stop serving and join the serving thread and every handler thread."""
        self._httpd.shutdown()
        self._httpd.cut_connections()
        self._httpd.server_close()
        self._thread.join()

    def __enter__(self) -> ScriptedOpenAI:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _record(self, path: str, body: dict[str, Any]) -> None:
        with self._lock:
            self.requests.append(body)
            self.paths.append(path)

    def _next_turn(self, model: str) -> Turn:
        with self._lock:
            turns = self._turns.get(model)
            if turns is None:
                raise ScriptError(f"model {model!r} is not scripted (scripted: {sorted(self._turns)})")
            if not turns:
                raise ScriptError(f"model {model!r} has no scripted turn left")
            return turns.popleft()

    _ids = itertools.count(1)
    """Response ids (`chatcmpl-<n>`, `resp_<n>`, ...) are unique in the process, across servers, as the real API's
    are: OpenLLMetry's Responses API wrapper keeps each response's data by its id in a module-level dict and merges
    a later response with the same id into it (`responses_wrappers.responses`), so ids that start again at 1 in
    each scenario's server would merge one scenario's responses into another's trace."""

    def _next_id(self) -> int:
        with self._lock:
            return next(ScriptedOpenAI._ids)


class _Handler(BaseHTTPRequestHandler):
    server: _Server
    protocol_version = "HTTP/1.1"

    def log_message(self, format: str, *args: Any) -> None:
        """Quiet: capture scripts print their own progress."""

    def do_GET(self) -> None:
        if self.path.rstrip("/").endswith("/models"):
            models = sorted(self.server.owner._turns)
            data = [{"id": m, "object": "model", "created": 0, "owned_by": "scripted"} for m in models]
            self._send_json(200, {"object": "list", "data": data})
        else:
            self._send_json(404, _error(f"no route GET {self.path}"))

    def do_POST(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length) if length else b""
        try:
            body = json.loads(raw or b"{}")
        except json.JSONDecodeError as exc:
            self._send_json(400, _error(f"request body is not JSON: {exc}"))
            return
        owner = self.server.owner
        path = self.path.split("?", 1)[0].rstrip("/")
        owner._record(path, body)
        if path.endswith("/chat/completions"):
            build, stream = _chat_completion, _chat_chunks
        elif path.endswith("/responses"):
            build, stream = _response_object, _response_events
        elif path.endswith("/messages"):
            build, stream = _anthropic_message, _anthropic_events
        else:
            self._send_json(404, _error(f"no route POST {self.path}"))
            return
        model = str(body.get("model", ""))
        try:
            turn = owner._next_turn(model)
        except ScriptError as exc:
            self._send_json(500, _anthropic_error(str(exc)) if path.endswith("/messages") else _error(str(exc)))
            return
        ident = f"{owner._next_id():04d}"
        if body.get("stream"):
            self._send_sse(stream(turn, model, ident, body))
        else:
            self._send_json(200, build(turn, model, ident))

    def _send_json(self, status: int, payload: Any) -> None:
        data = json.dumps(payload).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def _send_sse(self, events: Iterator[str]) -> None:
        """Server-sent events, one HTTP chunk each; the connection closes after the last."""
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Cache-Control", "no-cache")
        self.send_header("Transfer-Encoding", "chunked")
        self.send_header("Connection", "close")
        self.end_headers()
        chunks = [f"{len(data):X}\r\n".encode() + data + b"\r\n" for data in (e.encode() for e in events)]
        chunks[-1] += b"0\r\n\r\n"  # the last event and the end of the body in one write
        try:
            for chunk in chunks:
                self.wfile.write(chunk)
            self.wfile.flush()
        except (BrokenPipeError, ConnectionResetError):
            pass  # a client may hang up once it has read `[DONE]`, `response.completed` or `message_stop`
        self.close_connection = True


def _error(message: str) -> dict[str, Any]:
    return {"error": {"message": message, "type": "scripted_error", "code": "script"}}


def _anthropic_error(message: str) -> dict[str, Any]:
    """Anthropic's error body (the `anthropic` client reads `error.message`)."""
    return {"type": "error", "error": {"type": "api_error", "message": message}}


# --- Wire format ---------------------------------------------------------------------------------
# Chat Completions: https://platform.openai.com/docs/api-reference/chat (object `chat.completion`,
# streamed as `chat.completion.chunk`s). Responses: https://platform.openai.com/docs/api-reference/responses
# (object `response`, streamed as typed events). Anthropic Messages: https://docs.anthropic.com/en/api/messages
# (object `message`, streamed as `message_start`, `content_block_*`, `message_delta`, `message_stop`, see
# https://docs.anthropic.com/en/docs/build-with-claude/streaming). Token counts are fixed small numbers: nothing
# scores them.

_CREATED = 1_760_000_000


def _pieces(text: str, parts: int = 3) -> list[str]:
    """`text` cut into up to `parts` pieces, as a streaming model sends arguments and text."""
    if not text:
        return [""]
    size = max(1, -(-len(text) // parts))
    return [text[i : i + size] for i in range(0, len(text), size)]


def _chat_usage(turn: Turn) -> dict[str, int]:
    completion = 5 + sum(len(c.arguments) for c in turn.calls) // 4 + len(turn.text or "") // 4
    return {"prompt_tokens": 20, "completion_tokens": completion, "total_tokens": 20 + completion}


def _chat_completion(turn: Turn, model: str, ident: str) -> dict[str, Any]:
    message: dict[str, Any] = {"role": "assistant", "content": turn.text, "refusal": None}
    if turn.calls:
        message["tool_calls"] = [
            {"id": c.id, "type": "function", "function": {"name": c.name, "arguments": c.arguments}} for c in turn.calls
        ]
    return {
        "id": f"chatcmpl-{ident}",
        "object": "chat.completion",
        "created": _CREATED,
        "model": model,
        "choices": [
            {
                "index": 0,
                "message": message,
                "logprobs": None,
                "finish_reason": "tool_calls" if turn.calls else "stop",
            }
        ],
        "usage": _chat_usage(turn),
        "system_fingerprint": "scripted",
    }


def _chat_chunks(turn: Turn, model: str, ident: str, body: Mapping[str, Any]) -> Iterator[str]:
    """Role chunk, then each call (id and name, then its arguments in pieces) or the text in pieces,
    then the finish chunk, the usage chunk when asked for, and `[DONE]`."""
    with_usage = bool((body.get("stream_options") or {}).get("include_usage"))

    def chunk(delta: dict[str, Any], finish: str | None = None) -> str:
        payload: dict[str, Any] = {
            "id": f"chatcmpl-{ident}",
            "object": "chat.completion.chunk",
            "created": _CREATED,
            "model": model,
            "system_fingerprint": "scripted",
            "choices": [{"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish}],
        }
        if with_usage:
            payload["usage"] = None
        return f"data: {json.dumps(payload)}\n\n"

    yield chunk({"role": "assistant", "content": None if turn.calls else "", "refusal": None})
    for index, call in enumerate(turn.calls):
        head = {"index": index, "id": call.id, "type": "function", "function": {"name": call.name, "arguments": ""}}
        yield chunk({"tool_calls": [head]})
        for piece in _pieces(call.arguments):
            yield chunk({"tool_calls": [{"index": index, "function": {"arguments": piece}}]})
    for piece in _pieces(turn.text or "") if turn.text is not None else []:
        yield chunk({"content": piece})
    yield chunk({}, "tool_calls" if turn.calls else "stop")
    if with_usage:
        final = {
            "id": f"chatcmpl-{ident}",
            "object": "chat.completion.chunk",
            "created": _CREATED,
            "model": model,
            "system_fingerprint": "scripted",
            "choices": [],
            "usage": _chat_usage(turn),
        }
        yield f"data: {json.dumps(final)}\n\n"
    yield "data: [DONE]\n\n"


def _response_items(turn: Turn, ident: str) -> list[dict[str, Any]]:
    """The completed `output` items: one `function_call` per call, or one assistant `message`."""
    if turn.calls:
        return [
            {
                "type": "function_call",
                "id": f"fc_{ident}_{i}",
                "call_id": c.id,
                "name": c.name,
                "arguments": c.arguments,
                "status": "completed",
            }
            for i, c in enumerate(turn.calls)
        ]
    text_part = {"type": "output_text", "text": turn.text, "annotations": [], "logprobs": []}
    return [
        {"type": "message", "id": f"msg_{ident}", "status": "completed", "role": "assistant", "content": [text_part]}
    ]


def _response_object(
    turn: Turn, model: str, ident: str, status: str = "completed", output: list[dict[str, Any]] | None = None
) -> dict[str, Any]:
    usage = _chat_usage(turn)
    return {
        "id": f"resp_{ident}",
        "object": "response",
        "created_at": _CREATED,
        "status": status,
        "error": None,
        "incomplete_details": None,
        "instructions": None,
        "max_output_tokens": None,
        "model": model,
        "output": _response_items(turn, ident) if output is None else output,
        "parallel_tool_calls": True,
        "previous_response_id": None,
        "reasoning": {"effort": None, "summary": None},
        "store": False,
        "temperature": 1.0,
        "text": {"format": {"type": "text"}},
        "tool_choice": "auto",
        "tools": [],
        "top_p": 1.0,
        "truncation": "disabled",
        "usage": {
            "input_tokens": usage["prompt_tokens"],
            "input_tokens_details": {"cached_tokens": 0},
            "output_tokens": usage["completion_tokens"],
            "output_tokens_details": {"reasoning_tokens": 0},
            "total_tokens": usage["total_tokens"],
        },
        "user": None,
        "metadata": {},
    }


def _response_events(turn: Turn, model: str, ident: str, body: Mapping[str, Any]) -> Iterator[str]:
    """`response.created`, `.in_progress`, then per output item: `.output_item.added`, its deltas and
    `.done` events, `.output_item.done`; then `response.completed` carrying the whole response."""
    sequence = iter(range(1_000_000))

    def event(kind: str, **fields: Any) -> str:
        payload = {"type": kind, "sequence_number": next(sequence), **fields}
        return f"event: {kind}\ndata: {json.dumps(payload)}\n\n"

    yield event("response.created", response=_response_object(turn, model, ident, "in_progress", []))
    yield event("response.in_progress", response=_response_object(turn, model, ident, "in_progress", []))
    for index, item in enumerate(_response_items(turn, ident)):
        where = {"item_id": item["id"], "output_index": index}
        if item["type"] == "function_call":
            yield event(
                "response.output_item.added",
                output_index=index,
                item={**item, "arguments": "", "status": "in_progress"},
            )
            for piece in _pieces(item["arguments"]):
                yield event("response.function_call_arguments.delta", **where, delta=piece)
            yield event(
                "response.function_call_arguments.done", **where, name=item["name"], arguments=item["arguments"]
            )
        else:
            yield event(
                "response.output_item.added", output_index=index, item={**item, "content": [], "status": "in_progress"}
            )
            part = item["content"][0]
            empty = {**part, "text": ""}
            yield event("response.content_part.added", **where, content_index=0, part=empty)
            for piece in _pieces(part["text"]):
                yield event("response.output_text.delta", **where, content_index=0, delta=piece, logprobs=[])
            yield event("response.output_text.done", **where, content_index=0, text=part["text"], logprobs=[])
            yield event("response.content_part.done", **where, content_index=0, part=part)
        yield event("response.output_item.done", output_index=index, item=item)
    yield event("response.completed", response=_response_object(turn, model, ident))


def _anthropic_blocks(turn: Turn) -> list[dict[str, Any]]:
    """The message's content: one `tool_use` block per call (the scripted id as the block's `id`), or one `text`."""
    if turn.calls:
        return [{"type": "tool_use", "id": c.id, "name": c.name, "input": dict(c.args)} for c in turn.calls]
    return [{"type": "text", "text": turn.text, "citations": None}]


def _anthropic_usage(turn: Turn, output: bool = True) -> dict[str, Any]:
    usage = _chat_usage(turn)
    return {
        "input_tokens": usage["prompt_tokens"],
        "output_tokens": usage["completion_tokens"] if output else 1,
        "cache_creation_input_tokens": 0,
        "cache_read_input_tokens": 0,
        "service_tier": "standard",
    }


def _anthropic_message(turn: Turn, model: str, ident: str) -> dict[str, Any]:
    """A whole `message`: stop reason `tool_use` when it calls tools, else `end_turn`."""
    return {
        "id": f"msg_{ident}",
        "type": "message",
        "role": "assistant",
        "model": model,
        "content": _anthropic_blocks(turn),
        "stop_reason": "tool_use" if turn.calls else "end_turn",
        "stop_sequence": None,
        "usage": _anthropic_usage(turn),
    }


def _anthropic_events(turn: Turn, model: str, ident: str, body: Mapping[str, Any]) -> Iterator[str]:
    """`message_start` (empty content, no stop reason), `ping`, then per block `content_block_start` (a
    `tool_use` block with `input: {}`), its deltas (`text_delta`; `input_json_delta`, the first one empty as
    Anthropic sends it) and `content_block_stop`; `message_delta` with the stop reason and the output tokens,
    `message_stop`."""

    def event(kind: str, **fields: Any) -> str:
        return f"event: {kind}\ndata: {json.dumps({'type': kind, **fields}, ensure_ascii=False)}\n\n"

    start = {**_anthropic_message(turn, model, ident), "content": [], "stop_reason": None}
    yield event("message_start", message={**start, "usage": _anthropic_usage(turn, output=False)})
    yield event("ping")
    for index, block in enumerate(_anthropic_blocks(turn)):
        if block["type"] == "tool_use":
            yield event("content_block_start", index=index, content_block={**block, "input": {}})
            arguments = json.dumps(block["input"], ensure_ascii=False)
            for piece in ["", *_pieces(arguments)]:
                yield event(
                    "content_block_delta", index=index, delta={"type": "input_json_delta", "partial_json": piece}
                )
        else:
            yield event("content_block_start", index=index, content_block={**block, "text": ""})
            for piece in _pieces(block["text"]):
                yield event("content_block_delta", index=index, delta={"type": "text_delta", "text": piece})
        yield event("content_block_stop", index=index)
    delta = {"stop_reason": "tool_use" if turn.calls else "end_turn", "stop_sequence": None}
    yield event("message_delta", delta=delta, usage={"output_tokens": _anthropic_usage(turn)["output_tokens"]})
    yield event("message_stop")
