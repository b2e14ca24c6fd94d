"""Readers shared by several conventions: errors, JSON message lists, flattened (indexed) attributes.

Every helper tolerates any value shape (a convention may change between versions) and returns
None rather than raising, so one malformed span costs its own data and nothing else.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from toolscore.collector.extract.conventions.base import IssuedCall
from toolscore.collector.extract.json_text import decode_json
from toolscore.collector.spans import SpanRecord, StatusCode

__all__ = [
    "ERROR_TYPE_OTHER",
    "MAX_DEFINITIONS_CHARS",
    "chat_tool_calls",
    "error_of",
    "event_attribute",
    "function_call_item",
    "genai_issued_calls",
    "indexed_issued_calls",
    "indexed_values",
    "json_list",
    "load_json",
    "message_text",
    "names_only",
    "string",
]

ERROR_TYPE_OTHER = "_OTHER"
"""The semconv fallback for `error.type` when the span says it failed but not how."""


def string(attrs: Mapping[str, Any], key: str) -> str | None:
    """A non-empty string attribute, or None."""
    value = attrs.get(key)
    return value if isinstance(value, str) and value else None


def load_json(value: Any) -> Any:
    """The decoded value of JSON text; a non-string value as is; None for text that is not JSON."""
    if not isinstance(value, str):
        return value
    try:
        return decode_json(value)
    except ValueError:
        return None


def event_attribute(span: SpanRecord, event_name: str, key: str) -> Any:
    """The attribute `key` of the first span event named `event_name`, or None."""
    for event in span.events:
        if event.name == event_name and key in event.attributes:
            return event.attributes[key]
    return None


def error_of(span: SpanRecord, *, failed: bool = False) -> tuple[bool, str | None]:
    """Whether the span failed, and the error's type.

    A span failed when its status is ERROR, it carries `error.type`, or the caller already knows
    (`failed`). The type is `error.type`, else the `exception` event's `exception.type`, else `_OTHER`.
    """
    error_type = string(span.attributes, "error.type")
    if not (failed or span.status_code == StatusCode.ERROR or error_type):
        return False, None
    if error_type is None:
        exc_type = event_attribute(span, "exception", "exception.type")
        error_type = exc_type if isinstance(exc_type, str) and exc_type else ERROR_TYPE_OTHER
    return True, error_type


def _is_mapping(value: Any) -> bool:
    """`isinstance(value, Mapping)`, without the ABC check for the plain dicts, lists and strings JSON decodes to."""
    kind = type(value)
    return kind is dict or (kind is not list and kind is not str and isinstance(value, Mapping))


def _content_text(content: Any) -> str | None:
    """Text of one message's content in the shapes the conventions use."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        if len(content) == 1:  # the usual single text part, without building a list to join
            return _part_text(content[0]) or None
        texts = [t for t in map(_part_text, content) if t]
        return "\n".join(texts) if texts else None
    return None


def _part_text(part: Any) -> str | None:
    if isinstance(part, str):
        return part
    if not _is_mapping(part):
        return None
    if part.get("type") not in (None, "text", "input_text", "output_text"):
        return None
    value = part.get("content")
    if isinstance(value, str):
        return value
    value = part.get("text")
    return value if isinstance(value, str) else None


def message_text(value: Any, role: str) -> str | None:
    """The text of the last `role` message that has text, from a JSON message list or similar.

    Understands GenAI messages (`parts` of type `text`), OpenAI-style messages (`content` as a string
    or a list of text parts), Strands/Bedrock content blocks (`{"text": ...}`), a `{"text": ...}`
    object and plain text.
    """
    if isinstance(value, str) and value[:1] in '[{"':
        decoded = load_json(value)
        value = value if decoded is None else decoded
    if isinstance(value, str):
        return value
    if _is_mapping(value):
        for key in ("text", "prompt", "content", "output"):
            if isinstance(value.get(key), str):
                return str(value[key])
        messages = value.get("messages")
        return message_text(messages, role) if isinstance(messages, list) else None
    if not isinstance(value, list):
        return None
    parts_only = True  # no message has a role: the list is one message's parts
    for message in reversed(value):  # one pass, from the last message: the answer is usually there
        if not _is_mapping(message):
            parts_only = False
        elif "role" in message:
            parts_only = False
            if message["role"] == role:
                text = _content_text(message.get("parts", message.get("content")))
                if text:
                    return text
    return _content_text(value) if parts_only else None


def genai_issued_calls(messages: Any, unstated: Any = None) -> list[IssuedCall]:
    """Tool calls in GenAI output messages: parts `{"type": "tool_call", "id", "name", "arguments"}`.

    Text without `"tool_call"` lists none and is not decoded: every model response is read for the calls
    no tool span recorded (see `model_calls`), and most list none (a final answer) or few. `unstated` is a
    part's arguments when it has no `arguments` key: None (no arguments) unless the emitter leaves the key
    out for content it did not record (pydantic-ai's `include_content=False`: `NOT_CAPTURED`).
    """
    if type(messages) is str and '"tool_call"' not in messages:
        return []
    decoded = load_json(messages)
    calls: list[IssuedCall] = []
    if not isinstance(decoded, list):
        return calls
    for message in decoded:
        parts = message.get("parts") if _is_mapping(message) else None
        if not isinstance(parts, list):
            continue
        for part in parts:
            if _is_mapping(part) and part.get("type") == "tool_call":
                call_id, name = part.get("id"), part.get("name")
                calls.append(
                    IssuedCall(
                        call_id if call_id.__class__ is str and call_id else None,
                        name if name.__class__ is str and name else None,
                        part.get("arguments", unstated),
                    )
                )
    return calls


def indexed_issued_calls(
    attrs: Mapping[str, Any], message_prefix: str, call_infix: str, keys: tuple[str, str, str], max_messages: int = 64
) -> list[IssuedCall]:
    """Tool calls in flattened attributes, `<message_prefix>.<i><call_infix>.<j>.<key>`.

    `keys` are the id, name and arguments suffixes. Indices are probed in order and stop at the first
    gap, so only the attributes that exist are read.
    """
    id_key, name_key, args_key = keys
    calls: list[IssuedCall] = []
    for i in range(max_messages):
        base = f"{message_prefix}.{i}{call_infix}"
        j = 0
        while True:
            name = attrs.get(f"{base}.{j}.{name_key}")
            call_id = attrs.get(f"{base}.{j}.{id_key}")
            if name is None and call_id is None:
                break
            calls.append(IssuedCall(_opt_str(call_id), _opt_str(name), attrs.get(f"{base}.{j}.{args_key}")))
            j += 1
        if j == 0 and f"{message_prefix}.{i}.message.role" not in attrs and f"{message_prefix}.{i}.role" not in attrs:
            break
    return calls


def _opt_str(value: Any) -> str | None:
    return value if isinstance(value, str) and value else None


def chat_tool_calls(message: Any) -> list[IssuedCall]:
    """The `tool_calls[]` of an assistant message as a JSON dump has it, in the model's order: Chat Completions'
    `{id, function: {name, arguments}}`, or a LangChain `AIMessage`'s `{id, name, args}`."""
    tool_calls = message.get("tool_calls") if isinstance(message, Mapping) else None
    calls: list[IssuedCall] = []
    for call in tool_calls if isinstance(tool_calls, list) else ():
        if not isinstance(call, Mapping):
            continue
        function = call.get("function")
        if isinstance(function, Mapping):
            calls.append(
                IssuedCall(_opt_str(call.get("id")), _opt_str(function.get("name")), function.get("arguments"))
            )
        else:
            calls.append(IssuedCall(_opt_str(call.get("id")), _opt_str(call.get("name")), call.get("args")))
    return calls


def function_call_item(item: Mapping[str, Any]) -> IssuedCall:
    """A Responses API `function_call` item (or langchain-openai's content block of one): its call id is
    `call_id` (`id` is the item's own)."""
    return IssuedCall(_opt_str(item.get("call_id")), _opt_str(item.get("name")), item.get("arguments"))


MAX_DEFINITIONS_CHARS = 1 << 20
"""Longest tool-definition text decoded, in characters: longer text is not read (see `extract.catalog`)."""


def json_list(value: Any) -> list[Any]:
    """A JSON array, as its text or as an array attribute; `ValueError` for anything else, `OverflowError` for
    text longer than `MAX_DEFINITIONS_CHARS` (not decoded)."""
    if isinstance(value, str):
        if len(value) > MAX_DEFINITIONS_CHARS:
            raise OverflowError("tool definitions too long to decode")
        value = decode_json(value)
    if isinstance(value, list | tuple):
        return list(value)
    raise ValueError("not a JSON array")


def names_only(value: Any) -> list[Any]:
    """Definitions from a list of tool names (its JSON text or an array attribute): `{"name": ...}` each."""
    return [{"name": name} if isinstance(name, str) else name for name in json_list(value)]


def indexed_values(attrs: Mapping[str, Any], prefix: str, suffix: str, max_items: int = 256) -> list[Any]:
    """`<prefix>.<i><suffix>` for i = 0, 1, ... up to the first gap."""
    values: list[Any] = []
    for i in range(max_items):
        value = attrs.get(f"{prefix}.{i}{suffix}")
        if value is None:
            break
        values.append(value)
    return values
