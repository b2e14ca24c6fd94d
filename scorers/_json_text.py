"""Compact JSON text of any decoded value, however deeply nested.

Arguments decode from JSON nested up to the decoder's limit (1,024 levels with orjson, more from an
SDK's attribute values), but `json.dumps` recurses and fails somewhere under 1,000 levels, depending
on the stack it starts from. Explanations, judge prompts, the score store and the `extract` command
all write arguments back as text: they go through `compact_json`, which uses the standard encoder
and, only when it recurses too deep, a loop over its own stack that writes the same text.
"""

from __future__ import annotations

import json
from typing import Any

__all__ = ["compact_json", "walked_json"]

_encode = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"), default=str).encode


def compact_json(value: Any, max_chars: int | None = None) -> str:
    """`json.dumps(value, ensure_ascii=False, separators=(",", ":"), default=str)`, at any depth.

    With `max_chars`, text that nests too deep for the standard encoder is written only until it is
    that long (the caller cuts it anyway); text the standard encoder writes comes back whole.
    """
    try:
        return _encode(value)
    except RecursionError:
        return walked_json(value, max_chars)


class _Punctuation(str):
    """Text `walked_json` scheduled between values, written as it is."""

    __slots__ = ()


_COMMA, _END_ARRAY, _END_OBJECT = _Punctuation(","), _Punctuation("]"), _Punctuation("}")


def walked_json(value: Any, max_chars: int | None = None) -> str:
    """The standard encoder's compact text for `value`, from a loop over a stack of what is left to write.

    Dict keys are written as `str(key)`: decoded JSON only has string keys. With `max_chars`, the
    loop stops once the text reaches that length (the text is then cut there, not valid JSON).
    """
    parts: list[str] = []
    left: list[Any] = [value]
    written = 0
    while left and (max_chars is None or written < max_chars):
        item = left.pop()
        if type(item) is _Punctuation:
            text: str = item
        elif isinstance(item, dict):
            text = "{"
            left.append(_END_OBJECT)
            entries = list(item.items())
            for index in range(len(entries) - 1, -1, -1):  # pushed last to first: popped in order
                key, entry = entries[index]
                left.append(entry)
                left.append(_Punctuation(("," if index else "") + _encode(str(key)) + ":"))
        elif isinstance(item, list | tuple):
            text = "["
            left.append(_END_ARRAY)
            for index in range(len(item) - 1, -1, -1):
                left.append(item[index])
                if index:
                    left.append(_COMMA)
        else:
            text = _encode(item)
        parts.append(text)
        written += len(text)
    joined = "".join(parts)
    return joined if max_chars is None else joined[:max_chars]
