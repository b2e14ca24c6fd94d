"""A span attribute's text as the privacy settings keep it: the one rule for run attributes and forwarded spans.

Content reaches toolscore's outputs through span attributes twice: the run span's and resource's attributes a
run keeps (the score store, the page's "make this run an expectation"), and every attribute of the spans `serve`
forwards. Both go through `attribute_text`, so a value gets the same marker in either place:

- Masking: a string holding a JSON object or array (tool arguments, messages, an OpenInference `input.value`,
  the AI SDK's `ai.response.toolCalls`) is masked inside, key rules applying at any depth (a dot path matches
  where the path ends with it, since where the arguments start inside a convention's messages is not known)
  and JSON text inside it (the arguments of an OpenAI tool call) read as a document of its own; any other
  string is masked whole when a pattern finds a match in it. Attribute keys themselves are not matched
  against `mask_keys`: a rule `name` would mask every tool's name.
- `names_only`: a string whose key names content (`CONTENT_KEY_WORDS`: `gen_ai.input.messages`,
  `ai.response.text`, `input.value`, ...) keeps the keys of its JSON with every value null, or is dropped when
  it is not JSON; other strings (names, ids, models) are kept, masked whole on a pattern match.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from toolscore.scorers._masked import is_masked

if TYPE_CHECKING:
    from toolscore.collector.extract.privacy import Masker

__all__ = ["CONTENT_KEY_WORDS", "OWN_PREFIX", "attribute_text", "mask_attributes", "names_content"]

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


OWN_PREFIX = "toolscore."
"""toolscore's own attributes (`toolscore.tool_calls`, `toolscore.evaluation.*`), written from masked runs."""


def names_content(key: str) -> bool:
    """Whether an attribute named `key` carries conversation content (`CONTENT_KEY_WORDS`); toolscore's own
    never do (`toolscore.tool_calls` holds the tool names `names_only` keeps)."""
    lowered = key.lower()
    return not lowered.startswith(OWN_PREFIX) and any(word in lowered for word in CONTENT_KEY_WORDS)


def mask_attributes(attributes: Mapping[str, Any], masker: Masker) -> dict[str, Any]:
    """Span, event, link or resource attributes, each text as `attribute_text` keeps it (dropped: left out)."""
    out: dict[str, Any] = {}
    for key, value in attributes.items():
        kept: Any = value
        if isinstance(value, str):
            kept = attribute_text(key, value, masker)
        elif isinstance(value, (list, tuple)):
            items = (attribute_text(key, v, masker) if isinstance(v, str) else v for v in value)
            kept = type(value)(v for v in items if v is not None)
        if kept is not None:
            out[key] = kept
    return out


def attribute_text(key: str, text: str, masker: Masker) -> str | None:
    """The text a string attribute named `key` keeps; None to drop the attribute (see the module docstring)."""
    document = _json_document(text)
    if masker.names_only and names_content(key):
        return None if document is None else json.dumps(masker.arguments(document), ensure_ascii=False)
    if document is not None:
        masked = _masked_json(document, masker, "")
        return text if masked == document else json.dumps(masked, ensure_ascii=False)
    return masker.scan(text)


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
        return masker.scan(value)
    return value


def _key_masked(masker: Masker, path: str) -> bool:
    """A key rule masks `path` or any tail of it (`a.card.number` for `card.number`)."""
    if not masker.config.mask_keys:
        return False
    parts = path.split(".")
    return any(masker.key_masked(".".join(parts[i:])) for i in range(len(parts)))


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
