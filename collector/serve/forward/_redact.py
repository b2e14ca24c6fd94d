"""What `serve` forwards when masking is on: the spans' content attributes masked as the runs are.

Masking the runs toolscore rebuilds is not enough when `serve` sits in the trace path: the application's own
spans, forwarded downstream, still carry the arguments, the request and the messages. So, only when the privacy
settings change anything, each request is rewritten before it is handed to the forwarder (`redacting` wraps its
`submit`), as the Collector's `redaction` processor would: every string attribute of every span and span event
(and the status message) goes through the run's `Masker`, so a value gets the same marker in the forwarded
spans as in the scores. Without such settings the received bytes pass through untouched.

- Masking: a string holding a JSON object or array (tool arguments, messages, an OpenInference `input.value`)
  is masked inside, key rules applying at any depth (a dot path matches where the path ends with it, since
  where the arguments start inside a convention's messages is not known) and JSON text inside it (the
  arguments of an OpenAI tool call) read as a document of its own; any other string is masked whole when a
  pattern finds a match in it. Attribute keys themselves are not matched against `mask_keys`: a rule `name`
  would mask every tool's name.
- `names_only`: a string attribute whose key names content (`gen_ai.tool.call.arguments`, `gen_ai.input.messages`,
  `input.value`, `ai.toolCall.args`, ...) keeps the keys of its JSON with every value null, or is dropped when
  it is not JSON; numbers, booleans and other strings (names, ids, models) are kept.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

from toolscore.collector.extract.privacy import Masker, PrivacyConfig, key_rule, masker_for
from toolscore.scorers._masked import is_masked

__all__ = ["CONTENT_KEY_WORDS", "redact_request", "redacting"]

Send = Callable[[bytes, int], Any]

CONTENT_KEY_WORDS = (
    "message",
    "prompt",
    "completion",
    "input",
    "output",
    "content",
    "argument",
    "args",
    "result",
    "query",
    "response",
    "text",
    "tool_call",
    "toolcall",
    "parameters",
    "body",
)
"""A string attribute whose key holds one of these (case-insensitive) carries conversation content."""


def redacting(send: Send, privacy: PrivacyConfig) -> Send:
    """`send` with each request masked first; `send` itself when the settings change nothing."""
    if not privacy.active:
        return send
    masker = masker_for(privacy)

    def send_masked(request: bytes, spans: int) -> Any:
        return send(redact_request(request, masker), spans)

    return send_masked


def redact_request(data: bytes, masker: Masker) -> bytes:
    """A serialized `ExportTraceServiceRequest` with its spans' content masked (see the module docstring)."""
    request = ExportTraceServiceRequest.FromString(data)
    for resource_spans in request.resource_spans:
        for scope_spans in resource_spans.scope_spans:
            for span in scope_spans.spans:
                _redact_attributes(span.attributes, masker)
                for event in span.events:
                    _redact_attributes(event.attributes, masker)
                if span.status.message:
                    span.status.message = _text("status.message", span.status.message, masker) or ""
    out: bytes = request.SerializeToString()
    return out


def _redact_attributes(attributes: Any, masker: Masker) -> None:
    dropped = []
    for index, kv in enumerate(attributes):
        if not _redact_value(kv.key, kv.value, masker):
            dropped.append(index)
    for index in reversed(dropped):
        del attributes[index]


def _redact_value(key: str, value: Any, masker: Masker) -> bool:
    """Mask an `AnyValue` in place; False when it is to be dropped."""
    kind = value.WhichOneof("value")
    if kind == "string_value":
        text = _text(key, value.string_value, masker)
        if text is None:
            return False
        value.string_value = text
    elif kind == "array_value":
        items = value.array_value.values
        dropped = [i for i, item in enumerate(items) if not _redact_value(key, item, masker)]
        for index in reversed(dropped):
            del items[index]
    elif kind == "kvlist_value":
        _redact_attributes(value.kvlist_value.values, masker)
    elif kind == "bytes_value" and masker.names_only and _names_content(key):
        return False
    return True


def _names_content(key: str) -> bool:
    lowered = key.lower()
    return any(word in lowered for word in CONTENT_KEY_WORDS)


def _text(key: str, text: str, masker: Masker) -> str | None:
    """A string attribute's new text, None to drop it."""
    document = _json_document(text)
    if masker.names_only:
        if not _names_content(key):
            return text
        return None if document is None else json.dumps(masker.arguments(document), ensure_ascii=False)
    if document is not None:
        masked = _masked_json(document, masker, "")
        return text if masked == document else json.dumps(masked, ensure_ascii=False)
    return masker.text(text)


def _masked_json(value: Any, masker: Masker, path: str) -> Any:
    if isinstance(value, dict):
        out: dict[str, Any] = {}
        for key, item in value.items():
            sub = f"{path}.{key}" if path else str(key)
            masked_key = item is not None and not is_masked(item) and _key_masked(masker, sub)
            out[key] = masker.marker(item) if masked_key else _masked_json(item, masker, sub)
        return out
    if isinstance(value, list):
        return [_masked_json(item, masker, path) for item in value]
    if isinstance(value, str):
        inner = _json_document(value)
        if inner is not None:  # JSON text inside JSON (an OpenAI tool call's arguments): a document of its own
            masked = _masked_json(inner, masker, "")
            return value if masked == inner else json.dumps(masked, ensure_ascii=False)
        return masker.text(value)
    return value


def _key_masked(masker: Masker, path: str) -> bool:
    """A key rule masks `path` or any tail of it (`a.card.number` for `card.number`)."""
    rules = masker.config.mask_keys
    if not rules:
        return False
    parts = path.split(".")
    return any(key_rule(rules, ".".join(parts[i:])) is not None for i in range(len(parts)))


def _json_document(text: str) -> Any:
    """The JSON object or array `text` holds, None for any other text."""
    stripped = text.lstrip()
    if not stripped or stripped[0] not in "{[":
        return None
    try:
        document = json.loads(text)
    except (ValueError, RecursionError):
        return None
    return document if isinstance(document, (dict, list)) else None
